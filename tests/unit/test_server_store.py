"""The server adapter (through qdrant-client's local mode) applies a changelog's
points as the embedded store does."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

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
