"""The server adapter (through qdrant-client's local mode) applies a changelog's
points as the embedded store does."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from qdrant_client import AsyncQdrantClient, models

from consumer.domain.models import SimilarityQuery
from consumer.settings import ConfigError
from consumer.state import codec
from consumer.state.collection_copy import CollectionCopy, copy_collection
from consumer.state.server import VECTOR_NAME, QdrantServerStore

from .helpers import DIMENSION
from .test_edge_storage import MEMORY_ID, decision, memory

UNNAMED = models.VectorParams(size=DIMENSION, distance=models.Distance.COSINE)


async def test_points_and_seen_updates_apply_in_order() -> None:
    store = QdrantServerStore.connect(collection="points", location=":memory:")
    await store.start(DIMENSION)
    try:
        other_id = "00000000-0000-5000-8000-0000000000b2"
        stored = memory(seen_count=1)
        seen = replace(stored, seen_count=2, last_seen_at=datetime(2026, 3, 1, tzinfo=UTC))
        lowered = replace(stored, seen_count=1, updated_at=datetime(2026, 4, 1, tzinfo=UTC))
        points = [
            codec.RawPoint.from_bytes(p.to_bytes())
            for p in [
                codec.seen_point(replace(stored, memory_id=other_id, seen_count=9)),
                codec.memory_point(stored, DIMENSION),
                codec.seen_point(seen),
                codec.decision_point(decision(), DIMENSION),
            ]
        ]
        await store.apply_points(0, points)
        assert await store.get_memories(0, [MEMORY_ID, other_id]) == {MEMORY_ID: seen}
        assert (await store.get_decisions(0, ["e9"]))["e9"] == decision()

        # A whole write after an update wins, even with a lower count.
        await store.apply_points(0, [codec.memory_point(lowered, DIMENSION)])
        assert (await store.get_memories(0, [MEMORY_ID]))[MEMORY_ID] == lowered
    finally:
        await store.close()


async def test_expired_decisions_are_found_and_deleted() -> None:
    store = QdrantServerStore.connect(collection="retention", location=":memory:")
    await store.start(DIMENSION)
    try:
        old, new = (
            replace(decision(event_id), decided_at_s=at)
            for event_id, at in (("old", 1_000.0), ("new", 2_000.0))
        )
        undated = decision("undated")  # written before decisions had a time: kept
        await store.write(0, [memory()], [old, new, undated])
        expired = await store.expired_decisions(0, 1_500.0, limit=10)
        assert expired == [old.decision_id]
        assert await store.expired_decisions(0, 2_500.0, limit=1) in (
            [old.decision_id],
            [new.decision_id],
        )
        await store.apply_points(0, [], deleted_ids=expired)
        left = await store.get_decisions(0, ["old", "new", "undated"])
        assert set(left) == {"new", "undated"}
        assert await store.count_memories(0) == 1
    finally:
        await store.close()


async def test_partition_work_is_scoped_to_the_partition_it_was_written_for() -> None:
    """Retention and pending-memory embedding run per input partition: a consumer
    sees its own partitions' decisions and pending memories, and those written
    before the stamp (owner unknown), never another partition's."""
    store = QdrantServerStore.connect(collection="partitions", location=":memory:")
    # Versions before the stamp also created one unnamed vector (placeholders).
    await store._client.create_collection("partitions", vectors_config=UNNAMED)
    await store.start(DIMENSION)
    try:
        first, second, legacy = (
            replace(decision(event_id), decided_at_s=1_000.0)
            for event_id in ("first", "second", "legacy")
        )
        pending = {
            partition: memory(memory_id=memory_id, vector=None)
            for partition, memory_id in (
                (0, "00000000-0000-5000-8000-0000000000c0"),
                (1, "00000000-0000-5000-8000-0000000000c1"),
            )
        }
        await store.write(0, [pending[0]], [first])
        await store.apply_points(
            1,
            [codec.memory_point(pending[1], DIMENSION), codec.decision_point(second, DIMENSION)],
        )
        legacy_pending_id = "00000000-0000-5000-8000-0000000000cf"
        unstamped = [
            models.PointStruct(
                id=legacy.decision_id,
                vector=codec.placeholder_vector(DIMENSION),
                payload=codec.decision_payload(legacy),
            ),
            models.PointStruct(
                id=legacy_pending_id,
                vector=codec.placeholder_vector(DIMENSION),
                payload=codec.memory_payload(memory(memory_id=legacy_pending_id, vector=None)),
            ),
        ]
        await store._client.upsert("partitions", unstamped, wait=True)

        for partition, own in ((0, first), (1, second)):
            expired = await store.expired_decisions(partition, 2_000.0, limit=10)
            assert sorted(expired) == sorted([own.decision_id, legacy.decision_id])
            found = await store.pending_memories(partition, limit=10)
            assert sorted(m.memory_id for m in found) == sorted(
                [pending[partition].memory_id, legacy_pending_id]
            )
        assert await store.expired_decisions(2, 2_000.0, limit=10) == [legacy.decision_id]
    finally:
        await store.close()


