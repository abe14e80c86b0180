"""Qdrant server (or cluster) through qdrant-client's AsyncQdrantClient.

All consumers share one collection, so reads by id and searches need no
partition. Decisions and pending memories are also stamped with the input
partition they came from (`HOME_PARTITION_FIELD`), so that the periodic work over
them (decision retention, embedding pending memories) is done by the partition's
owner alone instead of by every consumer over the whole collection. Tests drive
the same adapter through qdrant-client's local mode.

Collections this adapter creates keep the embedding as a named vector
(`VECTOR_NAME`), so that points with no vector of their own (decisions, pending
memories, redirects) store none: they take no vector memory and stay out of the
vector index. Collections created by earlier versions hold one unnamed vector;
they keep working, with a placeholder vector on those points, until moved with
`memdedup migrate-collection` (consumer.state.collection_copy).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar

import httpx
import structlog
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from consumer.domain.models import DecisionRecord, MemoryRecord, ScoredMemory, SimilarityQuery
from consumer.domain.normalize import decision_id_for
from consumer.errors import StoreUnavailable
from consumer.settings import ConfigError
from consumer.state import codec

T = TypeVar("T")

log = structlog.get_logger(__name__)

# The embedding's name in collections with named vectors (see the module's doc).
VECTOR_NAME = "text"

# The input partition a decision or pending memory was written for.
HOME_PARTITION_FIELD = "home_partition"
_STAMPED_KINDS = (codec.DECISION_KIND, codec.PENDING_KIND)

_TRANSIENT = (
    ResponseHandlingException,
    httpx.HTTPError,
    OSError,
    asyncio.TimeoutError,
    ConnectionError,
)


def _match(key: str, value: str) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def _stamped(payload: dict[str, Any], partition: int) -> dict[str, Any]:
    """`payload` with its home partition, when it is of a kind worked through per
    partition."""
    if payload.get(codec.KIND_FIELD) in _STAMPED_KINDS:
        return {**payload, HOME_PARTITION_FIELD: partition}
    return payload


def _of_partition(kind: str, partition: int, *extra: models.Condition) -> models.Filter:
    """Points of `kind` written for `partition`, or by a version before the stamp
    (whose owner is unknown: any consumer may take them)."""
    return models.Filter(
        must=[_match(codec.KIND_FIELD, kind), *extra],
        should=[
            models.FieldCondition(
                key=HOME_PARTITION_FIELD, match=models.MatchValue(value=partition)
            ),
            models.IsEmptyCondition(is_empty=models.PayloadField(key=HOME_PARTITION_FIELD)),
        ],
    )


def _scope_filter(tenant_id: str | None, namespace: str | None, kind: str) -> models.Filter:
    must: list[models.Condition] = [_match(codec.KIND_FIELD, kind)]
    if tenant_id is not None:
        must.append(_match(codec.TENANT_FIELD, tenant_id))
    if namespace is not None:
        must.append(_match(codec.NAMESPACE_FIELD, namespace))
    return models.Filter(must=must)


class QdrantServerStore:
    def __init__(
        self,
        *,
        client: AsyncQdrantClient,
        collection: str,
        payload_indexes: bool = True,
        decision_times: bool = False,
    ) -> None:
        """`decision_times`: decision retention is on, so decisions' times get a
        range index (a decision's payload holds its time either way)."""
        self._client = client
        self._collection = collection
        self._payload_indexes = payload_indexes
        self._decision_times = decision_times
        self._dimension = 0
        # Whether the collection keeps the embedding as a named vector (set by start).
        self._named = True

    @classmethod
    def connect(
        cls,
        *,
        collection: str,
        url: str | None = None,
        api_key: str | None = None,
        location: str | None = None,
        timeout_s: float = 10.0,
        decision_times: bool = False,
    ) -> QdrantServerStore:
        if url:
            client = server_client(url=url, api_key=api_key, timeout_s=timeout_s)
            return cls(client=client, collection=collection, decision_times=decision_times)
        # Local mode ignores payload indexes (and warns about them).
        client = AsyncQdrantClient(location=location or ":memory:")
        return cls(client=client, collection=collection, payload_indexes=False)

    async def _call(self, func: Callable[[], Awaitable[T]]) -> T:
        try:
            return await func()
        except UnexpectedResponse as exc:
            if exc.status_code is not None and (exc.status_code >= 500 or exc.status_code == 429):
                raise StoreUnavailable(f"qdrant answered {exc.status_code}") from exc
            raise
        except _TRANSIENT as exc:
            raise StoreUnavailable(f"qdrant unreachable: {type(exc).__name__}: {exc}") from exc

    async def start(self, dimension: int) -> None:
        """Creates the collection (named vector) if missing, or checks that the one
        there fits this model (ConfigError where it does not); then its payload
        indexes, on every start, so a start cut short is completed by the next."""
        self._dimension = dimension

        async def ensure() -> None:
            if not await self._client.collection_exists(self._collection):
                try:
                    await self._client.create_collection(
                        self._collection,
                        vectors_config={
                            VECTOR_NAME: models.VectorParams(
                                size=dimension, distance=models.Distance.COSINE
                            )
                        },
                    )
                except (UnexpectedResponse, ValueError):
                    # Another consumer created it meanwhile: checked below as any.
                    if not await self._client.collection_exists(self._collection):
                        raise
            info = await self._client.get_collection(self._collection)
            self._named = vector_layout(self._collection, info.config.params.vectors, dimension)

        await self._call(ensure)
        if not self._named:
            log.warning(
                "store_placeholder_vectors",
                collection=self._collection,
                fix="stop the consumers, run `memdedup migrate-collection --to NEW`, "
                "then set MEMDEDUP_QDRANT__COLLECTION=NEW",
            )
        for field, schema in self._payload_index_schemas():
            # Creating an index that exists is a no-op.
            await self._call(
                partial(self._client.create_payload_index, self._collection, field, schema)
            )

    def _payload_index_schemas(
        self,
    ) -> list[tuple[str, models.PayloadSchemaType | models.PayloadSchemaParams]]:
        if not self._payload_indexes:
            return []
        keyword = models.PayloadSchemaType.KEYWORD
        tenant_key = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
        schemas: list[tuple[str, models.PayloadSchemaType | models.PayloadSchemaParams]] = [
            (field, tenant_key if field == codec.TENANT_FIELD else keyword)
            for field in codec.INDEXED_FIELDS
        ]
        schemas.append((HOME_PARTITION_FIELD, models.PayloadSchemaType.INTEGER))
        if self._decision_times:
            schemas.append((codec.DECIDED_AT_FIELD, models.PayloadSchemaType.FLOAT))
        return schemas

    @property
    def named_vectors(self) -> bool:
        """Whether the collection keeps the embedding as a named vector (after start)."""
        return self._named

    def _vector(self, point: codec.RawPoint) -> models.VectorStruct:
        """What a point stores as its vector in this collection's layout."""
        own = point.vector if point.vector and codec.has_own_vector(point.payload) else None
        if self._named:
            return {VECTOR_NAME: own} if own is not None else {}
        return own if own is not None else codec.placeholder_vector(self._dimension)

    async def get_memories(
        self, partition: int, memory_ids: Sequence[str]
    ) -> dict[str, MemoryRecord]:
        """Memories by id; the id of a memory folded into another by compaction
        yields the memory it was folded into."""
        if not memory_ids:
            return {}
        found: dict[str, MemoryRecord] = {}
        wanted = {memory_id: memory_id for memory_id in memory_ids}
        for _ in range(codec.MAX_REDIRECTS + 1):
            if not wanted:
                break
            retrieve = partial(
                self._client.retrieve,
                self._collection,
                list(wanted),
                with_payload=True,
                with_vectors=True,
            )
            records = await self._call(retrieve)
            followed: dict[str, str] = {}
            for record in records:
                payload = record.payload or {}
                requested = wanted[str(record.id)]
                if codec.is_memory(payload):
                    found[requested] = codec.memory_from_payload(
                        str(record.id), payload, as_list(record.vector)
                    )
                elif (target := codec.redirect_target(payload)) is not None:
                    followed[target] = requested
            wanted = followed
        return found

    async def get_points(
        self, partition: int, point_ids: Sequence[str]
    ) -> dict[str, codec.RawPoint]:
        if not point_ids:
            return {}
        ids = list(point_ids)
        records = await self._call(
            lambda: self._client.retrieve(
                self._collection, ids, with_payload=True, with_vectors=True
            )
        )
        return {
            str(r.id): codec.RawPoint(str(r.id), as_list(r.vector) or [], r.payload or {})
            for r in records
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
        """A shared server holds every partition's points: all of the kind."""
        found: list[codec.RawPoint] = []
        offset: Any = None
        while True:
            scroll = partial(
                self._client.scroll,
                self._collection,
                scroll_filter=_scope_filter(tenant_id, namespace, kind),
                limit=1_000,
                offset=offset,
                with_payload=True,
                with_vectors=with_vectors,
            )
            records, offset = await self._call(scroll)
            found.extend(
                codec.RawPoint(str(r.id), as_list(r.vector) or [], r.payload or {}) for r in records
            )
            if offset is None or not records:
                return found

    async def search(
        self, partition: int, queries: Sequence[SimilarityQuery]
    ) -> list[list[ScoredMemory]]:
        if not queries:
            return []
        requests = [
            models.QueryRequest(
                query=query.vector,
                using=VECTOR_NAME if self._named else None,
                filter=_scope_filter(
                    query.scope.tenant_id, query.scope.namespace, codec.MEMORY_KIND
                ),
                limit=query.limit,
                with_payload=True,
                with_vector=True,
            )
            for query in queries
        ]
        responses = await self._call(
            lambda: self._client.query_batch_points(self._collection, requests)
        )
        return [
            [
                ScoredMemory(
                    codec.memory_from_payload(
                        str(point.id), point.payload or {}, as_list(point.vector)
                    ),
                    float(point.score),
                )
                for point in response.points
            ]
            for response in responses
        ]

    async def get_decisions(
        self, partition: int, event_ids: Sequence[str]
    ) -> dict[str, DecisionRecord]:
        if not event_ids:
            return {}
        ids = [decision_id_for(event_id) for event_id in event_ids]
        records = await self._call(
            lambda: self._client.retrieve(self._collection, ids, with_payload=True)
        )
        found = [codec.decision_from_payload(r.payload or {}) for r in records]
        return {record.event_id: record for record in found}

    async def write(
        self,
        partition: int,
        memories: Sequence[MemoryRecord],
        decisions: Sequence[DecisionRecord],
    ) -> None:
        points = [codec.memory_point(m, self._dimension) for m in memories]
        points.extend(codec.decision_point(d, self._dimension) for d in decisions)
        # Upserted with wait=True: acknowledged only once applied, before offsets
        # are committed.
        await self.apply_points(partition, points)

    async def count_memories(
        self,
        partition: int | None = None,
        tenant_id: str | None = None,
        namespace: str | None = None,
    ) -> int:
        total = 0
        for kind in (codec.MEMORY_KIND, codec.PENDING_KIND):
            count = partial(
                self._client.count,
                self._collection,
                count_filter=_scope_filter(tenant_id, namespace, kind),
                exact=True,
            )
            total += (await self._call(count)).count
        return total

    async def apply_points(
        self,
        partition: int,
        points: Sequence[codec.RawPoint],
        *,
        deleted_ids: Sequence[str] = (),
    ) -> None:
        if deleted_ids:
            await self.delete_memories(partition, deleted_ids)
        if not points:
            return
        structs: list[models.PointStruct] = []
        # In order: a seen update (a changelog's; this adapter writes memories whole)
        # is set on the memory it names, after the points before it.
        for point in points:
            if point.payload.get(codec.KIND_FIELD) != codec.SEEN_KIND:
                payload = _stamped(point.payload, partition)
                structs.append(
                    models.PointStruct(
                        id=point.point_id, vector=self._vector(point), payload=payload
                    )
                )
                continue
            await self._upsert(structs)
            structs = []
            await self._apply_seen(*codec.seen_update(point.payload))
        await self._upsert(structs)

    async def upsert_as_is(self, points: Sequence[codec.RawPoint]) -> None:
        """Points written as they are (no partition stamp added): a collection copy."""
        structs = [
            models.PointStruct(id=p.point_id, vector=self._vector(p), payload=p.payload)
            for p in points
        ]
        await self._upsert(structs)

    async def _upsert(self, structs: list[models.PointStruct]) -> None:
        if structs:
            await self._call(lambda: self._client.upsert(self._collection, structs, wait=True))

    async def _apply_seen(self, memory_id: str, fields: dict[str, Any]) -> None:
        found = await self._call(lambda: self._client.retrieve(self._collection, [memory_id]))
        if not found or not codec.is_memory(found[0].payload or {}):
            return
        await self._call(
            lambda: self._client.set_payload(
                self._collection, payload=fields, points=[memory_id], wait=True
            )
        )

    async def pending_memories(self, partition: int, limit: int) -> list[MemoryRecord]:
        records, _ = await self._call(
            lambda: self._client.scroll(
                self._collection,
                scroll_filter=_of_partition(codec.PENDING_KIND, partition),
                limit=limit,
                with_payload=True,
            )
        )
        return [codec.memory_from_payload(str(r.id), r.payload or {}, None) for r in records]

    async def expired_decisions(self, partition: int, before: float, limit: int) -> list[str]:
        """Up to `limit` of the partition's decisions decided before `before` (Unix
        s); decisions stored without a time are kept."""
        expired = _of_partition(
            codec.DECISION_KIND,
            partition,
            models.FieldCondition(key=codec.DECIDED_AT_FIELD, range=models.Range(lt=before)),
        )
        records, _ = await self._call(
            lambda: self._client.scroll(
                self._collection,
                scroll_filter=expired,
                limit=limit,
                with_payload=False,
                with_vectors=False,
            )
        )
        return [str(record.id) for record in records]

    async def delete_memories(self, partition: int, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        selector = models.PointIdsList(points=list(memory_ids))
        await self._call(
            lambda: self._client.delete(self._collection, points_selector=selector, wait=True)
        )

    def shards(self) -> None:
        """None: one collection shared by the group, with no changelog and no
        hand-over between consumers."""
        return None

    async def ping(self) -> None:
        await self._call(self._client.get_collections)

    async def close(self) -> None:
        await self._client.close()


def server_client(*, url: str, api_key: str | None, timeout_s: float) -> AsyncQdrantClient:
    """A client of the Qdrant server at `url`, as every part of the service connects."""
    return AsyncQdrantClient(url=url, api_key=api_key, timeout=int(timeout_s))


def vector_params(collection: str, vectors: object) -> tuple[models.VectorParams, bool]:
    """A collection's embedding parameters and whether they are the named layout
    (False: one unnamed vector, as earlier versions created)."""
    if isinstance(vectors, models.VectorParams):
        return vectors, False
    if isinstance(vectors, dict) and isinstance(vectors.get(VECTOR_NAME), models.VectorParams):
        return vectors[VECTOR_NAME], True
    names = sorted(vectors) if isinstance(vectors, dict) else []
    raise ConfigError(
        f"Qdrant collection {collection!r} has no {VECTOR_NAME!r} vector (its vectors: "
        f"{names}): it was not created by memdedup; set MEMDEDUP_QDRANT__COLLECTION "
        "to a new name (it is created on start)"
    )


def vector_layout(collection: str, vectors: object, dimension: int) -> bool:
    """Whether a collection's vectors config is the named layout; ConfigError if it
    cannot hold this model's vectors."""
    params, named = vector_params(collection, vectors)
    if params.size != dimension:
        raise ConfigError(
            f"Qdrant collection {collection!r} holds {params.size}-dimension vectors but "
            f"the embedding model makes {dimension}: a different model needs a collection "
            "of its own (set MEMDEDUP_QDRANT__COLLECTION to a new name; docs/operations.md: "
            '"Upgrading the model safely")'
        )
    return named


def as_list(vector: object) -> list[float] | None:
    """A record's embedding, in either layout (None: it has none)."""
    if isinstance(vector, dict):
        vector = vector.get(VECTOR_NAME)
    if isinstance(vector, list) and all(isinstance(x, float | int) for x in vector):
        return [float(x) for x in vector]
    return None
