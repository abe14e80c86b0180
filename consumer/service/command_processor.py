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
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import structlog

from consumer.domain.dedup import DedupEngine
from consumer.domain.descriptions import describe_decision
from consumer.domain.merge import (
    MergeFailed,
    MergeText,
    keep_folded,
    latest,
    replaced_text,
    unfold,
    union,
)
from consumer.domain.models import (
    DecisionRecord,
    FoldedText,
    MemoryRecord,
    MergeSource,
    Outcome,
    Scope,
)
from consumer.domain.normalize import (
    content_hash,
    decision_id_for,
    memory_id_for,
    normalize_content,
)
from consumer.domain.thresholds import Bands
from consumer.kafka.records import OutgoingRecord
from consumer.observability.metrics import ServiceMetrics
from consumer.ports import MemoryStore
from consumer.service.validation import ParsedCommand
from consumer.settings import TopicSettings
from consumer.state import codec
from consumer.state.durable import DurableStore
from schemas import (
    CommandResult,
    CommandStatus,
    CompactCommand,
    Decision,
    DecisionReason,
    MemoryDecisionEvent,
    MemoryReversed,
    RecordPosition,
    ReviewAction,
    ReviewCommand,
    ReviewStatus,
    memory_urn,
    scope_key,
)
from schemas.events import MAX_ENTITIES, MAX_TOPICS, StoredMemory
from schemas.events import FoldedText as SchemaFoldedText
from schemas.events import MergeSource as SchemaMergeSource

log = structlog.get_logger(__name__)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def stored_memory(memory: MemoryRecord) -> StoredMemory:
    """A memory as decision and reversal events carry it."""
    return StoredMemory(
        memory_id=memory.memory_id,
        content=memory.content,
        content_hash=memory.content_hash,
        importance=memory.importance,
        topics=memory.topics,
        entities=memory.entities,
        merged_event_ids=memory.merged_event_ids,
        origin_event_id=memory.origin_event_id,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        merged_from=[
            SchemaMergeSource(event_id=s.event_id, memory_id=s.memory_id)
            for s in memory.merged_from
        ],
        supersedes=memory.supersedes,
        folded_texts=[
            SchemaFoldedText(event_id=t.event_id, content=t.content) for t in memory.folded_texts
        ],
        seen_count=memory.seen_count,
        first_seen_at=memory.first_seen_at or memory.created_at,
        last_seen_at=memory.last_seen_at or memory.updated_at,
    )


