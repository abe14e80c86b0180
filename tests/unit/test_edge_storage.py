"""How the embedded store keeps points: payloads packed as JSON, changelog bytes
unchanged, plain payloads of older shards still read, flushing with a changelog."""

from __future__ import annotations

import base64
import json
import math
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_edge import (
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeVectorParams,
    PayloadSchemaType,
    Point,
    UpdateOperation,
)

from consumer.domain.models import (
    DecisionRecord,
    MemoryRecord,
    MergeSource,
    Scope,
    SimilarityQuery,
)
from consumer.domain.normalize import decision_id_for
from consumer.errors import StoreUnavailable
from consumer.state import codec, edge, edge_layout
from consumer.state.edge import EdgeMemoryStore
from consumer.state.edge_layout import stored_payload
from schemas import Decision

from .helpers import DIMENSION, FIXED_NOW, INPUT_TOPIC


@pytest.fixture
def store(edge_store: EdgeMemoryStore) -> EdgeMemoryStore:
    """These tests are of the embedded store itself."""
    return edge_store


MEMORY_ID = "00000000-0000-5000-8000-0000000000a1"


def memory(**overrides: Any) -> MemoryRecord:
    fields: dict[str, Any] = {
        "memory_id": MEMORY_ID,
        "tenant_id": "tenant-a",
        "namespace": "prefs",
        "content": 'Prefers "dark" mode · café ☕ \\ tabs\n',
        "content_hash": "ab" * 32,
        "importance": 0.7,
        "topics": ["ui", "thème"],
        "entities": [],
        "merged_event_ids": ["e2", "e3"],
        "origin_event_id": "e1",
        "created_at": FIXED_NOW,
        "updated_at": FIXED_NOW,
        # A unit vector: the store normalises (cosine), so it reads back equal.
        "vector": [1.0] + [0.0] * (DIMENSION - 1),
        "merged_from": [MergeSource("e2", "m2")],
        "supersedes": ["cd" * 32],
        "seen_count": 4,
        "first_seen_at": FIXED_NOW,
        "last_seen_at": FIXED_NOW,
    }
    fields.update(overrides)
    return MemoryRecord(**fields)


def decision(event_id: str = "e9") -> DecisionRecord:
    return DecisionRecord(
        event_id=event_id,
        decision_id=decision_id_for(event_id),
        tenant_id="tenant-a",
        namespace="prefs",
        content_hash="ef" * 32,
        memory_id=MEMORY_ID,
        decision=Decision.SKIPPED,
        event_json=json.dumps({"event_id": event_id, "note": 'a "quoted" ünïcode'}),
        basis_json=None,
    )


def reference_document(point: codec.RawPoint) -> dict[str, Any]:
    """The changelog record as one document; a vector only for an embedded memory."""
    document: dict[str, Any] = {"id": point.point_id}
    if point.payload["kind"] == codec.MEMORY_KIND:
        vector = base64.b64encode(np.asarray(point.vector, dtype="<f4").tobytes()).decode()
        document["vector"] = vector
    document["payload"] = point.payload
    return document


@pytest.mark.parametrize(
    "point",
    [
        codec.memory_point(memory(), DIMENSION),
        codec.memory_point(memory(vector=None, importance=1), DIMENSION),
        codec.decision_point(decision(), DIMENSION),
        codec.meta_point(3, 12345, DIMENSION),
        codec.plain_point("p-1", "command", {"outputs": [{"a": 1.5e-7, "b": None}]}, DIMENSION),
    ],
)
def test_changelog_bytes_are_those_of_one_json_encoding(point: codec.RawPoint) -> None:
    document = reference_document(point)
    # Put together from parts, yet the bytes of the document encoded at once...
    assert point.to_bytes() == codec.encode_json(document).encode()
    # ...which the standard library reads as what it would have written itself.
    assert json.loads(point.to_bytes()) == json.loads(json.dumps(document))
    assert point.to_bytes() == point.to_bytes()  # the cached payload JSON is the same
    again = codec.RawPoint.from_bytes(point.to_bytes())
    assert (again.point_id, again.payload) == (point.point_id, point.payload)
    assert again.to_bytes() == point.to_bytes()
    if point.payload["kind"] == codec.MEMORY_KIND:
        assert again.vector == pytest.approx(point.vector)
    else:
        assert again.vector == []


