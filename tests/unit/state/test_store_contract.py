"""One contract, every store: the embedded store (qdrant-edge), the server store
(qdrant-client in local mode) and the in-memory reference store pass the same
tests of consumer.ports.MemoryStore; the stores with shards pass those of
consumer.ports.ShardStore too."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from consumer.domain.models import DecisionRecord, MemoryRecord, Scope, SimilarityQuery
from consumer.domain.normalize import decision_id_for
from consumer.ports import MemoryStore, ShardStore
from consumer.state import codec
from consumer.state.edge import EdgeMemoryStore
from consumer.state.memory import InMemoryStore
from consumer.state.server import QdrantServerStore
from schemas import Decision

from ..helpers import DIMENSION, FIXED_NOW, INPUT_TOPIC, base_vector, unit_vector

STORES = ["edge", "server", "memory"]
SHARDED = ["edge", "memory"]
SCOPE = Scope("tenant-a", "prefs")


def open_store(kind: str, root: Path) -> MemoryStore:
    if kind == "edge":
        return EdgeMemoryStore(
            root=root, collection="contract", topic=INPUT_TOPIC, decision_times=True
        )
    if kind == "server":
        return QdrantServerStore.connect(collection="contract", location=":memory:")
    return InMemoryStore()


@pytest.fixture(params=STORES)
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    store = open_store(request.param, tmp_path)
    await store.start(DIMENSION)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture(params=SHARDED)
async def sharded(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    store = open_store(request.param, tmp_path)
    await store.start(DIMENSION)
    try:
        yield store
    finally:
        await store.close()


def memory_id(n: int) -> str:
    return f"00000000-0000-5000-8000-{n:012d}"


def memory(n: int, vector: Any = None, **overrides: Any) -> MemoryRecord:
    fields: dict[str, Any] = {
        "memory_id": memory_id(n),
        "tenant_id": SCOPE.tenant_id,
        "namespace": SCOPE.namespace,
        "content": f'Memory {n}: "quoted" · café ☕',
        "content_hash": f"{n:02d}" * 32,
        "importance": 0.5,
        "topics": ["ui"],
        "entities": ["Oslo"],
        "merged_event_ids": [],
        "origin_event_id": f"e{n}",
        "created_at": FIXED_NOW,
        "updated_at": FIXED_NOW,
        "vector": [float(x) for x in (base_vector() if vector is None else vector)],
        "seen_count": 1,
        "first_seen_at": FIXED_NOW,
        "last_seen_at": FIXED_NOW,
    }
    fields.update(overrides)
    return MemoryRecord(**fields)


def decision(event_id: str, *, decided_at_s: float | None = None, n: int = 1) -> DecisionRecord:
    return DecisionRecord(
        event_id=event_id,
        decision_id=decision_id_for(event_id),
        tenant_id=SCOPE.tenant_id,
        namespace=SCOPE.namespace,
        content_hash=f"{n:02d}" * 32,
        memory_id=memory_id(n),
        decision=Decision.ACCEPTED,
        event_json=json.dumps({"event_id": event_id}),
        basis_json=None,
        decided_at_s=decided_at_s,
    )


def same_memory(found: MemoryRecord, expected: MemoryRecord) -> None:
    assert replace(found, vector=None) == replace(expected, vector=None)
    if expected.vector is None:
        assert found.vector is None
    else:
        assert found.vector == pytest.approx(expected.vector, abs=1e-6)


# ------------------------------------------------------------------ the port


async def test_memories_and_decisions_read_back_as_written(any_store: MemoryStore) -> None:
    stored = memory(1)
    record = decision("e1")
    await any_store.write(0, [stored], [record])
    found = await any_store.get_memories(0, [stored.memory_id, memory_id(99)])
    assert list(found) == [stored.memory_id]
    same_memory(found[stored.memory_id], stored)
    assert await any_store.get_decisions(0, ["e1", "unknown"]) == {"e1": record}
    assert await any_store.get_memories(0, []) == {}
    assert await any_store.get_decisions(0, []) == {}


async def test_a_write_replaces_a_point_of_the_same_id(any_store: MemoryStore) -> None:
    await any_store.write(0, [memory(1)], [])
    changed = memory(1, content="changed", seen_count=3)
    await any_store.write(0, [changed], [])
    same_memory((await any_store.get_memories(0, [memory_id(1)]))[memory_id(1)], changed)
    assert await any_store.count_memories(0) == 1


async def test_a_search_ranks_its_scope_s_memories_by_cosine(any_store: MemoryStore) -> None:
    near, far, other_scope = (
        memory(1, unit_vector(0.95, 1)),
        memory(2, unit_vector(0.5, 2)),
        memory(3, base_vector(), namespace="other"),
    )
    pending = memory(4, vector=None)
    await any_store.write(0, [near, far, other_scope], [decision("e1")])
    await any_store.write(0, [replace(pending, vector=None)], [])
    query = SimilarityQuery(SCOPE, [float(x) for x in base_vector()], 5)
    (results,) = await any_store.search(0, [query])
    assert [r.memory_id for r in results] == [near.memory_id, far.memory_id]
    assert [r.score for r in results] == pytest.approx([0.95, 0.5], abs=1e-5)
    same_memory(results[0].read(), near)
    (top,) = await any_store.search(0, [replace(query, limit=1)])
    assert [r.memory_id for r in top] == [near.memory_id]
    (none,) = await any_store.search(0, [replace(query, scope=Scope("tenant-b", "prefs"))])
    assert none == []
    assert await any_store.search(0, []) == []


async def test_a_memory_without_a_vector_is_pending(any_store: MemoryStore) -> None:
    pending = memory(1, vector=None)
    pending = replace(pending, vector=None)
    await any_store.write(0, [pending, memory(2)], [])
    [found] = await any_store.pending_memories(0, 10)
    same_memory(found, pending)
    assert await any_store.count_memories(0) == 2
    same_memory((await any_store.get_memories(0, [pending.memory_id]))[pending.memory_id], pending)


async def test_points_of_any_kind_read_back_by_id_and_by_kind(any_store: MemoryStore) -> None:
    review = codec.plain_point(
        codec.review_point_id("d1"),
        codec.REVIEW_KIND,
        {codec.TENANT_FIELD: "tenant-a", codec.NAMESPACE_FIELD: "prefs", "status": "confirmed"},
        DIMENSION,
    )
    elsewhere = codec.plain_point(
        codec.review_point_id("d2"),
        codec.REVIEW_KIND,
        {codec.TENANT_FIELD: "tenant-b", codec.NAMESPACE_FIELD: "prefs", "status": "reversed"},
        DIMENSION,
    )
    stored = memory(1)
    await any_store.apply_points(0, [review, elsewhere, codec.memory_point(stored, DIMENSION)])
    found = await any_store.get_points(0, [review.point_id, stored.memory_id, memory_id(98)])
    assert set(found) == {review.point_id, stored.memory_id}
    assert found[review.point_id].payload == review.payload
    assert found[review.point_id].vector == []
    assert found[stored.memory_id].vector == pytest.approx(stored.vector, abs=1e-6)
    kind = await any_store.points_of_kind(0, codec.REVIEW_KIND)
    assert {p.point_id for p in kind} == {review.point_id, elsewhere.point_id}
    mine = await any_store.points_of_kind(0, codec.REVIEW_KIND, tenant_id="tenant-a")
    assert [(p.point_id, p.payload, p.vector) for p in mine] == [
        (review.point_id, review.payload, [])
    ]
    memories = await any_store.points_of_kind(
        0, codec.MEMORY_KIND, namespace="prefs", with_vectors=True
    )
    assert [p.vector for p in memories] == [pytest.approx(stored.vector, abs=1e-6)]
    assert await any_store.get_points(0, []) == {}


async def test_deletes_come_before_the_points_of_the_same_call(any_store: MemoryStore) -> None:
    await any_store.write(0, [memory(1), memory(2)], [])
    again = memory(2, content="written again")
    await any_store.apply_points(
        0,
        [codec.memory_point(again, DIMENSION)],
        deleted_ids=[memory_id(1), memory_id(2)],
    )
    found = await any_store.get_memories(0, [memory_id(1), memory_id(2)])
    assert list(found) == [memory_id(2)]
    same_memory(found[memory_id(2)], again)
    await any_store.apply_points(0, [], deleted_ids=[memory_id(2)])
    assert await any_store.count_memories(0) == 0


async def test_a_seen_update_sets_its_memory_s_count_and_skips_a_missing_one(
    any_store: MemoryStore,
) -> None:
    stored = memory(1, seen_count=1)
    seen = replace(stored, seen_count=5, last_seen_at=datetime(2026, 3, 1, tzinfo=UTC))
    missing = replace(stored, memory_id=memory_id(2), seen_count=9)
    await any_store.apply_points(
        0,
        [
            codec.seen_point(missing),
            codec.memory_point(stored, DIMENSION),
            codec.seen_point(seen),
        ],
    )
    found = await any_store.get_memories(0, [memory_id(1), memory_id(2)])
    assert list(found) == [memory_id(1)]
    same_memory(found[memory_id(1)], seen)
    assert await any_store.count_memories(0) == 1
    # A whole write after the update wins, even with a lower count.
    lowered = replace(stored, updated_at=datetime(2026, 4, 1, tzinfo=UTC))
    await any_store.write(0, [lowered], [])
    same_memory((await any_store.get_memories(0, [memory_id(1)]))[memory_id(1)], lowered)


async def test_a_compacted_memory_s_id_reads_as_its_keeper(any_store: MemoryStore) -> None:
    keeper, member = memory(1), memory(2, unit_vector(0.97, 1))
    await any_store.write(0, [keeper, member], [])
    await any_store.apply_points(0, [codec.redirect_point(member, keeper.memory_id, DIMENSION)])
    found = await any_store.get_memories(0, [member.memory_id])
    assert list(found) == [member.memory_id]
    same_memory(found[member.memory_id], keeper)
    assert await any_store.count_memories(0) == 1


async def test_decisions_past_a_time_are_expired_in_limits(any_store: MemoryStore) -> None:
    old = [decision(f"old{i}", decided_at_s=1_000.0 + i) for i in range(3)]
    new = decision("new", decided_at_s=2_000.0)
    undated = decision("undated")  # without a time: kept
    await any_store.write(0, [memory(1)], [*old, new, undated])
    expired = await any_store.expired_decisions(0, 1_500.0, limit=10)
    assert sorted(expired) == sorted(d.decision_id for d in old)
    assert len(await any_store.expired_decisions(0, 1_500.0, limit=2)) == 2
    await any_store.apply_points(0, [], deleted_ids=expired)
    left = await any_store.get_decisions(0, [d.event_id for d in [*old, new, undated]])
    assert set(left) == {"new", "undated"}
    assert await any_store.count_memories(0) == 1


async def test_memories_are_counted_by_scope(any_store: MemoryStore) -> None:
    await any_store.write(
        0,
        [
            memory(1),
            memory(2, namespace="work"),
            memory(3, tenant_id="tenant-b"),
            replace(memory(4), vector=None),
        ],
        [decision("e1")],
    )
    assert await any_store.count_memories(0) == 4
    assert await any_store.count_memories(0, tenant_id="tenant-a") == 3
    assert await any_store.count_memories(0, "tenant-a", "prefs") == 2
    assert await any_store.count_memories(0, namespace="work") == 1
    assert await any_store.count_memories(0, "tenant-c") == 0
    assert await any_store.count_memories() == 4
    await any_store.ping()


# ------------------------------------------------------------ the shard side


def shards_of(store: MemoryStore) -> ShardStore:
    shards = store.shards()
    assert shards is not None
    return shards


async def test_a_server_has_no_shards(tmp_path: Path) -> None:
    store = open_store("server", tmp_path)
    assert store.shards() is None
    await store.close()


async def test_a_shard_keeps_the_changelog_position_with_its_points(sharded: MemoryStore) -> None:
    shards = shards_of(sharded)
    assert await shards.changelog_position(0) is None
    await shards.apply_points(0, [codec.memory_point(memory(1), DIMENSION)], changelog_offset=7)
    await shards.apply_points(0, [], changelog_offset=9, deleted_ids=[memory_id(1)])
    assert await shards.changelog_position(0) == 9
    assert await shards.changelog_position(1) is None
    assert await sharded.count_memories(0) == 0


async def test_partitions_are_separate_shards(sharded: MemoryStore) -> None:
    await sharded.write(0, [memory(1)], [decision("e1")])
    assert await sharded.get_memories(1, [memory_id(1)]) == {}
    assert await sharded.get_decisions(1, ["e1"]) == {}
    assert await sharded.count_memories(1) == 0
    assert await sharded.count_memories() == 1


async def test_a_released_shard_keeps_its_points(sharded: MemoryStore) -> None:
    shards = shards_of(sharded)
    stored = memory(1)
    await shards.apply_points(0, [codec.memory_point(stored, DIMENSION)], changelog_offset=3)
    shards.full_results_from(0.8)
    await shards.release_partitions([0])
    same_memory((await sharded.get_memories(0, [stored.memory_id]))[stored.memory_id], stored)
    assert await shards.changelog_position(0) == 3
