"""MatchVetter: which texts it parses before a batch is decided, and that a
rescue asks the model before it parses (the decisions themselves are the
engine's tests)."""

from __future__ import annotations

import pytest

from consumer.domain.alignment import PairAligner
from consumer.domain.batch import BatchState
from consumer.domain.cross_verifier import CrossEncoderVerifier
from consumer.domain.models import BatchPlan, MemoryRecord, ScoredMemory
from consumer.domain.normalize import content_hash, normalize_content
from consumer.domain.reviewed import ReviewedPairs
from consumer.domain.thresholds import Bands
from consumer.domain.vetting import MatchVetter
from schemas import Decision

from .helpers import FakeScorer, make_candidate, stored_memory

BAND = 0.77
NEW = "User runs 5 km every morning."


@pytest.fixture
def aligner() -> PairAligner:
    return PairAligner()


def vetter(
    aligner: PairAligner,
    *,
    guards: bool = True,
    cross_encoder: CrossEncoderVerifier | None = None,
) -> MatchVetter:
    return MatchVetter(
        guards=guards,
        reviewed=ReviewedPairs(),
        aligner=aligner,
        verifier=None,
        full_matches_from=BAND,
        cross_encoder=cross_encoder,
    )


def stored(text: str) -> MemoryRecord:
    return stored_memory(
        memory_id=text,
        content=text,
        content_hash=content_hash(normalize_content(text)),
        vector=None,
    )


def state_with(event_id: str, neighbours: list[tuple[str, float]]) -> BatchState:
    found = [ScoredMemory(stored(text), score) for text, score in neighbours]
    return BatchState(
        plan=BatchPlan(partition=0), stored={}, vectors={}, neighbours={event_id: found}
    )


async def test_the_best_band_matches_are_primed_and_a_match_below_the_band_is_not(
    aligner: PairAligner,
) -> None:
    candidate = make_candidate(event_id="e1", content=NEW)
    neighbours = [
        ("User jogs 5 km each morning.", 0.80),
        ("User goes running 5 km every morning.", 0.93),
        ("User runs 5 km most mornings.", 0.85),
        ("User swims every evening.", 0.60),
    ]
    await vetter(aligner).prime([candidate], state_with("e1", neighbours))
    assert aligner.has_parsed(NEW, neighbours[1][0], neighbours[2][0])
    # The third band match is parsed only if the first two are vetoed.
    assert not aligner.has_parsed(neighbours[0][0])
    assert not aligner.has_parsed(neighbours[3][0])


async def test_a_match_the_guards_keep_apart_for_good_is_not_parsed(aligner: PairAligner) -> None:
    other_distance = "User runs 10 km every morning."
    same_distance = "User jogs 5 km each morning."
    candidate = make_candidate(event_id="e1", content=NEW)
    state = state_with("e1", [(other_distance, 0.95), (same_distance, 0.90)])
    await vetter(aligner).prime([candidate], state)
    assert not aligner.has_parsed(other_distance)
    assert aligner.has_parsed(NEW, same_distance)

    # With the guards off, the alignment is asked about every band match.
    unguarded = PairAligner()
    await vetter(unguarded, guards=False).prime([candidate], state)
    assert unguarded.has_parsed(other_distance, same_distance)


async def test_candidates_close_in_the_batch_are_primed_unless_the_guards_keep_them_apart(
    aligner: PairAligner,
) -> None:
    texts = ["User runs 10 km every morning.", "User jogs 5 km each morning.", NEW]
    candidates = [
        make_candidate(event_id=f"e{i}", content=text, offset=i) for i, text in enumerate(texts)
    ]
    state = BatchState(plan=BatchPlan(partition=0), stored={}, vectors={}, neighbours={})
    for candidate in candidates:
        state.vectors[candidate.normalized] = [1.0, 0.0]  # all three in one band
    await vetter(aligner).prime(candidates, state)
    # Only the pair with the same distance may be merged: only it is parsed.
    assert aligner.has_parsed(texts[1], texts[2])
    assert not aligner.has_parsed(texts[0])


RESCUE_BANDS = Bands(duplicate_threshold=0.97, merge_threshold=BAND, rescue_threshold=0.47)


async def test_a_rescue_candidate_not_parsed_asks_the_model_first(aligner: PairAligner) -> None:
    stored_text, new = "User lives in Porto.", "User lives in Faro."
    candidate = make_candidate(event_id="e1", content=new)
    matches = [ScoredMemory(stored(stored_text), 0.6)]
    scorer = FakeScorer({(stored_text, new): 0.1})
    model = CrossEncoderVerifier(scorer, veto_below=0.07, rescue_from=0.7)
    checks = vetter(aligner, cross_encoder=model)
    chosen, decision, *_ = await checks.first_allowed(candidate, matches, RESCUE_BANDS)
    assert (chosen, decision) == (None, Decision.ACCEPTED)
    # The model rejects it: no parse was needed.
    assert scorer.calls == [[(stored_text, new)]]
    assert not aligner.has_parsed(stored_text)
