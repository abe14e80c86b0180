"""The verifier with the real model: a match the guards allow, the bands would
merge, and the verifier vetoes, through DedupEngine and the embedded store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consumer.domain.dedup import DedupEngine
from consumer.domain.guards import GuardName, check_pair
from consumer.domain.models import Outcome
from consumer.domain.recent import RecentCache
from consumer.domain.thresholds import Bands, ThresholdPolicy
from consumer.domain.verifier import LocalVerifier, build_verifier
from consumer.settings import DEFAULT_DUPLICATE_THRESHOLD, DEFAULT_MERGE_THRESHOLD, load_settings
from consumer.state.edge import EdgeMemoryStore
from schemas import Decision
from tests.unit.helpers import FIXED_NOW, INPUT_TOPIC, make_candidate

pytestmark = pytest.mark.integration

STORED = "User is travelling to Berlin next month"
OTHER_CITY = "User is travelling to Munich next month"  # cosine ~0.82: merge band
PARAPHRASE = "The user will travel to Berlin next month"


async def decide_after(
    tmp_path: Path, embedder: Any, verifier: LocalVerifier | None, new: str
) -> Outcome:
    store = EdgeMemoryStore(root=tmp_path / "data", collection="memories", topic=INPUT_TOPIC)
    await store.start(embedder.dimension)
    try:
        engine = DedupEngine(
            store=store,
            embedder=embedder,
            policy=ThresholdPolicy(
                default=Bands(DEFAULT_DUPLICATE_THRESHOLD, DEFAULT_MERGE_THRESHOLD)
            ),
            recent=RecentCache(ttl_s=300, max_entries=100),
            verifier=verifier,
            clock=lambda: FIXED_NOW,
        )
        for offset, text in enumerate((STORED, new)):
            plan = await engine.decide(
                0, [make_candidate(event_id=f"e{offset}", content=text, offset=offset)]
            )
            await store.write(0, list(plan.writes.values()), [])
            engine.commit(plan)
        return plan.outcomes[0]
    finally:
        await store.close()


async def test_the_verifier_vetoes_another_city_the_guards_allow(
    real_embedder: Any, tmp_path: Path
) -> None:
    assert check_pair(STORED, OTHER_CITY) is None
    without = await decide_after(tmp_path / "off", real_embedder, None, OTHER_CITY)
    assert without.decision is Decision.MERGED, without.similarity
    assert without.similarity is not None
    assert without.similarity >= DEFAULT_MERGE_THRESHOLD

    verifier = build_verifier(load_settings().dedup)
    assert isinstance(verifier, LocalVerifier)
    with_verifier = await decide_after(tmp_path / "on", real_embedder, verifier, OTHER_CITY)
    assert with_verifier.decision is Decision.ACCEPTED
    assert with_verifier.guard is not None
    assert with_verifier.guard.veto.guard is GuardName.VERIFIER
    assert with_verifier.guard.similarity == pytest.approx(without.similarity)


async def test_the_verifier_lets_a_paraphrase_merge(real_embedder: Any, tmp_path: Path) -> None:
    outcome = await decide_after(tmp_path, real_embedder, LocalVerifier.load(), PARAPHRASE)
    assert outcome.decision in (Decision.MERGED, Decision.SKIPPED)
    assert outcome.guard is None
