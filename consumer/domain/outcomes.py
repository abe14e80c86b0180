"""What each decision writes into the batch's plan: a skip bumps the match, a merge
folds the event into it by the namespace's merge policy, an accept stores a new memory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

import structlog

from consumer.domain.batch import BatchState
from consumer.domain.merge import (
    MergeFailed,
    Merger,
    MergeText,
    TextChoice,
    fold,
    folded_already,
    newer_text,
    policy_text,
    seen_again,
    union,
)
from consumer.domain.models import (
    Candidate,
    CheckRun,
    GuardHit,
    MemoryRecord,
    Outcome,
    ScoredMemory,
)
from consumer.domain.normalize import normalize_content
from consumer.domain.thresholds import Bands
from consumer.ports import Embedder
from schemas import CheckName, Decision, DecisionReason, MergePolicy

log = structlog.get_logger(__name__)


def new_memory(candidate: Candidate, now: datetime, *, vector: list[float] | None) -> MemoryRecord:
    """The memory an accepted event becomes."""
    event = candidate.event
    return MemoryRecord(
        memory_id=candidate.memory_id,
        tenant_id=event.tenant_id,
        namespace=event.namespace,
        content=event.content.strip(),
        content_hash=candidate.content_hash,
        importance=event.importance,
        topics=union(event.topics, []),
        entities=union(event.entities, []),
        merged_event_ids=[],
        origin_event_id=event.event_id,
        created_at=now,
        updated_at=now,
        vector=vector,
        first_seen_at=now,
        last_seen_at=now,
    )


class OutcomeWriter:
    """Builds one engine's outcomes (`DedupEngine`) and stages their writes."""

    def __init__(
        self,
        *,
        embedder: Embedder,
        merger: Merger | None,
        clock: Callable[[], datetime],
    ) -> None:
        self._embedder = embedder
        self._merger = merger
        self._clock = clock

    @property
    def merger(self) -> Merger | None:
        return self._merger

    def skip(
        self,
        candidate: Candidate,
        state: BatchState,
        memory: MemoryRecord,
        reason: DecisionReason,
        checks: list[CheckRun],
        *,
        similarity: float | None = None,
        threshold: float | None = None,
        veto: GuardHit | None = None,
    ) -> Outcome:
        """`memory` is the matched memory as it stands now (overlay first). The
        skip keeps its text and bumps its `seen_count` and `last_seen_at`: the
        matched memory is written with the batch, with the events skipped into it
        here (`skipped_event_ids`). A memory this event was merged or skipped into
        already (an earlier try of the batch stored the memory without the
        decision) is left as it is: the event is no new sighting."""
        now = self._clock()
        before = memory if reason is DecisionReason.SEMANTIC else None
        event_id = candidate.event.event_id
        skips = state.skips_into.get(memory.memory_id)
        if skips is None:
            # The first skip into it in this batch: its record is still the stored one.
            skips = state.skips_into[memory.memory_id] = (
                frozenset(memory.skipped_event_ids),
                [],
            )
        counted_before, skipped_here = skips
        skipped_here.append(event_id)
        if event_id in counted_before or folded_already(memory, event_id):
            seen = memory.copy()
        else:
            seen = seen_again(memory, now)
            seen.skipped_event_ids = list(skipped_here)
            state.plan.write_seen(seen)
        state.staged_recent[candidate.scoped_hash] = memory.memory_id
        return Outcome(
            candidate=candidate,
            decision=Decision.SKIPPED,
            reason=reason,
            memory=seen.copy(),
            similarity=similarity,
            threshold=threshold,
            checks=tuple(checks),
            decided_at=now,
            guard=veto,
            target_before=before,
        )

    async def merge(
        self,
        candidate: Candidate,
        state: BatchState,
        best: ScoredMemory,
        threshold: float | None,
        checks: list[CheckRun],
        bands: Bands,
        veto: GuardHit | None = None,
        *,
        keep_detail: bool = False,
    ) -> Outcome:
        """`keep_detail`: the new text is the stored fact plus a detail, so where
        the policy would keep the stored text the merge keeps the new, more
        detailed one instead."""
        now = self._clock()
        policy = bands.merge_policy
        if keep_detail and policy == "keep_existing":
            # The stored text would drop the detail; the other policies choose the
            # text by their own rule (importance, a merger).
            policy = "replace_with_newer"
        merged, fallback = await self._merged(policy, best.read(), candidate, now, state)
        state.plan.write(merged)
        state.staged_recent[candidate.scoped_hash] = merged.memory_id
        return Outcome(
            candidate=candidate,
            decision=Decision.MERGED,
            reason=DecisionReason.SEMANTIC,
            memory=merged.copy(),
            similarity=best.score,
            threshold=threshold,
            checks=tuple(checks),
            decided_at=now,
            guard=veto,
            merge_policy=policy,
            merge_fallback=fallback,
            target_before=best.read(),
        )

    def accept(
        self,
        candidate: Candidate,
        state: BatchState,
        checks: list[CheckRun],
        veto: GuardHit | None = None,
        skipped: tuple[CheckName, ...] = (),
    ) -> Outcome:
        now = self._clock()
        memory = new_memory(candidate, now, vector=state.vectors.get(candidate.normalized))
        state.plan.write(memory)
        if memory.vector is not None:
            state.new_in_scope.setdefault(candidate.scope, []).append(memory.memory_id)
        return _accepted(candidate, state, memory, checks, now, veto, skipped)

    def accept_stored(
        self,
        candidate: Candidate,
        state: BatchState,
        memory: MemoryRecord,
        checks: list[CheckRun],
    ) -> Outcome:
        """The accept of an event whose memory an earlier try stored without
        the decision (`memory`, as it stands now): the memory stays as it is."""
        return _accepted(candidate, state, memory, checks, self._clock())

    async def _merged(
        self,
        policy: MergePolicy,
        target: MemoryRecord,
        candidate: Candidate,
        now: datetime,
        state: BatchState,
    ) -> tuple[MemoryRecord, MergePolicy | None]:
        """`target` with `candidate` folded in by the namespace's merge policy
        (consumer.domain.merge), and the policy fallen back to, if any."""
        vector = state.vectors.get(candidate.normalized)
        fallback: MergePolicy | None = None
        text: TextChoice | None
        if policy == "synthesize":
            try:
                if self._merger is None:
                    raise MergeFailed("no merger configured")
                older = MergeText(target.content, target.last_seen_at or target.updated_at)
                newer = MergeText(candidate.event.content.strip(), candidate.occurred_at)
                content = await self._merger.merge(older, newer)
                text = TextChoice(content, normalize_content(content), None)
            except MergeFailed as exc:
                log.warning(
                    "merge_fallback",
                    event_id=candidate.event.event_id,
                    memory_id=target.memory_id,
                    policy=policy,
                    fallback="replace_with_newer",
                    error=str(exc),
                )
                text, fallback = newer_text(candidate, vector), "replace_with_newer"
        else:
            text = policy_text(policy, target, candidate, vector)
        if text is not None and text.vector is None:
            text = replace(text, vector=await self._vector_of(text.normalized, state))
        return fold(target, candidate, now, text), fallback

    async def _vector_of(self, normalized: str, state: BatchState) -> list[float]:
        """The vector of a text a merge wrote (combined or synthesized)."""
        if normalized not in state.vectors:
            [row] = await self._embedder.embed([normalized])
            state.keep_vector(normalized, row)
        return state.vectors[normalized]


def _accepted(
    candidate: Candidate,
    state: BatchState,
    memory: MemoryRecord,
    checks: list[CheckRun],
    now: datetime,
    veto: GuardHit | None = None,
    skipped: tuple[CheckName, ...] = (),
) -> Outcome:
    state.staged_recent[candidate.scoped_hash] = memory.memory_id
    return Outcome(
        candidate=candidate,
        decision=Decision.ACCEPTED,
        reason=DecisionReason.NEW,
        memory=memory.copy(),
        similarity=None,
        threshold=None,
        checks=tuple(checks),
        decided_at=now,
        guard=veto,
        skipped_checks=skipped,
    )
