"""The periodic compaction trigger inside the consumer (off by default).

After a batch, each scope the batch touched is compacted when it holds more than
`compaction.min_memories` memories and its last compaction is older than
`compaction.interval_s`. The consumer owns the scope's partition, so it plans
from its own store, then publishes one command per cluster to the scope's own
input partition, exactly as `memdedup compact` does: the clusters are applied in
order with the scope's events, once, with their decisions (`reason: compaction`)
re-emitted by any redelivery. The time of each scope's last compaction is stored
with the scope's data once its commands are acknowledged, so a restart or a new
owner does not compact it again early (a crash in between plans the scope again;
the second set of commands is then rejected as stale, changing nothing).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

import structlog

from consumer.compaction.clusters import analyse_scope
from consumer.compaction.plan import commands_for, pair_veto_for, state_from_store
from consumer.domain.models import Scope
from consumer.domain.verifier import PairJudge
from consumer.kafka.records import OutgoingRecord
from consumer.ports import RecordPublisher
from consumer.service.command_processor import CommandProcessor
from consumer.settings import CompactionSettings
from consumer.state import codec
from consumer.state.durable import DurableStore

log = structlog.get_logger(__name__)

_STATE_NAMESPACE = uuid.UUID("5f3c2a18-9e47-5b6d-8c01-7a2e94d0b3c6")
COMPACTION_STATE_KIND = "compaction_state"


def state_point_id(scope: Scope) -> str:
    return str(uuid.uuid5(_STATE_NAMESPACE, f"{scope.tenant_id}/{scope.namespace}"))


def _utcnow() -> datetime:
    return datetime.now(UTC)


class PeriodicCompaction:
    def __init__(
        self,
        *,
        settings: CompactionSettings,
        state: DurableStore,
        commands: CommandProcessor,
        publisher: RecordPublisher,
        guards: bool,
        input_topic: str,
        judge: PairJudge | None = None,
        dimension: int,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self._settings = settings
        self._state = state
        self._store = state.store
        self._commands = commands
        self._publisher = publisher
        self._guards = guards
        self._judge = judge
        self._input_topic = input_topic
        self._dimension = dimension
        self._clock = clock
        # Scopes checked recently (not due, or too small): not asked again until
        # the interval passes, so the trigger costs nothing on most batches.
        self._next_check: dict[Scope, datetime] = {}

    async def after_batch(self, scopes: Iterable[tuple[int, Scope]]) -> int:
        """Plan the due scopes among `scopes` (partition, scope) and publish their
        cluster commands; returns how many commands were published."""
        published = 0
        now = self._clock()
        for partition, scope in sorted(
            set(scopes), key=lambda i: (i[0], i[1].tenant_id, i[1].namespace)
        ):
            due_at = self._next_check.get(scope)
            if due_at is not None and now < due_at:
                continue
            published += await self._maybe_compact(partition, scope, now)
        return published

    async def _maybe_compact(self, partition: int, scope: Scope, now: datetime) -> int:
        interval = self._settings.interval_s
        state_id = state_point_id(scope)
        stored = (await self._store.get_points(partition, [state_id])).get(state_id)
        if stored is not None:
            last = datetime.fromisoformat(stored.payload["compacted_at"])
            if (now - last).total_seconds() < interval:
                self._next_check[scope] = datetime.fromtimestamp(last.timestamp() + interval, UTC)
                return 0
        count = await self._store.count_memories(partition, scope.tenant_id, scope.namespace)
        if count <= self._settings.min_memories:
            # Checked again after a tenth of the interval: the scope may grow.
            self._next_check[scope] = datetime.fromtimestamp(now.timestamp() + interval / 10, UTC)
            return 0
        state = await state_from_store(
            self._store, [partition], tenant=scope.tenant_id, namespace=scope.namespace
        )
        analysis = analyse_scope(
            state.memories.get(scope, []),
            bands=self._commands.bands_for(scope.namespace),
            pair_veto=pair_veto_for(state, guards=self._guards, judge=self._judge),
            scope=scope,
            neighbours=self._settings.neighbours,
            max_cluster_size=self._settings.max_cluster_size,
        )
        run_id = f"auto-{uuid.uuid4().hex[:12]}"
        commands = commands_for([analysis], run_id)
        await self._publisher.publish_all(
            [
                OutgoingRecord(
                    self._input_topic, command.key.encode(), command.to_bytes(), partition=partition
                )
                for command in commands
            ]
        )
        await self._state.apply(
            partition,
            [
                codec.plain_point(
                    state_id,
                    COMPACTION_STATE_KIND,
                    {
                        codec.TENANT_FIELD: scope.tenant_id,
                        codec.NAMESPACE_FIELD: scope.namespace,
                        "compacted_at": now.isoformat(),
                        "run_id": run_id,
                    },
                    self._dimension,
                )
            ],
        )
        self._next_check[scope] = datetime.fromtimestamp(now.timestamp() + interval, UTC)
        log.info(
            "periodic_compaction",
            tenant_id=scope.tenant_id,
            namespace=scope.namespace,
            memories=count,
            clusters=len(analysis.clusters),
            removed=analysis.removed,
            run_id=run_id,
        )
        return len(commands)
