"""The cross-encoder: its verdicts and cache (a fake scorer), its veto and rescue in
the engine and in the quality tools' rule, its settings, and the shipped model."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from consumer.app.factory import threshold_policy
from consumer.domain.alignment import PairAligner
from consumer.domain.cross_verifier import CrossEncoderVerifier
from consumer.domain.dedup import DedupEngine
from consumer.domain.models import Outcome
from consumer.domain.recent import RecentCache
from consumer.domain.thresholds import Bands, ThresholdPolicy, lowest_band
from consumer.domain.vetoes import GuardName
from consumer.embedding.cross_encoder import (
    DEFAULT_MODEL_DIR,
    CrossEncoderInfo,
    OnnxPairScorer,
    build_cross_encoder,
)
from consumer.ports import MemoryStore
from consumer.quality.evaluate import policy_from_settings
from consumer.quality.rule import decide_pair
from consumer.settings import CrossEncoderSettings, Settings
from schemas import Decision, DecisionReason

from .helpers import (
    DIMENSION,
    FIXED_NOW,
    FakeEmbedder,
    FakeScorer,
    base_vector,
    make_candidate,
    unit_vector,
)

STORED = "User keeps bees."
PARAPHRASE = "I keep bees."
RESCUE_BANDS = Bands(duplicate_threshold=0.90, merge_threshold=0.80, rescue_threshold=0.47)


class ConstantScorer:
    def __init__(self, p: float) -> None:
        self.p = p

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [self.p for _ in pairs]


def cross(p: float) -> CrossEncoderVerifier:
    """A cross-encoder with the default cuts that answers `p` for every pair."""
    defaults = CrossEncoderSettings()
    return CrossEncoderVerifier(
        ConstantScorer(p),
        veto_below=defaults.veto_below,
        rescue_from=defaults.rescue_from,
        reworded_below=defaults.reworded_below,
        rescue_contained_from=defaults.rescue_contained_from,
        verb_swap_from=defaults.verb_swap_from,
    )


# The verifier ----------------------------------------------------------------------


def test_a_contained_pair_is_rescued_from_the_lower_cut() -> None:
    assert not cross(0.39).judge_rescue("a", "b", contained=True).same_fact
    assert cross(0.40).judge_rescue("a", "b", contained=True).same_fact
    assert not cross(0.40).judge_rescue("a", "b").same_fact
    one_cut = CrossEncoderVerifier(FakeScorer(), veto_below=0.07, rescue_from=0.7)
    assert one_cut.rescue_contained_from == 0.7  # unset: the plain cut
    with pytest.raises(ValueError, match="rescue_contained_from"):
        CrossEncoderVerifier(
            FakeScorer(), veto_below=0.07, rescue_from=0.7, rescue_contained_from=7
        )


def test_verdicts_name_the_cross_encoder_and_its_cut() -> None:
    low, high = cross(0.03), cross(0.5)
    vetoed = low.judge("a", "b", 0.9)
    assert (vetoed.same_fact, vetoed.source) == (False, "cross-encoder")
    assert vetoed.detail == "P(same fact) 0.030 < 0.2"
    assert high.judge("a", "b", 0.9).same_fact
    assert not cross(0.69).judge_rescue("a", "b").same_fact
    assert cross(0.70).judge_rescue("a", "b").same_fact  # the cut is inclusive


async def test_scores_are_cached_and_primed_in_one_call() -> None:
    scorer = FakeScorer({("a", "b"): 0.9})
    verifier = CrossEncoderVerifier(scorer, veto_below=0.07, rescue_from=0.34)
    verifier.prime([("a", "b"), ("a", "c"), ("a", "b")])
    assert scorer.calls == [[("a", "b"), ("a", "c")]]
    assert (await verifier.verify("a", "b", 0.9)).probability == 0.9
    assert verifier.judge("a", "c", 0.9).probability == 0.5
    assert (await verifier.rescues("a", "d")).same_fact
    assert scorer.calls[1:] == [[("a", "d")]]


def test_the_cache_is_bounded() -> None:
    scorer = FakeScorer()
    verifier = CrossEncoderVerifier(scorer, veto_below=0.07, rescue_from=0.34, cache_size=2)
    for new in ("b", "c", "d", "b"):
        verifier.probability("a", new)
    assert len(scorer.calls) == 4  # "b" was evicted by "d"


def test_thresholds_must_be_probabilities() -> None:
    with pytest.raises(ValueError, match="veto_below"):
        CrossEncoderVerifier(FakeScorer(), veto_below=1.5, rescue_from=0.34)
    with pytest.raises(ValueError, match="reworded_below"):
        CrossEncoderVerifier(FakeScorer(), veto_below=0.07, rescue_from=0.7, reworded_below=2.0)


def test_a_reworded_pair_needs_better_than_even_odds() -> None:
    verifier = cross(0.3)
    assert verifier.judge("a", "b", 0.9).same_fact
    reworded = verifier.judge("a", "b", 0.9, reworded=True)
    assert not reworded.same_fact
    assert reworded.detail == "P(same fact) 0.300 < 0.7"
    assert not cross(0.65).judge("a", "b", 0.9, reworded=True).same_fact
    assert cross(0.7).judge("a", "b", 0.9, reworded=True).same_fact
    # Never laxer than the plain veto, and the plain veto when not given.
    strict = CrossEncoderVerifier(FakeScorer(), veto_below=0.6, rescue_from=0.7, reworded_below=0.5)
    assert strict.reworded_below == 0.6
    plain = CrossEncoderVerifier(FakeScorer(), veto_below=0.07, rescue_from=0.7)
    assert plain.reworded_below == 0.07


def test_a_verb_swap_is_lifted_from_its_cut_by_the_model_alone() -> None:
    assert cross(0.95).lifts_verb_swap("a", "b")
    assert not cross(0.94).lifts_verb_swap("a", "b")
    # Texts spelled alike are still asked ("teaches" / "reaches"), unlike the veto.
    pair = ("Kofi teaches the kids.", "Kofi reaches the kids.")
    verifier = CrossEncoderVerifier(
        FakeScorer({pair: 0.3}), veto_below=0.2, rescue_from=0.7, verb_swap_from=0.9
    )
    assert verifier.probability(*pair) == 1.0
    assert not verifier.lifts_verb_swap(*pair)
    # 1.0 (the default of the class) lifts nothing, whatever the model says.
    never = CrossEncoderVerifier(ConstantScorer(1.0), veto_below=0.2, rescue_from=0.7)
    assert never.verb_swap_from == 1.0
    assert not never.lifts_verb_swap("a", "b")
    with pytest.raises(ValueError, match="verb_swap_from"):
        CrossEncoderVerifier(FakeScorer(), veto_below=0.2, rescue_from=0.7, verb_swap_from=1.5)


async def test_the_async_lift_agrees_and_uses_the_cache() -> None:
    scorer = FakeScorer({("a", "b"): 0.96})
    verifier = CrossEncoderVerifier(scorer, veto_below=0.2, rescue_from=0.7, verb_swap_from=0.95)
    assert await verifier.lifts_verb_swap_async("a", "b")
    assert verifier.lifts_verb_swap("a", "b")
    assert scorer.calls == [[("a", "b")]]


# The bands ------------------------------------------------------------------------


def test_the_rescue_band_lies_below_the_merge_threshold() -> None:
    assert RESCUE_BANDS.in_rescue_band(0.47)
    assert RESCUE_BANDS.in_rescue_band(0.79)
    assert not RESCUE_BANDS.in_rescue_band(0.80)
    assert not RESCUE_BANDS.in_rescue_band(0.46)
    assert not Bands(0.90, 0.80).in_rescue_band(0.6)
    assert RESCUE_BANDS.lowest == 0.47
    assert Bands(0.90, 0.80).lowest == 0.80
    policy = ThresholdPolicy(default=Bands(0.9, 0.8), per_namespace={"n": RESCUE_BANDS})
    assert lowest_band(policy) == pytest.approx(0.47 - 1e-6)
    with pytest.raises(ValueError, match="rescue_threshold"):
        Bands(0.9, 0.8, rescue_threshold=-0.1)


# The engine -----------------------------------------------------------------------


def axis_vector(axis: int) -> np.ndarray:
    vector = np.zeros(DIMENSION, dtype=np.float32)
    vector[axis] = 1.0
    return vector


async def decide_after_stored(
    store: MemoryStore,
    embedder: FakeEmbedder,
    new: str,
    similarity: float,
    cross_encoder: CrossEncoderVerifier | None,
    bands: Bands = RESCUE_BANDS,
    *,
    stored: str = STORED,
    aligner: PairAligner | None = None,
) -> Outcome:
    embedder.set(stored, base_vector())
    embedder.set(new, unit_vector(similarity, axis=1))
    engine = DedupEngine(
        store=store,
        embedder=embedder,
        policy=ThresholdPolicy(default=bands),
        recent=RecentCache(ttl_s=300, max_entries=1000),
        aligner=aligner,
        cross_encoder=cross_encoder,
        clock=lambda: FIXED_NOW,
    )
    outcome: Outcome | None = None
    for offset, text in enumerate((stored, new)):
        plan = await engine.decide(
            0, [make_candidate(event_id=f"e{offset}", content=text, offset=offset)]
        )
        await store.write(0, list(plan.writes.values()), [])
        engine.commit(plan)
        outcome = plan.outcomes[0]
    assert outcome is not None
    return outcome


async def test_a_paraphrase_below_the_band_is_rescued_and_merged(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    outcome = await decide_after_stored(store, embedder, PARAPHRASE, 0.6, cross(0.9))
    assert (outcome.decision, outcome.reason) == (Decision.MERGED, DecisionReason.SEMANTIC)
    assert outcome.threshold == 0.47
    assert outcome.similarity == pytest.approx(0.6, abs=1e-4)


async def test_without_the_cross_encoder_the_same_pair_is_accepted(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    outcome = await decide_after_stored(store, embedder, PARAPHRASE, 0.6, None)
    assert outcome.decision is Decision.ACCEPTED


async def test_a_pair_the_cross_encoder_does_not_rescue_is_accepted_without_a_veto(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    outcome = await decide_after_stored(store, embedder, PARAPHRASE, 0.6, cross(0.2))
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.guard is None


async def test_below_the_rescue_threshold_nothing_is_rescued(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    outcome = await decide_after_stored(store, embedder, PARAPHRASE, 0.40, cross(0.99))
    assert outcome.decision is Decision.ACCEPTED


async def test_a_guard_keeps_a_pair_apart_whatever_the_cross_encoder_says(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    outcome = await decide_after_stored(store, embedder, "User keeps 12 bees.", 0.6, cross(0.99))
    assert outcome.decision is Decision.ACCEPTED


async def test_a_rescue_merges_even_above_the_duplicate_cut_of_its_own(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    # Equivalent texts are skipped in the duplicate band; rescued, they merge.
    outcome = await decide_after_stored(store, embedder, "The user keeps bees.", 0.79, cross(1.0))
    assert outcome.decision is Decision.MERGED


async def test_the_cross_encoder_vetoes_a_band_match(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    outcome = await decide_after_stored(store, embedder, PARAPHRASE, 0.85, cross(0.01))
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.guard is not None
    assert outcome.guard.veto.guard is GuardName.VERIFIER
    assert outcome.guard.veto.detail.startswith("cross-encoder: P(same fact) 0.010 < 0.2")


async def test_a_band_match_it_agrees_with_merges_at_the_merge_threshold(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    outcome = await decide_after_stored(store, embedder, PARAPHRASE, 0.85, cross(0.5))
    assert (outcome.decision, outcome.threshold) == (Decision.MERGED, 0.80)


BALCONY = "User grows basil on their balcony."
PLOT = "User grows basil in a community garden plot."  # reworded: words left on both sides


@pytest.fixture(scope="module")
def aligner() -> PairAligner:
    return PairAligner()


async def test_a_reworded_band_match_needs_better_than_even_odds_from_the_cross_encoder(
    store: MemoryStore, embedder: FakeEmbedder, aligner: PairAligner
) -> None:
    assert aligner.check(BALCONY, PLOT).reworded
    outcome = await decide_after_stored(
        store, embedder, PLOT, 0.85, cross(0.3), stored=BALCONY, aligner=aligner
    )
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.guard is not None
    assert outcome.guard.veto.detail.startswith("cross-encoder: P(same fact) 0.300 < 0.7")
    same = decide_pair(BALCONY, PLOT, 0.85, RESCUE_BANDS, aligner=aligner, cross_encoder=cross(0.3))
    assert same.veto is not None
    assert same.veto.detail == outcome.guard.veto.detail


async def test_an_aligned_band_match_needs_only_the_plain_cut(
    store: MemoryStore, embedder: FakeEmbedder, aligner: PairAligner
) -> None:
    assert not aligner.check(STORED, PARAPHRASE).reworded
    outcome = await decide_after_stored(
        store, embedder, PARAPHRASE, 0.85, cross(0.3), aligner=aligner
    )
    assert outcome.decision is not Decision.ACCEPTED
    decided = decide_pair(
        STORED, PARAPHRASE, 0.85, RESCUE_BANDS, aligner=aligner, cross_encoder=cross(0.3)
    )
    assert decided.decision is outcome.decision


NOTE = "Bees: two hives on the shed roof"
SENTENCE = "User keeps bees in two hives on the shed roof."
CANCELLED = "User cancelled their gym membership."
MEMBERSHIP = "User has a gym membership."


async def test_a_note_found_in_its_sentence_is_rescued_from_the_lower_cut(
    store: MemoryStore, embedder: FakeEmbedder, aligner: PairAligner
) -> None:
    alignment = aligner.check(SENTENCE, NOTE)
    assert alignment.veto is None
    assert alignment.contained
    outcome = await decide_after_stored(
        store, embedder, NOTE, 0.6, cross(0.5), stored=SENTENCE, aligner=aligner
    )
    assert (outcome.decision, outcome.threshold) == (Decision.MERGED, 0.47)
    same = decide_pair(SENTENCE, NOTE, 0.6, RESCUE_BANDS, aligner=aligner, cross_encoder=cross(0.5))
    assert same.decision is Decision.MERGED
    # Without the parse nothing says the note is contained: the plain cut.
    assert decide_pair(SENTENCE, NOTE, 0.6, RESCUE_BANDS, cross_encoder=cross(0.5)).decision is (
        Decision.ACCEPTED
    )


async def test_a_verb_only_one_text_has_acting_on_a_shared_word_is_not_contained(
    store: MemoryStore, embedder: FakeEmbedder, aligner: PairAligner
) -> None:
    alignment = aligner.check(MEMBERSHIP, CANCELLED)
    assert alignment.unmatched_existing == 0
    assert not alignment.contained
    outcome = await decide_after_stored(
        store, embedder, CANCELLED, 0.6, cross(0.5), stored=MEMBERSHIP, aligner=aligner
    )
    assert outcome.decision is Decision.ACCEPTED


def test_a_pair_the_guards_objected_to_needs_the_plain_cut(aligner: PairAligner) -> None:
    # Same words in another order: the parse lifts the word-order veto and finds
    # every word matched, but the lower cut does not stack on a lifted veto.
    mobile = "The mobile app will be rewritten before the web app."
    web = "The web app will be rewritten before the mobile app."
    assert aligner.check(mobile, web).contained
    decided = decide_pair(mobile, web, 0.6, RESCUE_BANDS, aligner=aligner, cross_encoder=cross(0.5))
    assert decided.decision is Decision.ACCEPTED


def test_a_verb_is_no_abbreviation_of_another(aligner: PairAligner) -> None:
    # "go" was read as short for "grow": the pair looked contained.
    alignment = aligner.check(
        "User grew up in Manchester.", "User went to university in Manchester."
    )
    assert alignment.unmatched_existing == 1
    assert not alignment.contained


WORKS = "Amara works at Zalando."
EMPLOYED = "Amara is employed by Zalando."  # one verb for another, all else matched
SWAP_VETO = "value_change: 'work' vs 'employ' (ROOT)"


@pytest.mark.parametrize(
    ("similarity", "p", "decision", "threshold"),
    [
        (0.85, 0.95, Decision.MERGED, 0.80),
        (0.95, 0.99, Decision.MERGED, 0.80),  # merged, not skipped: the words differ
        (0.60, 0.95, Decision.MERGED, 0.47),  # rescued
        (0.85, 0.94, Decision.ACCEPTED, None),
        (0.60, 0.94, Decision.ACCEPTED, None),  # above the rescue cut, not the lift's
    ],
)
async def test_a_verb_swap_is_merged_only_where_the_cross_encoder_is_nearly_sure(
    store: MemoryStore,
    embedder: FakeEmbedder,
    aligner: PairAligner,
    similarity: float,
    p: float,
    decision: Decision,
    threshold: float | None,
) -> None:
    assert aligner.check(WORKS, EMPLOYED).verb_swap
    outcome = await decide_after_stored(
        store, embedder, EMPLOYED, similarity, cross(p), stored=WORKS, aligner=aligner
    )
    assert (outcome.decision, outcome.threshold) == (decision, threshold)
    if decision is Decision.ACCEPTED and similarity >= 0.80:
        assert outcome.guard is not None
        assert outcome.guard.veto.guard is GuardName.ALIGNMENT
        assert outcome.guard.veto.detail == SWAP_VETO
    decided = decide_pair(
        WORKS, EMPLOYED, similarity, RESCUE_BANDS, aligner=aligner, cross_encoder=cross(p)
    )
    assert (decided.decision, decided.threshold) == (decision, threshold)


async def test_without_the_cross_encoder_a_verb_swap_stays_a_changed_value(
    store: MemoryStore, embedder: FakeEmbedder, aligner: PairAligner
) -> None:
    outcome = await decide_after_stored(
        store, embedder, EMPLOYED, 0.95, None, stored=WORKS, aligner=aligner
    )
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.guard is not None
    assert outcome.guard.veto.detail == SWAP_VETO


async def test_a_changed_name_beside_the_verb_is_never_lifted(
    store: MemoryStore, embedder: FakeEmbedder, aligner: PairAligner
) -> None:
    other_employer = "Amara is employed by Otto."
    outcome = await decide_after_stored(
        store, embedder, other_employer, 0.85, cross(1.0), stored=WORKS, aligner=aligner
    )
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.guard is not None
    assert outcome.guard.veto.guard is GuardName.ALIGNMENT


# The quality tools' rule -------------------------------------------------------------


def test_decide_pair_rescues_and_vetoes_as_the_engine() -> None:
    rescued = decide_pair(STORED, PARAPHRASE, 0.6, RESCUE_BANDS, cross_encoder=cross(0.9))
    assert (rescued.decision, rescued.threshold) == (Decision.MERGED, 0.47)
    assert decide_pair(STORED, PARAPHRASE, 0.6, RESCUE_BANDS).decision is Decision.ACCEPTED
    not_rescued = decide_pair(STORED, PARAPHRASE, 0.6, RESCUE_BANDS, cross_encoder=cross(0.2))
    assert (not_rescued.decision, not_rescued.veto) == (Decision.ACCEPTED, None)
    guarded = decide_pair(
        STORED, "User keeps 12 bees.", 0.6, RESCUE_BANDS, cross_encoder=cross(0.99)
    )
    assert guarded.decision is Decision.ACCEPTED
    vetoed = decide_pair(STORED, PARAPHRASE, 0.85, RESCUE_BANDS, cross_encoder=cross(0.01))
    assert vetoed.decision is Decision.ACCEPTED
    assert vetoed.veto is not None
    assert vetoed.veto.detail.startswith("cross-encoder")
    kept = decide_pair(STORED, PARAPHRASE, 0.85, RESCUE_BANDS, cross_encoder=cross(0.5))
    assert kept.decision is Decision.MERGED


# Settings --------------------------------------------------------------------------


def test_settings_default_on_with_the_dev_split_thresholds() -> None:
    settings = CrossEncoderSettings()
    assert (settings.enabled, settings.veto_below, settings.rescue_from) == (True, 0.2, 0.70)
    assert settings.reworded_below == 0.7
    assert settings.rescue_threshold == 0.47
    info = CrossEncoderInfo.read()
    assert (info.veto_below, info.rescue_from, info.rescue_threshold) == (0.2, 0.70, 0.47)
    assert info.reworded_below == settings.reworded_below
    assert info.verb_swap_from == settings.verb_swap_from == 0.95


def test_off_means_no_rescue_band(monkeypatch: pytest.MonkeyPatch) -> None:
    on = Settings()
    assert threshold_policy(on).default.rescue_threshold == 0.47
    assert policy_from_settings(on.dedup).default.rescue_threshold == 0.47
    monkeypatch.setenv("MEMDEDUP_DEDUP__CROSS_ENCODER__ENABLED", "false")
    off = Settings()
    assert not off.dedup.cross_encoder.enabled
    assert threshold_policy(off).default.rescue_threshold is None
    assert policy_from_settings(off.dedup).default.rescue_threshold is None
    assert lowest_band(threshold_policy(off)) == pytest.approx(off.dedup.merge_threshold - 1e-6)


def test_a_namespace_may_turn_the_rescue_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEDUP_DEDUP__NAMESPACES__CHAT__RESCUE", "false")
    monkeypatch.setenv("MEMDEDUP_DEDUP__NAMESPACES__FACTS__MERGE_THRESHOLD", "0.8")
    policy = threshold_policy(Settings())
    assert policy.default.rescue_threshold == 0.47
    assert policy.bands_for("facts").rescue_threshold == 0.47
    chat = policy.bands_for("chat")
    assert chat.rescue_threshold is None
    assert not chat.in_rescue_band(0.6)
    assert chat.lowest == chat.merge_threshold
    # The service still reads matches down to the band of the namespaces that rescue.
    assert lowest_band(policy) == pytest.approx(0.47 - 1e-6)


def test_the_rescue_off_everywhere_reads_nothing_below_the_merge_bands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMDEDUP_DEDUP__RESCUE", "false")
    monkeypatch.setenv("MEMDEDUP_DEDUP__NAMESPACES__CHAT__RESCUE", "false")
    settings = Settings()
    policy = threshold_policy(settings)
    assert policy.default.rescue_threshold is None
    assert policy.bands_for("chat").rescue_threshold is None
    assert policy_from_settings(settings.dedup) == policy
    assert lowest_band(policy) == pytest.approx(settings.dedup.merge_threshold - 1e-6)


# The shipped model -----------------------------------------------------------------


@pytest.fixture(scope="module")
def scorer() -> OnnxPairScorer:
    return OnnxPairScorer.load()


def test_the_verifier_built_from_settings_has_every_cut(scorer: OnnxPairScorer) -> None:
    settings = CrossEncoderSettings(
        veto_below=0.1,
        rescue_from=0.8,
        rescue_contained_from=0.3,
        reworded_below=0.6,
        verb_swap_from=0.9,
    )
    built = build_cross_encoder(settings, scorer, cache_size=2)
    assert built is not None
    cuts = (
        built.veto_below,
        built.rescue_from,
        built.rescue_contained_from,
        built.reworded_below,
        built.verb_swap_from,
    )
    assert cuts == (0.1, 0.8, 0.3, 0.6, 0.9)
    assert build_cross_encoder(CrossEncoderSettings(enabled=False), scorer) is None


def test_the_shipped_model_is_the_one_its_metadata_names() -> None:
    info = CrossEncoderInfo.read()
    assert hashlib.sha256(info.model_file.read_bytes()).hexdigest() == info.model_sha256
    assert info.max_length == 96


def test_metadata_that_names_no_verb_swap_cut_lifts_nothing(tmp_path: Path) -> None:
    shipped = json.loads((DEFAULT_MODEL_DIR / "model.json").read_text(encoding="utf-8"))
    del shipped["verb_swap_from"]
    (tmp_path / "model.json").write_text(json.dumps(shipped), encoding="utf-8")
    info = CrossEncoderInfo.read(tmp_path)
    assert info.verb_swap_from == 1.0
    assert info.veto_below == CrossEncoderInfo.read().veto_below


def test_the_shipped_model_tells_a_paraphrase_from_a_changed_value(
    scorer: OnnxPairScorer,
) -> None:
    same, other_city, other_drink = scorer.probabilities(
        [
            ("User likes climbing.", "I like climbing."),
            ("User lives in Paris", "User lives in Lyon"),
            ("User drinks coffee every morning", "User enjoys green tea in the evening"),
        ]
    )
    assert same >= 0.70
    assert other_city < CrossEncoderSettings().veto_below  # vetoed at the default cut
    assert other_drink < 0.70  # not rescued (docs/quality.md)


def test_a_score_does_not_depend_on_the_pairs_scored_beside_it(
    scorer: OnnxPairScorer,
) -> None:
    pairs = [
        ("Staging runs in Frankfurt.", "Frankfurt is where staging runs."),
        ("User has a cat", "User has a 3-year-old cat named Miso who sleeps on the sofa all day"),
    ]
    together = scorer.probabilities(pairs)
    alone = [scorer.probabilities([pair])[0] for pair in pairs]
    assert together == alone
    # In one padded batch the int8 model's dynamic quantization moves them (by 0.10
    # for the second pair with the shipped model): why the scorer runs one pair at
    # a time.
    batched = OnnxPairScorer.load(batch_size=2)
    assert batched.probabilities(pairs) != alone


async def test_only_the_best_rescue_candidate_is_asked(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    # Two stored memories in the rescue band; the cross-encoder would rescue the
    # second, but one model run per event is the bound: the best one decides.
    other = "User keeps wasps."
    embedder.set(STORED, base_vector())
    embedder.set(PARAPHRASE, unit_vector(0.6, axis=1))  # 0.6 with STORED
    # 0.3 with STORED (a memory of its own), 0.5 with PARAPHRASE.
    embedder.set(other, 0.3 * base_vector() + 0.4 * axis_vector(1) + 0.866 * axis_vector(2))
    scorer = FakeScorer({(STORED, PARAPHRASE): 0.1, (other, PARAPHRASE): 0.99})
    engine = DedupEngine(
        store=store,
        embedder=embedder,
        policy=ThresholdPolicy(default=RESCUE_BANDS),
        recent=RecentCache(ttl_s=300, max_entries=1000),
        cross_encoder=CrossEncoderVerifier(scorer, veto_below=0.07, rescue_from=0.70),
        clock=lambda: FIXED_NOW,
    )
    for offset, text in enumerate((STORED, other)):
        plan = await engine.decide(
            0, [make_candidate(event_id=f"e{offset}", content=text, offset=offset)]
        )
        await store.write(0, list(plan.writes.values()), [])
        engine.commit(plan)
    assert await store.count_memories(0) == 2
    scorer.calls.clear()
    plan = await engine.decide(0, [make_candidate(event_id="e9", content=PARAPHRASE, offset=9)])
    assert plan.outcomes[0].decision is Decision.ACCEPTED
    assert scorer.calls == [[(STORED, PARAPHRASE)]]


def test_texts_spelled_alike_are_the_same_fact_without_a_model_run() -> None:
    scorer = FakeScorer({("Has a golden retriever.", "has a golden retreiver"): 0.01})
    defaults = CrossEncoderSettings()
    verifier = CrossEncoderVerifier(
        scorer, veto_below=defaults.veto_below, rescue_from=defaults.rescue_from
    )
    typo = ("Has a golden retriever.", "has a golden retreiver")
    assert verifier.probability(*typo) == 1.0
    assert verifier.judge(*typo, 0.85).same_fact
    verifier.prime([typo, ("User keeps bees.", PARAPHRASE)])
    assert scorer.calls == [[("User keeps bees.", PARAPHRASE)]]
    # A name is no typo: the model is asked.
    assert verifier.probability("Sees Dr. Reyes", "Sees Dr. Reyna") == 0.5


async def test_texts_spelled_alike_skip_the_model_off_the_event_loop_too() -> None:
    scorer = FakeScorer()
    defaults = CrossEncoderSettings()
    verifier = CrossEncoderVerifier(
        scorer, veto_below=defaults.veto_below, rescue_from=defaults.rescue_from
    )
    assert await verifier.probability_async("Hates cilantro", "hates cilatro") == 1.0
    assert scorer.calls == []
