"""DedupEngine with the parse alignment: similarities chosen by the fake
embedder, texts parsed by the real spaCy pipeline."""

from __future__ import annotations

import pytest

from consumer.domain.alignment import PairAligner
from consumer.domain.dedup import DedupEngine
from consumer.domain.guards import GuardName
from consumer.domain.models import Outcome
from consumer.domain.thresholds import Bands, ThresholdPolicy
from consumer.domain.vetting import rescue_contained
from consumer.ports import MemoryStore
from schemas import Decision, DecisionReason

from .conftest import EngineFactory
from .helpers import DEFAULT_BANDS, FakeEmbedder, base_vector, make_candidate, unit_vector

STORED = "User keeps bees."
SAME_OTHER_PERSON = "I keep bees."
WITH_DETAIL = "User keeps bees on the roof of the shed."
OTHER_ANIMAL = "User keeps wasps."
OTHER_INSECT = "User keeps ants."


@pytest.fixture(scope="module")
def aligner() -> PairAligner:
    return PairAligner()


async def decide_after_stored(
    store: MemoryStore, engine: DedupEngine, *texts: str, stored: str = STORED
) -> Outcome:
    """Decide `stored`, then each text in turn; the last outcome."""
    outcome: Outcome | None = None
    for offset, text in enumerate((stored, *texts)):
        plan = await engine.decide(
            0, [make_candidate(event_id=f"e{offset}", content=text, offset=offset)]
        )
        await store.write(0, list(plan.writes.values()), [])
        engine.commit(plan)
        outcome = plan.outcomes[0]
    assert outcome is not None
    return outcome


def assert_kept_apart_by(outcome: Outcome, guard: GuardName) -> None:
    """Accepted as a memory of its own, with the named guard's veto recorded."""
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.guard is not None
    assert outcome.guard.veto.guard is guard


def place(embedder: FakeEmbedder, text: str, similarity: float, axis: int = 1) -> None:
    embedder.set(STORED, base_vector())
    embedder.set(text, unit_vector(similarity, axis=axis))


async def test_a_skip_needs_texts_that_align_word_for_word(
    make_engine: EngineFactory,
    embedder: FakeEmbedder,
    store: MemoryStore,
    aligner: PairAligner,
) -> None:
    place(embedder, SAME_OTHER_PERSON, 0.97)
    outcome = await decide_after_stored(store, make_engine(aligner=aligner), SAME_OTHER_PERSON)
    assert (outcome.decision, outcome.reason) == (Decision.SKIPPED, DecisionReason.SEMANTIC)


async def test_without_the_aligner_the_bands_alone_skip_a_detail(
    make_engine: EngineFactory,
    embedder: FakeEmbedder,
    store: MemoryStore,
    aligner: PairAligner,
) -> None:
    place(embedder, WITH_DETAIL, 0.97)
    without = await decide_after_stored(store, make_engine(), WITH_DETAIL)
    assert without.decision is Decision.SKIPPED  # what the bands alone do: the detail is lost


async def test_with_the_aligner_the_detail_is_kept(
    make_engine: EngineFactory,
    embedder: FakeEmbedder,
    store: MemoryStore,
    aligner: PairAligner,
) -> None:
    place(embedder, WITH_DETAIL, 0.97)
    outcome = await decide_after_stored(store, make_engine(aligner=aligner), WITH_DETAIL)
    assert outcome.decision is Decision.MERGED
    assert outcome.threshold == DEFAULT_BANDS.merge_threshold
    # keep_existing is the namespace's policy; a detail is kept all the same.
    assert outcome.merge_policy == "replace_with_newer"
    assert outcome.memory.content == WITH_DETAIL


async def test_keep_both_stores_the_detail_as_its_own_memory(
    make_engine: EngineFactory,
    embedder: FakeEmbedder,
    store: MemoryStore,
    aligner: PairAligner,
) -> None:
    place(embedder, WITH_DETAIL, 0.9)
    bands = Bands(
        DEFAULT_BANDS.duplicate_threshold, DEFAULT_BANDS.merge_threshold, detail_policy="keep_both"
    )
    engine = make_engine(aligner=aligner, policy=ThresholdPolicy(default=bands))
    outcome = await decide_after_stored(store, engine, WITH_DETAIL)
    assert (outcome.decision, outcome.reason) == (Decision.ACCEPTED, DecisionReason.NEW)
    assert outcome.memory.content == WITH_DETAIL