def _unit_vector(axis: int) -> list[float]:
    return [1.0 if i == axis else 0.0 for i in range(DIMENSION)]


async def _stored_vectors(
    store: QdrantServerStore, collection: str, ids: list[str]
) -> dict[str, object]:
    records = await store._client.retrieve(collection, ids, with_vectors=True)
    return {str(r.id): r.vector for r in records}


async def test_a_new_collection_stores_vectors_for_embedded_memories_only() -> None:
    """Decisions and pending memories take no vector (none in the index), and a
    pending memory gets its vector once embedded."""
    store = QdrantServerStore.connect(collection="named", location=":memory:")
    await store.start(DIMENSION)
    try:
        assert store.named_vectors
        pending_id = "00000000-0000-5000-8000-0000000000d1"
        embedded = memory(vector=_unit_vector(1))
        pending = memory(memory_id=pending_id, vector=None)
        await store.write(0, [embedded, pending], [decision()])
        ids = [MEMORY_ID, pending_id, decision().decision_id]
        stored = await _stored_vectors(store, "named", ids)
        assert stored == {
            MEMORY_ID: {VECTOR_NAME: _unit_vector(1)},
            pending_id: {},
            decision().decision_id: {},
        }
        assert await store.get_memories(0, [MEMORY_ID, pending_id]) == {
            MEMORY_ID: embedded,
            pending_id: pending,
        }
        assert (await store.get_decisions(0, ["e9"]))["e9"] == decision()
        query = SimilarityQuery(embedded.scope, _unit_vector(1), 5)
        [found] = await store.search(0, [query])
        assert [(m.read().memory_id, round(m.score, 6)) for m in found] == [(MEMORY_ID, 1.0)]

        now_embedded = replace(pending, vector=_unit_vector(2))
        await store.write(0, [now_embedded], [])
        assert (await _stored_vectors(store, "named", [pending_id]))[pending_id] == {
            VECTOR_NAME: _unit_vector(2)
        }
        assert await store.pending_memories(0, limit=10) == []
    finally:
        await store.close()


async def test_a_collection_of_an_earlier_version_keeps_working_with_placeholders() -> None:
    store = QdrantServerStore.connect(collection="unnamed", location=":memory:")
    await store._client.create_collection("unnamed", vectors_config=UNNAMED)
    await store.start(DIMENSION)
    try:
        assert not store.named_vectors
        embedded = memory(vector=_unit_vector(1))
        await store.write(0, [embedded], [decision()])
        stored = await _stored_vectors(store, "unnamed", [MEMORY_ID, decision().decision_id])
        assert stored == {
            MEMORY_ID: _unit_vector(1),
            decision().decision_id: codec.placeholder_vector(DIMENSION),
        }
        assert await store.get_memories(0, [MEMORY_ID]) == {MEMORY_ID: embedded}
        [found] = await store.search(0, [SimilarityQuery(embedded.scope, _unit_vector(1), 5)])
        assert [m.read().memory_id for m in found] == [MEMORY_ID]
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("vectors", "says"),
    [
        (
            models.VectorParams(size=DIMENSION + 1, distance=models.Distance.COSINE),
            "Upgrading the model safely",
        ),
        (
            {VECTOR_NAME: models.VectorParams(size=8, distance=models.Distance.COSINE)},
            "Upgrading the model safely",
        ),
        ({"image": UNNAMED}, "not created by memdedup"),
    ],
)
async def test_a_collection_that_cannot_hold_the_models_vectors_is_refused(
    vectors: models.VectorParams | dict[str, models.VectorParams], says: str
) -> None:
    store = QdrantServerStore.connect(collection="other", location=":memory:")
    await store._client.create_collection("other", vectors_config=vectors)
    try:
        with pytest.raises(ConfigError, match=says) as refused:
            await store.start(DIMENSION)
        assert "MEMDEDUP_QDRANT__COLLECTION" in str(refused.value)
    finally:
        await store.close()


async def test_a_collection_created_meanwhile_by_another_consumer_is_used() -> None:
    """Two consumers starting at once: the second one's create fails, and it uses
    the collection the first one made."""
    client = AsyncQdrantClient(location=":memory:")
    first = QdrantServerStore(client=client, collection="shared", payload_indexes=False)
    second = QdrantServerStore(client=client, collection="shared", payload_indexes=False)
    real_exists = client.collection_exists
    await first.start(DIMENSION)
    calls = 0

    async def stale_first_answer(name: str) -> bool:
        # The second consumer looked just before the first one created it.
        nonlocal calls
        calls += 1
        return False if calls == 1 else await real_exists(name)

    client.collection_exists = stale_first_answer  # type: ignore[assignment]
    try:
        await second.start(DIMENSION)
        assert calls == 2
        assert second.named_vectors
        await second.write(0, [memory(vector=_unit_vector(3))], [])
        assert MEMORY_ID in await first.get_memories(0, [MEMORY_ID])
    finally:
        await client.close()


