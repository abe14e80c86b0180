"""consumer.quality without a model: the pairs format, the decision rule (checked
against DedupEngine itself), metrics, evaluation, calibration and the PNG plot."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
import yaml

from consumer.cli.main import main
from consumer.domain.alignment import PairAligner
from consumer.domain.dedup import DedupEngine
from consumer.domain.models import Outcome
from consumer.domain.normalize import content_hash, normalize_content
from consumer.domain.thresholds import Bands, ThresholdPolicy
from consumer.domain.vetoes import GuardName
from consumer.ports import MemoryStore
from consumer.quality.calibrate import (
    ALL_PAIRS,
    CurvePoint,
    PairFacts,
    calibrate,
    choose_threshold,
    confusion_at,
    sweep,
)
from consumer.quality.calibration_report import (
    calibration_json,
    calibration_plot,
    render_calibration,
    yaml_snippet,
)
from consumer.quality.evaluate import (
    embed_similarities,
    evaluate_pairs,
    evaluation_json,
    render_evaluation,
    short_hash,
)
from consumer.quality.metrics import Confusion, Tally
from consumer.quality.pairs import (
    LabelledPair,
    PairFileError,
    load_pairs,
    parse_pair,
    parse_pairs,
)
from consumer.quality.plot import MISSING_MATPLOTLIB, Series, plot_curves
from consumer.quality.rule import decide_pair, is_exact
from consumer.settings import DedupSettings
from schemas import Decision, DecisionReason

from .conftest import EngineFactory
from .helpers import FakeEmbedder, base_vector, make_candidate, unit_vector

BANDS = Bands(duplicate_threshold=0.96, merge_threshold=0.84)
SHIPPED = Path(__file__).resolve().parents[2] / "consumer" / "data" / "memory_pairs.jsonl"


def line(**fields: object) -> str:
    return json.dumps(fields)


def pair(existing: str, new: str, duplicate: bool, **extra: str) -> LabelledPair:
    return LabelledPair(existing, new, duplicate, extra.get("namespace"), extra.get("category"))


# --------------------------------------------------------------------------
# The pairs format
# --------------------------------------------------------------------------


def test_parse_pairs_reads_fields_skips_blank_lines_and_ignores_extra_keys() -> None:
    lines = [
        line(existing="Lives in Paris", new="User lives in Paris", label="duplicate"),
        "   ",
        line(
            existing="A",
            new="B",
            label="distinct",
            namespace="biography",
            category="unrelated",
            id="x-1",
            score=1.5,
        ),
        line(existing="C", new="D", label="distinct", namespace=None, category=None),
    ]
    first, second, third = parse_pairs(lines)
    assert first == LabelledPair("Lives in Paris", "User lives in Paris", True, None, None, 1)
    assert first.label == "duplicate"
    assert second == LabelledPair("A", "B", False, "biography", "unrelated", 3)
    assert (third.namespace, third.category, third.line) == (None, None, 4)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "invalid JSON"),
        ('["existing", "new"]', "expected a JSON object"),
        (line(new="x", label="duplicate"), "`existing` must be a string"),
        (line(existing="x", new=3, label="duplicate"), "`new` must be a string"),
        (line(existing="x", new=" . ", label="duplicate"), "`new` is empty after normalisation"),
        (line(existing="x", new="y"), "`label` must be 'duplicate' or 'distinct'"),
        (line(existing="x", new="y", label="same"), "got 'same'"),
        (line(existing="x", new="y", label="distinct", namespace="Bio"), "`namespace` 'Bio'"),
        (line(existing="x", new="y", label="distinct", category=7), "`category` must be"),
    ],
)
def test_parse_pairs_names_the_bad_line(raw: str, message: str) -> None:
    good = line(existing="a", new="b", label="distinct")
    with pytest.raises(PairFileError) as info:
        parse_pairs([good, "", raw], source="pairs.jsonl")
    assert str(info.value).startswith("pairs.jsonl:3: ")
    assert message in str(info.value)


def test_parse_pairs_rejects_a_file_without_pairs() -> None:
    with pytest.raises(PairFileError, match="no labelled pairs"):
        parse_pairs(["", "  "], source="empty.jsonl")


def test_load_pairs_reports_missing_files_directories_and_bad_bytes(tmp_path: Path) -> None:
    with pytest.raises(PairFileError, match="no such file"):
        load_pairs(tmp_path / "missing.jsonl")
    with pytest.raises(PairFileError, match="is a directory"):
        load_pairs(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(line(existing="a", new="b", label="distinct").encode() + b"\n\xff\xfe\n")
    with pytest.raises(PairFileError, match=r"bad.jsonl:2: not UTF-8"):
        load_pairs(bad)


def test_shipped_memory_pairs_parse_and_cover_every_kind() -> None:
    pairs = load_pairs(SHIPPED)
    assert len(pairs) >= 300
    assert {p.namespace for p in pairs} == {"preferences", "biography", "decisions", "schedule"}
    kinds = {p.category for p in pairs}
    assert kinds == {
        "paraphrase",
        "near_exact",
        "related_distinct",
        "role_swap",
        "number_change",
        "negation",
        "unrelated",
    }
    duplicate_kinds = {"paraphrase", "near_exact"}
    assert all(p.duplicate == (p.category in duplicate_kinds) for p in pairs)
    assert len({(p.existing, p.new) for p in pairs}) == len(pairs)


# --------------------------------------------------------------------------
# The decision rule
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("similarity", "decision", "threshold"),
    [
        (0.99, Decision.SKIPPED, 0.96),
        (0.96, Decision.SKIPPED, 0.96),  # bounds are inclusive
        (0.9599, Decision.MERGED, 0.84),
        (0.84, Decision.MERGED, 0.84),
        (0.8399, Decision.ACCEPTED, None),
        (-0.2, Decision.ACCEPTED, None),
    ],
)
def test_bands_decide_pairs_the_guards_allow(
    similarity: float, decision: Decision, threshold: float | None
) -> None:
    outcome = decide_pair("User prefers dark mode", "User likes dark themes", similarity, BANDS)
    assert (outcome.decision, outcome.threshold, outcome.veto) == (decision, threshold, None)
    assert outcome.reason is (
        DecisionReason.NEW if decision is Decision.ACCEPTED else DecisionReason.SEMANTIC
    )
    assert outcome.duplicate is (decision is not Decision.ACCEPTED)
    assert outcome.similarity == similarity


def test_a_guard_veto_means_below_threshold() -> None:
    outcome = decide_pair("User's flight leaves at 9am", "User's flight leaves at 9pm", 0.98, BANDS)
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.reason is DecisionReason.NEW
    assert outcome.veto is not None
    assert outcome.veto.guard.value == "numbers"
    assert not outcome.duplicate
    unguarded = decide_pair(
        "User's flight leaves at 9am", "User's flight leaves at 9pm", 0.98, BANDS, guards=False
    )
    assert unguarded.decision is Decision.SKIPPED


def test_guards_run_only_on_pairs_that_reach_a_band() -> None:
    outcome = decide_pair("User likes spicy food", "User does not like spicy food", 0.7, BANDS)
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.veto is None


def test_exact_repeats_are_skipped_whatever_the_similarity() -> None:
    assert is_exact("User prefers dark mode.", "  user prefers DARK mode")
    outcome = decide_pair("User prefers dark mode.", "  user prefers DARK mode", 0.0, BANDS)
    assert (outcome.decision, outcome.reason) == (Decision.SKIPPED, DecisionReason.EXACT)
    assert not is_exact("C#", "C")


async def _decide_second(
    engine: DedupEngine,
    embedder: FakeEmbedder,
    store: MemoryStore,
    existing: str,
    new: str,
    similarity: float,
) -> Outcome:
    """Store `existing`, then decide `new` placed at `similarity` from it."""
    embedder.set(existing, base_vector())
    if not is_exact(existing, new):
        embedder.set(new, unit_vector(similarity, axis=1))
    first = await engine.decide(0, [make_candidate(event_id="e1", content=existing)])
    await store.write(0, list(first.writes.values()), [])
    engine.commit(first)
    second = await engine.decide(0, [make_candidate(event_id="e2", content=new, offset=1)])
    [outcome] = second.outcomes
    return outcome


RULE_CASES = [
    ("User prefers dark mode", "User likes dark themes", 0.97, True),
    ("User prefers dark mode", "User likes dark themes", 0.90, True),
    ("User prefers dark mode", "User likes dark themes", 0.50, True),
    ("User's flight leaves at 9am", "User's flight leaves at 9pm", 0.97, True),
    ("User's flight leaves at 9am", "User's flight leaves at 9pm", 0.97, False),
    ("Alice loves Bob", "Bob loves Alice", 0.90, True),
    ("Alice loves Bob", "Bob loves Alice", 0.90, False),
    ("User likes spicy food", "User does not like spicy food", 0.88, True),
    ("User likes spicy food", "User does not like spicy food", 0.70, True),
    ("User prefers dark mode.", "user prefers dark mode", 1.0, True),
]


@pytest.mark.parametrize(("existing", "new", "similarity", "guards"), RULE_CASES)
async def test_decide_pair_agrees_with_the_engine(
    make_engine: EngineFactory,
    embedder: FakeEmbedder,
    store: MemoryStore,
    existing: str,
    new: str,
    similarity: float,
    guards: bool,
) -> None:
    """The same pair through DedupEngine (store the first, decide the second)."""
    engine = make_engine(policy=ThresholdPolicy(default=BANDS), guards=guards)
    outcome = await _decide_second(engine, embedder, store, existing, new, similarity)

    expected = decide_pair(existing, new, similarity, BANDS, guards=guards)
    assert outcome.decision is expected.decision
    assert outcome.reason is expected.reason
    assert (outcome.guard is not None) == (expected.veto is not None)


ALIGNED_CASES = [
    # quantities that come with an added detail, and a changed quantity
    ("User keeps bees.", "User keeps bees in two hives on the shed roof.", 0.90),
    ("User keeps bees in three hives.", "User keeps bees in two hives.", 0.95),
    ("User keeps bees.", "User keeps two bees.", 0.95),
    ("User keeps bees.", "User no longer keeps bees.", 0.90),
    # words the word-order guard finds moved: with their roles, and traded
    ("User visited Kyoto in April 2023.", "In April 2023, Kyoto was visited by the user.", 0.95),
    ("Hana coaches Tomas at chess on Mondays.", "On Mondays, Tomas coaches Hana at chess.", 0.95),
]


@pytest.fixture(scope="module")
def aligner() -> PairAligner:
    return PairAligner()


@pytest.mark.parametrize(("existing", "new", "similarity"), ALIGNED_CASES)
async def test_decide_pair_agrees_with_the_engine_with_the_alignment(
    make_engine: EngineFactory,
    embedder: FakeEmbedder,
    store: MemoryStore,
    aligner: PairAligner,
    existing: str,
    new: str,
    similarity: float,
) -> None:
    engine = make_engine(policy=ThresholdPolicy(default=BANDS), aligner=aligner)
    outcome = await _decide_second(engine, embedder, store, existing, new, similarity)

    expected = decide_pair(existing, new, similarity, BANDS, aligner=aligner)
    assert outcome.decision is expected.decision
    assert (outcome.guard is not None) == (expected.veto is not None)
    if expected.veto is not None:
        assert outcome.guard is not None
        assert outcome.guard.veto == expected.veto


def test_the_alignment_lifts_a_word_order_veto_only_for_words_moved_with_their_roles(
    aligner: PairAligner,
) -> None:
    moved = ("User visited Kyoto in April 2023.", "In April 2023, Kyoto was visited by the user.")
    without = decide_pair(*moved, 0.95, BANDS)
    assert without.veto is not None
    assert without.veto.guard is GuardName.WORD_ORDER
    assert decide_pair(*moved, 0.95, BANDS, aligner=aligner).duplicate

    # Not word for word (the cleft hangs the words on "is"), every role kept: the
    # veto is lifted, and the pair merges, which keeps the new text, not skips.
    cleft = (
        "User takes notes in Obsidian with daily templates.",
        "Obsidian with daily templates is how the user takes notes.",
    )
    assert decide_pair(*cleft, 0.99, BANDS).veto is not None
    rearranged = decide_pair(*cleft, 0.99, BANDS, aligner=aligner)
    assert rearranged.veto is None
    assert rearranged.decision is Decision.MERGED

    # Amounts moved: they trade what they count, and the days they are for (the
    # alignment reads that too, `_quantity_owners`).
    amounts = ("Kofi runs 5 km on Mondays and 10 km on Saturdays.",
               "Kofi runs 10 km on Mondays and 5 km on Saturdays.")  # fmt: skip
    traded_amounts = aligner.check(*amounts).veto
    assert traded_amounts is not None
    assert traded_amounts.detail == "value_change: '5' and '10' traded"
    kept_apart = decide_pair(*amounts, 0.99, BANDS, aligner=aligner)
    assert kept_apart.veto is not None
    assert kept_apart.veto.guard is GuardName.WORD_ORDER

    traded = ("Hana coaches Tomas at chess on Mondays.", "On Mondays, Tomas coaches Hana at chess.")
    kept = decide_pair(*traded, 0.95, BANDS, aligner=aligner)
    assert not kept.duplicate
    assert kept.veto is not None


# --------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------


def test_confusion_metrics() -> None:
    c = Confusion()
    for duplicate, predicted, times in ((True, True, 8), (False, True, 2), (True, False, 4)):
        for _ in range(times):
            c.add(duplicate=duplicate, predicted=predicted)
    for _ in range(6):
        c.add(duplicate=False, predicted=False)
    assert (c.tp, c.fp, c.fn, c.tn, c.n) == (8, 2, 4, 6, 20)
    assert (c.duplicates, c.distinct, c.predicted) == (12, 8, 10)
    assert c.precision == pytest.approx(0.8)
    assert c.recall == pytest.approx(8 / 12)
    assert c.f1 == pytest.approx(16 / 22)
    assert c.false_merge_rate == pytest.approx(0.25)
    assert c.as_dict()["f1"] == pytest.approx(16 / 22)


def test_undefined_ratios_are_none() -> None:
    c = Confusion(tn=3)
    assert (c.precision, c.recall, c.f1, c.false_merge_rate) == (None, None, None, 0.0)
    assert Confusion().false_merge_rate is None


def test_tally_counts_decisions_per_label_and_vetoes() -> None:
    tally = Tally()
    tally.add(duplicate=True, decision=Decision.MERGED, vetoed=False)
    tally.add(duplicate=False, decision=Decision.ACCEPTED, vetoed=True)
    tally.add(duplicate=False, decision=Decision.SKIPPED, vetoed=False)
    data = tally.as_dict()
    assert data["decisions"] == {
        "distinct": {"accepted": 1, "merged": 0, "skipped": 1},
        "duplicate": {"accepted": 0, "merged": 1, "skipped": 0},
    }
    assert (data["tp"], data["fp"], data["tn"], data["vetoes"]) == (1, 1, 1, 1)


# --------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------

EVAL_PAIRS = [
    pair("User prefers tea", "User likes tea", True, namespace="prefs", category="paraphrase"),
    pair("User is a nurse", "User works as a nurse", True, namespace="bio", category="paraphrase"),
    pair("Flight at 9am", "Flight at 9pm", False, namespace="prefs", category="number_change"),
    # No guard sees this one (the subject guard vetoes "User's son is vegetarian").
    pair("User lives in Paris", "User was born in Paris", False, category="related"),
    pair("Lives in Paris.", "lives in paris", True, namespace="bio", category="near_exact"),
]
EVAL_SIMS = [0.90, 0.70, 0.97, 0.88, 0.99]


def test_evaluate_pairs_tallies_per_category_and_namespace() -> None:
    policy = ThresholdPolicy(default=BANDS, per_namespace={"bio": Bands(0.95, 0.65)})
    evaluation = evaluate_pairs(EVAL_PAIRS, EVAL_SIMS, policy)
    overall = evaluation.overall.confusion
    # tea: merged (TP); nurse: 0.70 >= bio's 0.65 (TP); 9am/9pm: vetoed (TN);
    # born in Paris: merged (FP); Paris: exact (TP).
    assert (overall.tp, overall.fp, overall.fn, overall.tn) == (3, 1, 0, 1)
    assert evaluation.overall.vetoes == 1
    assert evaluation.by_namespace["(default)"].confusion.fp == 1
    assert evaluation.by_namespace["bio"].confusion.tp == 2
    assert set(evaluation.by_category) == {"paraphrase", "number_change", "related", "near_exact"}
    [mistake] = evaluation.mistakes(10)
    assert mistake.mistake == "false_merge"
    assert mistake.pair.category == "related"

    unguarded = evaluate_pairs(EVAL_PAIRS, EVAL_SIMS, policy, guards=False)
    assert unguarded.by_category["number_change"].confusion.fp == 1


def test_mistakes_put_false_merges_first_and_respect_the_limit() -> None:
    pairs = [
        pair("User likes red apples", "User likes green apples", False),
        pair("User lives in Lyon", "User lives in Nice", False),
        pair("User is a nurse", "User works in nursing", True),
        pair("User cycles to work", "User commutes by bike", True),
    ]
    evaluation = evaluate_pairs(pairs, [0.85, 0.95, 0.3, 0.6], ThresholdPolicy(default=BANDS))
    worst = evaluation.mistakes(1)
    assert [(m.mistake, m.outcome.similarity) for m in worst] == [
        ("false_merge", 0.95),
        ("missed_duplicate", 0.3),
    ]
    assert len(evaluation.mistakes(10)) == 4


def test_evaluation_json_hides_texts_unless_asked() -> None:
    evaluation = evaluate_pairs(EVAL_PAIRS, EVAL_SIMS, ThresholdPolicy(default=BANDS))
    model = {"model_id": "fake", "backend": "test"}
    document = evaluation_json(evaluation, source="p.jsonl", model=model)
    json.dumps(document)  # serialisable
    assert set(document) >= {"overall", "by_category", "by_namespace", "mistakes", "bands"}
    assert document["overall"]["n"] == 5
    mistake = document["mistakes"][0]
    assert "existing" not in mistake
    assert "new" not in mistake
    assert mistake["existing_hash"] == content_hash(normalize_content("User lives in Paris"))[:12]
    shown = evaluation_json(evaluation, source="p.jsonl", model=model, show_text=True)
    assert shown["mistakes"][0]["new"] == "User was born in Paris"

    text = render_evaluation(evaluation, source="p.jsonl", model=model)
    assert "precision" in text
    assert "per category" in text
    assert "per namespace" in text
    assert short_hash("User lives in Paris") in text
    assert "born in Paris" not in text
    assert "born in Paris" in render_evaluation(
        evaluation, source="p.jsonl", model=model, show_text=True
    )


async def test_embed_similarities_embeds_normalised_texts_once() -> None:
    embedder = FakeEmbedder()
    embedder.set("User prefers tea", base_vector())
    embedder.set("User likes tea", unit_vector(0.9, axis=1))
    embedder.set("User drinks coffee", unit_vector(0.5, axis=2))
    pairs = [
        pair("User prefers tea.", "User likes tea", True),
        pair("user prefers tea", "User drinks coffee", False),
    ]
    sims = await embed_similarities(embedder, pairs, chunk=2)
    assert sims == pytest.approx([0.9, 0.5], abs=1e-6)
    assert sorted(embedder.texts_embedded) == sorted(
        ["user prefers tea", "user likes tea", "user drinks coffee"]
    )
    assert all(len(call) <= 2 for call in embedder.calls)


def test_evaluate_pairs_needs_one_similarity_per_pair() -> None:
    with pytest.raises(ValueError, match="one similarity per pair"):
        evaluate_pairs(EVAL_PAIRS, [0.5], ThresholdPolicy(default=BANDS))


# --------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------


def test_choose_threshold_wants_precision_at_every_higher_threshold() -> None:
    def at(t: float, tp: int, fp: int) -> CurvePoint:
        return CurvePoint(t, Confusion(tp=tp, fp=fp, fn=10 - tp, tn=10 - fp))

    curve = [at(0.7, 9, 3), at(0.8, 8, 0), at(0.85, 7, 1), at(0.9, 5, 0), at(1.0, 0, 0)]
    assert choose_threshold(curve, 0.85) == curve[1]  # 0.85's 7/8 = 0.875 still passes
    assert choose_threshold(curve, 0.9) == curve[3]  # 0.8 is not reached through 0.85
    assert choose_threshold(curve, 0.9, floor=0.95) is None
    assert choose_threshold([at(0.9, 1, 1)], 0.9) is None


def test_pair_facts_prediction_and_sweep() -> None:
    facts = [
        PairFacts(0.9, True),
        PairFacts(0.95, False, vetoed=True),
        PairFacts(0.2, True, exact=True),
        PairFacts(0.85, False),
    ]
    assert [f.predicted(0.86) for f in facts] == [True, False, True, False]
    c = confusion_at(facts, 0.8)
    assert (c.tp, c.fp, c.fn, c.tn) == (2, 1, 0, 1)
    curve = sweep(facts, grid=[0.9, 0.8])
    assert [p.threshold for p in curve] == [0.8, 0.9]


def _synthetic(
    namespace: str | None, n_dup: int, n_dist: int, dup_sim: float, dist_sim: float
) -> tuple[list[LabelledPair], list[float]]:
    """Duplicates at dup_sim, dup_sim - 0.001, ...; distinct pairs all at dist_sim."""
    pairs = [
        LabelledPair(f"{namespace} fact {i}", f"{namespace} same fact {i}", True, namespace)
        for i in range(n_dup)
    ] + [
        LabelledPair(f"{namespace} thing {i}", f"{namespace} other thing {i}", False, namespace)
        for i in range(n_dist)
    ]
    sims = [dup_sim - 0.001 * i for i in range(n_dup)] + [dist_sim] * n_dist
    return pairs, sims


def test_calibrate_per_namespace_with_fallback_and_a_valid_snippet() -> None:
    big, big_sims = _synthetic("big", 15, 10, 0.80, 0.70)
    small, small_sims = _synthetic("small", 3, 3, 0.99, 0.95)
    result = calibrate(
        big + small,
        big_sims + small_sims,
        ThresholdPolicy(default=BANDS),
        target=0.97,
        guards=False,
    )
    names = [g.name for g in result.groups]
    assert names == [ALL_PAIRS, "big", "small"]
    _, big_group, small_group = result.groups
    # Duplicates 0.786..0.80, distinct 0.70: any threshold in (0.70, 0.786] is perfect.
    assert big_group.merge_threshold == pytest.approx(0.71)
    assert big_group.at_proposed.recall == pytest.approx(1.0)
    assert not big_group.fallback
    # Never below the configured duplicate threshold (labels cannot ask for more skips).
    assert big_group.duplicate_threshold == pytest.approx(0.96)
    assert small_group.fallback
    assert small_group.basis_pairs == 31
    # All pairs: the small namespace's distinct pairs at 0.95 push the merge band up.
    assert result.overall.merge_threshold == pytest.approx(0.96)
    assert result.overall.duplicate_threshold >= result.overall.merge_threshold

    snippet = yaml_snippet(result, model_id="fake")
    loaded = yaml.safe_load(snippet)
    settings = DedupSettings(**loaded["dedup"])
    assert settings.namespaces["big"].merge_threshold == pytest.approx(0.71)
    assert settings.namespaces["small"].merge_threshold == pytest.approx(0.96)

    text = render_calibration(result)
    assert "| big |" in text
    assert "(uses all)" in text
    json.dumps(calibration_json(result))


def test_calibrate_refuses_when_no_threshold_qualifies_and_keeps_the_bands() -> None:
    # Was "semantic merges off (1.0)": a band no one asked for. Now a refusal with the
    # reason, and the configured bands stay.
    pairs, sims = _synthetic(None, 10, 10, 0.90, 1.0)
    result = calibrate(pairs, sims, ThresholdPolicy(default=BANDS), target=0.97, guards=False)
    overall = result.overall
    assert overall.merge is None
    assert overall.refused == (
        "target 0.97 not reachable: best precision 0.500 at 0.50 (recall 1.000)"
    )
    assert (overall.duplicate_threshold, overall.merge_threshold) == (0.96, 0.84)
    assert len(result.groups) == 1


def test_calibrate_raises_the_skip_band_when_distinct_pairs_reach_it() -> None:
    pairs, sims = _synthetic("ns", 20, 10, 0.99, 0.90)
    pairs.append(LabelledPair("ns x", "ns y", False, "ns"))
    sims.append(0.97)
    result = calibrate(pairs, sims, ThresholdPolicy(default=BANDS), target=0.9, guards=False)
    group = result.groups[1]
    assert group.duplicate_threshold == pytest.approx(0.98)
    assert any("skip band raised" in note for note in group.notes)


def test_calibrate_rejects_a_bad_target() -> None:
    with pytest.raises(ValueError, match="target precision"):
        calibrate(EVAL_PAIRS, EVAL_SIMS, ThresholdPolicy(default=BANDS), target=1.5)


# --------------------------------------------------------------------------
# PNG
# --------------------------------------------------------------------------


def _image(png: bytes) -> tuple[tuple[int, int], int]:
    """(width, height) and the number of distinct colours of a PNG."""
    from PIL import Image

    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(io.BytesIO(png)) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 24) or []
        return image.size, len(colours)


def test_plot_and_calibration_plot_draw_something() -> None:
    png = plot_curves(
        [Series("a", [(0.0, 1.0), (0.5, 0.9), (1.0, 0.6)], markers=[(0.5, 0.9)])],
        title="test",
        hline=(0.97, "p"),
        size=(400, 300),
    )
    size, colours = _image(png)
    assert size == (400, 300)
    assert colours > 2
    pairs, sims = _synthetic("ns", 15, 10, 0.9, 0.6)
    result = calibrate(pairs, sims, ThresholdPolicy(default=BANDS), target=0.97, guards=False)
    size, colours = _image(calibration_plot(result))
    assert size == (900, 600)
    assert colours > 2


def test_calibrate_png_without_matplotlib_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails
    png = tmp_path / "curve.png"
    code = main(["calibrate", str(SHIPPED), "--target-precision", "0.97", "--png", str(png)])

    assert code == 2
    err = capsys.readouterr().err
    assert err == f"memdedup calibrate: --png: {MISSING_MATPLOTLIB}\n"
    assert "pip install 'memdedup[reports]'" in err
    assert not png.exists()


# --------------------------------------------------------------------------
# Commands: bad input exits 2 before any model is loaded
# --------------------------------------------------------------------------


def test_evaluate_and_calibrate_exit_2_on_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line(existing="a", new="b", label="distinct") + "\n{oops\n", encoding="utf-8")
    assert main(["calibrate", str(bad), "--target-precision", "0.97"]) == 2
    err = capsys.readouterr().err
    assert f"memdedup calibrate: {bad}:2: invalid JSON" in err
    assert main(["calibrate", str(bad), "--target-precision", "2"]) == 2
    assert "--target-precision" in capsys.readouterr().err


def test_a_pair_split_follows_its_group_and_cannot_be_moved() -> None:
    from consumer.quality.pairs import split_of

    group = "life-007"
    row = {"existing": "A b", "new": "C d", "label": "distinct", "group": group}
    assert parse_pair({**row, "split": split_of(group)}).split == split_of(group)
    other = next(name for name in ("train", "dev", "test") if name != split_of(group))
    with pytest.raises(ValueError, match="belongs to split"):
        parse_pair({**row, "split": other})
    with pytest.raises(ValueError, match="needs the pair's `group`"):
        parse_pair({"existing": "A b", "new": "C d", "label": "distinct", "split": "train"})


def test_groups_fall_into_train_dev_and_test_about_60_20_20() -> None:
    from collections import Counter

    from consumer.quality.pairs import split_of

    counts = Counter(split_of(f"group-{i}") for i in range(3000))
    assert 0.55 < counts["train"] / 3000 < 0.65
    assert 0.15 < counts["dev"] / 3000 < 0.25
    assert 0.15 < counts["test"] / 3000 < 0.25
