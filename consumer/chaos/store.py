"""Fault injection for outage drills and the fault-injection test suite.

With `MEMDEDUP_CHAOS__STORE_OUTAGE_FILE` set, every store call fails as an
outage (StoreUnavailable) while that file exists: operators can rehearse a
vector-store outage on a live consumer by touching a file, and tests can cut
the store of separate consumer processes without killing them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from consumer.domain.models import DecisionRecord, MemoryRecord, ScoredMemory, SimilarityQuery
from consumer.errors import StoreUnavailable
from consumer.ports import MemoryStore, ShardStore
from consumer.state.codec import RawPoint


class _OutageFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def check(self) -> None:
        if self.path.exists():
            raise StoreUnavailable(f"injected outage ({self.path} exists)")


class OutageSwitchStore:
    """Delegates to a real store unless the outage file exists."""

    def __init__(self, inner: MemoryStore, *, outage_file: Path) -> None:
        self.inner = inner
        self._outage = _OutageFile(outage_file)
        inner_shards = inner.shards()
        self._shards = (
            None if inner_shards is None else OutageSwitchShards(inner_shards, self._outage)
        )

    def _check(self) -> None:
        self._outage.check()

    def shards(self) -> ShardStore | None:
        return self._shards

    async def start(self, dimension: int) -> None:
        await self.inner.start(dimension)

    async def get_memories(
        self, partition: int, memory_ids: Sequence[str]
    ) -> dict[str, MemoryRecord]:
        self._check()
        return await self.inner.get_memories(partition, memory_ids)

    async def search(
        self, partition: int, queries: Sequence[SimilarityQuery]
    ) -> list[list[ScoredMemory]]:
        self._check()
        return await self.inner.search(partition, queries)

    async def get_points(self, partition: int, point_ids: Sequence[str]) -> dict[str, RawPoint]:
        self._check()
        return await self.inner.get_points(partition, point_ids)

    async def points_of_kind(
        self,
        partition: int,
        kind: str,
        *,
        tenant_id: str | None = None,
        namespace: str | None = None,
        with_vectors: bool = False,
    ) -> list[RawPoint]:
        self._check()
        return await self.inner.points_of_kind(
            partition, kind, tenant_id=tenant_id, namespace=namespace, with_vectors=with_vectors
        )

    async def get_decisions(
        self, partition: int, event_ids: Sequence[str]
    ) -> dict[str, DecisionRecord]:
        self._check()
        return await self.inner.get_decisions(partition, event_ids)

    async def write(
        self,
        partition: int,
        memories: Sequence[MemoryRecord],
        decisions: Sequence[DecisionRecord],
    ) -> None:
        self._check()
        await self.inner.write(partition, memories, decisions)

    async def apply_points(
        self, partition: int, points: Sequence[RawPoint], *, deleted_ids: Sequence[str] = ()
    ) -> None:
        self._check()
        await self.inner.apply_points(partition, points, deleted_ids=deleted_ids)

    async def expired_decisions(self, partition: int, before: float, limit: int) -> list[str]:
        self._check()
        return await self.inner.expired_decisions(partition, before, limit)

    async def pending_memories(self, partition: int, limit: int) -> list[MemoryRecord]:
        self._check()
        return await self.inner.pending_memories(partition, limit)

    async def count_memories(
        self,
        partition: int | None = None,
        tenant_id: str | None = None,
        namespace: str | None = None,
    ) -> int:
        self._check()
        return await self.inner.count_memories(partition, tenant_id, namespace)

    async def ping(self) -> None:
        self._check()
        await self.inner.ping()

    async def close(self) -> None:
        await self.inner.close()


class OutageSwitchShards:
    """The embedded store's shard side, failing alike while the outage file exists
    (giving shards up never fails: a revocation must go through)."""

    def __init__(self, inner: ShardStore, outage: _OutageFile) -> None:
        self.inner = inner
        self._outage = outage

    async def apply_points(
        self,
        partition: int,
        points: Sequence[RawPoint],
        *,
        changelog_offset: int | None = None,
        deleted_ids: Sequence[str] = (),
    ) -> None:
        self._outage.check()
        await self.inner.apply_points(
            partition, points, changelog_offset=changelog_offset, deleted_ids=deleted_ids
        )

    async def changelog_position(self, partition: int) -> int | None:
        self._outage.check()
        return await self.inner.changelog_position(partition)

    async def release_partitions(self, partitions: Iterable[int]) -> None:
        await self.inner.release_partitions(partitions)

    def full_results_from(self, score: float) -> None:
        self.inner.full_results_from(score)
