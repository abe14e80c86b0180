"""The check pipeline: exact -> recent -> semantic, short-circuiting, per scope.

Checks run in that order so that neither an exact nor a recent repeat ever pays
for the model. A batch is decided as if its events arrived one by one: I/O is
batched (one lookup for all hashes, one model call, one batched search) and an
in-memory overlay carries the memories decided earlier in the same batch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import structlog

from consumer.domain.alignment import Alignment, PairAligner
from consumer.domain.guards import check_pair
from consumer.domain.merge import (
    MergeFailed,
    Merger,
    MergeText,
    TextChoice,
    fold,
    newer_text,
    policy_text,
    seen_again,
    union,
)
from consumer.domain.models import (
    BatchPlan,
    Candidate,
    CheckRun,
    GuardHit,
    MemoryRecord,
    Outcome,
    Scope,
    ScoredMemory,
    SimilarityQuery,
)
from consumer.domain.normalize import normalize_content
from consumer.domain.recent import RecentCache, RecentEntry, ScopedHash
from consumer.domain.reviewed import ReviewedPairs
from consumer.domain.thresholds import Bands, ThresholdPolicy, lowest_band
from consumer.domain.verifier import Verifier
from consumer.domain.vetoes import GuardName, GuardVeto, related_kind
from consumer.errors import EmbedderUnavailable
from consumer.ports import Embedder, MemoryStore, Vectors
from schemas import CheckName, Decision, DecisionReason, MergePolicy

log = structlog.get_logger(__name__)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _lookup_ids(
    candidates: Sequence[Candidate], cached: dict[ScopedHash, RecentEntry | None]
) -> set[str]:
    """Memory ids the exact and recent checks read: each text's own id and the
    memory a recent entry points at."""
    ids = {c.memory_id for c in candidates}
    ids.update(entry.memory_id for entry in cached.values() if entry is not None)
    return ids


def _texts(candidates: Sequence[Candidate]) -> list[str]:
    """What the model embeds for these candidates: each normalised text once."""
    return list(dict.fromkeys(c.normalized for c in candidates))


def _elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def _new_memory(candidate: Candidate, now: datetime, *, vector: list[float] | None) -> MemoryRecord:
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


class Lookahead:
    """What deciding a partition's candidates first reads and embeds, done while
    the partition before it is decided and written (the model runs meanwhile).

    `decide` uses the reads only if it needs no other memory ids, and the vectors
    only if it embeds exactly `texts`: an int8 model's vector of a text depends
    on the texts embedded with it."""

    def __init__(
        self,
        *,
        memory_ids: frozenset[str],
        stored: dict[str, MemoryRecord],
        texts: list[str],
        vectors: asyncio.Future[Vectors] | None,
        read_ms: float,
    ) -> None:
        self.memory_ids = memory_ids
        self.stored = stored
        self.texts = texts
        self.vectors = vectors
        self.read_ms = read_ms

    async def vectors_for(self, texts: list[str]) -> Vectors | None:
        """The outcome of the model call if `texts` are the ones embedded (its
        failure is raised: it is the failure the caller's own call would meet);
        None tells the caller to embed itself."""
        vectors, self.vectors = self.vectors, None
        if vectors is None:
            return None
        if texts != self.texts:
            discard(vectors)
            return None
        return await vectors

    def close(self) -> None:
        if self.vectors is not None:
            discard(self.vectors)
            self.vectors = None


def discard(future: asyncio.Future[Any]) -> None:
    """Cancel a future nobody will await, and keep its failure from being
    reported as never retrieved."""
    future.cancel()
    future.add_done_callback(lambda done: done.cancelled() or done.exception())


@dataclass(slots=True)
class _BatchState:
    """What the batch has decided so far, before it is durable."""

    plan: BatchPlan
    stored: dict[str, MemoryRecord]
    vectors: dict[str, list[float]]
    neighbours: dict[str, list[ScoredMemory]]
    staged_recent: dict[ScopedHash, str] = field(default_factory=dict)
    new_in_scope: dict[Scope, list[str]] = field(default_factory=dict)
    exact_ms: float = 0.0
    semantic_ms: float = 0.0
    # The model failed and the engine may decide without it (opt-in).
    model_down: bool = False
    # float32 arrays of vector lists, by the list's id (the list is kept with it, so
    # an id reused by another list is never mistaken for it).
    arrays: dict[int, tuple[list[float], Any]] = field(default_factory=dict)
    # new_in_scope's vectors as one matrix per scope, grown as memories are accepted.
    scope_rows: dict[Scope, _ScopeRows] = field(default_factory=dict)
    # Where each memory's row is, and how much of plan.rewritten the rows reflect.
    row_of: dict[str, tuple[_ScopeRows, int]] = field(default_factory=dict)
    rewrites_seen: int = 0

    def current(self, memory_id: str) -> MemoryRecord | None:
        return self.plan.writes.get(memory_id) or self.stored.get(memory_id)

    def keep_vector(self, text: str, row: Any) -> list[float]:
        """A model row as the list memories carry, remembering the row itself."""
        vector: list[float] = row.tolist()
        self.vectors[text] = vector
        self.arrays[id(vector)] = (vector, np.asarray(row, dtype=np.float32))
        return vector

    def array_of(self, vector: list[float]) -> Any:
        cached = self.arrays.get(id(vector))
        if cached is not None and cached[0] is vector:
            return cached[1]
        array = np.asarray(vector, dtype=np.float32)
        self.arrays[id(vector)] = (vector, array)
        return array

    def scope_matrix(self, scope: Scope) -> Any:
        """The current vectors of the memories accepted in `scope` so far in this
        batch, one row each in new_in_scope's order. A row is refreshed when its
        memory's vector was replaced since (a merge into it took a new text).

        Only rows added or written since the last call are looked at, so a hot
        scope's matrix costs O(1) per decision instead of O(rows)."""
        writes = self.plan.writes
        rewritten = self.plan.rewritten
        for memory_id in rewritten[self.rewrites_seen :]:
            placed = self.row_of.get(memory_id)
            if placed is not None:
                placed_rows, index = placed
                vector = writes[memory_id].vector
                assert vector is not None
                if placed_rows.sources[index] is not vector:
                    placed_rows.sources[index] = vector
                    placed_rows.matrix[index] = self.array_of(vector)
        self.rewrites_seen = len(rewritten)
        memory_ids = self.new_in_scope[scope]
        rows = self.scope_rows.get(scope)
        if rows is None:
            rows = self.scope_rows[scope] = _ScopeRows()
        for index in range(len(rows.sources), len(memory_ids)):
            memory_id = memory_ids[index]
            vector = writes[memory_id].vector
            assert vector is not None
            rows.append(vector, self.array_of(vector))
            self.row_of[memory_id] = (rows, index)
        return rows.matrix[: len(memory_ids)]


@dataclass(slots=True)
class _ScopeRows:
    """Rows of a matrix with spare capacity, and the vector list each row is of."""

    sources: list[list[float]] = field(default_factory=list)
    matrix: Any = None

    def append(self, vector: list[float], row: Any) -> None:
        count = len(self.sources)
        if self.matrix is None or count == len(self.matrix):
            grown = np.empty((max(16, 2 * count), len(row)), dtype=np.float32)
            if self.matrix is not None:
                grown[:count] = self.matrix
            self.matrix = grown
        self.matrix[count] = row
        self.sources.append(vector)


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
        not equivalent becomes a merge (which keeps the new text)."""
        self._aligner = aligner
        self._merger = merger
        self._verifier = verifier
        # Pairs a reviewer separated; loaded per partition by the caller
        # (consumer.review.load_reviewed_pairs) before the partition is decided.
        self._reviewed = reviewed or ReviewedPairs()
        self._store = store
        self._embedder = embedder
        self._policy = policy
        self._full_matches_from = lowest_band(policy)
        self._recent = recent
        self._search_limit = search_limit
        self._guards = guards
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
        return self._reviewed

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def policy(self) -> ThresholdPolicy:
        return self._policy

    @property
    def merger(self) -> Merger | None:
        return self._merger

    @property
    def verifier(self) -> Verifier | None:
        return self._verifier

    @property
    def guards_enabled(self) -> bool:
        return self._guards

    async def look_ahead(
        self,
        partition: int,
        candidates: Sequence[Candidate],
        *,
        texts_per_segment: int | None = None,
    ) -> list[tuple[list[Candidate], Lookahead]]:
        """Read what `decide` will read for these candidates and start embedding
        what it will embed, as far as can be told before the partitions decided
        first are committed (their recent-cache entries are of other scopes, so
        only an eviction can make `decide` want something else). The caller must
        not write to the partition until `decide` has run.

        The candidates are cut, in order, into segments with at most
        `texts_per_segment` texts to embed each (None: one segment), to be decided
        and written one after the other: the model embeds a segment while the one
        before it is decided and written (one call per segment, all started now, in
        order). Candidates the model is not needed for (stored, recent, repeated)
        do not count, so a batch of repeats stays one segment. A later segment's
        reads are not kept (`decide` reads again, after the earlier writes), and a
        text repeating an earlier segment's is not embedded (it will be found
        stored)."""
        limit = texts_per_segment or max(1, len(candidates))
        cached = {c.scoped_hash: self._recent.peek(c.scoped_hash) for c in candidates}
        memory_ids = _lookup_ids(candidates, cached)
        started = time.perf_counter()
        stored = await self._store.get_memories(partition, sorted(memory_ids))
        read_ms = _elapsed_ms(started)
        cuts: list[tuple[list[Candidate], list[Candidate]]] = [([], [])]
        seen: set[ScopedHash] = set()
        for candidate in candidates:
            key = candidate.scoped_hash
            needs_model = not (
                key in seen or candidate.memory_id in stored or cached.get(key) is not None
            )
            seen.add(key)
            part, needing = cuts[-1]
            if needs_model and len(needing) == limit:
                part, needing = [], []
                cuts.append((part, needing))
            part.append(candidate)
            if needs_model:
                needing.append(candidate)
        segments: list[tuple[list[Candidate], Lookahead]] = []
        for number, (part, needing) in enumerate(cuts):
            texts = _texts(needing)
            vectors = asyncio.ensure_future(self._embedder.embed(texts)) if texts else None
            first = number == 0
            lookahead = Lookahead(
                memory_ids=frozenset(memory_ids if first else ()),
                stored=stored if first else {},
                texts=texts,
                vectors=vectors,
                read_ms=read_ms if first else 0.0,
            )
            segments.append((part, lookahead))
        return segments

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
        lookup_ids = _lookup_ids(candidates, cached)
        if ahead is not None and lookup_ids <= ahead.memory_ids:
            stored = {i: m for i, m in ahead.stored.items() if i in lookup_ids}
            exact_ms = ahead.read_ms
        else:
            started = time.perf_counter()
            stored = await self._store.get_memories(partition, sorted(lookup_ids))
            exact_ms = _elapsed_ms(started)
        state = _BatchState(plan=plan, stored=stored, vectors={}, neighbours={})
        state.exact_ms = exact_ms

        # Pending memories first, so this batch is already compared with them.
        await self._embed_pending(partition, state)
        to_embed = self._needing_embedding(candidates, stored, cached)
        await self._embed_and_search(partition, to_embed, state, ahead)
        await self._prime_alignment(candidates, state)

        for candidate in candidates:
            plan.outcomes.append(await self._decide_one(partition, candidate, cached, state))
        return plan

    async def concurrent_winners(
        self, partition: int, plan: BatchPlan
    ) -> list[tuple[Outcome, ScoredMemory]]:
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
        losers: list[tuple[Outcome, ScoredMemory]] = []
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
                if self._guards and check_pair(other.content, outcome.candidate.event.content):
                    continue
                alignment = await self._alignment(other.content, outcome.candidate.event.content)
                if alignment is not None and alignment.veto is not None:
                    continue
                if await self._verifier_veto(other, outcome.candidate, match.score):
                    continue
                losers.append((outcome, match))
                break
        return losers

    def yield_to(self, outcome: Outcome, winner: ScoredMemory) -> Outcome:
        """The decision an accepted event gets when it lost a race to `winner`."""
        bands = self._policy.bands_for(outcome.candidate.event.namespace)
        decision, threshold = bands.classify(winner.score)
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
            threshold=threshold,
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
        memory = _new_memory(candidate, now, vector=None)
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

    def _needing_embedding(
        self,
        candidates: Sequence[Candidate],
        stored: dict[str, MemoryRecord],
        cached: dict[ScopedHash, RecentEntry | None],
    ) -> list[Candidate]:
        seen: set[ScopedHash] = set()
        needing: list[Candidate] = []
        for candidate in candidates:
            key = candidate.scoped_hash
            repeat = key in seen
            seen.add(key)
            if repeat or candidate.memory_id in stored or cached.get(key) is not None:
                continue
            needing.append(candidate)
        return needing

    async def _embed_and_search(
        self,
        partition: int,
        candidates: Sequence[Candidate],
        state: _BatchState,
        ahead: Lookahead | None = None,
    ) -> None:
        if not candidates:
            return
        if state.model_down:
            return
        started = time.perf_counter()
        texts = _texts(candidates)
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
        state.semantic_ms = _elapsed_ms(started)

    async def _vector_for(self, partition: int, candidate: Candidate, state: _BatchState) -> None:
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
        state: _BatchState,
    ) -> Outcome:
        checks: list[CheckRun] = []
        key = candidate.scoped_hash

        # A memory of this very text accepted earlier in the batch is an exact
        # match too: a reason must not depend on where batches happen to split.
        exact = state.stored.get(candidate.memory_id) or state.plan.writes.get(candidate.memory_id)
        checks.append(CheckRun(CheckName.EXACT, exact is not None, state.exact_ms))
        if exact is not None:
            current = state.current(exact.memory_id) or exact
            return self._skip(candidate, state, current, DecisionReason.EXACT, checks)

        started = time.perf_counter()
        recent_id = state.staged_recent.get(key)
        if recent_id is None and (entry := cached.get(key)) is not None:
            recent_id = entry.memory_id
        recent_memory = state.current(recent_id) if recent_id else None
        checks.append(CheckRun(CheckName.RECENT, recent_memory is not None, _elapsed_ms(started)))
        if recent_memory is not None:
            return self._skip(candidate, state, recent_memory, DecisionReason.RECENT, checks)

        await self._vector_for(partition, candidate, state)
        if candidate.normalized not in state.vectors:
            # Model down, deciding without it: accept, and say which check did not run.
            return self._accept(candidate, state, checks, skipped=(CheckName.SEMANTIC,))
        matches = self._matches(candidate, state)
        bands = self._policy.bands_for(candidate.event.namespace)
        top_score = matches[0].score if matches else None
        chosen, decision, threshold, vetoes, alignment = await self._first_allowed(
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
        state: _BatchState,
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
            return self._skip(
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
            return await self._merge(
                candidate, state, chosen, threshold, checks, bands, veto, keep_detail=keep_detail
            )
        return self._accept(candidate, state, checks, veto)

    async def _first_allowed(
        self, candidate: Candidate, matches: Sequence[ScoredMemory], bands: Bands
    ) -> tuple[ScoredMemory | None, Decision, float | None, list[GuardHit], Alignment | None]:
        """The best match that reaches a band and that neither a guard nor the
        verifier vetoes. A vetoed pair is treated as below threshold, and the next
        match is tried."""
        vetoes: list[GuardHit] = []
        for match in matches:
            decision, threshold = bands.classify(match.score)
            if decision is Decision.ACCEPTED:
                break
            memory = match.read()
            veto = self._reviewed_veto(candidate, memory) or (
                check_pair(memory.content, candidate.event.content) if self._guards else None
            )
            alignment = None
            if veto is None:
                alignment = await self._alignment(memory.content, candidate.event.content)
                veto = alignment.veto if alignment is not None else None
            if veto is None:
                veto = await self._verifier_veto(memory, candidate, match.score)
            if veto is None:
                if alignment is not None:
                    decision, threshold = bands.after_alignment(
                        decision,
                        threshold,
                        equivalent=alignment.equivalent,
                        detail_added=alignment.detail_added,
                    )
                    if decision is Decision.ACCEPTED:  # kept apart by the namespace
                        return None, decision, threshold, vetoes, alignment
                return match, decision, threshold, vetoes, alignment
            vetoes.append(GuardHit(veto, memory.memory_id, match.score))
        return None, Decision.ACCEPTED, None, vetoes, None

    async def _prime_alignment(self, candidates: Sequence[Candidate], state: _BatchState) -> None:
        """Parse, in one batch, the texts of every candidate whose stored neighbour
        reaches a band, and those neighbours' texts: the pairs the alignment will
        judge (a later in-batch match is parsed when it comes)."""
        if self._aligner is None:
            return
        texts: list[str] = []
        for candidate in candidates:
            for found in state.neighbours.get(candidate.event.event_id, []):
                if found.memory is None or found.score < self._full_matches_from:
                    continue
                texts += [found.memory.content, candidate.event.content]
        texts += self._close_in_batch(candidates, state)
        if texts:
            await asyncio.to_thread(self._aligner.prime, texts)

    def _close_in_batch(self, candidates: Sequence[Candidate], state: _BatchState) -> list[str]:
        """Texts of candidates that reach a band with another candidate of their
        scope in this batch (one may become the other's in-batch match)."""
        by_scope: dict[Scope, list[Candidate]] = {}
        for candidate in candidates:
            if candidate.normalized in state.vectors:
                by_scope.setdefault(candidate.scope, []).append(candidate)
        texts: list[str] = []
        for members in by_scope.values():
            if len(members) < 2:
                continue
            matrix = np.asarray([state.vectors[c.normalized] for c in members], dtype=np.float32)
            close = (matrix @ matrix.T) >= self._full_matches_from
            np.fill_diagonal(close, False)
            texts += [c.event.content for c, row in zip(members, close, strict=True) if row.any()]
        return texts

    async def _alignment(self, existing: str, new: str) -> Alignment | None:
        """The parse alignment of a band candidate, parsed in a worker thread."""
        if self._aligner is None:
            return None
        if self._aligner.has_parsed(existing, new):
            return self._aligner.check(existing, new)  # no parse left: tens of microseconds
        return await asyncio.to_thread(self._aligner.check, existing, new)

    async def _verifier_veto(
        self, memory: MemoryRecord, candidate: Candidate, similarity: float
    ) -> GuardVeto | None:
        """The verifier's "different fact" as a veto; None when it agrees or is off."""
        if self._verifier is None:
            return None
        verdict = await self._verifier.verify(memory.content, candidate.event.content, similarity)
        if verdict.same_fact:
            return None
        return GuardVeto(GuardName.VERIFIER, f"{verdict.source}: {verdict.detail}"[:199])

    def _reviewed_veto(self, candidate: Candidate, memory: MemoryRecord) -> GuardVeto | None:
        if self._reviewed.separated(candidate.scope, candidate.content_hash, memory.content_hash):
            return GuardVeto(GuardName.REVIEWED_PAIR, "a reviewer reversed a decision on this pair")
        return None

    def _matches(self, candidate: Candidate, state: _BatchState) -> list[ScoredMemory]:
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

    def _skip(
        self,
        candidate: Candidate,
        state: _BatchState,
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
        matched memory is written with the batch."""
        now = self._clock()
        seen = seen_again(memory, now)
        before = memory if reason is DecisionReason.SEMANTIC else None
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

    async def _merge(
        self,
        candidate: Candidate,
        state: _BatchState,
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

    async def _embed_pending(self, partition: int, state: _BatchState) -> None:
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

    async def _merged(
        self,
        policy: MergePolicy,
        target: MemoryRecord,
        candidate: Candidate,
        now: datetime,
        state: _BatchState,
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

    async def _vector_of(self, normalized: str, state: _BatchState) -> list[float]:
        """The vector of a text a merge wrote (combined or synthesized)."""
        if normalized not in state.vectors:
            [row] = await self._embedder.embed([normalized])
            state.keep_vector(normalized, row)
        return state.vectors[normalized]

    def _accept(
        self,
        candidate: Candidate,
        state: _BatchState,
        checks: list[CheckRun],
        veto: GuardHit | None = None,
        skipped: tuple[CheckName, ...] = (),
    ) -> Outcome:
        now = self._clock()
        memory = _new_memory(candidate, now, vector=state.vectors.get(candidate.normalized))
        state.plan.write(memory)
        if memory.vector is not None:
            state.new_in_scope.setdefault(candidate.scope, []).append(memory.memory_id)
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
