"""Duplicate clusters among the stored memories of one scope.

Steps, all pure and deterministic (the input is sorted by memory id first, so the
same memories in any order give the same result):

1. Nearest neighbours of every memory by cosine similarity (float32 matrix
   products, a block of rows at a time, so a scope of 100k memories never builds
   its full similarity matrix).
2. Candidate pairs: neighbour pairs at or above the merge threshold. A pair veto
   (guards, reviewed pairs, a verifier) keeps a pair apart for good.
3. Complete linkage: candidate pairs are joined by descending similarity, and two
   clusters join only when *every* pair across them reaches the merge threshold
   and none is vetoed. Single linkage (union-find over pairs) would chain
   A~B~C into one "mega-memory" although A and C say different things.
4. A keeper per cluster, chosen by the namespace's merge policy; the other members
   are removed into it as skipped (>= duplicate threshold) or merged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Final

import numpy as np
import numpy.typing as npt

from consumer.domain.guards import check_pair
from consumer.domain.models import MemoryRecord, Scope
from consumer.domain.thresholds import Bands
from schemas import Decision

__all__ = [
    "Cluster",
    "ClusterMember",
    "PairVeto",
    "ScopeAnalysis",
    "analyse_scope",
    "guard_pair_veto",
    "nearest_neighbours",
]

PairVeto = Callable[[MemoryRecord, MemoryRecord], str | None]
"""Returns why two memories must not be merged (a reason name such as a guard
name, "reviewed_pair" or "verifier"), or None when they may be. Called with the
older memory first (by created_at, then memory_id)."""

Matrix = npt.NDArray[np.float32]
Indices = npt.NDArray[np.intp]

# Upper bound on the rows of one block of the similarity matrix.
DEFAULT_BLOCK_ROWS: Final = 2048
# A block holds at most this many similarities (64 MiB of float32), so the rows
# per block shrink as the scope grows: 2,048 rows of a 100k scope would be 800 MiB.
_BLOCK_ELEMENTS: Final = 1 << 24


@dataclass(frozen=True, slots=True)
class ClusterMember:
    """A memory that compaction would remove into the cluster's keeper."""

    memory_id: str
    content_hash: str
    similarity_to_keeper: float
    # SKIPPED at or above the duplicate threshold, MERGED otherwise.
    decision: Decision


@dataclass(frozen=True, slots=True)
class Cluster:
    """Memories that say the same thing: every pair reaches the merge threshold."""

    tenant_id: str
    namespace: str
    keeper_id: str
    keeper_hash: str
    # The member whose text the keeper should take (replace_with_newer: the newest
    # member); None when the keeper keeps its own text or the policy writes a new
    # one (synthesize).
    text_source_id: str | None
    # Every member but the keeper, by descending similarity to it, then id.
    members: tuple[ClusterMember, ...]
    # The diameter: the lowest similarity between any two memories of the cluster.
    min_similarity: float

    @property
    def size(self) -> int:
        """Memories in the cluster, keeper included."""
        return len(self.members) + 1


@dataclass(frozen=True, slots=True)
class ScopeAnalysis:
    """What compaction found in one (tenant, namespace)."""

    tenant_id: str
    namespace: str
    # Every memory given, with or without a vector.
    memories: int
    # Memories without a vector: never compared, never clustered.
    unembedded: int
    # The similarity of each embedded memory to its nearest other memory, in
    # memory id order (empty with fewer than two embedded memories).
    pair_similarities: list[float]
    # Distinct neighbour pairs at or above the merge threshold, vetoed ones included.
    candidate_pairs: int
    # Candidate pairs vetoed, by reason.
    vetoes: dict[str, int]
    # Largest first, then by keeper id.
    clusters: list[Cluster]
    bands: Bands

    @property
    def removed(self) -> int:
        """Memories that compaction would remove (every member but the keepers)."""
        return sum(len(cluster.members) for cluster in self.clusters)


def guard_pair_veto(older: MemoryRecord, newer: MemoryRecord) -> str | None:
    """A PairVeto from the text guards alone (the name of the guard that fired)."""
    veto = check_pair(older.content, newer.content)
    return None if veto is None else veto.guard.value