async def test_a_copy_moves_an_earlier_versions_collection_into_the_named_layout() -> None:
    """Payloads as they were (partition stamps included), memories' vectors kept,
    placeholders dropped; the store works on the copy as on the original, and
    copying again changes nothing."""
    client = AsyncQdrantClient(location=":memory:")
    await client.create_collection("v1", vectors_config=UNNAMED)
    old = QdrantServerStore(client=client, collection="v1", payload_indexes=False)
    await old.start(DIMENSION)
    try:
        embedded = memory(vector=_unit_vector(1))
        pending_id = "00000000-0000-5000-8000-0000000000e1"
        pending = memory(memory_id=pending_id, vector=None)
        dated = replace(decision("dated"), decided_at_s=1_000.0)
        await old.write(3, [embedded, pending], [decision(), dated])

        pages: list[int] = []
        copy = await copy_collection(
            client=client,
            source="v1",
            target="v2",
            payload_indexes=False,
            page_size=2,
            on_page=pages.append,
        )
        assert copy == CollectionCopy(copied=4, with_vectors=1, source_points=4, target_points=4)
        assert pages == [2, 4]
        ids = [MEMORY_ID, pending_id, decision().decision_id, dated.decision_id]
        before = {r.id: r.payload for r in await client.retrieve("v1", ids)}
        after = {r.id: r.payload for r in await client.retrieve("v2", ids)}
        assert after == before
        assert await _stored_vectors(old, "v2", ids) == {
            MEMORY_ID: {VECTOR_NAME: _unit_vector(1)},
            pending_id: {},
            decision().decision_id: {},
            dated.decision_id: {},
        }

        new = QdrantServerStore(client=client, collection="v2", payload_indexes=False)
        await new.start(DIMENSION)
        assert new.named_vectors
        assert await new.get_memories(3, [MEMORY_ID, pending_id]) == {
            MEMORY_ID: embedded,
            pending_id: pending,
        }
        assert await new.get_decisions(3, ["e9", "dated"]) == {"e9": decision(), "dated": dated}
        [found] = await new.search(3, [SimilarityQuery(embedded.scope, _unit_vector(1), 5)])
        assert [m.read().memory_id for m in found] == [MEMORY_ID]
        # Still the partition's own: another partition's consumer does not take them.
        assert await new.expired_decisions(3, 2_000.0, limit=10) == [dated.decision_id]
        assert await new.expired_decisions(4, 2_000.0, limit=10) == []
        assert [m.memory_id for m in await new.pending_memories(3, limit=10)] == [pending_id]

        again = await copy_collection(
            client=client, source="v1", target="v2", payload_indexes=False
        )
        assert again == copy
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("source", "target", "says"),
    [
        ("v1", "v1", "pick a new name"),
        ("missing", "v2", "does not exist"),
        ("v1", "old-layout", "unnamed vector"),
    ],
)
async def test_a_copy_that_would_not_help_is_refused(source: str, target: str, says: str) -> None:
    client = AsyncQdrantClient(location=":memory:")
    for name in ("v1", "old-layout"):
        await client.create_collection(name, vectors_config=UNNAMED)
    try:
        with pytest.raises(ConfigError, match=says):
            await copy_collection(
                client=client, source=source, target=target, payload_indexes=False
            )
        assert not await client.collection_exists("v2")
    finally:
        await client.close()


@pytest.mark.parametrize("decision_times", [False, True])
async def test_payload_indexes_are_made_on_every_start(decision_times: bool) -> None:
    """Also on a collection whose first start stopped after creating it (the
    indexes a server needs for filtered queries at scale)."""
    client = AsyncQdrantClient(location=":memory:")
    made: list[tuple[str, object]] = []

    async def record(collection: str, field: str, schema: object) -> None:
        made.append((field, schema))

    client.create_payload_index = record  # type: ignore[method-assign,assignment]
    await client.create_collection("cut-short", vectors_config={VECTOR_NAME: UNNAMED})
    store = QdrantServerStore(client=client, collection="cut-short", decision_times=decision_times)
    try:
        await store.start(DIMENSION)
        fields = dict(made)
        expected = {*codec.INDEXED_FIELDS, "home_partition"}
        if decision_times:
            expected.add(codec.DECIDED_AT_FIELD)
        assert set(fields) == expected
        assert fields["home_partition"] == models.PayloadSchemaType.INTEGER
        tenant = fields[codec.TENANT_FIELD]
        assert isinstance(tenant, models.KeywordIndexParams)
        assert tenant.is_tenant
        made.clear()
        await store.start(DIMENSION)
        assert set(dict(made)) == expected
    finally:
        await client.close()
