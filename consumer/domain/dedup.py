"""The check pipeline: exact -> recent -> semantic, short-circuiting, per scope.

Checks run in that order so that neither an exact nor a recent repeat ever pays
for the model. A batch is decided as if its events arrived one by one: I/O is
batched (one lookup for all hashes, one model call, one batched search) and an
in-memory overlay carries the memories decided earlier in the same batch.

The engine runs the checks; beside it, `consumer.domain.batch` holds the batch's
overlay and the look-ahead, `consumer.domain.vetting` the vetoes on a match that
reaches a band, and `consumer.domain.outcomes` what each decision writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np

from consumer.domain.alignment import PairAligner
from consumer.domain.batch import (
    BatchState,
    Lookahead,
    elapsed_ms,
    ids_to_read,
    needing_embedding,
    read_ahead,
    texts_to_embed,
)
from consumer.domain.cross_verifier import CrossEncoderVerifier
from consumer.domain.merge import Merger, TextChoice, fold, newer_text, policy_text
from consumer.domain.models import (
    BatchPlan,
    Candidate,
    CheckRun,
    GuardHit,
    LostRace,
    Outcome,
    ScoredMemory,
    SimilarityQuery,
)
from consumer.domain.normalize import normalize_content
from consumer.domain.outcomes import OutcomeWriter, new_memory
from consumer.domain.recent import RecentCache, RecentEntry, ScopedHash
from consumer.domain.reviewed import ReviewedPairs
from consumer.domain.thresholds import Bands, ThresholdPolicy, lowest_band
from consumer.domain.verifier import Verifier
from consumer.domain.vetoes import related_kind
from consumer.domain.vetting import MatchVetter
from consumer.errors import EmbedderUnavailable
from consumer.ports import Embedder, MemoryStore
from schemas import CheckName, Decision, DecisionReason, MergePolicy

__all__ = ["DedupEngine", "Lookahead"]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class DedupEngine:
    def __init__(
        self,
        *,
        store: MemoryStore,
        embedder: Embedder,
        policy: ThresholdPolicy,
        recent: RecentCache,
        search_limit: int = 5,
        guards: bool = True,
        decide_without_model: bool = False,
        merger: Merger | None = None,
        reviewed: ReviewedPairs | None = None,
        verifier: Verifier | None = None,
        aligner: PairAligner | None = None,
        cross_encoder: CrossEncoderVerifier | None = None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        """`decide_without_model`: when the model fails, decide with exact and
        recent only and accept the rest as degraded (their memories are embedded
        once the model is back) instead of waiting for it. `merger`: writes the
        text of merges in namespaces whose merge policy is `synthesize` (without
        one, those merges fall back to replace_with_newer). `verifier`: judges each
        match that reaches a band and passes the guards (consumer.domain.verifier);
        "different fact" vetoes it like a guard; None: no verifier. `aligner`:
        aligns the parses of each such pair (consumer.domain.alignment): a changed
        value, role, tense or polarity vetoes it, and a skip of texts that are
        not equivalent becomes a merge (which keeps the new text).
        `cross_encoder`: after the verifier, vetoes a band match it finds a
        different fact, and rescues a match just below the merge band where a
        namespace's bands have a rescue threshold (consumer.domain.cross_verifier);
        None: neither."""
        self._vetter = MatchVetter(
            guards=guards,
            reviewed=reviewed or ReviewedPairs(),
            aligner=aligner,
            verifier=verifier,
            # Parses are primed for band matches only: a rescue candidate is parsed
            # when the cross-encoder has found it the same fact.
            full_matches_from=lowest_band(policy, rescue=False),
            cross_encoder=cross_encoder,
        )
        self._outcomes = OutcomeWriter(embedder=embedder, merger=merger, clock=clock)
        self._store = store
        self._embedder = embedder
        self._policy = policy
        self._full_matches_from = lowest_band(policy)
        self._recent = recent
        self._search_limit = search_limit
        self._decide_without_model = decide_without_model
        # Partitions that may hold memories accepted while the model was down.
        self._maybe_pending: set[int] = set()
        self._looked_for_pending: set[int] = set()
        self._clock = clock

    @property
    def recent(self) -> RecentCache:
        return self._recent

    @property
    def reviewed(self) -> ReviewedPairs:
        return self._vetter.reviewed

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def policy(self) -> ThresholdPolicy:
        return self._policy

    @property
    def merger(self) -> Merger | None:
        return self._outcomes.merger

    @property
    def verifier(self) -> Verifier | None:
        return self._vetter.verifier

    @property
    def cross_encoder(self) -> CrossEncoderVerifier | None:
        return self._vetter.cross_encoder

    @property
    def guards_enabled(self) -> bool:
        return self._vetter.guards_enabled

    async def look_ahead(
        self,
        partition: int,
        candidates: Sequence[Candidate],
        *,
        texts_per_segment: int | None = None,
    ) -> list[tuple[list[Candidate], Lookahead]]:
        """The look-ahead for these candidates, cut into segments
        (consumer.domain.batch.read_ahead). The caller must not write to the
        partition until `decide` has run."""
        return await read_ahead(
            self._store,
            self._embedder,
            self._recent,
            partition,
            candidates,
            texts_per_segment=texts_per_segment,
        )

    async def decide(
        self,
        partition: int,
        candidates: Sequence[Candidate],
        ahead: Lookahead | None = None,
    ) -> BatchPlan:
        """Decide candidates of one partition in order. Writes nothing: the caller
        stores `plan.writes`, then calls `commit`. `ahead`: from `look_ahead` for
        these candidates; used where it matches what this call needs."""
        try:
            return await self._decide(partition, candidates, ahead)
        finally:
            if ahead is not None:
                ahead.close()

    async def _decide(
        self, partition: int, candidates: Sequence[Candidate], ahead: Lookahead | None
    ) -> BatchPlan:
        plan = BatchPlan(partition=partition)
        if not candidates:
            return plan

        cached = {c.scoped_hash: self._recent.get(c.scoped_hash) for c in candidates}
        lookup_ids = ids_to_read(candidates, cached)
        if ahead is not None and lookup_ids <= ahead.memory_ids:
            stored = {i: m for i, m in ahead.stored.items() if i in lookup_ids}
            exact_ms = ahead.read_ms
        else:
            started = time.perf_counter()
            stored = await self._store.get_memories(partition, sorted(lookup_ids))
            exact_ms = elapsed_ms(started)
        state = BatchState(plan=plan, stored=stored, vectors={}, neighbours={})
        state.exact_ms = exact_ms

        # Pending memories first, so this batch is already compared with them.
        await self._embed_pending(partition, state)
        to_embed = needing_embedding(candidates, stored, cached)
        await self._embed_and_search(partition, to_embed, state, ahead)
        await self._vetter.prime(candidates, state)

        for candidate in candidates:
            plan.outcomes.append(await self._decide_one(partition, candidate, cached, state))
        return plan

    async def concurrent_winners(self, partition: int, plan: BatchPlan) -> list[LostRace]:
        """After a plan is stored: accepted memories that an equal memory, stored
        concurrently by another consumer, beats. The earlier memory wins (creation
        time, then id), so both consumers reach the same verdict. Only a store
        shared by consumers that may overlap (a rebalance, a mis-keyed producer)
        needs this; an embedded shard has one owner at a time."""
        accepted = [o for o in plan.outcomes if o.decision is Decision.ACCEPTED and o.memory.vector]
        if not accepted:
            return []
        queries = [
            SimilarityQuery(o.memory.scope, list(o.memory.vector or []), self._search_limit)
            for o in accepted
        ]
        found = await self._store.search(partition, queries)
        losers: list[LostRace] = []
        for outcome, neighbours in zip(accepted, found, strict=True):
            mine = outcome.memory
            bands = self._policy.bands_for(mine.namespace)
            for match in neighbours:
                if match.memory_id == mine.memory_id or match.memory_id in plan.writes:
                    continue
                if bands.classify(match.score)[0] is Decision.ACCEPTED:
                    break
                other = match.read()
                if (other.created_at, other.memory_id) >= (mine.created_at, mine.memory_id):
                    continue
                decision, threshold = await self._vetter.race_decision(
                    other, outcome.candidate, match.score, bands
                )
                if decision is Decision.ACCEPTED:
                    continue
                losers.append(LostRace(outcome, match, decision, threshold))
                break
        return losers

    def yield_to(self, lost: LostRace) -> Outcome:
        """The decision an accepted event gets when it lost a race to `lost.winner`."""
        outcome, winner, decision = lost.outcome, lost.winner, lost.decision
        bands = self._policy.bands_for(outcome.candidate.event.namespace)
        memory = winner.read()
        policy: MergePolicy | None = None
        fallback: MergePolicy | None = None
        if decision is Decision.MERGED:
            # Synchronous, rare path: no merger call and no model call here. A
            # synthesize policy falls back to replace_with_newer, and a combined
            # text (keep_higher_importance) keeps the winner's vector.
            policy = bands.merge_policy
            candidate = outcome.candidate
            text: TextChoice | None
            if policy == "synthesize":
                text, fallback = newer_text(candidate, outcome.memory.vector), "replace_with_newer"
            else:
                text = policy_text(policy, memory, candidate, outcome.memory.vector)
            memory = fold(memory, candidate, self._clock(), text)
        return replace(
            outcome,
            decision=decision,
            reason=DecisionReason.SEMANTIC,
            memory=memory,
            similarity=winner.score,
            threshold=lost.threshold,
            superseded_memory_id=outcome.memory.memory_id,
            merge_policy=policy,
            merge_fallback=fallback,
            target_before=winner.read(),
        )

    def fail_open(self, candidate: Candidate, skipped: tuple[CheckName, ...]) -> Outcome:
        """Decide without the store: a recent repeat is still skipped; anything
        else is accepted as degraded."""
        now = self._clock()
        entry = self._recent.get(candidate.scoped_hash)
        memory = new_memory(candidate, now, vector=None)
        if entry is not None:
            memory = replace(memory, memory_id=entry.memory_id)
        checks = (CheckRun(CheckName.RECENT, entry is not None, 0.0),)
        if entry is None:
            self._recent.put(candidate.scoped_hash, memory.memory_id, candidate.record.partition)
        return Outcome(
            candidate=candidate,
            decision=Decision.SKIPPED if entry else Decision.ACCEPTED,
            reason=DecisionReason.RECENT if entry else DecisionReason.NEW,
            memory=memory,
            similarity=None,
            threshold=None,
            checks=checks,
            decided_at=now,
            skipped_checks=skipped,
        )

    def commit(self, plan: BatchPlan) -> None:
        """Record a durable plan in the recent cache. Only after the store write:
        a retried batch must not see its own failed attempt."""
        for outcome in plan.outcomes:
            self._recent.put(
                outcome.candidate.scoped_hash, outcome.memory.memory_id, plan.partition
            )

    async def _embed_and_search(
        self,
        partition: int,
        candidates: Sequence[Candidate],
        state: BatchState,
        ahead: Lookahead | None = None,
    ) -> None:
        if not candidates:
            return
        if state.model_down:
            return
        started = time.perf_counter()
        texts = texts_to_embed(candidates)
        try:
            matrix = None if ahead is None else await ahead.vectors_for(texts)
            if matrix is None:
                matrix = await self._embedder.embed(texts)
        except EmbedderUnavailable:
            if not self._decide_without_model:
                raise
            state.model_down = True
            self._maybe_pending.add(partition)
            return
        for text, row in zip(texts, matrix, strict=True):
            state.keep_vector(text, row)
        queries = [
            SimilarityQuery(c.scope, state.vectors[c.normalized], self._search_limit)
            for c in candidates
        ]
        results = await self._store.search(partition, queries)
        for candidate, found in zip(candidates, results, strict=True):
            state.neighbours[candidate.event.event_id] = found
        state.semantic_ms = elapsed_ms(started)

    async def _vector_for(self, partition: int, candidate: Candidate, state: BatchState) -> None:
        """Rare path: a recent entry pointed at a memory that is gone."""
        if state.model_down:
            return
        if candidate.normalized not in state.vectors:
            await self._embed_and_search(partition, [candidate], state)
        elif candidate.event.event_id not in state.neighbours:
            query = SimilarityQuery(
                candidate.scope, state.vectors[candidate.normalized], self._search_limit
            )
            state.neighbours[candidate.event.event_id] = (
                await self._store.search(partition, [query])
            )[0]

    async def _decide_one(
        self,
        partition: int,
        candidate: Candidate,
        cached: dict[ScopedHash, RecentEntry | None],
        state: BatchState,
    ) -> Outcome:
        checks: list[CheckRun] = []
        key = candidate.scoped_hash

        # A memory of this very text accepted earlier in the batch is an exact
        # match too: a reason must not depend on where batches happen to split.
        exact = state.stored.get(candidate.memory_id) or state.plan.writes.get(candidate.memory_id)
        checks.append(CheckRun(CheckName.EXACT, exact is not None, state.exact_ms))
        if exact is not None:
            current = state.current(exact.memory_id) or exact
            if current.origin_event_id == candidate.event.event_id:
                # This event made the memory, but no decision of it is stored: a
                # changelog append lands its points in order, memories before
                # decisions, so a crash part-way can keep the one without the
                # other. Nothing was published then; it is accepted, as it was
                # meant to be, not announced as a skip into a memory nobody heard of.
                return self._outcomes.accept_stored(candidate, state, current, checks)
            return self._outcomes.skip(candidate, state, current, DecisionReason.EXACT, checks)

        started = time.perf_counter()
        recent_id = state.staged_recent.get(key)
        if recent_id is None and (entry := cached.get(key)) is not None:
            recent_id = entry.memory_id
        recent_memory = state.current(recent_id) if recent_id else None
        checks.append(CheckRun(CheckName.RECENT, recent_memory is not None, elapsed_ms(started)))
        if recent_memory is not None:
            return self._outcomes.skip(
                candidate, state, recent_memory, DecisionReason.RECENT, checks
            )

        await self._vector_for(partition, candidate, state)
        if candidate.normalized not in state.vectors:
            # Model down, deciding without it: accept, and say which check did not run.
            return self._outcomes.accept(candidate, state, checks, skipped=(CheckName.SEMANTIC,))
        matches = self._matches(candidate, state)
        bands = self._policy.bands_for(candidate.event.namespace)
        top_score = matches[0].score if matches else None
        chosen, decision, threshold, vetoes, alignment = await self._vetter.first_allowed(
            candidate, matches, bands
        )
        outcome = await self._semantic_outcome(
            candidate,
            state,
            checks,
            bands,
            (chosen, decision, threshold),
            vetoes,
            top_score,
            keep_detail=alignment is not None and alignment.detail_added,
        )
        # Every match kept apart for a changed fact, for downstream to mark the older
        # memory as possibly superseded (a reviewer's separation says nothing of that).
        related = tuple(hit for hit in vetoes if related_kind(hit.veto) is not None)
        return replace(outcome, related=related) if related else outcome

    async def _semantic_outcome(
        self,
        candidate: Candidate,
        state: BatchState,
        checks: list[CheckRun],
        bands: Bands,
        choice: tuple[ScoredMemory | None, Decision, float | None],
        vetoes: Sequence[GuardHit],
        top_score: float | None,
        *,
        keep_detail: bool = False,
    ) -> Outcome:
        chosen, decision, threshold = choice
        veto = vetoes[0] if vetoes else None
        checks.append(
            CheckRun(
                CheckName.SEMANTIC, decision is not Decision.ACCEPTED, state.semantic_ms, top_score
            )
        )
        if chosen is not None and decision is Decision.SKIPPED:
            return self._outcomes.skip(
                candidate,
                state,
                chosen.read(),
                DecisionReason.SEMANTIC,
                checks,
                similarity=chosen.score,
                threshold=threshold,
                veto=veto,
            )
        if chosen is not None and decision is Decision.MERGED:
            return await self._outcomes.merge(
                candidate, state, chosen, threshold, checks, bands, veto, keep_detail=keep_detail
            )
        return self._outcomes.accept(candidate, state, checks, veto)

    def _matches(self, candidate: Candidate, state: BatchState) -> list[ScoredMemory]:
        """Stored neighbours and memories accepted earlier in this batch, best first."""
        scored: dict[str, ScoredMemory] = {}
        for found in state.neighbours.get(candidate.event.event_id, []):
            memory = state.current(found.memory_id) or found.memory
            scored[found.memory_id] = ScoredMemory(memory, found.score, found.memory_id)
        in_batch = state.new_in_scope.get(candidate.scope, [])
        if in_batch:
            query = state.array_of(state.vectors[candidate.normalized])
            scores = state.scope_matrix(candidate.scope) @ query
            # As the store's search: below the lowest band only the best one counts
            # (for its score), so only it and those above become matches.
            wanted = set(np.flatnonzero(scores >= self._full_matches_from).tolist())
            wanted.add(int(np.argmax(scores)))
            for index in wanted:
                memory_id = in_batch[index]
                scored[memory_id] = ScoredMemory(state.plan.writes[memory_id], float(scores[index]))
        return sorted(scored.values(), key=lambda m: (-m.score, m.memory_id))

    async def _embed_pending(self, partition: int, state: BatchState) -> None:
        """Give memories accepted while the model was down their vectors, so
        later events are compared with them."""
        # Checked once per partition after start-up (pending ones may predate this
        # process), then only where this process accepted without the model.
        first_look = partition not in self._looked_for_pending
        if state.model_down or not (first_look or partition in self._maybe_pending):
            return
        self._looked_for_pending.add(partition)
        pending = await self._store.pending_memories(partition, 256)
        if not pending:
            self._maybe_pending.discard(partition)
            return
        try:
            matrix = await self._embedder.embed([normalize_content(m.content) for m in pending])
        except EmbedderUnavailable:
            self._maybe_pending.add(partition)
            if not self._decide_without_model:
                raise
            state.model_down = True
            return
        for memory, row in zip(pending, matrix, strict=True):
            current = state.plan.writes.get(memory.memory_id, memory)
            state.plan.write(replace(current, vector=row.tolist()))
            state.new_in_scope.setdefault(memory.scope, []).append(memory.memory_id)
