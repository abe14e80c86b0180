"""Review commands: confirming a decision, or reversing a semantic skip or merge
so the event's text stands as a memory of its own and the pair is never folded
together again."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from consumer.domain.descriptions import describe_decision
from consumer.domain.merge import unfold
from consumer.domain.models import (
    DecisionRecord,
    MemoryRecord,
)
from consumer.domain.normalize import (
    memory_id_for,
    normalize_content,
)
from consumer.kafka.records import OutgoingRecord
from consumer.service.command_handler import CommandHandler
from consumer.service.decisions import stored_memory
from consumer.service.validation import ParsedCommand
from consumer.state import codec
from schemas import (
    CommandStatus,
    Decision,
    DecisionReason,
    MemoryDecisionEvent,
    MemoryReversed,
    ReviewAction,
    ReviewCommand,
    ReviewStatus,
)


class ReviewCommands(CommandHandler):
    async def review(
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
