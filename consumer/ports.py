"""Protocols the service is wired from; adapters live in consumer.state and
consumer.embedding.embedders, fakes in tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    # Types of the signatures only: at run time this module imports nothing of the
    # package, so every layer may depend on it.
    from consumer.domain.models import (
        DecisionRecord,
        MemoryRecord,
        ScoredMemory,
        SimilarityQuery,
    )
    from consumer.kafka.records import OutgoingRecord
    from consumer.state.codec import RawPoint

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into unit-length vectors, off the event loop."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> Vectors: ...

    async def close(self) -> None: ...


class MemoryStore(Protocol):
    """Memories, decision records and the service's other points. `partition` is the
    input partition the scope is keyed to: the embedded store keeps one shard per
    partition, a server ignores it.

    Plain reads and writes: what makes a write durable (changelog first, or a write
    fenced by group membership) is consumer.state.durable.DurableStore's, and what
    only the embedded store needs is behind `shards()`. The reference implementation
    is consumer.state.memory.InMemoryStore; tests/unit/state/test_store_contract.py
    runs the same tests on every implementation.

    Implementations raise consumer.errors.StoreUnavailable for anything that may
    succeed on retry.
    """

    async def start(self, dimension: int) -> None: ...

    async def get_memories(
        self, partition: int, memory_ids: Sequence[str]
    ) -> dict[str, MemoryRecord]:
        """Memories by id; the id of a memory folded into another by compaction
        yields the memory it was folded into."""
        ...

    async def search(
        self, partition: int, queries: Sequence[SimilarityQuery]
    ) -> list[list[ScoredMemory]]: ...

    async def get_decisions(
        self, partition: int, event_ids: Sequence[str]
    ) -> dict[str, DecisionRecord]: ...

    async def get_points(self, partition: int, point_ids: Sequence[str]) -> dict[str, RawPoint]:
        """Any points by id, with payload and vector (review and command records)."""
        ...

    async def points_of_kind(
        self,
        partition: int,
        kind: str,
        *,
        tenant_id: str | None = None,
        namespace: str | None = None,
        with_vectors: bool = False,
    ) -> list[RawPoint]:
        """Every point of a kind in the partition's shard (all of them on a server)."""
        ...

    async def pending_memories(self, partition: int, limit: int) -> list[MemoryRecord]:
        """Memories accepted while the model was down, still without a vector."""
        ...

    async def expired_decisions(self, partition: int, before: float, limit: int) -> list[str]:
        """Ids of up to `limit` decision records decided before `before` (Unix s)."""
        ...

    async def count_memories(
        self,
        partition: int | None = None,
        tenant_id: str | None = None,
        namespace: str | None = None,
    ) -> int: ...

    async def write(
        self,
        partition: int,
        memories: Sequence[MemoryRecord],
        decisions: Sequence[DecisionRecord],
    ) -> None:
        """Store memories and decision records together, in one operation."""
        ...

    async def apply_points(
        self, partition: int, points: Sequence[RawPoint], *, deleted_ids: Sequence[str] = ()
    ) -> None:
        """Delete `deleted_ids`, then store points, in order (a seen update is set on
        the memory it names, if stored)."""
        ...

    def shards(self) -> ShardStore | None:
        """The embedded store's per-partition side; None for a store the group shares."""
        ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...


class ShardStore(Protocol):
    """What only a store with one shard per input partition adds (the embedded
    store): the changelog position each shard holds, and giving shards up on
    revocation. Used through consumer.state.durable.DurableStore."""

    async def apply_points(
        self,
        partition: int,
        points: Sequence[RawPoint],
        *,
        changelog_offset: int | None = None,
        deleted_ids: Sequence[str] = (),
    ) -> None:
        """As MemoryStore.apply_points, and the changelog offset that covers the
        change, in the same operation: the position never runs ahead of the data."""
        ...

    async def changelog_position(self, partition: int) -> int | None:
        """Last changelog offset the partition's shard holds; None for a new shard."""
        ...

    async def release_partitions(self, partitions: Iterable[int]) -> None:
        """Flush and close the partitions' shards (their data stays)."""
        ...

    def full_results_from(self, score: float) -> None:
        """Below `score`, a search may return only each query's best result, without
        its memory (it counts for its score alone)."""
        ...


class MembershipFence(Protocol):
    """Returns while this consumer still belongs to its group's current generation;
    raises consumer.errors.PartitionsLost once it does not (consumer.state.membership).
    `ensure` comes before a write of shared state, may trust a recent answer and
    returns the generation it vouched for (None outside a group); `confirm` comes
    after the write and asks afresh for that generation."""

    async def ensure(self) -> int | None: ...

    async def confirm(self, generation: int | None) -> None: ...


class RecordPublisher(Protocol):
    """Publishes records and returns once the broker acknowledged all of them,
    with the offset each one got."""

    async def publish_all(self, records: Sequence[OutgoingRecord]) -> list[int]: ...
