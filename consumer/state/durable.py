"""The durable write, in one place: changelog first, then the shard; without a
changelog, a write fenced by group membership.

Every write the service makes (a batch's decisions, a command's effects, the
compaction trigger's state, retention's deletes) goes through `DurableStore`,
as a Quix Streams store partition owns its changelog producer. With a changelog
(the embedded store), the changelog is what a restore trusts, so it must never
lack what a shard holds: a change is appended there and acknowledged first, then
stored in the shard with the changelog offset that covers it. A partition is
"behind" from the append until its shard has applied the change; a failure in
between leaves it so, and its shard is restored from the changelog before the
partition is processed again (the retry then replays the decisions the changelog
holds instead of taking new ones). Without a changelog (a store the group shares),
each write runs between two membership checks (consumer.state.membership), so a
consumer the group has evicted writes nothing and acts on nothing it wrote.

What only the embedded store needs (the changelog position, closing shards on
revocation) is reached here, through `MemoryStore.shards()`, and nowhere else.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from typing import Any

from consumer.domain.models import DecisionRecord, MemoryRecord
from consumer.ports import MembershipFence, MemoryStore
from consumer.state.changelog import Changelog
from consumer.state.codec import RawPoint, decision_point, memory_point, seen_point
from consumer.state.membership import fenced


class DurableStore:
    """The store as the service writes it. Reads go to `store` directly."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        changelog: Changelog | None = None,
        membership: MembershipFence | None = None,
        dimension: int = 0,
    ) -> None:
        """`changelog`: the embedded store's (its shards then follow it);
        `membership` fences the writes of a store without one (a changelog fences
        its own appends). `dimension`: of the placeholder vector the points of a
        decided batch are built with."""
        shards = store.shards()
        if changelog is not None and shards is None:
            raise ValueError("a changelog carries the shards of an embedded store; this has none")
        self.store = store
        self._shards = shards
        self._changelog = changelog
        self._membership = membership
        self._dimension = dimension
        # Partitions whose changelog holds points their shard may lack (a write
        # failed after the append): restored before they are processed again.
        self._behind: set[int] = set()
        # Partitions restored since they were assigned.
        self._restored: set[int] = set()

    @property
    def has_changelog(self) -> bool:
        return self._changelog is not None

    def is_behind(self, partition: int) -> bool:
        return partition in self._behind

    def unrestored(self, partitions: Iterable[int]) -> list[int]:
        """Those of `partitions` not restored from the changelog since they were
        assigned, in order; none without a changelog."""
        if self._changelog is None:
            return []
        return sorted(set(partitions) - self._restored)

    async def restore(self, partition: int) -> None:
        """Bring the partition's shard up to the end of its changelog."""
        changelog, shards = self._changelog, self._shards
        if changelog is None or shards is None:
            return
        await changelog.restore(partition, shards)
        self._restored.add(partition)
        self._behind.discard(partition)

    async def catch_up(self, partition: int) -> None:
        """Restore the partition's shard if it may lack what its changelog holds."""
        if partition in self._behind:
            await self.restore(partition)

    async def write_decided(
        self,
        partition: int,
        memories: Sequence[MemoryRecord],
        decisions: Sequence[DecisionRecord],
        *,
        seen_only: Collection[str] = (),
        alongside: Callable[[], Awaitable[Any]] | None = None,
    ) -> float:
        """Store a partition's decided memories and decision records in one write;
        returns the seconds the store took. With a changelog, the memories in
        `seen_only` (seen again, nothing else changed) go as seen updates, and
        `alongside` (publishing the decisions, final already) runs once the
        changelog holds the points, while the shard is written. Without one, the
        memories are stored whole; `alongside` needs a changelog."""
        if self._changelog is None:
            if alongside is not None:
                raise ValueError("without a changelog nothing is durable before the write")
            started = time.perf_counter()
            write = self.store.write(partition, memories, decisions)
            await fenced(self._membership, write)
            return time.perf_counter() - started
        # The shard stores the very same points as the changelog (built once).
        points = [
            seen_point(m) if m.memory_id in seen_only else memory_point(m, self._dimension)
            for m in memories
        ]
        points.extend(decision_point(d, self._dimension) for d in decisions)
        return await self._append_then_apply(partition, points, (), alongside)

    async def apply(
        self, partition: int, points: Sequence[RawPoint], *, deleted_ids: Sequence[str] = ()
    ) -> None:
        """Delete `deleted_ids`, then store points (a command's effects, retention's
        deletes), by the same rule."""
        if self._changelog is None:
            write = self.store.apply_points(partition, points, deleted_ids=deleted_ids)
            await fenced(self._membership, write)
            return
        await self._append_then_apply(partition, points, deleted_ids, None)

    async def _append_then_apply(
        self,
        partition: int,
        points: Sequence[RawPoint],
        deleted_ids: Sequence[str],
        alongside: Callable[[], Awaitable[Any]] | None,
    ) -> float:
        changelog, shards = self._changelog, self._shards
        assert changelog is not None
        assert shards is not None
        # Behind from here: an append that fails part-way may have landed some
        # points, which a retry then restores (and replays) rather than decides anew.
        self._behind.add(partition)
        offset = await changelog.append(partition, points, deleted_ids=deleted_ids)
        started = time.perf_counter()
        storing = shards.apply_points(
            partition, points, changelog_offset=offset, deleted_ids=deleted_ids
        )
        if alongside is None:
            await storing
        else:
            await _all_of(storing, alongside())
        self._behind.discard(partition)
        return time.perf_counter() - started

    async def correct(
        self,
        partition: int,
        memories: Sequence[MemoryRecord],
        decisions: Sequence[DecisionRecord],
        deleted_memory_ids: Sequence[str],
    ) -> None:
        """Corrections after a race re-check (a store the group shares): written as
        they are, right after the fenced write they correct."""
        await self.store.write(partition, memories, decisions)
        await self.store.apply_points(partition, [], deleted_ids=deleted_memory_ids)

    async def release(self, partitions: Sequence[int]) -> None:
        """Give up the partitions: their shards are closed, and restored again if
        they come back."""
        self._restored.difference_update(partitions)
        if self._shards is not None:
            await self._shards.release_partitions(partitions)


async def _all_of(*operations: Awaitable[Any]) -> None:
    """Runs operations concurrently and waits for every one, even after one fails
    (a retry must not start while a store write still runs); re-raises the first
    failure."""
    results = await asyncio.gather(*operations, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