async def test_points_without_a_vector_of_their_own_are_stored_without_one(
    store: EdgeMemoryStore,
) -> None:
    placeholder_bytes = base64.b64encode(
        np.asarray(codec.placeholder_vector(DIMENSION), dtype="<f4").tobytes()
    )
    record = codec.decision_point(decision(), DIMENSION)
    assert placeholder_bytes not in record.to_bytes()
    restored = codec.RawPoint.from_bytes(record.to_bytes())
    # As a restore applies it; records written with the placeholder still read.
    legacy = codec.RawPoint.from_bytes(reference_bytes_with_vector(record))
    assert legacy.vector == codec.placeholder_vector(DIMENSION)
    await store.apply_points(0, [restored], changelog_offset=7)
    # A record of an earlier version carries the placeholder: stored without it too.
    other = decision("e10")
    legacy_other = replace(
        legacy, point_id=other.decision_id, payload=codec.decision_payload(other)
    )
    await store.apply_points(0, [legacy_other], changelog_offset=8)

    found = await store.get_points(0, [record.point_id, other.decision_id])
    assert found[record.point_id].vector == []
    assert found[other.decision_id].vector == []
    assert (await store.get_decisions(0, ["e9"]))["e9"] == decision()
    assert (await store.get_decisions(0, ["e10"]))["e10"] == other
    shard = store._shard(0)
    raw = shard.retrieve(
        [record.point_id, codec.meta_point_id(0)], with_payload=False, with_vector=True
    )
    assert [r.vector for r in raw] == [{}, {}]  # nothing stored in the vector storage


async def test_a_shard_with_placeholder_vectors_of_earlier_versions_still_reads(
    store: EdgeMemoryStore,
) -> None:
    """Decisions stored with the placeholder (before points without a vector of their
    own were stored without one) read as before, next to memories found by search."""
    record = decision()
    point = codec.decision_point(record, DIMENSION)
    store._shard(0).update(
        UpdateOperation.upsert_points(
            [Point(point.point_id, codec.placeholder_vector(DIMENSION), stored_payload(point))]
        )
    )
    stored = memory()
    await store.apply_points(0, [codec.memory_point(stored, DIMENSION)], changelog_offset=3)

    assert (await store.get_decisions(0, ["e9"]))["e9"] == record
    assert (await store.get_memories(0, [MEMORY_ID]))[MEMORY_ID] == stored
    query = SimilarityQuery(stored.scope, list(stored.vector or []), 5)
    (results,) = await store.search(0, [query])
    assert [r.read().memory_id for r in results] == [MEMORY_ID]


def reference_bytes_with_vector(point: codec.RawPoint) -> bytes:
    vector = base64.b64encode(np.asarray(point.vector, dtype="<f4").tobytes()).decode()
    document = {"id": point.point_id, "vector": vector, "payload": point.payload}
    return json.dumps(document, separators=(",", ":")).encode()


async def test_points_read_back_as_written(store: EdgeMemoryStore) -> None:
    stored = memory()
    record = decision()
    points = [codec.memory_point(stored, DIMENSION), codec.decision_point(record, DIMENSION)]
    await store.apply_points(0, points, changelog_offset=41)

    found = await store.get_points(0, [p.point_id for p in points])
    for point in points:
        assert found[point.point_id].payload == point.payload
        # Key order too: a point read back and re-published keeps its bytes.
        assert list(found[point.point_id].payload) == list(point.payload)
    assert (await store.get_memories(0, [MEMORY_ID]))[MEMORY_ID] == stored
    assert (await store.get_decisions(0, ["e9"]))["e9"] == record
    assert await store.changelog_position(0) == 41
    kinds = await store.points_of_kind(0, codec.DECISION_KIND, tenant_id="tenant-a")
    assert [p.payload for p in kinds] == [points[1].payload]
    assert await store.count_memories(0, "tenant-a", "prefs") == 1
    assert await store.count_memories(0, "tenant-b", "prefs") == 0