async def test_changed_values_are_accepted_with_every_related_memory(
    make_engine: EngineFactory,
    embedder: FakeEmbedder,
    store: MemoryStore,
    aligner: PairAligner,
) -> None:
    embedder.set(STORED, base_vector())
    embedder.set(OTHER_INSECT, unit_vector(0.9, axis=2))
    embedder.set(OTHER_ANIMAL, unit_vector(0.93, axis=1))
    engine = make_engine(aligner=aligner)
    # STORED and OTHER_INSECT are both stored (0.9 apart: vetoed, so accepted).
    first = await decide_after_stored(store, engine, OTHER_INSECT)
    assert first.decision is Decision.ACCEPTED
    plan = await engine.decide(0, [make_candidate(event_id="e9", content=OTHER_ANIMAL, offset=9)])
    outcome = plan.outcomes[0]
    assert_kept_apart_by(outcome, GuardName.ALIGNMENT)
    assert [hit.veto.detail.split(":")[0] for hit in outcome.related] == ["value_change"] * len(
        outcome.related
    )
    assert len(outcome.related) == 2
    assert outcome.related[0].similarity >= outcome.related[1].similarity


WITH_COUNTED_DETAIL = "User keeps bees in two hives on the roof of the shed."
COUNTED = "User keeps bees in three hives."
COUNT_CHANGED = "User keeps bees in two hives."


async def test_quantities_that_come_with_an_added_detail_are_that_detail(
    make_engine: EngineFactory,
    embedder: FakeEmbedder,
    store: MemoryStore,
    aligner: PairAligner,
) -> None:
    """The stored fact states no quantity: the new text's "two hives" comes with
    the detail it adds, so the numbers guard does not keep them apart."""
    place(embedder, WITH_COUNTED_DETAIL, 0.9)
    outcome = await decide_after_stored(store, make_engine(aligner=aligner), WITH_COUNTED_DETAIL)
    assert outcome.decision is Decision.MERGED
    assert outcome.memory.content == WITH_COUNTED_DETAIL


async def test_without_the_aligner_an_added_quantity_is_vetoed(
    make_engine: EngineFactory,
    embedder: FakeEmbedder,
    store: MemoryStore,
) -> None:
    place(embedder, WITH_COUNTED_DETAIL, 0.9)
    outcome = await decide_after_stored(store, make_engine(), WITH_COUNTED_DETAIL)
    assert_kept_apart_by(outcome, GuardName.NUMBERS)


async def test_a_changed_quantity_is_vetoed_with_the_aligner(
    make_engine: EngineFactory,
    embedder: FakeEmbedder,
    store: MemoryStore,
    aligner: PairAligner,
) -> None:
    """The stored fact states a quantity: another one is a changed value, never a detail."""
    embedder.set(COUNTED, base_vector())
    embedder.set(COUNT_CHANGED, unit_vector(0.95, axis=1))
    engine = make_engine(aligner=aligner)
    outcome = await decide_after_stored(store, engine, COUNT_CHANGED, stored=COUNTED)
    assert_kept_apart_by(outcome, GuardName.NUMBERS)


@pytest.mark.parametrize(
    ("stored", "new", "merged"),
    [
        # every stored quantity kept, more added in a phrase of its own
        ("User passed the JLPT N3 exam.", "User passed the JLPT N3 exam in December 2022.", True),
        # more added as a modifier of a stored word: a changed value
        (
            "User sees a physiotherapist every Thursday.",
            "User sees a physiotherapist every other Thursday.",
            False,
        ),
        # a verb only the new text has acts on what both say
        (
            "User's parent-teacher conference is on November 14.",
            "User's parent-teacher conference was rescheduled from November 14 to November 21.",
            False,
        ),
    ],
)
async def test_quantities_added_beside_the_stored_ones(
    make_engine: EngineFactory,
    embedder: FakeEmbedder,
    store: MemoryStore,
    aligner: PairAligner,
    stored: str,
    new: str,
    merged: bool,
) -> None:
    """The stored fact states a quantity and the new text keeps it and adds more:
    a detail when what it adds stands in a phrase of its own, else the numbers
    guard keeps them apart."""
    embedder.set(stored, base_vector())
    embedder.set(new, unit_vector(0.9, axis=1))
    outcome = await decide_after_stored(store, make_engine(aligner=aligner), new, stored=stored)
    if merged:
        assert outcome.decision is Decision.MERGED
        assert outcome.memory.content == new
    else:
        assert_kept_apart_by(outcome, GuardName.NUMBERS)


@pytest.mark.parametrize(
    ("stored", "new", "contained"),
    [
        # a contained pair the guards raise nothing on
        ("User keeps bees.", "I keep bees on the roof.", True),
        # quantities that come with a clause the new text adds
        (
            "User is red-green colorblind.",
            "User is red-green colorblind, which was first noticed at age six.",
            True,
        ),
        # quantities in an adjunct that may narrow the stored fact
        ("User works from home.", "User works from home on Fridays.", False),
        # a changed quantity
        ("User keeps bees in three hives.", "User keeps bees in two hives.", False),
    ],
)
def test_the_lower_rescue_cut_needs_nothing_a_guard_keeps(
    aligner: PairAligner, stored: str, new: str, contained: bool
) -> None:
    alignment = aligner.check(stored, new)
    assert rescue_contained(alignment, stored, new, guards=True) is contained
