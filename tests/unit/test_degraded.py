"""Opt-in degraded modes: decide without the model, or without the store."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from consumer.domain.dedup import DedupEngine
from consumer.domain.recent import RecentCache
from consumer.domain.thresholds import ThresholdPolicy
from consumer.errors import EmbedderUnavailable
from consumer.ports import MemoryStore, Vectors
from schemas import CheckName, Decision, DecisionReason

from .helpers import DEFAULT_BANDS, FakeEmbedder, base_vector, make_candidate, unit_vector


class SwitchableEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.down = False

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if self.down:
            raise EmbedderUnavailable("model worker crashed")
        return await super().embed(texts)


def engine_for(store: MemoryStore, embedder: FakeEmbedder, *, degrade: bool) -> DedupEngine:
    return DedupEngine(
        store=store,
        embedder=embedder,
        policy=ThresholdPolicy(default=DEFAULT_BANDS),
        recent=RecentCache(ttl_s=300, max_entries=100),
        decide_without_model=degrade,
    )


async def decide(engine: DedupEngine, store: MemoryStore, *candidates: object) -> list:  # type: ignore[type-arg]
    plan = await engine.decide(0, list(candidates))  # type: ignore[arg-type]
    await store.write(0, list(plan.writes.values()), [])
    engine.commit(plan)
    return plan.outcomes


async def test_without_the_opt_in_a_model_failure_propagates(store: MemoryStore) -> None:
    embedder = SwitchableEmbedder()
    embedder.down = True
    engine = engine_for(store, embedder, degrade=False)
    with pytest.raises(EmbedderUnavailable):
        await engine.decide(0, [make_candidate(event_id="e1", content="User rides a unicycle")])


async def test_model_down_decides_with_exact_and_recent_then_catches_up(
    store: MemoryStore,
) -> None:
    embedder = SwitchableEmbedder()
    embedder.set("User rides a unicycle", base_vector())
    embedder.set("The user rides a unicycle", unit_vector(0.97, axis=2))
    engine = engine_for(store, embedder, degrade=True)

    embedder.down = True
    [first] = await decide(
        engine, store, make_candidate(event_id="e1", content="User rides a unicycle")
    )
    assert (first.decision, first.reason) == (Decision.ACCEPTED, DecisionReason.NEW)
    assert first.skipped_checks == (CheckName.SEMANTIC,)
    assert first.memory.vector is None
    # Stored, found by exact lookups, invisible to similarity search meanwhile.
    assert await store.count_memories() == 1
    fresh = engine_for(store, embedder, degrade=True)  # no recent cache: a restart
    [exact] = await decide(
        fresh, store, make_candidate(event_id="e2", content="user rides a UNICYCLE", offset=1)
    )
    assert (exact.decision, exact.reason) == (Decision.SKIPPED, DecisionReason.EXACT)
    assert exact.skipped_checks == ()

    embedder.down = False  # the model is back: the pending memory gets its vector
    [paraphrase] = await decide(
        fresh, store, make_candidate(event_id="e3", content="The user rides a unicycle", offset=2)
    )
    assert await store.pending_memories(0, 10) == []
    assert (paraphrase.decision, paraphrase.reason) == (Decision.SKIPPED, DecisionReason.SEMANTIC)
    assert paraphrase.memory.memory_id == first.memory.memory_id
    assert await store.count_memories() == 1
