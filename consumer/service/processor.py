"""One batch of input records in, decision and dead-letter records out.

Order of effects, which is what makes redelivery safe:
1. bad input becomes a dead letter (never retried: it is a property of the bytes);
2. an event that already has a decision record re-emits it byte for byte;
3. fresh events are decided, then memories and decision records are stored in one
   write per partition (with a changelog: appended there and acknowledged first);
4. every outgoing record is published and acknowledged;
5. only then does the caller commit offsets.
A crash anywhere before 5 redelivers the batch, and step 2 turns it into replays.

With a changelog, a partition's decisions are published while its shard write runs
(both after the changelog acknowledged the points): the changelog is what a restore
trusts, so if the shard write fails, the retry first restores the shard from it and
then replays those very decisions instead of taking new ones.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import structlog

from consumer.domain.dedup import DedupEngine, Lookahead
from consumer.domain.models import BatchPlan, Candidate, Outcome
from consumer.kafka.partitioning import canonical_partition
from consumer.kafka.publisher import DEFAULT_MAX_REQUEST_BYTES
from consumer.kafka.records import InputRecord, OutgoingRecord
from consumer.observability.metrics import ServiceMetrics
from consumer.ports import RecordPublisher
from consumer.service.command_processor import CommandProcessor, load_reviewed_pairs
from consumer.service.decisions import (
    build_decision_event,
    dead_letter,
    decision_records,
    reroute,
)
from consumer.service.periodic_compaction import PeriodicCompaction
from consumer.service.replays import Reason, SortedOut, conflict_reason, event_ids, sort_out
from consumer.service.retention import DecisionRetention
from consumer.service.validation import ParsedCommand, Rejection, parse_record
from consumer.settings import TopicSettings
from consumer.state.durable import DurableStore
from schemas import (
    CheckName,
    DeadLetterCode,
    Decision,
    scope_key,
)

log = structlog.get_logger(__name__)


# Texts a partition's segment embeds at most: a partition with more new texts in a
# batch is decided and written in segments, so the model embeds the next segment
# meanwhile instead of idling until the whole partition is written.
SEGMENT_TEXTS = 256


@dataclass(slots=True)
class BatchSummary:
    records: int = 0
    decisions: Counter[str] = field(default_factory=Counter)
    replayed: int = 0
    rerouted: int = 0
    commands: int = 0
    dead_letters: Counter[str] = field(default_factory=Counter)

    @property
    def total_decisions(self) -> int:
        return sum(self.decisions.values())


class BatchProcessor:
    def __init__(
        self,
        *,
        engine: DedupEngine,
        state: DurableStore,
        commands: CommandProcessor,
        publisher: RecordPublisher,
        topics: TopicSettings,
        model_id: str,
        max_event_bytes: int,
        max_record_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        metrics: ServiceMetrics | None = None,
        reconcile: bool = False,
        periodic: PeriodicCompaction | None = None,
        retention: DecisionRetention | None = None,
    ) -> None:
        """`state`: the store, written by its durable-write rule (consumer.state.durable);
        `commands` applies the batch's commands. `max_record_bytes`: the largest
        record the publisher sends; a dead letter of a larger input record carries
        the input's first bytes. `reconcile`: re-check scopes after inserting, for a
        store shared by consumers whose work may overlap (a Qdrant server).
        `periodic` and `retention` run after each batch (consumer.service.periodic_compaction,
        consumer.service.retention), when configured."""
        self._reconcile = reconcile
        self._engine = engine
        self._state = state
        self._store = state.store
        self._publisher = publisher
        self._topics = topics
        self._model_id = model_id
        self._max_event_bytes = max_event_bytes
        self._max_record_bytes = max_record_bytes
        self._metrics = metrics or ServiceMetrics()
        self._decision_topics = {
            Decision.ACCEPTED: topics.accepted,
            Decision.MERGED: topics.merged,
            Decision.SKIPPED: topics.skipped,
        }
        self._commands = commands
        self._periodic = periodic
        self._retention = retention

    def _decision_topic(self, decision: Decision) -> str:
        return self._decision_topics[decision]

    def _decision_record(
        self, candidate: Candidate, decision: Decision, payload: bytes
    ) -> OutgoingRecord:
        key = scope_key(candidate.event.tenant_id, candidate.event.namespace).encode()
        return OutgoingRecord(self._decision_topic(decision), key, payload)

    def _dead_letter(self, rejection: Rejection) -> OutgoingRecord:
        return dead_letter(
            rejection, topic=self._topics.dlq, max_record_bytes=self._max_record_bytes
        )

    async def dead_letter_unprocessable(self, record: InputRecord, detail: str) -> None:
        """For records whose processing keeps failing for an unclassified reason."""
        rejection = Rejection(record, DeadLetterCode.PROCESSING_ERROR, detail[:500])
        await self._publisher.publish_all([self._dead_letter(rejection)])

    async def process_fail_open(self, records: Sequence[InputRecord]) -> BatchSummary:
        """Store down and configured to fail open: accept every valid event as a
        degraded decision that nothing was checked against or stored, so latency
        holds; bad input still goes to the DLQ. Such decisions are not replayed
        identically (nothing records them) and their memories are not stored."""
        summary = BatchSummary(records=len(records))
        outgoing: list[tuple[int, int, OutgoingRecord]] = []
        skipped = (CheckName.EXACT, CheckName.SEMANTIC)
        for record in records:
            parsed = parse_record(record, max_event_bytes=self._max_event_bytes)
            if isinstance(parsed, Rejection):
                summary.dead_letters[parsed.code.value] += 1
                outgoing.append((record.partition, record.offset, self._dead_letter(parsed)))
                continue
            if isinstance(parsed, ParsedCommand):
                # A command changes stored memories, so it cannot run now; it goes
                # to the back of its partition, to be applied once the store is back.
                summary.rerouted += 1
                deferred = reroute(record, record.key or b"", record.partition)
                outgoing.append((record.partition, record.offset, deferred))
                continue
            outcome = self._engine.fail_open(parsed, skipped)
            payload = build_decision_event(outcome, self._model_id).model_dump_json().encode()
            summary.decisions[outcome.decision.value] += 1
            self._metrics.degraded()
            outgoing.append(
                (
                    record.partition,
                    record.offset,
                    self._decision_record(parsed, outcome.decision, payload),
                )
            )
            log.warning(
                "decided_degraded",
                event_id=parsed.event.event_id,
                tenant_id=parsed.event.tenant_id,
                namespace=parsed.event.namespace,
                content_hash=parsed.content_hash,
                decision=outcome.decision.value,
                skipped_checks=[c.value for c in outcome.skipped_checks],
            )
        await self._publisher.publish_all(_answers(sorted(outgoing, key=lambda i: i[:2])))
        return summary

    async def process(
        self, records: Sequence[InputRecord], *, partition_count: int | None = None
    ) -> BatchSummary:
        """`partition_count` of the input topic enables the canonical-partition check."""
        summary = BatchSummary(records=len(records))
        outgoing: list[tuple[int, int, OutgoingRecord]] = []
        by_partition: dict[int, list[Candidate]] = {}
        commands: dict[int, list[ParsedCommand]] = {}
        rejections: list[Rejection] = []
        originals = {(record.partition, record.offset): record for record in records}
        for record in records:
            parsed = parse_record(record, max_event_bytes=self._max_event_bytes)
            if isinstance(parsed, Rejection):
                rejections.append(parsed)
                continue
            key = scope_key(parsed.scope.tenant_id, parsed.scope.namespace).encode()
            home = canonical_partition(key, partition_count) if partition_count else None
            if record.key != key or (home is not None and record.partition != home):
                # Never decided here: another partition owns this scope's state.
                summary.rerouted += 1
                outgoing.append((record.partition, record.offset, reroute(record, key, home)))
                continue
            if isinstance(parsed, ParsedCommand):
                commands.setdefault(record.partition, []).append(parsed)
            else:
                by_partition.setdefault(record.partition, []).append(parsed)

        # Largest partitions first: what is left once the model has embedded the
        # batch's last text (deciding and writing the last partition, with the
        # model idle) is then the smallest part of the batch.
        order = sorted(
            by_partition.keys() | commands.keys(),
            key=lambda partition: (-len(by_partition.get(partition, ())), partition),
        )
        # Each partition's reads and model call start while the partitions before it
        # are decided and written (their shards are others), in that order.
        ahead: dict[int, asyncio.Task[_Ahead]] = {}
        previous: asyncio.Task[_Ahead] | None = None
        for partition in order:
            if partition not in by_partition or self._state.is_behind(partition):
                continue
            previous = ahead[partition] = asyncio.ensure_future(
                self._look_ahead(partition, by_partition[partition], after=previous)
            )
        try:
            for partition in order:
                candidates = by_partition.get(partition, [])
                emitted, conflicts = await self._process_partition(
                    partition, candidates, summary, ahead.pop(partition, None)
                )
                # A batch's commands apply after its events: a review may name a
                # decision taken in this very batch.
                if partition in commands:
                    applied = await self._commands.apply(partition, commands[partition])
                    summary.commands += len(commands[partition])
                    emitted.extend(applied)
                outgoing.extend(emitted)
                rejections.extend(
                    Rejection(originals[(c.record.partition, c.record.offset)], *reason)
                    for c, reason in conflicts
                )
        finally:
            for task in ahead.values():
                _drop_ahead(task)

        for rejection in rejections:
            summary.dead_letters[rejection.code.value] += 1
            position = (rejection.record.partition, rejection.record.offset)
            outgoing.append((*position, self._dead_letter(rejection)))

        outgoing.sort(key=lambda item: (item[0], item[1]))
        await self._publisher.publish_all(_answers(outgoing))
        if self._periodic is not None and by_partition:
            touched = [(p, c.scope) for p, candidates in by_partition.items() for c in candidates]
            await self._periodic.after_batch(touched)
        if self._retention is not None and by_partition:
            await self._retention.after_batch(by_partition)
        return summary

    async def _look_ahead(
        self, partition: int, candidates: list[Candidate], *, after: asyncio.Task[_Ahead] | None
    ) -> _Ahead:
        if after is not None:
            # The model serves calls in order: this partition's comes after the last.
            await asyncio.wait([after])
        prior = await self._store.get_decisions(partition, event_ids(candidates))
        sorted_out = sort_out(candidates, prior)
        segments = await self._engine.look_ahead(
            partition, sorted_out.fresh, texts_per_segment=SEGMENT_TEXTS
        )
        return sorted_out, segments

    async def _process_partition(
        self,
        partition: int,
        candidates: list[Candidate],
        summary: BatchSummary,
        ahead_task: asyncio.Task[_Ahead] | None = None,
    ) -> tuple[list[tuple[int, int, OutgoingRecord]], list[tuple[Candidate, Reason]]]:
        await self._state.catch_up(partition)
        await load_reviewed_pairs(self._engine, self._store, partition)
        if not candidates:
            return [], []
        ahead = await _result_or_none(ahead_task)
        segments: Sequence[tuple[list[Candidate], Lookahead | None]]
        if ahead is not None:
            sorted_out, segments = ahead
        else:
            prior = await self._store.get_decisions(partition, event_ids(candidates))
            sorted_out = sort_out(candidates, prior)
            segments = [(sorted_out.fresh, None)]
        emitted: list[tuple[int, int, OutgoingRecord]] = []
        conflicts = [(candidate, conflict_reason(candidate)) for candidate in sorted_out.conflicts]
        for candidate, earlier in sorted_out.replays:
            summary.replayed += 1
            record = self._decision_record(candidate, earlier.decision, earlier.event_json.encode())
            emitted.append((partition, candidate.record.offset, record))
            log.info(
                "decision_replayed",
                event_id=candidate.event.event_id,
                decision=earlier.decision.value,
                content_hash=candidate.content_hash,
            )
        payloads: dict[str, tuple[Decision, bytes]] = {}
        try:
            for number, (fresh, lookahead) in enumerate(segments):
                # The batch's repeats of its events go out with the last segment:
                # their twins have been decided by then.
                repeats = sorted_out.repeats if number == len(segments) - 1 else []
                emitted = await self._decide_and_write(
                    partition, fresh, lookahead, repeats, payloads, emitted, summary
                )
        finally:
            # After a failure: the model calls of segments never decided.
            _close_segments(segments)
        summary.replayed += len(sorted_out.repeats)
        return emitted, conflicts

    async def _decide_and_write(
        self,
        partition: int,
        fresh: list[Candidate],
        lookahead: Lookahead | None,
        repeats: list[Candidate],
        payloads: dict[str, tuple[Decision, bytes]],
        emitted: list[tuple[int, int, OutgoingRecord]],
        summary: BatchSummary,
    ) -> list[tuple[int, int, OutgoingRecord]]:
        """Decide fresh candidates of a partition and store the plan; returns
        `emitted` plus the decision records left for the batch to publish (with a
        changelog they are published here, with the shard write). `payloads`
        collects the decision payloads of the partition's segments."""
        plan = await self._engine.decide(partition, fresh, lookahead)
        records, decided_payloads = decision_records(plan.outcomes, self._model_id)
        payloads.update(decided_payloads)
        memories = list(plan.writes.values())
        publish_now = self._state.has_changelog and not self._reconcile
        if publish_now:
            # Final already (no race re-check can change them): published once the
            # changelog holds them, while the shard is written, which the event loop
            # would otherwise wait on.
            emitted.extend(self._decided_records(partition, plan, payloads, repeats))
            emitted.sort(key=lambda item: item[1])
            publish = partial(self._publisher.publish_all, _answers(emitted))
            emitted = []
        store_s = await self._state.write_decided(
            partition,
            memories,
            records,
            seen_only=plan.seen_only,
            alongside=publish if publish_now else None,
        )
        self._metrics.observe_store(store_s)
        if self._reconcile:
            payloads.update(await self._resolve_races(partition, plan))
        self._engine.commit(plan)
        if not publish_now:
            emitted.extend(self._decided_records(partition, plan, payloads, repeats))

        # Bound once: each call on the module's lazy logger builds a bound logger
        # first, a cost paid per event even when DEBUG is filtered out.
        decided_log = log.bind()
        for outcome in plan.outcomes:
            candidate = outcome.candidate
            decision, _ = payloads[candidate.event.event_id]
            summary.decisions[decision.value] += 1
            if outcome.skipped_checks:
                self._metrics.degraded()
            self._metrics.observe_decision(
                candidate.event.namespace,
                decision.value,
                outcome.reason.value,
                outcome.similarity,
                [(c.name.value, c.hit, c.duration_ms) for c in outcome.checks],
                outcome.guard.veto.guard.value if outcome.guard else None,
            )
            # Per event at DEBUG; the batch's summary is `batch_done` at INFO.
            decided_log.debug(
                "decided",
                event_id=candidate.event.event_id,
                tenant_id=candidate.event.tenant_id,
                namespace=candidate.event.namespace,
                content_hash=candidate.content_hash,
                decision=decision.value,
                reason=outcome.reason.value,
                similarity=outcome.similarity,
                memory_id=outcome.memory.memory_id,
                partition=partition,
                offset=candidate.record.offset,
            )
        return emitted

    def _decided_records(
        self,
        partition: int,
        plan: BatchPlan,
        payloads: dict[str, tuple[Decision, bytes]],
        repeats: list[Candidate],
    ) -> list[tuple[int, int, OutgoingRecord]]:
        """The decision records of a partition's fresh events and of their repeats
        within the batch (same event id, same content: the same record)."""
        decided = [outcome.candidate for outcome in plan.outcomes]
        return [
            (
                partition,
                candidate.record.offset,
                self._decision_record(candidate, *payloads[candidate.event.event_id]),
            )
            for candidate in (*decided, *repeats)
        ]

    async def _resolve_races(
        self, partition: int, plan: BatchPlan
    ) -> dict[str, tuple[Decision, bytes]]:
        """Re-check the scope after inserting: an accepted memory that lost a race
        to an equal memory stored concurrently becomes a merge or skip into it,
        before anything is published."""
        losers = await self._engine.concurrent_winners(partition, plan)
        if not losers:
            return {}
        replaced: list[Outcome] = []
        for lost in losers:
            outcome = lost.outcome
            corrected = self._engine.yield_to(lost)
            plan.outcomes[plan.outcomes.index(outcome)] = corrected
            plan.writes.pop(outcome.memory.memory_id, None)
            replaced.append(corrected)
            log.warning(
                "concurrent_duplicate_resolved",
                event_id=outcome.candidate.event.event_id,
                removed_memory_id=outcome.memory.memory_id,
                winner_memory_id=lost.winner.memory_id,
                decision=corrected.decision.value,
            )
        records, payloads = decision_records(replaced, self._model_id)
        merged = [o.memory for o in replaced if o.decision is Decision.MERGED]
        superseded = [o.superseded_memory_id for o in replaced if o.superseded_memory_id]
        await self._state.correct(partition, merged, records, superseded)
        return payloads


