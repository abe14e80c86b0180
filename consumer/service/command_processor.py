"""Applying commands (reviews, compaction) in the consumer that owns the scope.

A command arrives on the input topic keyed by its scope, so it reaches the one
consumer that owns the scope's partition; with the embedded store that consumer
is the only process allowed to write the shard. Effects follow the order of
events: everything a command changes (memories, review status, reviewed pairs)
and the records it emits are stored in one write, changelog first; the emitted
records are then published. A redelivered command finds its command record and
re-emits the same records byte for byte, changing nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime

import structlog

from consumer.domain.dedup import DedupEngine
from consumer.domain.models import Scope
from consumer.domain.thresholds import Bands
from consumer.kafka.records import OutgoingRecord
from consumer.observability.metrics import ServiceMetrics
from consumer.ports import MemoryStore
from consumer.service.command_handler import utcnow
from consumer.service.compaction_commands import CompactionCommands
from consumer.service.review_commands import ReviewCommands
from consumer.service.validation import ParsedCommand
from consumer.settings import TopicSettings
from consumer.state import codec
from consumer.state.durable import DurableStore
from schemas import ReviewCommand

log = structlog.get_logger(__name__)


class CommandProcessor:
    def __init__(
        self,
        *,
        engine: DedupEngine,
        state: DurableStore,
        topics: TopicSettings,
        model_id: str,
        dimension: int = 0,
        metrics: ServiceMetrics | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """`state`: where a command's effects are written, with the records it
        emits (consumer.state.durable)."""
        self._metrics = metrics or ServiceMetrics()
        self._engine = engine
        self._state = state
        self._store = state.store
        # Non-memory points still need a vector of the collection's dimension.
        self._dimension = dimension or engine.embedder.dimension
        self._reviews = ReviewCommands(
            engine=engine,
            store=state.store,
            topics=topics,
            model_id=model_id,
            dimension=self._dimension,
            clock=clock,
        )
        self._compactions = CompactionCommands(
            engine=engine,
            store=state.store,
            topics=topics,
            model_id=model_id,
            dimension=self._dimension,
            clock=clock,
        )

    async def apply(
        self, partition: int, commands: Sequence[ParsedCommand]
    ) -> list[tuple[int, int, OutgoingRecord]]:
        emitted: list[tuple[int, int, OutgoingRecord]] = []
        for item in commands:
            records = await self._apply_one(partition, item)
            emitted.extend((partition, item.record.offset, record) for record in records)
        return emitted

    async def _apply_one(self, partition: int, item: ParsedCommand) -> list[OutgoingRecord]:
        command = item.command
        record_id = codec.command_point_id(command.command_id)
        earlier = (await self._store.get_points(partition, [record_id])).get(record_id)
        if earlier is not None:
            log.info("command_replayed", command_id=command.command_id)
            return [
                OutgoingRecord(o["topic"], o["key"].encode(), o["value"].encode())
                for o in earlier.payload["outputs"]
            ]
        if isinstance(command.command, ReviewCommand):
            points, outputs = await self._reviews.review(partition, item, command.command)
        else:
            points, outputs = await self._compactions.compact(partition, item, command.command)
        points.append(
            codec.plain_point(
                record_id,
                codec.COMMAND_KIND,
                {
                    codec.TENANT_FIELD: command.tenant_id,
                    codec.NAMESPACE_FIELD: command.namespace,
                    "command_id": command.command_id,
                    "outputs": [
                        {
                            "topic": o.topic,
                            "key": (o.key or b"").decode(),
                            "value": o.value.decode(),
                        }
                        for o in outputs
                    ],
                },
                self._dimension,
            )
        )
        await self._state.apply(partition, points)
        # The command's result is always its last record.
        self._metrics.command(command.command.type, json.loads(outputs[-1].value)["status"])
        return outputs

    def bands_for(self, namespace: str) -> Bands:
        return self._engine.policy.bands_for(namespace)


async def load_reviewed_pairs(engine: DedupEngine, store: MemoryStore, partition: int) -> None:
    """Before a partition's first batch: the pairs reviewers separated in it."""
    if engine.reviewed.is_loaded(partition):
        return
    points = await store.points_of_kind(partition, codec.REVIEWED_PAIR_KIND)
    pairs = []
    for point in points:
        tenant_id, namespace, first, second = codec.reviewed_pair_of(point.payload)
        pairs.append((Scope(tenant_id, namespace), first, second))
    engine.reviewed.load(partition, pairs)
