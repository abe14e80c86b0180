"""Compaction commands: a planned cluster folded into its keeper, each member's
id redirected to it, with a decision (`reason: compaction`) per member."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
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
    Scope,
)
from consumer.domain.normalize import (
    content_hash,
    decision_id_for,
    normalize_content,
)
from consumer.domain.thresholds import Bands
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


@dataclass(frozen=True, slots=True)
class FoldedMember:
    """What a member's decision names: its id, its text's hash and the event that
    made it."""

    memory_id: str
    content_hash: str
    origin_event_id: str


class CompactionCommands(CommandHandler):
    async def compact(
        self, partition: int, item: ParsedCommand, compact: CompactCommand
    ) -> tuple[list[codec.RawPoint], list[OutgoingRecord]]:
        scope = item.scope
        fields: dict[str, Any] = {"run_id": compact.run_id, "keeper_id": compact.keeper_id}
        planned = {compact.keeper_id: compact.keeper_hash}
        planned.update({m.memory_id: m.content_hash for m in compact.members})
        found = await self._store.get_points(partition, list(planned))
        bands = self._engine.policy.bands_for(scope.namespace)
        now = self._clock()
        finished = folded_by_an_earlier_try(scope, compact, found)
        if finished is not None:
            # The keeper stored already holds every member: it is not folded again
            # (that would count the members' sightings twice).
            keeper, folded = finished
            live = [
                codec.memory_from_payload(m.memory_id, found[m.memory_id].payload, None)
                for m in folded
                if codec.is_memory(found[m.memory_id].payload)
            ]
            log.info(
                "compaction_completed_after_an_interrupted_try",
                run_id=compact.run_id,
                keeper_id=keeper.memory_id,
                members_left=len(live),
            )
            # The keeper is stored already: only the redirects left are written.
            return self._emit(
                partition, item, compact, keeper, None, folded, live, bands, now, fields
            )
        memories: dict[str, MemoryRecord] = {}
        for memory_id, expected_hash in planned.items():
            point = found.get(memory_id)
            payload = point.payload if point is not None else {}
            if (
                point is None
                or payload.get(codec.KIND_FIELD) != codec.MEMORY_KIND
                or not _in_scope(payload, scope)
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
        merged, fallback = await self._fold_cluster(
            keeper, members, compact, bands.merge_policy, now
        )
        folded = [FoldedMember(m.memory_id, m.content_hash, m.origin_event_id) for m in members]
        # The keeper first: an append cut short never redirects a member to a keeper
        # without its text.
        redirects, outputs = self._emit(
            partition, item, compact, merged, fallback, folded, members, bands, now, fields
        )
        return [codec.memory_point(merged, self._dimension), *redirects], outputs

    def _emit(
        self,
        partition: int,
        item: ParsedCommand,
        compact: CompactCommand,
        merged: MemoryRecord,
        fallback: Any,
        folded: list[FoldedMember],
        to_redirect: list[MemoryRecord],
        bands: Bands,
        now: datetime,
        fields: dict[str, Any],
    ) -> tuple[list[codec.RawPoint], list[OutgoingRecord]]:
        """A redirect to the keeper `merged` for each member in `to_redirect`, a
        decision per member and the result."""
        scope = item.scope
        points = [
            codec.redirect_point(member, merged.memory_id, self._dimension)
            for member in to_redirect
        ]
        outputs: list[OutgoingRecord] = []
        for planned_member, member in zip(compact.members, folded, strict=True):
            self._engine.recent.put(
                (scope.tenant_id, scope.namespace, member.content_hash), merged.memory_id, partition
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
        removed = [m.memory_id for m in folded]
        outputs.append(
            self._result(
                item,
                CommandStatus.APPLIED,
                f"{len(removed)} memories folded into {merged.memory_id}",
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
        # The members' lineages, then each member's own entry: the lineage keeps
        # its newest entries, and a cluster (at most LINEAGE_LIMIT members) keeps
        # every member's own, which a redelivered command reads to see that the
        # stored keeper already holds the cluster (`folded_by_an_earlier_try`).
        merged_from = list(keeper.merged_from)
        for source in [
            *(source for member in members for source in member.merged_from),
            *(MergeSource(member.origin_event_id, member.memory_id) for member in members),
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


def folded_by_an_earlier_try(
    scope: Scope, compact: CompactCommand, found: Mapping[str, codec.RawPoint]
) -> tuple[MemoryRecord, list[FoldedMember]] | None:
    """The stored keeper and the planned members, when an earlier try of this
    cluster stored its keeper and then was cut short (a changelog append lands its
    points in order): the keeper's text is the planned one or replaced it, its
    lineage names each member with the event that made it, and each member is
    still as planned or already redirected to the keeper. Otherwise None."""
    point = found.get(compact.keeper_id)
    if point is None or not _in_scope(point.payload, scope) or not codec.is_memory(point.payload):
        return None
    keeper = codec.memory_from_payload(compact.keeper_id, point.payload, point.vector)
    if compact.keeper_hash not in (keeper.content_hash, *keeper.supersedes):
        return None
    sources = {(s.memory_id, s.event_id) for s in keeper.merged_from}
    origins = {s.memory_id: s.event_id for s in keeper.merged_from}
    folded: list[FoldedMember] = []
    for planned in compact.members:
        member = found.get(planned.memory_id)
        if member is None or planned.memory_id not in origins:
            return None
        payload = member.payload
        if not _in_scope(payload, scope) or payload.get(codec.HASH_FIELD) != planned.content_hash:
            return None
        if codec.is_memory(payload):
            # A live member counts only if the keeper names the event that made it,
            # not another event whose text had this member's id.
            origin = str(payload["origin_event_id"])
            if (planned.memory_id, origin) not in sources:
                return None
        elif codec.redirect_target(payload) == keeper.memory_id:
            origin = origins[planned.memory_id]
        else:
            return None
        folded.append(FoldedMember(planned.memory_id, planned.content_hash, origin))
    return keeper, folded


def _in_scope(payload: Mapping[str, Any], scope: Scope) -> bool:
    return (payload.get(codec.TENANT_FIELD), payload.get(codec.NAMESPACE_FIELD)) == (
        scope.tenant_id,
        scope.namespace,
    )