def earlier_shard(store: EdgeMemoryStore, partition: int, points: list[Point]) -> None:
    """A shard as versions before the search scope field wrote it (their indexes),
    holding `points` as given, closed."""
    path = store.shard_path(partition)
    path.mkdir(parents=True)
    shard = EdgeShard.create(
        str(path), EdgeConfig(vectors=EdgeVectorParams(DIMENSION, Distance.Cosine))
    )
    for field in codec.INDEXED_FIELDS:
        shard.update(UpdateOperation.create_field_index(field, PayloadSchemaType.Keyword))
    shard.update(UpdateOperation.upsert_points(points))
    shard.flush()
    shard.close()


async def test_shards_with_plain_payloads_are_still_read(store: EdgeMemoryStore) -> None:
    """Points written before payloads were packed."""
    stored = memory()
    points = [codec.memory_point(stored, DIMENSION), codec.decision_point(decision(), DIMENSION)]
    await store.start(DIMENSION)
    earlier_shard(store, 0, [Point(p.point_id, p.vector, p.payload) for p in points])

    assert (await store.get_memories(0, [MEMORY_ID]))[MEMORY_ID] == stored
    assert (await store.get_decisions(0, ["e9"]))["e9"] == decision()
    query = SimilarityQuery(Scope("tenant-a", "prefs"), stored.vector or [], 5)
    [found] = await store.search(0, [query])
    assert [m.memory for m in found] == [stored]


async def test_a_shard_written_before_the_search_scope_gets_it_when_opened(
    store: EdgeMemoryStore,
) -> None:
    """Memories of two scopes (packed payloads, no search scope field), a decision
    and a pending memory: once opened, a search finds each scope's memory only."""
    first = memory()
    second = memory(memory_id="00000000-0000-5000-8000-0000000000b2", namespace="work")
    pending = memory(memory_id="00000000-0000-5000-8000-0000000000c3", vector=None)
    points = [
        codec.memory_point(first, DIMENSION),
        codec.memory_point(second, DIMENSION),
        codec.memory_point(pending, DIMENSION),
        codec.decision_point(decision(), DIMENSION),
    ]
    earlier = [
        Point(
            p.point_id,
            p.vector,
            {k: v for k, v in stored_payload(p).items() if k != edge_layout.SEARCH_SCOPE_FIELD},
        )
        for p in points
    ]
    await store.start(DIMENSION)
    earlier_shard(store, 0, earlier)

    for scoped in (first, second):
        query = SimilarityQuery(scoped.scope, list(scoped.vector or []), 5)
        [found] = await store.search(0, [query])
        assert [m.memory for m in found] == [scoped]
    shard = store._shard(0)
    assert edge_layout.SEARCH_SCOPE_FIELD in shard.info().payload_schema
    [record] = shard.retrieve([second.memory_id], with_payload=True, with_vector=False)
    assert record.payload[edge_layout.SEARCH_SCOPE_FIELD] == "tenant-a/work"
    [other] = shard.retrieve([pending.memory_id], with_payload=True, with_vector=False)
    assert edge_layout.SEARCH_SCOPE_FIELD not in other.payload  # never a search result
    assert (await store.get_decisions(0, ["e9"]))["e9"] == decision()

    # Rolled back: an earlier version writes a memory without the field into the
    # shard, then this one opens it again and finds that memory too.
    third = memory(memory_id="00000000-0000-5000-8000-0000000000d4", namespace="home")
    point = codec.memory_point(third, DIMENSION)
    without = {
        k: v for k, v in stored_payload(point).items() if k != edge_layout.SEARCH_SCOPE_FIELD
    }
    shard.update(UpdateOperation.upsert_points([Point(point.point_id, point.vector, without)]))
    await store.release_partitions([0])
    query = SimilarityQuery(third.scope, list(third.vector or []), 5)
    [found] = await store.search(0, [query])
    assert [m.memory for m in found] == [third]


async def test_a_search_meets_only_its_own_scope_s_memories(store: EdgeMemoryStore) -> None:
    await store.start(DIMENSION)
    first = memory()
    # Same vector, other tenant; and a pending memory of the same scope.
    other = memory(memory_id="00000000-0000-5000-8000-0000000000b2", tenant_id="tenant-b")
    pending = memory(memory_id="00000000-0000-5000-8000-0000000000c3", vector=None)
    await store.apply_points(
        0,
        [codec.memory_point(m, DIMENSION) for m in (first, other, pending)],
        changelog_offset=1,
    )
    query = SimilarityQuery(first.scope, list(first.vector or []), 5)
    [found] = await store.search(0, [query])
    assert [m.memory for m in found] == [first]


