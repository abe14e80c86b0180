"""`memdedup calibrate` with split files (thresholds from train+dev, figures on test)
and refusals (a target no threshold reaches), without a model."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from consumer.cli import quality as quality_cli
from consumer.cli.main import main
from consumer.domain.cross_verifier import CrossEncoderVerifier
from consumer.domain.thresholds import Bands, ThresholdPolicy
from consumer.quality.calibrate import (
    ALL_PAIRS,
    IN_SAMPLE,
    TRAIN_DEV,
    CurvePoint,
    calibrate,
    refusal_reason,
)
from consumer.quality.calibration_report import (
    calibration_json,
    calibration_plot,
    render_calibration,
    yaml_snippet,
)
from consumer.quality.metrics import Confusion
from consumer.quality.pairs import LabelledPair
from consumer.settings import DedupSettings
from tests.pair_rows import groups_in

BANDS = Bands(duplicate_threshold=0.96, merge_threshold=0.84)
POLICY = ThresholdPolicy(default=BANDS)


def _pairs(
    split: str | None, rows: list[tuple[bool, float]], namespace: str | None = "ns", tag: str = ""
) -> tuple[list[LabelledPair], list[float]]:
    """One group per pair (in `split`), with the given label and similarity."""
    names = groups_in(split) if split is not None else iter(itertools.repeat(None))
    pairs: list[LabelledPair] = []
    for i, ((duplicate, _), group) in enumerate(zip(rows, names, strict=False)):
        pairs.append(
            LabelledPair(
                f"{tag}{split} fact {i} existing",
                f"{tag}{split} fact {i} new text",
                duplicate,
                namespace,
                group=group,
                split=split,
            )
        )
    return pairs, [sim for _, sim in rows]


def _split_file() -> tuple[list[LabelledPair], list[float]]:
    """train+dev: duplicates 0.90-0.99, distinct pairs at 0.80, so 0.81 is perfect there.
    test: two duplicates at 0.85, one at 0.75 (missed), a distinct pair at 0.88
    (merged at 0.81). In-sample (all pairs) the distinct pair at 0.88 would move
    the threshold to 0.89."""
    train, train_sims = _pairs("train", [(True, 0.90 + 0.01 * i) for i in range(10)])
    train_d, train_d_sims = _pairs("train", [(False, 0.80)] * 8, tag="d")
    dev, dev_sims = _pairs("dev", [(True, 0.95), (True, 0.92), (False, 0.80)])
    test, test_sims = _pairs("test", [(True, 0.85), (True, 0.85), (True, 0.75), (False, 0.88)])
    return (
        train + train_d + dev + test,
        train_sims + train_d_sims + dev_sims + test_sims,
    )


def _strip_splits(pairs: list[LabelledPair]) -> list[LabelledPair]:
    return [LabelledPair(p.existing, p.new, p.duplicate, p.namespace) for p in pairs]


def test_split_file_reads_thresholds_from_train_dev_and_scores_test_only() -> None:
    pairs, sims = _split_file()
    result = calibrate(pairs, sims, POLICY, target=0.97, guards=False)
    assert result.calibrated_on == TRAIN_DEV
    assert not result.in_sample
    assert (result.calibration_pairs, result.test_pairs) == (21, 4)
    overall = result.overall
    assert overall.refused is None
    assert overall.merge_threshold == pytest.approx(0.81)
    # train+dev figures: 12 duplicates, 9 distinct, all right at 0.81.
    c = overall.at_proposed
    assert (c.tp, c.fp, c.fn, c.tn) == (12, 0, 0, 9)
    assert c.precision == 1.0
    # test figures: only the 4 test pairs.
    assert overall.test is not None
    assert overall.test.pairs == 4
    t = overall.test.proposed
    assert t is not None
    assert (t.tp, t.fp, t.fn, t.tn) == (2, 1, 1, 0)
    assert t.precision == pytest.approx(2 / 3)
    assert t.recall == pytest.approx(2 / 3)
    assert t.f1 == pytest.approx(2 / 3)
    assert t.false_merge_rate == 1.0
    # ... and at the configured merge band (0.84): the same pairs are merged.
    assert overall.test.configured.as_dict()["tp"] == 2
    # The namespace (all pairs are "ns"): same figures, its own test pairs.
    ns = result.groups[1]
    assert ns.name == "ns"
    assert ns.test is not None
    assert ns.test.pairs == 4

    # In-sample, the same pairs give another threshold and other figures.
    in_sample = calibrate(_strip_splits(pairs), sims, POLICY, target=0.97, guards=False)
    assert in_sample.calibrated_on == IN_SAMPLE
    assert in_sample.overall.merge_threshold == pytest.approx(0.89)
    assert in_sample.overall.test is None
    assert in_sample.overall.at_proposed.precision == 1.0


def test_split_report_json_and_snippet_carry_the_test_figures() -> None:
    pairs, sims = _split_file()
    result = calibrate(pairs, sims, POLICY, target=0.97, guards=False)
    text = render_calibration(result)
    assert "calibrated on: train+dev (21 pairs); test: 4 held-out pairs" in text
    assert "P / R / F1 / FMR proposed, test" in text
    assert "| (all) | 21 / 4 |" in text
    assert "0.667 / 0.667 / 0.667 / 1.000 |" in text  # the test figures
    assert "only 4 test pairs" in text
    document = json.loads(json.dumps(calibration_json(result)))
    assert document["calibrated_on"] == "train+dev"
    assert document["in_sample"] is False
    assert document["pairs"] == {"calibration": 21, "test": 4, "left_out": 0}
    group = document["groups"][ALL_PAIRS]
    assert group["calibrated_on"] == "train+dev"
    assert group["refused"] is None
    assert group["proposed"]["merge_threshold"] == pytest.approx(0.81)
    assert group["proposed"]["metrics"]["precision"] == 1.0
    assert group["test"]["pairs"] == 4
    assert group["test"]["proposed"]["precision"] == pytest.approx(2 / 3)
    assert group["test"]["proposed"]["false_merge_rate"] == 1.0
    snippet = yaml_snippet(result, model_id="fake")
    assert "read from train+dev (21 pairs), test (4 pairs) held out" in snippet
    assert DedupSettings(**yaml.safe_load(snippet)["dedup"]).merge_threshold == 0.81


def test_in_sample_report_says_so_and_points_to_split_pairs() -> None:
    pairs, sims = _split_file()
    result = calibrate(_strip_splits(pairs), sims, POLICY, target=0.97, guards=False)
    text = render_calibration(result)
    assert "calibrated on: all (in-sample). WARNING" in text
    assert "tools/split_pairs.py" in text
    assert "in-sample: all 25 pairs" in yaml_snippet(result)
    document = calibration_json(result)
    assert document["calibrated_on"] == "all (in-sample)"
    assert document["in_sample"] is True
    assert "tools/split_pairs.py" in document["advice"]
    assert document["groups"][ALL_PAIRS]["test"] is None
    assert document["groups"][ALL_PAIRS]["calibrated_on"] == "all (in-sample)"


def test_unreachable_target_refuses_with_the_best_precision_and_keeps_the_bands() -> None:
    # "hard": duplicates and distinct pairs mixed at every similarity; the best
    # precision on train+dev is 0.75 (3 of 4 pairs at >= 0.91, above them nothing holds).
    hard, hard_sims = _pairs(
        "train",
        [(True, 0.97), (True, 0.96), (True, 0.95), (False, 0.975), (False, 0.90)]
        + [(True, 0.85), (False, 0.86), (False, 0.70)] * 5,
        namespace="hard",
    )
    # "easy": separable, calibrates fine.
    easy, easy_sims = _pairs(
        "dev", [(True, 0.93)] * 12 + [(False, 0.80)] * 10, namespace="easy", tag="e"
    )
    test, test_sims = _pairs("test", [(True, 0.97), (False, 0.9)], namespace="hard")
    policy = ThresholdPolicy(default=BANDS, per_namespace={"hard": Bands(0.97, 0.88)})
    result = calibrate(
        hard + easy + test, hard_sims + easy_sims + test_sims, policy, target=0.97, guards=False
    )
    by_name = {g.name: g for g in result.groups}
    hard_group, easy_group = by_name["hard"], by_name["easy"]
    assert hard_group.refused == (
        "target 0.97 not reachable: best precision 0.750 at 0.91 (recall 0.375)"
    )
    assert hard_group.merge is None
    assert (hard_group.duplicate_threshold, hard_group.merge_threshold) == (0.97, 0.88)
    # The test pairs are still scored, at the bands kept.
    assert hard_group.test is not None
    assert hard_group.test.proposed is None
    assert hard_group.test.configured.as_dict()["fp"] == 1
    assert easy_group.refused is None
    assert easy_group.merge_threshold == pytest.approx(0.81)

    snippet = yaml_snippet(result)
    assert (
        "hard: {duplicate_threshold: 0.97, merge_threshold: 0.88}  # unchanged, not "
        "calibrated: target 0.97 not reachable" in snippet
    )
    settings = DedupSettings(**yaml.safe_load(snippet)["dedup"])
    assert settings.namespaces["hard"].merge_threshold == 0.88
    assert settings.namespaces["easy"].merge_threshold == 0.81
    text = render_calibration(result)
    assert "| hard | 20 / 2 | 0.97, 0.88 |" in text
    assert "refused | - | - |" in text
    assert "refused (bands kept as configured):\n" in text
    assert "\n  - hard: target 0.97 not reachable: best precision 0.750" in text
    assert "easy: no test pairs" in text
    group = calibration_json(result)["groups"]["hard"]
    assert group["refused"].startswith("target 0.97 not reachable")
    assert group["proposed"] is None
    assert group["test"]["proposed"] is None
    assert calibration_plot(result).startswith(b"\x89PNG")


def test_the_default_group_refused_keeps_the_default_bands_in_the_snippet() -> None:
    pairs, sims = _pairs(None, [(True, 0.9), (False, 0.95)] * 10, namespace=None)
    result = calibrate(pairs, sims, POLICY, target=0.9, guards=False)
    assert result.overall.refused is not None
    snippet = yaml_snippet(result)
    assert "# default bands NOT calibrated, kept as configured: target 0.9" in snippet
    dedup = DedupSettings(**yaml.safe_load(snippet)["dedup"])
    assert (dedup.duplicate_threshold, dedup.merge_threshold) == (0.96, 0.84)


def test_exact_repeats_neither_qualify_nor_block_a_band() -> None:
    # Exact repeats (same text) are merged at every threshold. Distinct pairs at 0.95:
    # from 0.96 up only the repeats are merged; their precision 1.0 says nothing
    # about a band, and only semantic merges off reaches the target.
    exact = [LabelledPair(f"same {i}", f"same {i}", True) for i in range(3)]
    pairs, sims = _pairs(None, [(True, 0.9), (False, 0.95)] * 10, namespace=None)
    result = calibrate(exact + pairs, [1.0] * 3 + sims, POLICY, target=0.9, guards=False)
    assert result.overall.refused == (
        "target 0.9 not reachable: best precision 0.565 at 0.50 (recall 1.000); "
        "only 1.00 reaches it, i.e. semantic merges off (recall 0.231)"
    )
    # A distinct pair with the same normalised text ("Polish" / "polish") is merged at
    # every threshold: where nothing else is merged (0.91 up) precision is 0, which
    # must not block the band that holds precision 0.9 (0.81-0.90: 10 of 11).
    capitonym = LabelledPair("User takes a Polish class.", "User takes a polish class.", False)
    pairs, sims = _pairs(None, [(True, 0.9)] * 10 + [(False, 0.8)] * 10, namespace=None)
    result = calibrate([capitonym, *pairs], [1.0, *sims], POLICY, target=0.9, guards=False)
    assert result.overall.refused is None
    assert result.overall.merge_threshold == pytest.approx(0.81)
    assert result.overall.at_proposed.precision == pytest.approx(10 / 11)


def test_refusal_reason_for_a_lucky_threshold_and_for_nothing_predicted() -> None:
    def at(t: float, tp: int, fp: int) -> CurvePoint:
        return CurvePoint(t, Confusion(tp=tp, fp=fp, fn=10 - tp, tn=10 - fp))

    lucky = [at(0.9, 5, 0), at(0.95, 3, 1), at(1.0, 0, 0)]
    assert refusal_reason(lucky, 0.9) == (
        "target 0.9 not held: precision 1.000 at 0.90 (recall 0.500), but 0.750 at 0.95 above it"
    )
    assert refusal_reason([at(0.9, 0, 0)], 0.9) == (
        "target 0.9 not reachable: no pair but exact repeats is merged at or above 0.50"
    )


def test_no_distinct_pair_to_fail_precision_is_refused() -> None:
    pairs, sims = _pairs("train", [(True, 0.9)] * 25)
    test, test_sims = _pairs("test", [(False, 0.9)])
    result = calibrate(pairs + test, sims + test_sims, POLICY, target=0.97, guards=False)
    assert result.overall.refused == (
        "no distinct pair among the 25 calibration pairs: precision cannot fail, "
        "so it proves nothing"
    )


def test_pairs_take_their_groups_split_and_pairs_without_either_are_left_out() -> None:
    pairs, sims = _split_file()
    test_group = next(groups_in("test"))
    extra = [
        LabelledPair("late a", "late b", False, "ns", group=test_group),  # no split: test
        LabelledPair("loose a", "loose b", True, "ns"),  # no split, no group: left out
    ]
    result = calibrate(pairs + extra, [*sims, 0.5, 0.99], POLICY, target=0.97, guards=False)
    assert (result.calibration_pairs, result.test_pairs, result.left_out) == (21, 5, 1)
    assert any("1 pairs without a `split` or `group` left out" in n for n in result.overall.notes)


def test_every_pair_in_test_is_an_error() -> None:
    pairs, sims = _pairs("test", [(True, 0.9), (False, 0.5)])
    with pytest.raises(ValueError, match="no calibration pairs"):
        calibrate(pairs, sims, POLICY, target=0.97, guards=False)


def test_small_namespace_falls_back_to_all_calibration_pairs_but_keeps_its_test() -> None:
    pairs, sims = _split_file()
    small, small_sims = _pairs("train", [(True, 0.99), (False, 0.5)], namespace="small", tag="s")
    small_test, small_test_sims = _pairs("test", [(True, 0.99)], namespace="small", tag="s")
    result = calibrate(
        pairs + small + small_test,
        sims + small_sims + small_test_sims,
        POLICY,
        target=0.97,
        guards=False,
    )
    group = {g.name: g for g in result.groups}["small"]
    assert group.fallback
    assert group.basis_pairs == 23  # all train+dev pairs
    assert group.test is not None
    assert group.test.pairs == 1


# --------------------------------------------------------------------------
# The command: exit 3 when the default bands are refused (model stubbed out)
# --------------------------------------------------------------------------


def _write(path: Path, pairs: list[LabelledPair]) -> None:
    rows: list[dict[str, Any]] = [
        {
            "existing": p.existing,
            "new": p.new,
            "label": p.label,
            "namespace": p.namespace,
            "group": p.group,
            "split": p.split,
        }
        for p in pairs
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


@pytest.fixture
def stub_model(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[float]]:
    """`_score` returns the similarities put under "sims", no model, no verifier; the
    logging setup (bound to this test's captured stderr) is left alone."""
    given: dict[str, list[float]] = {"sims": []}

    async def fake_score(*args: object, **kwargs: object) -> quality_cli._Scored:
        return quality_cli._Scored(
            list(given["sims"]), {"model_id": "fake", "backend": "none"}, timing={}
        )

    monkeypatch.setattr(quality_cli, "_score", fake_score)
    monkeypatch.setattr("consumer.observability.logs.configure_logging", lambda **kwargs: None)
    return given


def test_calibrate_command_exits_3_with_the_reason_when_the_default_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stub_model: dict[str, list[float]]
) -> None:
    pairs, sims = _split_file()
    path = tmp_path / "pairs.jsonl"
    _write(path, pairs)
    stub_model["sims"] = sims
    assert main(["calibrate", str(path), "--target-precision", "0.97", "--no-guards"]) == 0
    out = capsys.readouterr().out
    assert "calibrated on: train+dev (21 pairs); test: 4 held-out pairs" in out

    assert main(["calibrate", str(path), "--target-precision", "1", "--json", "--no-guards"]) == 0
    # 0.81 is perfect on train+dev, so 1.0 is reachable there; make it unreachable:
    hard, hard_sims = _pairs("train", [(True, 0.9), (False, 0.995)] * 10, tag="h")
    _write(path, pairs + hard)
    stub_model["sims"] = sims + hard_sims
    capsys.readouterr()
    code = main(["calibrate", str(path), "--target-precision", "1", "--json", "--no-guards"])
    assert code == 3
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    reason = document["groups"][ALL_PAIRS]["refused"]
    assert reason.startswith("target 1 not reachable: best precision")
    assert document["groups"][ALL_PAIRS]["proposed"] is None
    assert f"default bands not calibrated: {reason}" in captured.err
    assert "# default bands NOT calibrated" in document["yaml"]