# A partition's candidates sorted out against its stored decisions, and what
# deciding its fresh ones reads and embeds.
_Ahead = tuple[SortedOut, Sequence[tuple[list[Candidate], Lookahead | None]]]


async def _result_or_none(task: asyncio.Task[_Ahead] | None) -> _Ahead | None:
    """A look-ahead's result; None when there was none or it failed (the
    partition then reads for itself, and meets the failure there if it lasts)."""
    if task is None:
        return None
    try:
        return await task
    except Exception:
        return None


def _drop_ahead(task: asyncio.Task[_Ahead]) -> None:
    """A look-ahead nobody will use (the batch failed): stop it and its model call."""
    task.cancel()

    def close(done: asyncio.Task[_Ahead]) -> None:
        if not done.cancelled() and done.exception() is None:
            _close_segments(done.result()[1])

    task.add_done_callback(close)


def _close_segments(segments: Sequence[tuple[list[Candidate], Lookahead | None]]) -> None:
    for _, lookahead in segments:
        if lookahead is not None:
            lookahead.close()


def _answers(outgoing: Sequence[tuple[int, int, OutgoingRecord]]) -> list[OutgoingRecord]:
    """The records, each tied to the input record (partition, offset) it answers."""
    return [replace(record, source=(partition, offset)) for partition, offset, record in outgoing]