async def test_with_a_changelog_the_shard_is_flushed_at_intervals(
    store: EdgeMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushes: list[int] = []
    shard = store._shard(0)

    class CountingShard:
        def __getattr__(self, name: str) -> Any:
            if name == "flush":
                flushes.append(0)
            return getattr(shard, name)

    store._shards[0] = CountingShard()
    point = codec.memory_point(memory(), DIMENSION)
    await store.apply_points(0, [point], changelog_offset=1)
    await store.apply_points(0, [point], changelog_offset=2)
    assert flushes == []
    await store.write(0, [memory()], [])  # no changelog covers it: flushed at once
    assert len(flushes) == 1
    monkeypatch.setattr(edge, "CHANGELOG_FLUSH_INTERVAL_S", 0.0)
    await store.apply_points(0, [point], changelog_offset=3)
    assert len(flushes) == 2


WRITE_AND_DIE = """
import asyncio, os, sys
from pathlib import Path
from consumer.state import codec
from consumer.state.edge import EdgeMemoryStore
from consumer.state.edge_layout import stored_payload

async def main() -> None:
    store = EdgeMemoryStore(root=Path(sys.argv[1]), collection="memories", topic=sys.argv[2])
    await store.start(4)
    point = codec.plain_point(sys.argv[3], "command", {"n": 1}, 4)
    await store.apply_points(0, [point], changelog_offset=7)
    os._exit(0)  # killed: no flush, no close

asyncio.run(main())
"""


async def test_an_unflushed_write_survives_a_killed_process(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-c", WRITE_AND_DIE, str(tmp_path), INPUT_TOPIC, MEMORY_ID],
        check=True,
        timeout=60,
    )
    store = EdgeMemoryStore(root=tmp_path, collection="memories", topic=INPUT_TOPIC)
    await store.start(4)
    try:
        assert await store.changelog_position(0) == 7
        found = await store.get_points(0, [MEMORY_ID])
        assert found[MEMORY_ID].payload == {"kind": "command", "n": 1}
    finally:
        await store.close()


CREATE_AND_DIE = """
import os, sys
from qdrant_edge import Distance, EdgeConfig, EdgeShard, EdgeVectorParams
os.makedirs(sys.argv[1])
EdgeShard.create(sys.argv[1], EdgeConfig(vectors=EdgeVectorParams(int(sys.argv[2]), Distance.Cosine)))
os._exit(0)  # killed between creating the shard and indexing it
"""


def killed_creation(path: Path, *, before_its_config: bool) -> None:
    """What a process killed while creating the shard at `path` leaves there: a
    shard without indexes, or (killed inside the engine's create) only its log."""
    subprocess.run(
        [sys.executable, "-c", CREATE_AND_DIE, str(path), str(DIMENSION)], check=True, timeout=60
    )
    if before_its_config:
        for entry in path.iterdir():
            if entry.name != "wal":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


@pytest.mark.parametrize("before_its_config", [False, True], ids=["unindexed", "log_only"])
async def test_a_shard_left_by_a_creation_killed_part_way_opens_and_takes_writes(
    store: EdgeMemoryStore, before_its_config: bool
) -> None:
    """Seen after a consumer was killed with SIGKILL: the partition's next owner
    could not open the shard at all, and the partition stopped."""
    await store.start(DIMENSION)
    killed_creation(store.shard_path(0), before_its_config=before_its_config)
    stored = memory()

    await store.write(0, memories=[stored], decisions=[decision()])

    assert (await store.get_memories(0, [MEMORY_ID]))[MEMORY_ID] == stored
    [found] = await store.search(0, [SimilarityQuery(stored.scope, stored.vector or [], 5)])
    assert [m.memory for m in found] == [stored]
    indexed = store._shard(0).info().payload_schema
    assert {*codec.INDEXED_FIELDS, edge_layout.SEARCH_SCOPE_FIELD} <= set(indexed)


async def test_a_shard_of_another_dimension_is_refused_when_opened(
    store: EdgeMemoryStore,
) -> None:
    await store.start(DIMENSION + 1)
    earlier_shard(store, 0, [])

    with pytest.raises(StoreUnavailable, match="vector size"):
        await store.get_memories(0, [MEMORY_ID])


async def test_a_seen_update_is_set_on_its_memory_and_replaced_by_a_whole_write(
    store: EdgeMemoryStore,
) -> None:
    stored = memory(seen_count=4)
    await store.apply_points(0, [codec.memory_point(stored, DIMENSION)], changelog_offset=1)
    later = datetime(2026, 2, 1, tzinfo=UTC)
    seen = replace(stored, seen_count=5, last_seen_at=later)
    update = codec.seen_point(seen)
    assert b'"vector"' not in update.to_bytes()
    await store.apply_points(0, [codec.RawPoint.from_bytes(update.to_bytes())], changelog_offset=2)

    assert (await store.get_memories(0, [MEMORY_ID]))[MEMORY_ID] == seen
    # Read back as if the memory had been stored whole: the same payload, key order too.
    point = (await store.get_points(0, [MEMORY_ID]))[MEMORY_ID]
    assert list(point.payload.items()) == list(codec.memory_payload(seen).items())
    query = SimilarityQuery(Scope("tenant-a", "prefs"), seen.vector or [], 1)
    assert (await store.search(0, [query]))[0][0].memory == seen
    assert await store.changelog_position(0) == 2

    # A later whole write (a reversed skip lowers the count) replaces the update.
    lowered = replace(stored, seen_count=3)
    await store.apply_points(0, [codec.memory_point(lowered, DIMENSION)], changelog_offset=3)
    assert (await store.get_memories(0, [MEMORY_ID]))[MEMORY_ID] == lowered


async def test_a_seen_update_follows_the_points_before_it_and_skips_a_missing_memory(
    store: EdgeMemoryStore,
) -> None:
    """As a restore meets them: the memory and its update in one chunk; an update of
    a memory the changelog kept only a later write of (not there yet) is dropped."""
    other_id = "00000000-0000-5000-8000-0000000000b2"
    stored = memory(seen_count=1)
    seen = replace(stored, seen_count=2, last_seen_at=datetime(2026, 3, 1, tzinfo=UTC))
    orphan = codec.seen_point(replace(stored, memory_id=other_id, seen_count=9))
    points = [orphan, codec.memory_point(stored, DIMENSION), codec.seen_point(seen)]
    await store.apply_points(0, points, changelog_offset=10)

    assert await store.get_memories(0, [MEMORY_ID, other_id]) == {MEMORY_ID: seen}
    assert await store.changelog_position(0) == 10


def test_only_points_read_by_scope_store_their_scope_as_fields() -> None:
    """A decision is read by id: its scope is not converted into stored fields,
    only its time, and only while decision retention (which prunes by it) is on."""
    assert set(edge_layout.stored_payload(codec.memory_point(memory(), DIMENSION))) == {
        "kind",
        "tenant_id",
        "namespace",
        edge_layout.SEARCH_SCOPE_FIELD,
        edge_layout.PAYLOAD_JSON_FIELD,
    }
    pending = codec.memory_point(memory(vector=None), DIMENSION)
    assert edge_layout.SEARCH_SCOPE_FIELD not in edge_layout.stored_payload(pending)
    dated = codec.decision_point(replace(decision(), decided_at_s=1_700_000_000.5), DIMENSION)
    assert set(edge_layout.stored_payload(dated)) == {"kind", edge_layout.PAYLOAD_JSON_FIELD}
    stored_decision = edge_layout.stored_payload(dated, decision_times=True)
    assert set(stored_decision) == {"kind", codec.DECIDED_AT_FIELD, edge_layout.PAYLOAD_JSON_FIELD}
    assert stored_decision[codec.DECIDED_AT_FIELD] == 1_700_000_000.5
    # Undated (restored from an earlier version's changelog): the time it is stored.
    undated = codec.decision_point(decision(), DIMENSION)
    stamped = edge_layout.stored_payload(undated, decision_times=True)[codec.DECIDED_AT_FIELD]
    assert abs(stamped - time.time()) < 60


def test_a_seen_point_carries_the_values_a_whole_write_would() -> None:
    import uuid

    seen = memory(seen_count=7, first_seen_at=None, last_seen_at=datetime(2026, 5, 1, tzinfo=UTC))
    point = codec.seen_point(seen)
    whole = codec.memory_payload(seen)
    memory_id, fields = codec.seen_update(point.payload)
    assert memory_id == seen.memory_id
    assert fields == {name: whole[name] for name in codec.SEEN_FIELDS}
    namespace = uuid.UUID("8b0f7c52-3d1e-5a94-a6e2-0c5d9e41b7f3")
    assert point.point_id == str(uuid.uuid5(namespace, f"seen/{seen.memory_id}"))


async def test_a_failed_read_before_seen_updates_is_the_store_being_down(
    store: EdgeMemoryStore,
) -> None:
    from consumer.errors import StoreUnavailable

    await store.apply_points(0, [codec.memory_point(memory(), DIMENSION)], changelog_offset=1)
    shard = store._shard(0)

    class FailingReads:
        def __getattr__(self, name: str) -> Any:
            if name == "retrieve":
                raise OSError("disk gone")
            return getattr(shard, name)

    store._shards[0] = FailingReads()
    seen = codec.seen_point(memory(seen_count=5))
    with pytest.raises(StoreUnavailable, match="disk gone"):
        await store.apply_points(0, [seen], changelog_offset=2)
    store._shards[0] = shard
    assert await store.changelog_position(0) == 1


def test_payload_json_keeps_what_the_standard_library_reads_back() -> None:
    payload = {"note": "naïve café", "ratio": 1.5e-7, "missing": float("nan"), "big": float("inf")}
    encoded = codec.encode_json(payload)
    assert "naïve café" in encoded  # UTF-8 text, not \\u escapes
    decoded = json.loads(encoded)
    assert decoded["note"] == payload["note"]
    assert decoded["ratio"] == payload["ratio"]
    assert math.isnan(decoded["missing"])
    assert decoded["big"] == math.inf


def retention_store(tmp_path: Path) -> EdgeMemoryStore:
    return EdgeMemoryStore(
        root=tmp_path / "data", collection="memories", topic="memory.extracted", decision_times=True
    )


async def test_expired_decisions_are_found_and_deleted_with_the_changelog_position(
    tmp_path: Path,
) -> None:
    store = retention_store(tmp_path)
    await store.start(DIMENSION)
    decisions = [replace(decision(f"e{n}"), decided_at_s=1_000.0 + n) for n in range(5)]
    await store.write(0, [memory()], decisions, changelog_offset=10)
    expired = await store.expired_decisions(0, 1_003.0, limit=10)
    assert sorted(expired) == sorted(d.decision_id for d in decisions[:3])
    assert len(await store.expired_decisions(0, 1_003.0, limit=2)) == 2

    await store.apply_points(0, [], changelog_offset=11, deleted_ids=expired)
    left = await store.get_decisions(0, [d.event_id for d in decisions])
    assert sorted(left) == ["e3", "e4"]
    assert await store.changelog_position(0) == 11
    assert await store.expired_decisions(0, 1_003.0, limit=10) == []
    assert await store.count_memories(0) == 1  # memories are never pruned
    await store.close()


async def test_a_shard_written_without_decision_times_dates_its_decisions_when_opened(
    tmp_path: Path,
) -> None:
    """Written before the field existed or while retention was off: its decisions
    are kept one retention period from the first open with retention on, not
    pruned at once."""
    store = retention_store(tmp_path)
    await store.start(DIMENSION)
    dated = codec.decision_point(replace(decision("e1"), decided_at_s=1_000.0), DIMENSION)
    # As stored while retention was off: no time field to filter on.
    earlier_shard(store, 0, [Point(dated.point_id, {}, edge_layout.stored_payload(dated))])

    opened_at = time.time()
    assert await store.expired_decisions(0, opened_at + 3600, limit=10) == [dated.point_id]
    assert await store.expired_decisions(0, opened_at - 60, limit=10) == []
    await store.close()
