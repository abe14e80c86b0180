"""Two consumers deciding one scope at once (a rebalance overlap, a mis-keyed
producer) against a shared store: the re-check after insert leaves one memory."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from consumer.domain.dedup import DedupEngine
from consumer.domain.models import DecisionRecord, MemoryRecord
from consumer.domain.recent import RecentCache
from consumer.domain.thresholds import ThresholdPolicy
from consumer.settings import TopicSettings
from consumer.state.server import QdrantServerStore
from schemas import MemoryDecisionEvent

from .helpers import (
    DEFAULT_BANDS,
    FakeEmbedder,
    FakePublisher,
    base_vector,
    event_dict,
    make_processor,
    make_record,
    unit_vector,
)

TOPICS = TopicSettings(accepted="a", merged="m", skipped="s", dlq="d", create=False)


class RendezvousStore:
    """Lets two writers pass only together: both decide before either stores, and
    both have stored before either re-checks."""

    def __init__(self, inner: QdrantServerStore, parties: int) -> None:
        self._inner = inner
        self._barrier = asyncio.Barrier(parties)
        self._first_writes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def write(
        self,
        partition: int,
        memories: Sequence[MemoryRecord],
        decisions: Sequence[DecisionRecord],
    ) -> None:
        together = self._first_writes < 2
        if together:
            self._first_writes += 1
            await self._barrier.wait()
        await self._inner.write(partition, memories, decisions)
        if together:
            await self._barrier.wait()


def ticking_clock(start: datetime) -> Any:
    now = [start]

    def clock() -> datetime:
        now[0] += timedelta(milliseconds=1)
        return now[0]

    return clock


async def race(
    *, reconcile: bool
) -> tuple[QdrantServerStore, list[MemoryDecisionEvent], list[MemoryDecisionEvent]]:
    """Two consumers, B's clock one second behind A's, each deciding one of two
    equal texts against one shared store, both deciding before either stores."""
    shared = QdrantServerStore.connect(collection="race", location=":memory:")
    embedder = FakeEmbedder()
    embedder.set("User prefers dark mode", base_vector())
    embedder.set("The user prefers dark mode", unit_vector(0.97, axis=2))
    await shared.start(embedder.dimension)
    store = RendezvousStore(shared, parties=2)
    publishers = [FakePublisher(), FakePublisher()]
    clocks = [
        ticking_clock(datetime(2026, 1, 1, tzinfo=UTC)),
        ticking_clock(datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)),
    ]
    processors = [
        make_processor(
            engine=DedupEngine(
                store=store,
                embedder=embedder,
                policy=ThresholdPolicy(default=DEFAULT_BANDS),
                recent=RecentCache(ttl_s=300, max_entries=100),
                clock=clock,
            ),
            store=store,
            publisher=publisher,
            topics=TOPICS,
            model_id="fake",
            max_event_bytes=4096,
            reconcile=reconcile,
        )
        for clock, publisher in zip(clocks, publishers, strict=True)
    ]
    first = make_record(event_dict(event_id="a1", content="User prefers dark mode"), offset=0)
    second = make_record(event_dict(event_id="b1", content="The user prefers dark mode"), offset=1)
    await asyncio.gather(processors[0].process([first]), processors[1].process([second]))
    a, b = (
        [MemoryDecisionEvent.model_validate_json(r.value) for r in p.published] for p in publishers
    )
    return shared, a, b


async def test_the_later_of_two_concurrent_equal_memories_yields() -> None:
    shared, [a], [b] = await race(reconcile=True)
    assert a.decision == "accepted"
    assert a.superseded_memory_id is None
    assert b.decision == "skipped"  # 0.97 >= the duplicate band
    assert b.memory_id == a.memory_id
    assert b.superseded_memory_id is not None
    assert b.superseded_memory_id != a.memory_id
    assert await shared.count_memories() == 1
    # The stored decision record was corrected too: a redelivery replays the skip.
    records = await shared.get_decisions(0, ["b1"])
    assert records["b1"].decision.value == "skipped"
    await shared.close()


async def test_without_the_recheck_both_stay_accepted() -> None:
    shared, [a], [b] = await race(reconcile=False)
    assert (a.decision, b.decision) == ("accepted", "accepted")
    assert await shared.count_memories() == 2  # what the re-check exists to prevent
    await shared.close()
