"""Similarity bands and per-namespace policy."""

from __future__ import annotations

import pytest

from consumer.domain.thresholds import Bands, ThresholdPolicy
from schemas import Decision


@pytest.fixture
def bands() -> Bands:
    return Bands(duplicate_threshold=0.9, merge_threshold=0.8)


@pytest.mark.parametrize(
    ("similarity", "decision", "threshold"),
    [
        (1.0, Decision.SKIPPED, 0.9),
        (0.95, Decision.SKIPPED, 0.9),
        (0.9, Decision.SKIPPED, 0.9),
        (0.8999999, Decision.MERGED, 0.8),
        (0.85, Decision.MERGED, 0.8),
        (0.8, Decision.MERGED, 0.8),
        (0.7999999, Decision.ACCEPTED, None),
        (0.0, Decision.ACCEPTED, None),
        (-0.5, Decision.ACCEPTED, None),
    ],
)
def test_classify_bounds_are_inclusive(
    bands: Bands, similarity: float, decision: Decision, threshold: float | None
) -> None:
    assert bands.classify(similarity) == (decision, threshold)


def test_equal_thresholds_leave_no_merge_band() -> None:
    bands = Bands(duplicate_threshold=0.85, merge_threshold=0.85)
    assert bands.classify(0.85) == (Decision.SKIPPED, 0.85)
    assert bands.classify(0.849) == (Decision.ACCEPTED, None)


def test_zero_thresholds_skip_everything() -> None:
    assert Bands(0.0, 0.0).classify(0.0) == (Decision.SKIPPED, 0.0)


@pytest.mark.parametrize(
    ("duplicate", "merge", "message"),
    [
        (1.5, 0.8, "duplicate_threshold"),
        (-0.1, -0.2, "duplicate_threshold"),
        (0.9, -0.1, "merge_threshold"),
        (0.9, 1.01, "merge_threshold"),
        (0.8, 0.9, "merge_threshold must be <= duplicate_threshold"),
    ],
)
def test_invalid_bands_raise(duplicate: float, merge: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Bands(duplicate_threshold=duplicate, merge_threshold=merge)


def test_boundary_values_are_valid() -> None:
    Bands(1.0, 1.0)
    Bands(1.0, 0.0)
    Bands(0.0, 0.0)


def test_policy_falls_back_to_default() -> None:
    default = Bands(0.9, 0.8)
    strict = Bands(0.98, 0.95)
    policy = ThresholdPolicy(default=default, per_namespace={"facts": strict})
    assert policy.bands_for("facts") is strict
    assert policy.bands_for("prefs") is default
    assert policy.bands_for("Facts") is default
    assert policy.bands_for("facts").classify(0.93) == (Decision.ACCEPTED, None)
    assert policy.bands_for("prefs").classify(0.93) == (Decision.SKIPPED, 0.9)


def test_policy_without_overrides() -> None:
    default = Bands(0.9, 0.8)
    assert ThresholdPolicy(default=default).bands_for("anything") is default


def test_after_alignment_merges_skips_that_do_not_align_and_keeps_details_apart() -> None:
    merge_both = Bands(0.96, 0.77)
    keep_both = Bands(0.96, 0.77, detail_policy="keep_both")
    skip = (Decision.SKIPPED, 0.96)
    assert merge_both.after_alignment(*skip, equivalent=True, detail_added=False) == skip
    assert merge_both.after_alignment(*skip, equivalent=False, detail_added=False) == (
        Decision.MERGED,
        0.77,
    )
    assert merge_both.after_alignment(*skip, equivalent=False, detail_added=True) == (
        Decision.MERGED,
        0.77,
    )
    merged = (Decision.MERGED, 0.77)
    assert merge_both.after_alignment(*merged, equivalent=False, detail_added=False) == merged
    assert keep_both.after_alignment(*merged, equivalent=False, detail_added=True) == (
        Decision.ACCEPTED,
        None,
    )
