"""One batch being decided: what deciding it reads and embeds ahead (the look-ahead,
cut into segments) and what it has decided so far, before it is durable."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from consumer.domain.models import BatchPlan, Candidate, MemoryRecord, Scope, ScoredMemory
from consumer.domain.recent import RecentCache, RecentEntry, ScopedHash
from consumer.ports import Embedder, MemoryStore, Vectors


def ids_to_read(
    candidates: Sequence[Candidate], cached: dict[ScopedHash, RecentEntry | None]
) -> set[str]:
    """Memory ids the exact and recent checks read: each text's own id and the
    memory a recent entry points at."""
    ids = {c.memory_id for c in candidates}
    ids.update(entry.memory_id for entry in cached.values() if entry is not None)
    return ids


def texts_to_embed(candidates: Sequence[Candidate]) -> list[str]:
    """What the model embeds for these candidates: each normalised text once."""
    return list(dict.fromkeys(c.normalized for c in candidates))


def elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def needing_embedding(
    candidates: Sequence[Candidate],
    stored: dict[str, MemoryRecord],
    cached: dict[ScopedHash, RecentEntry | None],
) -> list[Candidate]:
    """The candidates the model is needed for: not stored, not recent, not a repeat."""
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


async def read_ahead(
    store: MemoryStore,
    embedder: Embedder,
    recent: RecentCache,
    partition: int,
    candidates: Sequence[Candidate],
    *,
    texts_per_segment: int | None = None,
) -> list[tuple[list[Candidate], Lookahead]]:
    """Read what `DedupEngine.decide` will read for these candidates and start embedding
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
    cached = {c.scoped_hash: recent.peek(c.scoped_hash) for c in candidates}
    memory_ids = ids_to_read(candidates, cached)
    started = time.perf_counter()
    stored = await store.get_memories(partition, sorted(memory_ids))
    read_ms = elapsed_ms(started)
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
        texts = texts_to_embed(needing)
        vectors = asyncio.ensure_future(embedder.embed(texts)) if texts else None
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


@dataclass(slots=True)
class BatchState:
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
    scope_rows: dict[Scope, ScopeRows] = field(default_factory=dict)
    # Where each memory's row is, and how much of plan.rewritten the rows reflect.
    row_of: dict[str, tuple[ScopeRows, int]] = field(default_factory=dict)
    rewrites_seen: int = 0
    # Per memory skipped into in this batch: the events its stored record says an
    # earlier try of this batch counted already, and the events skipped into it here.
    skips_into: dict[str, tuple[frozenset[str], list[str]]] = field(default_factory=dict)

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
            rows = self.scope_rows[scope] = ScopeRows()
        for index in range(len(rows.sources), len(memory_ids)):
            memory_id = memory_ids[index]
            vector = writes[memory_id].vector
            assert vector is not None
            rows.append(vector, self.array_of(vector))
            self.row_of[memory_id] = (rows, index)
        return rows.matrix[: len(memory_ids)]


@dataclass(slots=True)
class ScopeRows:
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