def test_calibrate_command_exits_2_when_every_pair_is_in_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stub_model: dict[str, list[float]]
) -> None:
    pairs, sims = _pairs("test", [(True, 0.9), (False, 0.5)])
    path = tmp_path / "pairs.jsonl"
    _write(path, pairs)
    stub_model["sims"] = sims
    assert main(["calibrate", str(path), "--target-precision", "0.9"]) == 2
    assert "no calibration pairs" in capsys.readouterr().err


class _ScoreByText:
    """A cross-encoder scorer that answers P(same fact) from the new text's tag."""

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [0.95 if "same" in new else 0.01 for _, new in pairs]


def test_calibration_models_the_cross_encoders_veto_and_rescue() -> None:
    """Below the merge threshold a pair the cross-encoder rescues counts as merged
    (from the rescue threshold up), and a band match it vetoes counts as kept apart,
    as the consumer decides."""
    rows = [
        # (label, similarity, P(same fact) tag): duplicates the rescue finds at 0.60,
        # distinct pairs in the band that only its veto keeps apart.
        *[(True, 0.60, "same")] * 6,
        *[(True, 0.92, "same")] * 6,
        *[(False, 0.90, "other")] * 6,
        *[(False, 0.40, "same")] * 3,  # below the rescue band: never merged
    ]
    pairs = [
        LabelledPair(f"fact {i} existing", f"fact {i} {tag} new", duplicate, "ns")
        for i, (duplicate, _, tag) in enumerate(rows)
    ]
    sims = [sim for _, sim, _ in rows]
    policy = ThresholdPolicy(default=Bands(0.96, 0.84, rescue_threshold=0.47))
    cross_encoder = CrossEncoderVerifier(_ScoreByText(), veto_below=0.07, rescue_from=0.70)

    with_ce = calibrate(pairs, sims, policy, target=0.97, guards=False, cross_encoder=cross_encoder)
    without = calibrate(pairs, sims, policy, target=0.97, guards=False)

    assert with_ce.cross_encoder
    assert not without.cross_encoder
    # Without it, the distinct pairs at 0.90 cap precision: only 0.91 and up hold it.
    assert without.overall.merge_threshold == pytest.approx(0.91)
    assert without.overall.at_proposed.recall == pytest.approx(0.5)
    # With it, the veto keeps them apart and the rescue merges the 0.60 duplicates
    # at any merge threshold above them: all 12 found at the lowest grid value.
    overall = with_ce.overall
    assert overall.refused is None
    c = overall.at_proposed
    assert (c.tp, c.fp, c.fn) == (12, 0, 0)
    at_084 = next(p for p in overall.curve if p.threshold == pytest.approx(0.84))
    assert (at_084.confusion.tp, at_084.confusion.fp) == (12, 0)
    # At a merge threshold of 0.60 or less the 0.60 pairs are band matches, not rescues.
    at_050 = next(p for p in overall.curve if p.threshold == pytest.approx(0.50))
    assert at_050.confusion.tp == 12
    assert "cross-encoder on" in render_calibration(with_ce)
    assert calibration_json(with_ce)["cross_encoder"] is True
