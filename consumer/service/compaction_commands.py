"""Compaction commands: a planned cluster folded into its keeper, each member's
id redirected to it, with a decision (`reason: compaction`) per member."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

import structlog

from consumer.domain.merge import (
    MergeFailed,
    MergeText,
    keep_folded,
    latest,
    replaced_text,
    union,
)
from consumer.domain.models import (
    FoldedText,
    MemoryRecord,
    MergeSource,
)
from consumer.domain.normalize import (
    content_hash,
    decision_id_for,
    normalize_content,
)
from consumer.kafka.records import OutgoingRecord
from consumer.service.command_handler import CommandHandler
from consumer.service.decisions import stored_memory
from consumer.service.validation import ParsedCommand
from consumer.state import codec
from schemas import (
    CommandStatus,
    CompactCommand,
    Decision,
    DecisionReason,
    MemoryDecisionEvent,
    RecordPosition,
    memory_urn,
)
from schemas.events import MAX_ENTITIES, MAX_TOPICS

log = structlog.get_logger(__name__)


class CompactionCommands(CommandHandler):
    async def compact(
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