def analyse_scope(
    memories: Sequence[MemoryRecord],
    *,
    bands: Bands,
    pair_veto: PairVeto,
    neighbours: int = 10,
    max_cluster_size: int = 50,
    scope: Scope | None = None,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    on_progress: Callable[[int], None] | None = None,
) -> ScopeAnalysis:
    """Find the duplicate clusters among the memories of one scope.

    `scope` is needed only when `memories` may be empty; when given, every memory
    must belong to it. Vectors are expected to be unit length (as stored).
    `on_progress(n)` is called as the neighbour search finishes each block of n
    embedded memories (e.g. `Progress.advance`); the search is the slow part.
    """
    if neighbours < 1:
        raise ValueError(f"neighbours must be >= 1, got {neighbours}")
    if max_cluster_size < 2:
        raise ValueError(f"max_cluster_size must be >= 2, got {max_cluster_size}")
    the_scope = _single_scope(memories, scope)
    ordered = sorted(memories, key=lambda memory: memory.memory_id)
    _require_unique_ids(ordered)
    embedded = [memory for memory in ordered if memory.vector is not None]
    unembedded = len(ordered) - len(embedded)

    def result(
        pair_similarities: list[float],
        candidate_pairs: int,
        vetoes: dict[str, int],
        clusters: list[Cluster],
    ) -> ScopeAnalysis:
        return ScopeAnalysis(
            tenant_id=the_scope.tenant_id,
            namespace=the_scope.namespace,
            memories=len(ordered),
            unembedded=unembedded,
            pair_similarities=pair_similarities,
            candidate_pairs=candidate_pairs,
            vetoes=vetoes,
            clusters=clusters,
            bands=bands,
        )

    if len(embedded) < 2:
        return result([], 0, {}, [])

    matrix = _as_matrix(embedded)
    neighbour_ids, neighbour_sims = nearest_neighbours(
        matrix, neighbours, block_rows=block_rows, on_progress=on_progress
    )
    # Recomputed per pair: block products can differ in the last bit with the
    # block size, and the report should not.
    nearest = _pair_similarities(matrix, np.arange(len(embedded)), neighbour_ids[:, 0])
    pair_similarities = [float(value) for value in nearest]

    threshold = bands.merge_threshold
    linker = _Linker(embedded, matrix, threshold, pair_veto, max_cluster_size)
    pairs = _candidate_pairs(matrix, neighbour_ids, neighbour_sims, threshold)
    vetoes: dict[str, int] = {}
    allowed: list[tuple[float, int, int]] = []
    for similarity, a, b in pairs:
        reason = linker.veto(a, b)
        if reason is None:
            allowed.append((similarity, a, b))
        else:
            vetoes[reason] = vetoes.get(reason, 0) + 1
    # Descending similarity; ties by the ids (indices follow memory id order).
    allowed.sort(key=lambda pair: (-pair[0], pair[1], pair[2]))
    for _, a, b in allowed:
        linker.join(a, b)

    clusters = [
        _cluster(the_scope, [embedded[i] for i in group], _similarity_matrix(matrix, group), bands)
        for group in linker.groups()
    ]
    clusters.sort(key=lambda cluster: (-cluster.size, cluster.keeper_id))
    return result(pair_similarities, len(pairs), dict(sorted(vetoes.items())), clusters)


