"""Fixtures of the unit suite: fake embedder and publisher, the in-memory store, and an
embedded store in tmp_path for the tests of that store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from consumer.domain.alignment import PairAligner
from consumer.domain.dedup import DedupEngine
from consumer.domain.merge import Merger
from consumer.domain.recent import RecentCache
from consumer.domain.thresholds import ThresholdPolicy
from consumer.ports import MemoryStore
from consumer.state.edge import EdgeMemoryStore
from consumer.testing import InMemoryStore

from .helpers import DEFAULT_BANDS, DIMENSION, FIXED_NOW, INPUT_TOPIC, FakeEmbedder, FakePublisher


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def publisher() -> FakePublisher:
    return FakePublisher()


@pytest.fixture
async def store() -> MemoryStore:
    """The reference store (consumer.state.memory): what the domain needs of a store,
    without an engine underneath."""
    memory = InMemoryStore()
    await memory.start(DIMENSION)
    return memory


@pytest.fixture
async def edge_store(tmp_path: Path) -> AsyncIterator[EdgeMemoryStore]:
    """The embedded store, for the tests of the store itself."""
    edge = EdgeMemoryStore(root=tmp_path / "data", collection="memories", topic=INPUT_TOPIC)
    await edge.start(DIMENSION)
    try:
        yield edge
    finally:
        await edge.close()


EngineFactory = Callable[..., DedupEngine]


@pytest.fixture
def make_engine(store: MemoryStore, embedder: FakeEmbedder) -> EngineFactory:
    def build(
        *,
        policy: ThresholdPolicy | None = None,
        recent: RecentCache | None = None,
        search_limit: int = 5,
        guards: bool = True,
        aligner: PairAligner | None = None,
        merger: Merger | None = None,
    ) -> DedupEngine:
        return DedupEngine(
            guards=guards,
            aligner=aligner,
            merger=merger,
            store=store,
            embedder=embedder,
            policy=policy if policy is not None else ThresholdPolicy(default=DEFAULT_BANDS),
            recent=recent if recent is not None else RecentCache(ttl_s=300, max_entries=1000),
            search_limit=search_limit,
            clock=lambda: FIXED_NOW,
        )

    return build
