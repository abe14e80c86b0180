"""The reference store: every point in a dict per partition, exact cosine search in numpy.

It implements the whole port (consumer.ports.MemoryStore, and ShardStore through
`shards()`, so the changelog path can be tested too) and passes the contract
suite the embedded and server stores pass (tests/unit/state/test_store_contract.py).
Nothing is kept across processes: for tests, and for code built around the
service (consumer.testing). Points are kept as the JSON text they are written
with, so what a caller does with what it read never changes what is stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from consumer.domain.models import DecisionRecord, MemoryRecord, ScoredMemory, SimilarityQuery
from consumer.domain.normalize import decision_id_for
from consumer.state import codec


@dataclass(frozen=True, slots=True)
class _Stored:
    vector: tuple[float, ...] | None  # only a memory's own embedding
    payload_json: str

    def payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = codec.decode_json(self.payload_json)
        return payload

    def point(self, point_id: str, *, with_vector: bool = True) -> codec.RawPoint:
        vector = list(self.vector) if with_vector and self.vector is not None else []
        return codec.RawPoint(point_id, vector, self.payload())


class InMemoryStore:
    """consumer.ports.MemoryStore, with one shard per partition as the embedded
    store keeps them. Searches always return full results (`full_results_from` is
    accepted and ignored, as the port allows)."""

    def __init__(self) -> None:
        self._dimension = 0
        self._shards: dict[int, dict[str, _Stored]] = {}
        self._positions: dict[int, int] = {}

    def _shard(self, partition: int) -> dict[str, _Stored]:
        return self._shards.setdefault(partition, {})

    async def start(self, dimension: int) -> None:
        self._dimension = dimension

    def shards(self) -> InMemoryStore:
        return self

    # ------------------------------------------------------------------ reads

    async def get_memories(
        self, partition: int, memory_ids: Sequence[str]
    ) -> dict[str, MemoryRecord]:
        shard = self._shard(partition)
        found: dict[str, MemoryRecord] = {}
        wanted = {memory_id: memory_id for memory_id in memory_ids}
        for _ in range(codec.MAX_REDIRECTS + 1):
            if not wanted:
                break
            followed: dict[str, str] = {}
            for point_id, requested in wanted.items():
                stored = shard.get(point_id)
                if stored is None:
                    continue
                payload = stored.payload()
                if codec.is_memory(payload):
                    vector = list(stored.vector) if stored.vector is not None else None
                    found[requested] = codec.memory_from_payload(point_id, payload, vector)
                elif (target := codec.redirect_target(payload)) is not None:
                    followed[target] = requested
            wanted = followed
        return found

    async def search(
        self, partition: int, queries: Sequence[SimilarityQuery]
    ) -> list[list[ScoredMemory]]:
        shard = self._shard(partition)
        results: list[list[ScoredMemory]] = []
        for query in queries:
            scope = (query.scope.tenant_id, query.scope.namespace)
            ids: list[str] = []
            rows: list[tuple[float, ...]] = []
            for point_id, stored in shard.items():
                if stored.vector is None:
                    continue
                payload = stored.payload()
                if (payload.get(codec.TENANT_FIELD), payload.get(codec.NAMESPACE_FIELD)) == scope:
                    ids.append(point_id)
                    rows.append(stored.vector)
            if not ids:
                results.append([])
                continue
            scores = _cosine(np.asarray(rows, dtype=np.float32), query.vector)
            ranked = sorted(zip(scores.tolist(), ids, strict=True), key=lambda s: (-s[0], s[1]))
            hits = ranked[: query.limit]
            found = await self.get_memories(partition, [point_id for _, point_id in hits])
            results.append(
                [ScoredMemory(found[point_id], float(score), point_id) for score, point_id in hits]
            )
        return results

    async def get_decisions(
        self, partition: int, event_ids: Sequence[str]
    ) -> dict[str, DecisionRecord]:
        shard = self._shard(partition)
        found: dict[str, DecisionRecord] = {}
        for event_id in event_ids:
            stored = shard.get(decision_id_for(event_id))
            if stored is not None:
                record = codec.decision_from_payload(stored.payload())
                found[record.event_id] = record
        return found

    async def get_points(
        self, partition: int, point_ids: Sequence[str]
    ) -> dict[str, codec.RawPoint]:
        shard = self._shard(partition)
        return {
            point_id: shard[point_id].point(point_id) for point_id in point_ids if point_id in shard
        }

    async def points_of_kind(
        self,
        partition: int,
        kind: str,
        *,
        tenant_id: str | None = None,
        namespace: str | None = None,
        with_vectors: bool = False,
    ) -> list[codec.RawPoint]:
        return [
            stored.point(point_id, with_vector=with_vectors)
            for point_id, stored in self._in_order(partition)
            if _matches(stored.payload(), kind, tenant_id, namespace)
        ]

    async def pending_memories(self, partition: int, limit: int) -> list[MemoryRecord]:
        pending = [
            codec.memory_from_payload(point_id, payload, None)
            for point_id, stored in self._in_order(partition)
            if (payload := stored.payload()).get(codec.KIND_FIELD) == codec.PENDING_KIND
        ]
        return pending[:limit]

    async def expired_decisions(self, partition: int, before: float, limit: int) -> list[str]:
        """Decisions stored without a time are kept."""
        expired = []
        for point_id, stored in self._in_order(partition):
            payload = stored.payload()
            decided_at = payload.get(codec.DECIDED_AT_FIELD)
            decision = payload.get(codec.KIND_FIELD) == codec.DECISION_KIND
            if decision and decided_at is not None and decided_at < before:
                expired.append(point_id)
        return expired[:limit]

    async def count_memories(
        self,
        partition: int | None = None,
        tenant_id: str | None = None,
        namespace: str | None = None,
    ) -> int:
        partitions = list(self._shards) if partition is None else [partition]
        return sum(
            1
            for p in partitions
            for stored in self._shard(p).values()
            if codec.is_memory(payload := stored.payload())
            and _matches(payload, payload[codec.KIND_FIELD], tenant_id, namespace)
        )

    def _in_order(self, partition: int) -> list[tuple[str, _Stored]]:
        """A shard's points by id, as a scroll returns them."""
        return sorted(self._shard(partition).items())

    # ----------------------------------------------------------------- writes

    async def write(
        self,
        partition: int,
        memories: Sequence[MemoryRecord],
        decisions: Sequence[DecisionRecord],
    ) -> None:
        points = [codec.memory_point(m, self._dimension) for m in memories]
        points.extend(codec.decision_point(d, self._dimension) for d in decisions)
        await self.apply_points(partition, points)

    async def apply_points(
        self,
        partition: int,
        points: Sequence[codec.RawPoint],
        *,
        changelog_offset: int | None = None,
        deleted_ids: Sequence[str] = (),
    ) -> None:
        shard = self._shard(partition)
        for point_id in deleted_ids:
            shard.pop(point_id, None)
        for point in points:
            if point.payload.get(codec.KIND_FIELD) != codec.SEEN_KIND:
                own = bool(point.vector) and codec.has_own_vector(point.payload)
                vector = tuple(float(x) for x in point.vector) if own else None
                shard[point.point_id] = _Stored(vector, point.payload_json())
                continue
            # A seen update of a memory the shard lacks is dropped (its later
            # write, which carries the count, is what a restore meets).
            memory_id, fields = codec.seen_update(point.payload)
            stored = shard.get(memory_id)
            if stored is not None and codec.is_memory(memory := stored.payload()):
                folded = codec.fold_seen(memory, fields)
                shard[memory_id] = _Stored(stored.vector, codec.encode_json(folded))
        if changelog_offset is not None:
            self._positions[partition] = changelog_offset

    # ------------------------------------------------------------ shard side

    async def changelog_position(self, partition: int) -> int | None:
        return self._positions.get(partition)

    async def release_partitions(self, partitions: Iterable[int]) -> None:
        """Nothing to close: the points stay, as a shard's stay on disk."""

    def full_results_from(self, score: float) -> None:
        """Ignored: every search returns full results."""

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        return None


def _matches(
    payload: dict[str, Any], kind: str, tenant_id: str | None, namespace: str | None
) -> bool:
    return (
        payload.get(codec.KIND_FIELD) == kind
        and (tenant_id is None or payload.get(codec.TENANT_FIELD) == tenant_id)
        and (namespace is None or payload.get(codec.NAMESPACE_FIELD) == namespace)
    )


def _cosine(rows: np.ndarray[Any, np.dtype[np.float32]], vector: Sequence[float]) -> Any:
    """Cosine of each row with `vector`, in float32 as Qdrant computes it."""
    query = np.asarray(vector, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1) * np.float32(np.linalg.norm(query))
    norms[norms == 0] = np.float32(1.0)
    return (rows @ query) / norms