def nearest_neighbours(
    matrix: Matrix,
    neighbours: int,
    *,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[Indices, Matrix]:
    """The `neighbours` most similar other rows of every row of `matrix` (unit rows).

    Returns (indices, similarities), both of shape (rows, min(neighbours, rows - 1)),
    each row ordered by descending similarity, then index. Computed a block of
    rows at a time; a block never holds more than about 16M similarities.
    """
    rows = matrix.shape[0]
    k = min(neighbours, rows - 1)
    if k < 1:
        return np.zeros((rows, 0), dtype=np.intp), np.zeros((rows, 0), dtype=np.float32)
    step = max(1, min(block_rows, _BLOCK_ELEMENTS // rows))
    all_ids = np.empty((rows, k), dtype=np.intp)
    all_sims = np.empty((rows, k), dtype=np.float32)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        block = matrix[start:stop] @ matrix.T
        # A memory is not its own neighbour.
        block[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        # The k largest, unordered (no negated copy of the block).
        top = np.argpartition(block, -k, axis=1)[:, -k:]
        top_sims = np.take_along_axis(block, top, axis=1)
        # Order each row's top k: descending similarity, then ascending index.
        order = np.lexsort((top, -top_sims), axis=1)
        all_ids[start:stop] = np.take_along_axis(top, order, axis=1)
        all_sims[start:stop] = np.take_along_axis(top_sims, order, axis=1)
        if on_progress is not None:
            on_progress(stop - start)
    return all_ids, all_sims


def _single_scope(memories: Sequence[MemoryRecord], scope: Scope | None) -> Scope:
    scopes = {memory.scope for memory in memories}
    if scope is not None:
        scopes.add(scope)
    if not scopes:
        raise ValueError("scope is required when there are no memories")
    if len(scopes) > 1:
        names = ", ".join(sorted(f"{s.tenant_id}/{s.namespace}" for s in scopes))
        raise ValueError(f"memories of one scope expected, got {names}")
    return scopes.pop()


def _require_unique_ids(ordered: Sequence[MemoryRecord]) -> None:
    for previous, current in pairwise(ordered):
        if previous.memory_id == current.memory_id:
            raise ValueError(f"memory {current.memory_id} given twice")


def _as_matrix(embedded: Sequence[MemoryRecord]) -> Matrix:
    vectors = [memory.vector for memory in embedded]
    dimensions = {len(vector) for vector in vectors if vector is not None}
    if len(dimensions) != 1:
        raise ValueError(f"vectors of one dimension expected, got {sorted(dimensions)}")
    return np.asarray(vectors, dtype=np.float32)


def _clip(values: Matrix) -> Matrix:
    # Float32 dot products of unit vectors can land a hair outside [-1, 1].
    return np.clip(values, -1.0, 1.0)


def _pair_similarities(matrix: Matrix, first: Indices, second: Indices) -> Matrix:
    """Similarity of each pair (first[i], second[i]), always computed as
    lower index . higher index, so a pair has one value wherever it is needed."""
    low = np.minimum(first, second)
    high = np.maximum(first, second)
    return _clip(np.einsum("ij,ij->i", matrix[low], matrix[high]))


def _candidate_pairs(
    matrix: Matrix, neighbour_ids: Indices, neighbour_sims: Matrix, threshold: float
) -> list[tuple[float, int, int]]:
    """Distinct neighbour pairs (similarity, low index, high index) at or above
    the threshold."""
    rows, cols = np.nonzero(neighbour_sims >= threshold)
    if rows.size == 0:
        return []
    others = neighbour_ids[rows, cols]
    pairs = np.unique(
        np.stack([np.minimum(rows, others), np.maximum(rows, others)], axis=1), axis=0
    )
    low, high = pairs[:, 0], pairs[:, 1]
    # The block products may differ from the pair product in the last bit; the
    # pair product decides, as it does for every cross pair of the linkage.
    similarities = _pair_similarities(matrix, low, high)
    keep = similarities >= threshold
    return [
        (float(similarity), int(a), int(b))
        for similarity, a, b in zip(similarities[keep], low[keep], high[keep], strict=True)
    ]


class _Linker:
    """Complete-linkage clusters over indices into `memories`."""

    def __init__(
        self,
        memories: Sequence[MemoryRecord],
        matrix: Matrix,
        threshold: float,
        pair_veto: PairVeto,
        max_size: int,
    ) -> None:
        self._memories = memories
        self._matrix = matrix
        self._threshold = threshold
        self._pair_veto = pair_veto
        self._max_size = max_size
        self._vetoes: dict[tuple[int, int], str | None] = {}
        # Clusters by key; a merged cluster gets a fresh key, so a failed attempt
        # to join two keys stays failed and is not checked again.
        self._cluster_of: dict[int, int] = {}
        self._members: dict[int, list[int]] = {}
        self._next_key = 0
        self._failed: set[tuple[int, int]] = set()

    def veto(self, a: int, b: int) -> str | None:
        """The pair veto of two memories, asked once per pair."""
        key = (a, b) if a < b else (b, a)
        if key not in self._vetoes:
            first, second = self._memories[key[0]], self._memories[key[1]]
            if (second.created_at, second.memory_id) < (first.created_at, first.memory_id):
                first, second = second, first
            self._vetoes[key] = self._pair_veto(first, second)
        return self._vetoes[key]

    def join(self, a: int, b: int) -> bool:
        """Join the clusters of a and b if the result keeps complete linkage."""
        key_a, key_b = self._key(a), self._key(b)
        if key_a == key_b:
            return False
        attempt = (min(key_a, key_b), max(key_a, key_b))
        if attempt in self._failed:
            return False
        left, right = self._members[key_a], self._members[key_b]
        if len(left) + len(right) > self._max_size or not self._compatible(left, right):
            self._failed.add(attempt)
            return False
        merged = sorted(left + right)
        del self._members[key_a], self._members[key_b]
        key = self._new_key(merged)
        for index in merged:
            self._cluster_of[index] = key
        return True

    def groups(self) -> list[list[int]]:
        """Every cluster of two or more, members in index order."""
        return [members for members in self._members.values() if len(members) > 1]

    def _key(self, index: int) -> int:
        key = self._cluster_of.get(index)
        if key is None:
            key = self._new_key([index])
            self._cluster_of[index] = key
        return key

    def _new_key(self, members: list[int]) -> int:
        key = self._next_key
        self._next_key += 1
        self._members[key] = members
        return key

    def _compatible(self, left: list[int], right: list[int]) -> bool:
        first = np.repeat(np.asarray(left, dtype=np.intp), len(right))
        second = np.tile(np.asarray(right, dtype=np.intp), len(left))
        if np.any(_pair_similarities(self._matrix, first, second) < self._threshold):
            return False
        # Vetoes last: they may be costly (a verifier), similarities are not.
        return all(self.veto(int(a), int(b)) is None for a, b in zip(first, second, strict=True))


def _similarity_matrix(matrix: Matrix, group: list[int]) -> Matrix:
    """Pairwise similarities of a cluster's members, with the same values the
    linkage compared against the threshold."""
    size = len(group)
    first, second = np.triu_indices(size, k=1)
    indices = np.asarray(group, dtype=np.intp)
    upper = _pair_similarities(matrix, indices[first], indices[second])
    similarities = np.ones((size, size), dtype=np.float32)
    similarities[first, second] = upper
    similarities[second, first] = upper
    return similarities


def _cluster(
    scope: Scope, members: list[MemoryRecord], similarities: Matrix, bands: Bands
) -> Cluster:
    keeper_index, text_source = _keeper(members, bands)
    keeper = members[keeper_index]
    to_keeper = similarities[keeper_index]
    removed = [
        ClusterMember(
            memory_id=member.memory_id,
            content_hash=member.content_hash,
            similarity_to_keeper=float(to_keeper[i]),
            decision=(
                Decision.SKIPPED if to_keeper[i] >= bands.duplicate_threshold else Decision.MERGED
            ),
        )
        for i, member in enumerate(members)
        if i != keeper_index
    ]
    removed.sort(key=lambda member: (-member.similarity_to_keeper, member.memory_id))
    upper = np.triu_indices(len(members), k=1)
    return Cluster(
        tenant_id=scope.tenant_id,
        namespace=scope.namespace,
        keeper_id=keeper.memory_id,
        keeper_hash=keeper.content_hash,
        text_source_id=text_source,
        members=tuple(removed),
        min_similarity=float(similarities[upper].min()),
    )


def _earliest(memory: MemoryRecord) -> tuple[datetime, str]:
    return (memory.created_at, memory.memory_id)


def _keeper(members: list[MemoryRecord], bands: Bands) -> tuple[int, str | None]:
    """Index of the memory that stays, and the member whose text it should take."""
    indices = range(len(members))
    earliest = min(indices, key=lambda i: _earliest(members[i]))
    policy = bands.merge_policy
    if policy == "keep_higher_importance":
        best = min(indices, key=lambda i: (-members[i].importance, *_earliest(members[i])))
        return best, None
    if policy == "replace_with_newer":
        # The keeper stays the earliest memory, so its id (and what points at it)
        # survives; only its text becomes the newest one.
        newest = max(
            indices,
            key=lambda i: (
                members[i].last_seen_at or members[i].updated_at,
                members[i].memory_id,
            ),
        )
        return earliest, None if newest == earliest else members[newest].memory_id
    # keep_existing keeps the earliest text; synthesize writes a new one.
    return earliest, None
