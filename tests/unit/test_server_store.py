"""The server adapter (through qdrant-client's local mode) applies a changelog's
points as the embedded store does."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from qdrant_client import models

from consumer.store import codec
from consumer.store.server import QdrantServerStore

from .helpers import DIMENSION
from .test_edge_storage import MEMORY_ID, decision, memory


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
        await store.apply_points(0, points, changelog_offset=None)
        assert await store.get_memories(0, [MEMORY_ID, other_id]) == {MEMORY_ID: seen}
        assert (await store.get_decisions(0, ["e9"]))["e9"] == decision()

        # A whole write after an update wins, even with a lower count.
        await store.apply_points(0, [codec.memory_point(lowered, DIMENSION)], changelog_offset=None)
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
        await store.apply_points(0, [], changelog_offset=None, deleted_ids=expired)
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
            changelog_offset=None,
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
