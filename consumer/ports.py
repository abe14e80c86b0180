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
    """Memories and decision records. `partition` is the input partition the scope
    is keyed to: the embedded store keeps one shard per partition, a server ignores it.

    Implementations raise consumer.errors.StoreUnavailable for anything that may
    succeed on retry.
    """

    async def start(self, dimension: int) -> None: ...

    async def get_memories(
        self, partition: int, memory_ids: Sequence[str]
    ) -> dict[str, MemoryRecord]: ...

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

    async def write(
        self,
        partition: int,
        memories: Sequence[MemoryRecord],
        decisions: Sequence[DecisionRecord],
        *,
        changelog_offset: int | None = None,
    ) -> None:
        """Store memories and decision records together, in one operation, with the
        changelog offset that covers them (embedded store)."""
        ...

    async def apply_points(
        self,
        partition: int,
        points: Sequence[RawPoint],
        *,
        changelog_offset: int | None,
        deleted_ids: Sequence[str] = (),
    ) -> None:
        """Delete `deleted_ids`, then store points (restored from the changelog, or
        appended to it first), with the changelog offset that covers both."""
        ...

    async def expired_decisions(self, partition: int, before: float, limit: int) -> list[str]:
        """Ids of up to `limit` decision records decided before `before` (Unix s)."""
        ...

    async def changelog_position(self, partition: int) -> int | None: ...

    async def delete_memories(self, partition: int, memory_ids: Sequence[str]) -> None: ...

    async def pending_memories(self, partition: int, limit: int) -> list[MemoryRecord]:
        """Memories accepted while the model was down, still without a vector."""
        ...

    async def count_memories(
        self,
        partition: int | None = None,
        tenant_id: str | None = None,
        namespace: str | None = None,
    ) -> int: ...

    async def release_partitions(self, partitions: Iterable[int]) -> None: ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...


class MembershipFence(Protocol):
    """Returns while this consumer still belongs to its group's current generation;
    raises consumer.errors.PartitionsLost once it does not (consumer.state.membership)."""

    async def ensure(self) -> None: ...


class RecordPublisher(Protocol):
    """Publishes records and returns once the broker acknowledged all of them,
    with the offset each one got."""

    async def publish_all(self, records: Sequence[OutgoingRecord]) -> list[int]: ...