def reversal_basis(outcome: Outcome) -> str | None:
    """What a later reversal of this decision needs, for semantic skips and merges:
    the event's own text and fields, and the matched memory before the decision."""
    before = outcome.target_before
    if before is None or outcome.reason is not DecisionReason.SEMANTIC:
        return None
    event = outcome.candidate.event
    document = {
        "event": {
            "content": event.content.strip(),
            "importance": event.importance,
            "topics": list(event.topics),
            "entities": list(event.entities),
        },
        "target_before": {"memory_id": before.memory_id, **codec.memory_payload(before)},
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


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
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        """`state`: where a command's effects are written, with the records it
        emits (consumer.state.durable)."""
        self._metrics = metrics or ServiceMetrics()
        self._engine = engine
        self._state = state
        self._store = state.store
        self._topics = topics
        self._model_id = model_id
        # Non-memory points still need a vector of the collection's dimension.
        self._dimension = dimension or engine.embedder.dimension
        self._clock = clock

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
            points, outputs = await self._review(partition, item, command.command)
        else:
            points, outputs = await self._compact(partition, item, command.command)
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

    def _record(self, topic: str, item: ParsedCommand, body: str) -> OutgoingRecord:
        key = scope_key(item.command.tenant_id, item.command.namespace).encode()
        return OutgoingRecord(topic, key, body.encode())

    def _result(
        self,
        item: ParsedCommand,
        status: CommandStatus,
        detail: str,
        **fields: Any,
    ) -> OutgoingRecord:
        command = item.command
        result = CommandResult(
            command_id=command.command_id,
            type=command.command.type,
            tenant_id=command.tenant_id,
            namespace=command.namespace,
            status=status,
            detail=detail,
            applied_at=self._clock(),
            record=RecordPosition(
                topic=item.record.topic, partition=item.record.partition, offset=item.record.offset
            ),
            **fields,
        )
        log.info(
            "command_applied" if status is CommandStatus.APPLIED else "command_rejected",
            command_id=command.command_id,
            type=command.command.type,
            detail=detail,
        )
        return self._record(self._topics.command_results, item, result.model_dump_json())

    # ------------------------------------------------------------------ review

    async def _review(
        self, partition: int, item: ParsedCommand, review: ReviewCommand
    ) -> tuple[list[codec.RawPoint], list[OutgoingRecord]]:
        fields: dict[str, Any] = {
            "decision_id": review.decision_id,
            "action": review.action,
            "reviewer": review.reviewer,
            "note": review.note,
        }

        def rejected(
            detail: str, status: ReviewStatus
        ) -> tuple[list[codec.RawPoint], list[OutgoingRecord]]:
            return [], [
                self._result(item, CommandStatus.REJECTED, detail, review_status=status, **fields)
            ]

        decision = (await self._store.get_decisions(partition, [review.event_id])).get(
            review.event_id
        )
        scope = item.scope
        if (
            decision is None
            or decision.decision_id != review.decision_id
            or (decision.tenant_id, decision.namespace) != (scope.tenant_id, scope.namespace)
        ):
            return rejected(
                f"no decision {review.decision_id} for event {review.event_id} in "
                f"{scope.tenant_id}/{scope.namespace}",
                ReviewStatus.UNREVIEWED,
            )
        status_id = codec.review_point_id(decision.decision_id)
        status_point = (await self._store.get_points(partition, [status_id])).get(status_id)
        status = (
            ReviewStatus(status_point.payload["status"])
            if status_point
            else ReviewStatus.UNREVIEWED
        )
        if status is ReviewStatus.REVERSED:
            return rejected("the decision was already reversed", status)
        if review.action is ReviewAction.CONFIRM:
            points = [self._status_point(status_id, decision, ReviewStatus.CONFIRMED, item)]
            result = self._result(
                item,
                CommandStatus.APPLIED,
                "decision confirmed",
                review_status=ReviewStatus.CONFIRMED,
                **fields,
            )
            return points, [result]

        event = MemoryDecisionEvent.model_validate_json(decision.event_json)
        if event.decision is Decision.ACCEPTED:
            return rejected(
                "an accepted event already has its own memory: nothing to reverse", status
            )
        if event.reason is not DecisionReason.SEMANTIC or decision.basis_json is None:
            return rejected(
                f"this decision {describe_decision(event.decision, event.reason)}: the "
                "event's text is the memory's text, so there is nothing to separate (only "
                "semantic skips and merges can be reversed)",
                status,
            )
        return await self._reverse(partition, item, review, decision, event, status_id, fields)

    def _status_point(
        self, status_id: str, decision: DecisionRecord, status: ReviewStatus, item: ParsedCommand
    ) -> codec.RawPoint:
        return codec.plain_point(
            status_id,
            codec.REVIEW_KIND,
            {
                codec.TENANT_FIELD: decision.tenant_id,
                codec.NAMESPACE_FIELD: decision.namespace,
                "decision_id": decision.decision_id,
                "status": status.value,
                "command_id": item.command.command_id,
                "reviewed_at": self._clock().isoformat(),
            },
            self._dimension,
        )

    async def _reverse(
        self,
        partition: int,
        item: ParsedCommand,
        review: ReviewCommand,
        decision: DecisionRecord,
        event: MemoryDecisionEvent,
        status_id: str,
        fields: dict[str, Any],
    ) -> tuple[list[codec.RawPoint], list[OutgoingRecord]]:
        assert decision.basis_json is not None
        basis = json.loads(decision.basis_json)
        source = basis["event"]
        before_payload = dict(basis["target_before"])
        before = codec.memory_from_payload(before_payload.pop("memory_id"), before_payload, None)
        scope = item.scope
        now = self._clock()

        # The event's text, as a memory of its own.
        restored_id = memory_id_for(scope.tenant_id, scope.namespace, decision.content_hash)
        found = await self._store.get_memories(partition, [restored_id, event.memory_id])
        restored = found.get(restored_id)
        if restored is None or restored.memory_id != restored_id:
            normalized = normalize_content(source["content"])
            [vector] = await self._engine.embedder.embed([normalized])
            restored = MemoryRecord(
                memory_id=restored_id,
                tenant_id=scope.tenant_id,
                namespace=scope.namespace,
                content=source["content"],
                content_hash=decision.content_hash,
                importance=float(source["importance"]),
                topics=list(source["topics"]),
                entities=list(source["entities"]),
                merged_event_ids=[],
                origin_event_id=decision.event_id,
                created_at=now,
                updated_at=now,
                vector=vector.tolist(),
                first_seen_at=now,
                last_seen_at=now,
            )

        # The memory it had been folded into: without this event, and with its
        # pre-merge text when nothing changed the text since.
        target = found.get(event.memory_id)
        text_restored = False
        points: list[codec.RawPoint] = [codec.memory_point(restored, self._dimension)]
        if target is not None and target.memory_id == event.memory_id:
            target = replace(
                target,
                merged_event_ids=[e for e in target.merged_event_ids if e != decision.event_id],
                merged_from=[s for s in target.merged_from if s.event_id != decision.event_id],
                seen_count=max(1, target.seen_count - 1),
                updated_at=now,
            )
            unchanged_since = target.content_hash == event.memory.content_hash
            if unchanged_since and target.content_hash != before.content_hash:
                [vector] = await self._engine.embedder.embed([normalize_content(before.content)])
                target = replace(
                    target,
                    content=before.content,
                    content_hash=before.content_hash,
                    supersedes=list(before.supersedes),
                    vector=vector.tolist(),
                )
            # The event's text is the restored memory's now: the target no longer
            # keeps it (nor its current text, when that is the restored one).
            target.folded_texts = unfold(
                target.folded_texts, decision.event_id, decision.content_hash, target.content_hash
            )
            text_restored = target.content_hash == before.content_hash
            points.append(codec.memory_point(target, self._dimension))
        else:
            target = None

        # Never skip or merge these texts into each other again.
        separated = {before.content_hash, event.memory.content_hash}
        if target is not None:
            separated.add(target.content_hash)
        separated.discard(decision.content_hash)
        for other in sorted(separated):
            pair = (decision.content_hash, other)
            points.append(
                codec.plain_point(
                    codec.reviewed_pair_point_id(scope.tenant_id, scope.namespace, pair),
                    codec.REVIEWED_PAIR_KIND,
                    {
                        codec.TENANT_FIELD: scope.tenant_id,
                        codec.NAMESPACE_FIELD: scope.namespace,
                        "hashes": list(pair),
                        "decision_id": decision.decision_id,
                    },
                    self._dimension,
                )
            )
            self._engine.reviewed.add(scope, *pair)
        points.append(self._status_point(status_id, decision, ReviewStatus.REVERSED, item))
        # A repeat of the event's text now finds its own memory.
        self._engine.recent.put(
            (scope.tenant_id, scope.namespace, decision.content_hash), restored_id, partition
        )

        reversal = MemoryReversed(
            reversal_id=item.command.command_id,
            decision_id=decision.decision_id,
            event_id=decision.event_id,
            tenant_id=scope.tenant_id,
            namespace=scope.namespace,
            original_decision=event.decision,
            original_reason=event.reason,
            restored_memory=stored_memory(restored),
            target_memory=stored_memory(target) if target is not None else None,
            target_text_restored=text_restored,
            reversed_at=now,
            reviewer=review.reviewer,
        )
        detail = f"{event.decision.value} reversed: memory {restored_id} stands on its own"
        if target is None:
            detail += f"; memory {event.memory_id} is gone (compacted or removed)"
        outputs = [
            self._record(self._topics.reversed, item, reversal.model_dump_json()),
            self._result(
                item, CommandStatus.APPLIED, detail, review_status=ReviewStatus.REVERSED, **fields
            ),
        ]
        return points, outputs

    # -------------------------------------------------------------- compaction

    async def _compact(
        self, partition: int, item: ParsedCommand, compact: CompactCommand
    ) -> tuple[list[codec.RawPoint], list[OutgoingRecord]]:
        scope = item.scope
        fields: dict[str, Any] = {"run_id": compact.run_id, "keeper_id": compact.keeper_id}
        planned = {compact.keeper_id: compact.keeper_hash}
        planned.update({m.memory_id: m.content_hash for m in compact.members})
        found = await self._store.get_points(partition, list(planned))
        memories: dict[str, MemoryRecord] = {}
        for memory_id, expected_hash in planned.items():
            point = found.get(memory_id)
            payload = point.payload if point is not None else {}
            if (
                point is None
                or payload.get(codec.KIND_FIELD) != codec.MEMORY_KIND
                or (payload.get(codec.TENANT_FIELD), payload.get(codec.NAMESPACE_FIELD))
                != (scope.tenant_id, scope.namespace)
                or payload.get(codec.HASH_FIELD) != expected_hash
            ):
                detail = (
                    f"memory {memory_id} changed or was removed since the cluster was planned; "
                    "nothing changed (run compact again)"
                )
                return [], [self._result(item, CommandStatus.REJECTED, detail, **fields)]
            memories[memory_id] = codec.memory_from_payload(memory_id, payload, point.vector)

        keeper = memories[compact.keeper_id]
        members = [memories[m.memory_id] for m in compact.members]
        bands = self._engine.policy.bands_for(scope.namespace)
        now = self._clock()
        merged, fallback = await self._fold_cluster(
            keeper, members, compact, bands.merge_policy, now
        )
        points = [codec.memory_point(merged, self._dimension)]
        outputs: list[OutgoingRecord] = []
        for planned_member, member in zip(compact.members, members, strict=True):
            points.append(codec.redirect_point(member, keeper.memory_id, self._dimension))
            self._engine.recent.put(
                (scope.tenant_id, scope.namespace, member.content_hash), keeper.memory_id, partition
            )
            decision = Decision(planned_member.decision)
            threshold = (
                bands.duplicate_threshold if decision is Decision.SKIPPED else bands.merge_threshold
            )
            decision_event = MemoryDecisionEvent(
                decision_id=decision_id_for(f"compaction/{compact.run_id}/{member.memory_id}"),
                event_id=member.origin_event_id,
                tenant_id=scope.tenant_id,
                namespace=scope.namespace,
                decision=decision,
                reason=DecisionReason.COMPACTION,
                similarity=round(planned_member.similarity, 6),
                threshold=threshold,
                memory_id=merged.memory_id,
                memory_urn=memory_urn(scope.tenant_id, scope.namespace, merged.memory_id),
                memory=stored_memory(merged),
                checks=[],
                model=self._model_id,
                decided_at=now,
                record=RecordPosition(
                    topic=item.record.topic,
                    partition=item.record.partition,
                    offset=item.record.offset,
                ),
                content_hash=member.content_hash,
                superseded_memory_id=member.memory_id,
                merge_policy=bands.merge_policy if decision is Decision.MERGED else None,
                merge_fallback=fallback if decision is Decision.MERGED else None,
            )
            topic = self._topics.merged if decision is Decision.MERGED else self._topics.skipped
            outputs.append(self._record(topic, item, decision_event.model_dump_json()))
        removed = [m.memory_id for m in members]
        outputs.append(
            self._result(
                item,
                CommandStatus.APPLIED,
                f"{len(removed)} memories folded into {keeper.memory_id}",
                removed_memory_ids=removed,
                **fields,
            )
        )
        return points, outputs

    async def _fold_cluster(
        self,
        keeper: MemoryRecord,
        members: list[MemoryRecord],
        compact: CompactCommand,
        policy: str,
        now: datetime,
    ) -> tuple[MemoryRecord, Any]:
        """The keeper with every member folded in. Text: the keeper's, except
        replace_with_newer (the newest member's) and synthesize (the merger's, with
        replace_with_newer as its fallback)."""
        everyone = [keeper, *members]
        # Each member's texts: those it had folded in, then its own.
        member_texts: list[FoldedText] = []
        for member in members:
            member_texts += [*member.folded_texts, replaced_text(member)]
        merged_from = list(keeper.merged_from)
        for member in members:
            for source in [
                MergeSource(member.origin_event_id, member.memory_id),
                *member.merged_from,
            ]:
                if source not in merged_from:
                    merged_from.append(source)
        merged = replace(
            keeper,
            importance=max(m.importance for m in everyone),
            topics=latest(union(*(m.topics for m in everyone)), MAX_TOPICS),
            entities=latest(union(*(m.entities for m in everyone)), MAX_ENTITIES),
            merged_event_ids=latest(
                union(
                    keeper.merged_event_ids,
                    *([m.origin_event_id, *m.merged_event_ids] for m in members),
                )
            ),
            merged_from=latest(merged_from),
            folded_texts=keep_folded(keeper.folded_texts, member_texts, keeper.content_hash),
            seen_count=sum(m.seen_count for m in everyone),
            first_seen_at=min(m.first_seen_at or m.created_at for m in everyone),
            last_seen_at=max(m.last_seen_at or m.updated_at for m in everyone),
            updated_at=now,
        )
        fallback = None
        text_source: MemoryRecord | None = None
        content: str | None = None
        if policy == "replace_with_newer" and compact.text_source_id not in (
            None,
            keeper.memory_id,
        ):
            text_source = next(m for m in members if m.memory_id == compact.text_source_id)
        elif policy == "synthesize":
            merger = self._engine.merger
            try:
                if merger is None:
                    raise MergeFailed("no merger configured")
                content = keeper.content
                ordered = sorted(
                    members, key=lambda m: (m.last_seen_at or m.updated_at, m.memory_id)
                )
                for member in ordered:
                    content = await merger.merge(
                        MergeText(content, merged.last_seen_at or now),
                        MergeText(member.content, member.last_seen_at or member.updated_at),
                    )
            except MergeFailed as exc:
                log.warning("merge_fallback", memory_id=keeper.memory_id, error=str(exc))
                fallback = "replace_with_newer"
                content = None
                text_source = max(
                    members, key=lambda m: (m.last_seen_at or m.updated_at, m.memory_id)
                )
        if text_source is not None:
            content, vector = text_source.content, text_source.vector
        elif content is not None:
            [row] = await self._engine.embedder.embed([normalize_content(content)])
            vector = row.tolist()
        else:
            return merged, fallback
        new_hash = content_hash(normalize_content(content))
        if new_hash == keeper.content_hash:
            return merged, fallback
        return (
            replace(
                merged,
                content=content,
                content_hash=new_hash,
                supersedes=latest(union(keeper.supersedes, [keeper.content_hash])),
                folded_texts=keep_folded(
                    keeper.folded_texts, [replaced_text(keeper), *member_texts], new_hash
                ),
                vector=vector,
            ),
            fallback,
        )


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
