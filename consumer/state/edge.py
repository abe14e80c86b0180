"""Embedded store: Qdrant's engine in-process (qdrant-edge), one shard per input partition.

A shard belongs to one process at a time (its WAL is locked), and a scope never
spans partitions because records are keyed by scope. So each consumer opens the
shards of the partitions it is assigned and closes them on revocation: several
consumer processes on one machine can share one data directory.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final, TypeVar

import structlog
from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeVectorParams,
    Filter,
    Point,
    Query,
    QueryBatchRequest,
    QueryRequest,
    ScrollRequest,
    SearchParams,
    UpdateOperation,
)

from consumer.domain.models import DecisionRecord, MemoryRecord, ScoredMemory, SimilarityQuery
from consumer.domain.normalize import decision_id_for
from consumer.errors import StoreUnavailable
from consumer.state import codec
from consumer.state.edge_layout import (
    NO_VECTOR,
    SCOPED_KINDS,
    SEEN_JSON_FIELD,
    complete_decision_times,
    complete_search_scope,
    ensure_indexes,
    expired_filter,
    match,
    memories_present,
    payload_of,
    scope_filter,
    search_filter,
    stored_payload,
)

T = TypeVar("T")
log = structlog.get_logger(__name__)

# With a changelog, a write is durable in the changelog before it reaches the shard,
# and the shard's write-ahead log survives the process: what an unflushed shard
# loses with its machine, the restore replays (the changelog position is written
# in the same operation). Flushing then only bounds the log replayed at the next
# open, so it is done at most this often (and on release); without a changelog,
# after every write.
CHANGELOG_FLUSH_INTERVAL_S: Final = 5.0


class EdgeMemoryStore:
    def __init__(
        self, *, root: Path, collection: str, topic: str, decision_times: bool = False
    ) -> None:
        """`decision_times`: decision retention is on, so decisions store their
        time as an indexed field (`stored_payload`)."""
        self._root = root / collection
        self._decision_times = decision_times
        self._topic = topic
        self._dimension = 0
        self._shards: dict[int, Any] = {}
        self._last_flush: dict[int, float] = {}
        # Search results from this score up are complete; below it only a query's
        # best result is returned, without its vector.
        self._full_results_from = float("-inf")
        # One thread: shard calls are serialised and never block the event loop.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="edge-store")

    def full_results_from(self, score: float) -> None:
        """Below `score`, a search returns only each query's best result, without
        its vector. Set it to the lowest score that can make a match a skip or merge
        target: under it a match counts only as the query's top score, and a match
        without a vector must never be written. Decoding the payloads of the
        results nobody reads was a tenth of a new memory's cost."""
        self._full_results_from = score

    def shard_path(self, partition: int) -> Path:
        return self._root / f"{self._topic}-{partition}"

    @property
    def open_partitions(self) -> frozenset[int]:
        return frozenset(self._shards)

    async def start(self, dimension: int) -> None:
        self._dimension = dimension
        await self._run(lambda: self._root.mkdir(parents=True, exist_ok=True))

    async def _run(self, func: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, func)
        except StoreUnavailable:
            raise
        except Exception as exc:  # the engine raises plain Exception for everything
            raise StoreUnavailable(f"embedded store: {exc}") from exc

    def _shard(self, partition: int) -> Any:
        shard = self._shards.get(partition)
        if shard is not None:
            return shard
        path = self.shard_path(partition)
        config = EdgeConfig(vectors=EdgeVectorParams(self._dimension, Distance.Cosine))
        if path.exists() and any(path.iterdir()):
            # With the config, a shard whose creation was killed before it wrote its
            # own (a log, no segments) opens empty instead of failing every open of
            # its partition; the config is also checked against the segments there.
            shard = EdgeShard.load(str(path), config)
            ensure_indexes(shard, decision_times=self._decision_times)
            complete_search_scope(shard, partition)
            if self._decision_times:
                complete_decision_times(shard, partition)
        else:
            path.mkdir(parents=True, exist_ok=True)
            shard = EdgeShard.create(str(path), config)
            ensure_indexes(shard, decision_times=self._decision_times)
        self._shards[partition] = shard
        self._last_flush[partition] = time.monotonic()
        log.info("shard_opened", partition=partition, path=str(path))
        return shard

    async def get_memories(
        self, partition: int, memory_ids: Sequence[str]
    ) -> dict[str, MemoryRecord]:
        """Memories by id; the id of a memory folded into another by compaction
        yields the memory it was folded into."""
        if not memory_ids:
            return {}

        def read() -> dict[str, MemoryRecord]:
            shard = self._shard(partition)
            found: dict[str, MemoryRecord] = {}
            wanted = {memory_id: memory_id for memory_id in memory_ids}
            for _ in range(codec.MAX_REDIRECTS + 1):
                if not wanted:
                    break
                records = shard.retrieve(list(wanted), with_payload=True, with_vector=True)
                followed: dict[str, str] = {}
                for record in records:
                    payload = payload_of(record.payload)
                    point_id = str(record.id)
                    requested = wanted[point_id]
                    if codec.is_memory(payload):
                        found[requested] = codec.memory_from_payload(
                            point_id, payload, list(record.vector)
                        )
                    elif (target := codec.redirect_target(payload)) is not None:
                        followed[target] = requested
                wanted = followed
            return found

        return await self._run(read)

    async def search(
        self, partition: int, queries: Sequence[SimilarityQuery]
    ) -> list[list[ScoredMemory]]:
        if not queries:
            return []

        def run() -> list[list[ScoredMemory]]:
            requests = [
                QueryRequest(
                    limit=query.limit,
                    query=Query.Nearest(query.vector),
                    filter=search_filter(query.scope.tenant_id, query.scope.namespace),
                    with_payload=False,
                    with_vector=False,
                    # No background indexing in the embedded engine: exact search
                    # over the payload-indexed scope is fast and always right.
                    params=SearchParams(exact=True),
                )
                for query in queries
            ]
            shard = self._shard(partition)
            floor = self._full_results_from
            batches = [
                [p for i, p in enumerate(points) if i == 0 or p.score >= floor]
                for points in shard.query_batch(QueryBatchRequest(requests))
            ]
            # Memories (payload and vector) only for the matches that can become skip
            # or merge targets, in one read; below the floor a query's best match
            # counts for its score alone (most new texts have only that one).
            wanted = {
                str(point.id) for points in batches for point in points if point.score >= floor
            }
            memories: dict[str, MemoryRecord] = {}
            if wanted:
                for record in shard.retrieve(list(wanted), with_payload=True, with_vector=True):
                    point_id = str(record.id)
                    memories[point_id] = codec.memory_from_payload(
                        point_id, payload_of(record.payload), list(record.vector or [])
                    )
            return [
                [ScoredMemory(memories.get(str(p.id)), float(p.score), str(p.id)) for p in points]
                for points in batches
            ]

        return await self._run(run)

    async def get_decisions(
        self, partition: int, event_ids: Sequence[str]
    ) -> dict[str, DecisionRecord]:
        if not event_ids:
            return {}

        def read() -> dict[str, DecisionRecord]:
            ids = [decision_id_for(event_id) for event_id in event_ids]
            records = self._shard(partition).retrieve(ids, with_payload=True, with_vector=False)
            found = [codec.decision_from_payload(payload_of(r.payload)) for r in records]
            return {record.event_id: record for record in found}

        return await self._run(read)

    async def write(
        self,
        partition: int,
        memories: Sequence[MemoryRecord],
        decisions: Sequence[DecisionRecord],
        *,
        changelog_offset: int | None = None,
    ) -> None:
        points = [codec.memory_point(m, self._dimension) for m in memories]
        points.extend(codec.decision_point(d, self._dimension) for d in decisions)
        await self.apply_points(partition, points, changelog_offset=changelog_offset)

    async def apply_points(
        self,
        partition: int,
        points: Sequence[codec.RawPoint],
        *,
        changelog_offset: int | None = None,
        deleted_ids: Sequence[str] = (),
    ) -> None:
        """Delete `deleted_ids`, then upsert points and the changelog position they
        bring the shard to, in one operation: the position never runs ahead of the
        data."""
        if not points and not deleted_ids and changelog_offset is None:
            return
        extra = (
            [codec.meta_point(partition, changelog_offset, self._dimension)]
            if changelog_offset is not None
            else []
        )

        def apply() -> Exception | None:
            # Built in the store thread (the engine's payload conversion is slow):
            # the event loop meanwhile serves the broker and other partitions.
            shard = self._shard(partition)
            # A read: its failure is the store's (raised, made StoreUnavailable).
            present = memories_present(shard, points)
            try:
                operations = self._operations([*points, *extra], present)
            except Exception as exc:  # a bad point is a bug, not the store being down
                return exc
            if deleted_ids:
                operations.insert(0, UpdateOperation.delete_points(list(deleted_ids)))
            for operation in operations:
                shard.update(operation)
            now = time.monotonic()
            if (
                changelog_offset is None
                or now - self._last_flush.get(partition, now) >= CHANGELOG_FLUSH_INTERVAL_S
            ):
                # Without a changelog: durable before the offsets that produced it
                # are committed.
                shard.flush()
                self._last_flush[partition] = now
            return None

        invalid = await self._run(apply)
        if invalid is not None:
            raise invalid

    def _operations(self, points: Sequence[codec.RawPoint], present: set[str]) -> list[Any]:
        """Upserts, and seen updates set on their memories, in the points' order
        (the changelog position, last, is written after everything it covers).

        A seen update of a memory the shard lacks (not `present`, nor written
        before it here) is dropped: a restore meets it when the changelog kept only
        a later write of the memory, which carries it."""
        operations: list[Any] = []
        upserts: list[Any] = []
        for point in points:
            if point.payload.get(codec.KIND_FIELD) != codec.SEEN_KIND:
                own = point.vector if codec.has_own_vector(point.payload) else None
                stored = stored_payload(point, decision_times=self._decision_times)
                upserts.append(Point(point.point_id, own or NO_VECTOR, stored))
                present.add(point.point_id)
                continue
            memory_id, fields = codec.seen_update(point.payload)
            if memory_id not in present:
                continue
            if upserts:
                operations.append(UpdateOperation.upsert_points(upserts))
                upserts = []
            update = {SEEN_JSON_FIELD: codec.encode_json(fields)}
            operations.append(UpdateOperation.set_payload([memory_id], update))
        if upserts:
            operations.append(UpdateOperation.upsert_points(upserts))
        return operations

    async def get_points(
        self, partition: int, point_ids: Sequence[str]
    ) -> dict[str, codec.RawPoint]:
        if not point_ids:
            return {}

        def read() -> dict[str, codec.RawPoint]:
            records = self._shard(partition).retrieve(
                list(point_ids), with_payload=True, with_vector=True
            )
            return {
                str(r.id): codec.RawPoint(str(r.id), list(r.vector or []), payload_of(r.payload))
                for r in records
            }

        return await self._run(read)

    async def points_of_kind(
        self,
        partition: int,
        kind: str,
        *,
        tenant_id: str | None = None,
        namespace: str | None = None,
        with_vectors: bool = False,
    ) -> list[codec.RawPoint]:
        # Points of other kinds store no scope fields: their scope is checked decoded.
        scoped = kind in SCOPED_KINDS

        def in_scope(payload: dict[str, Any]) -> bool:
            return scoped or (
                (tenant_id is None or payload.get(codec.TENANT_FIELD) == tenant_id)
                and (namespace is None or payload.get(codec.NAMESPACE_FIELD) == namespace)
            )

        def read() -> list[codec.RawPoint]:
            shard = self._shard(partition)
            found: list[codec.RawPoint] = []
            offset: Any = None
            wanted = (
                scope_filter(tenant_id, namespace, kind)
                if scoped
                else scope_filter(None, None, kind)
            )
            while True:
                records, offset = shard.scroll(
                    ScrollRequest(
                        limit=1_000,
                        offset=offset,
                        filter=wanted,
                        with_payload=True,
                        with_vector=with_vectors,
                    )
                )
                for record in records:
                    payload = payload_of(record.payload)
                    if in_scope(payload):
                        vector = list(record.vector or [])
                        found.append(codec.RawPoint(str(record.id), vector, payload))
                if offset is None or not records:
                    return found

        return await self._run(read)

    async def pending_memories(self, partition: int, limit: int) -> list[MemoryRecord]:
        def read() -> list[MemoryRecord]:
            records, _ = self._shard(partition).scroll(
                ScrollRequest(
                    limit=limit,
                    filter=Filter(must=[match(codec.KIND_FIELD, codec.PENDING_KIND)]),
                    with_payload=True,
                )
            )
            return [
                codec.memory_from_payload(str(r.id), payload_of(r.payload), None) for r in records
            ]

        return await self._run(read)

    async def expired_decisions(self, partition: int, before: float, limit: int) -> list[str]:
        """Ids of up to `limit` decision points decided before `before` (Unix s)."""

        def read() -> list[str]:
            records, _ = self._shard(partition).scroll(
                ScrollRequest(
                    limit=limit,
                    filter=expired_filter(before),
                    with_payload=False,
                    with_vector=False,
                )
            )
            return [str(record.id) for record in records]

        return await self._run(read)

    async def delete_memories(self, partition: int, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        ids: list[Any] = list(memory_ids)

        def apply() -> None:
            shard = self._shard(partition)
            shard.update(UpdateOperation.delete_points(ids))
            shard.flush()

        await self._run(apply)

    async def changelog_position(self, partition: int) -> int | None:
        """Last changelog offset this shard holds; None for a new or empty shard."""

        def read() -> int | None:
            records = self._shard(partition).retrieve(
                [codec.meta_point_id(partition)], with_payload=True, with_vector=False
            )
            for record in records:
                return int(payload_of(record.payload)["changelog_offset"])
            return None

        return await self._run(read)

    async def count_memories(
        self,
        partition: int | None = None,
        tenant_id: str | None = None,
        namespace: str | None = None,
    ) -> int:
        def count() -> int:
            partitions = [partition] if partition is not None else self._partitions_on_disk()
            requests = [
                CountRequest(exact=True, filter=scope_filter(tenant_id, namespace, kind))
                for kind in (codec.MEMORY_KIND, codec.PENDING_KIND)
            ]
            return sum(self._shard(p).count(r) for p in partitions for r in requests)

        return await self._run(count)

    def _partitions_on_disk(self) -> list[int]:
        prefix = f"{self._topic}-"
        found = set(self._shards)
        if self._root.exists():
            for path in self._root.iterdir():
                suffix = path.name.removeprefix(prefix)
                if path.name.startswith(prefix) and suffix.isdigit() and any(path.iterdir()):
                    found.add(int(suffix))
        return sorted(found)

    async def release_partitions(self, partitions: Iterable[int]) -> None:
        wanted = list(partitions)

        def close() -> None:
            for partition in wanted:
                shard = self._shards.pop(partition, None)
                self._last_flush.pop(partition, None)
                if shard is not None:
                    shard.flush()
                    shard.close()
                    log.info("shard_closed", partition=partition)

        await self._run(close)

    def shards(self) -> EdgeMemoryStore:
        """Itself: one shard per partition, carried by a changelog (consumer.state.durable)."""
        return self

    async def ping(self) -> None:
        await self._run(lambda: None)

    async def close(self) -> None:
        await self.release_partitions(list(self._shards))
        self._executor.shutdown(wait=True)
