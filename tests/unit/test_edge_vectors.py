"""Edge search returns full results (with vectors) only for matches that may be
skipped into or merged into; below that, only a query's best score."""

from __future__ import annotations

import pytest

from consumer.domain.dedup import DedupEngine
from consumer.domain.models import MemoryRecord, Scope, SimilarityQuery
from consumer.domain.thresholds import Bands, ThresholdPolicy, lowest_band
from consumer.state.edge import EdgeMemoryStore
from schemas import Decision

from .conftest import EngineFactory
from .helpers import (
    DEFAULT_BANDS,
    FakeEmbedder,
    base_vector,
    make_candidate,
    stored_memory,
    unit_vector,
)


def memory(memory_id: str, vector: list[float]) -> MemoryRecord:
    return stored_memory(
        memory_id=memory_id,
        content=f"text {memory_id}",
        content_hash=memory_id[-8:] * 8,
        vector=vector,
    )


@pytest.fixture
def store(edge_store: EdgeMemoryStore) -> EdgeMemoryStore:
    """These tests are of the embedded store itself."""
    return edge_store


NEAR = "00000000-0000-5000-8000-000000000001"
FAR = "00000000-0000-5000-8000-000000000002"
FARTHER = "00000000-0000-5000-8000-000000000003"


async def test_full_results_only_from_the_configured_score(store: EdgeMemoryStore) -> None:
    near = [float(x) for x in unit_vector(0.85, axis=1)]
    far = [float(x) for x in unit_vector(0.5, axis=2)]
    farther = [float(x) for x in unit_vector(0.3, axis=3)]
    await store.write(0, [memory(NEAR, near), memory(FAR, far), memory(FARTHER, farther)], [])
    query = SimilarityQuery(Scope("tenant-a", "prefs"), [float(x) for x in base_vector()], 5)

    [every] = await store.search(0, [query])
    assert {m.read().memory_id: m.read().vector is not None for m in every} == {
        NEAR: True,
        FAR: True,
        FARTHER: True,
    }

    store.full_results_from(0.8)
    [found] = await store.search(0, [query])
    assert [m.memory_id for m in found] == [NEAR]
    assert found[0].read().vector == near
    assert found[0].read().content == f"text {NEAR}"
    assert found[0].score == every[0].score

    # Nothing reaches the floor: the best result alone, for its score, not read.
    store.full_results_from(0.9)
    [below] = await store.search(0, [query])
    assert [(m.memory_id, m.score) for m in below] == [(NEAR, every[0].score)]
    assert below[0].memory is None
    with pytest.raises(LookupError, match="scored, not read"):
        below[0].read()


def test_lowest_band_covers_every_namespace() -> None:
    policy = ThresholdPolicy(default=Bands(0.96, 0.84), per_namespace={"notes": Bands(0.97, 0.80)})
    assert 0.80 - 1e-5 < lowest_band(policy) < 0.80


async def test_a_merge_keeps_the_target_vector_when_search_omits_vectors(
    make_engine: EngineFactory, embedder: FakeEmbedder, store: EdgeMemoryStore
) -> None:
    close = "The user prefers a dark theme in the editor"
    embedder.set(close, unit_vector(0.85, axis=2))
    engine = await engine_with_a_stored_memory(make_engine, embedder, store)
    plan = await engine.decide(0, [make_candidate(event_id="e2", content=close, offset=1)])
    [outcome] = plan.outcomes
    assert outcome.decision is Decision.MERGED
    await store.write(0, list(plan.writes.values()), [])
    stored = await store.get_memories(0, [outcome.memory.memory_id])
    assert stored[outcome.memory.memory_id].vector == [float(x) for x in base_vector()]
    assert await store.count_memories(0) == 1


async def test_a_new_text_reports_the_score_of_a_match_that_was_never_read(
    make_engine: EngineFactory, embedder: FakeEmbedder, store: EdgeMemoryStore
) -> None:
    other = "The user's sister lives in Lisbon"
    embedder.set(other, unit_vector(0.4, axis=2))
    engine = await engine_with_a_stored_memory(make_engine, embedder, store)

    plan = await engine.decide(0, [make_candidate(event_id="e2", content=other, offset=1)])
    [outcome] = plan.outcomes
    assert outcome.decision is Decision.ACCEPTED
    semantic = next(c for c in outcome.checks if c.name.value == "semantic")
    assert semantic.hit is False
    assert semantic.score is not None
    assert abs(semantic.score - 0.4) < 1e-4


async def engine_with_a_stored_memory(
    make_engine: EngineFactory, embedder: FakeEmbedder, store: EdgeMemoryStore
) -> DedupEngine:
    """An engine over a store that reads full results only from the lowest band
    (as the service sets it), holding "The user prefers dark mode" (base vector)."""
    store.full_results_from(lowest_band(ThresholdPolicy(default=DEFAULT_BANDS)))
    engine = make_engine()
    base = "The user prefers dark mode"
    embedder.set(base, base_vector())
    first = await engine.decide(0, [make_candidate(event_id="e1", content=base, offset=0)])
    await store.write(0, list(first.writes.values()), [])
    engine.commit(first)
    return engine
