"""Two consumers deciding one scope at once (a rebalance overlap, a mis-keyed
producer) against a shared store: the re-check after insert leaves one memory."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from consumer.domain.alignment import PairAligner
from consumer.domain.cross_verifier import CrossEncoderVerifier
from consumer.domain.dedup import DedupEngine
from consumer.domain.models import DecisionRecord, MemoryRecord
from consumer.domain.recent import RecentCache
from consumer.domain.thresholds import Bands, ThresholdPolicy
from consumer.settings import TopicSettings
from consumer.state.server import QdrantServerStore
from schemas import MemoryDecisionEvent

from .helpers import (
    DEFAULT_BANDS,
    FakeEmbedder,
    FakePublisher,
    FakeScorer,
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
    *,
    reconcile: bool,
    first: str = "User prefers dark mode",
    second: str = "The user prefers dark mode",
    similarity: float = 0.97,
    bands: Bands = DEFAULT_BANDS,
    aligner: PairAligner | None = None,
    cross_encoder: CrossEncoderVerifier | None = None,
) -> tuple[QdrantServerStore, list[MemoryDecisionEvent], list[MemoryDecisionEvent]]:
    """Two consumers, B's clock one second behind A's, each deciding one of two
    texts (equal ones by default) against one shared store, both deciding before
    either stores."""
    shared = QdrantServerStore.connect(collection="race", location=":memory:")
    embedder = FakeEmbedder()
    embedder.set(first, base_vector())
    embedder.set(second, unit_vector(similarity, axis=2))
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
                policy=ThresholdPolicy(default=bands),
                recent=RecentCache(ttl_s=300, max_entries=100),
                aligner=aligner,
                cross_encoder=cross_encoder,
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
    records = [
        make_record(event_dict(event_id="a1", content=first), offset=0),
        make_record(event_dict(event_id="b1", content=second), offset=1),
    ]
    await asyncio.gather(processors[0].process([records[0]]), processors[1].process([records[1]]))
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


PLAIN = "User prefers dark mode"
WITH_DETAIL = "User prefers dark mode in every editor"


@pytest.fixture(scope="module")
def aligner() -> PairAligner:
    return PairAligner()


async def test_a_race_loser_with_a_detail_is_merged_not_skipped(aligner: PairAligner) -> None:
    # 0.97 reaches the duplicate band, but a skip would drop the detail: as
    # `first_allowed` decides, texts that do not align word for word merge.
    shared, [a], [b] = await race(reconcile=True, first=PLAIN, second=WITH_DETAIL, aligner=aligner)
    assert a.decision == "accepted"
    assert (b.decision, b.memory_id, b.threshold) == ("merged", a.memory_id, 0.80)
    assert b.memory is not None
    assert WITH_DETAIL in [t.content for t in b.memory.folded_texts] + [b.memory.content]
    assert await shared.count_memories() == 1
    await shared.close()


async def test_a_race_loser_with_a_detail_stays_apart_under_keep_both(
    aligner: PairAligner,
) -> None:
    keep_both = Bands(duplicate_threshold=0.90, merge_threshold=0.80, detail_policy="keep_both")
    shared, [a], [b] = await race(
        reconcile=True, first=PLAIN, second=WITH_DETAIL, bands=keep_both, aligner=aligner
    )
    assert (a.decision, b.decision) == ("accepted", "accepted")
    assert await shared.count_memories() == 2
    await shared.close()


@pytest.mark.parametrize(("p", "decision"), [(0.99, "merged"), (0.9, "accepted")])
async def test_a_race_loser_with_a_verb_swap_yields_as_the_cross_encoder_says(
    aligner: PairAligner, p: float, decision: str
) -> None:
    works, employed = "Amara works at Zalando.", "Amara is employed by Zalando."
    cross_encoder = CrossEncoderVerifier(
        FakeScorer({(works, employed): p}), veto_below=0.2, rescue_from=0.7, verb_swap_from=0.95
    )
    shared, [a], [b] = await race(
        reconcile=True,
        first=works,
        second=employed,
        similarity=0.85,
        aligner=aligner,
        cross_encoder=cross_encoder,
    )
    assert (a.decision, b.decision) == ("accepted", decision)
    assert await shared.count_memories() == (1 if decision == "merged" else 2)
    await shared.close()
