"""Similarity bands: >= duplicate threshold skips, >= merge threshold merges."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from consumer.domain.merge import MERGE_POLICIES
from schemas import Decision, DetailPolicy, MergePolicy

if TYPE_CHECKING:
    from consumer.settings import BandSettings, DedupSettings


@dataclass(frozen=True, slots=True)
class Bands:
    duplicate_threshold: float
    merge_threshold: float
    # What a merge does to the text (consumer.domain.merge); skips never change it.
    merge_policy: MergePolicy = "keep_existing"
    # A match that only adds a detail: "merge" (keeping the more detailed text)
    # or "keep_both" (accepted as a memory of its own).
    detail_policy: DetailPolicy = "merge"
    # Below the merge threshold and at or above this, a match may still be merged
    # when the cross-encoder rescues it (consumer.domain.cross_verifier); None: no
    # rescue band.
    rescue_threshold: float | None = None

    def __post_init__(self) -> None:
        for name in ("duplicate_threshold", "merge_threshold"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within 0..1, got {value}")
        if self.merge_threshold > self.duplicate_threshold:
            raise ValueError("merge_threshold must be <= duplicate_threshold")
        if self.rescue_threshold is not None and not 0.0 <= self.rescue_threshold <= 1.0:
            raise ValueError(f"rescue_threshold must be within 0..1, got {self.rescue_threshold}")
        if self.merge_policy not in MERGE_POLICIES:
            raise ValueError(f"unknown merge_policy {self.merge_policy!r}")
        if self.detail_policy not in ("merge", "keep_both"):
            raise ValueError(f"unknown detail_policy {self.detail_policy!r}")

    def after_alignment(
        self, decision: Decision, threshold: float | None, *, equivalent: bool, detail_added: bool
    ) -> tuple[Decision, float | None]:
        """A band's decision once the parse alignment allowed the match: the
        namespace keeps "fact plus a detail" apart under keep_both; a skip drops
        the new text, so texts that are not equivalent merge instead (which keeps it)."""
        if detail_added and self.detail_policy == "keep_both":
            return Decision.ACCEPTED, None
        if decision is Decision.SKIPPED and not equivalent:
            return Decision.MERGED, self.merge_threshold
        return decision, threshold

    def classify(self, similarity: float) -> tuple[Decision, float | None]:
        """The decision for a best match of this similarity, and the threshold that
        decided it (None when no band was reached). Bounds are inclusive."""
        if similarity >= self.duplicate_threshold:
            return Decision.SKIPPED, self.duplicate_threshold
        if similarity >= self.merge_threshold:
            return Decision.MERGED, self.merge_threshold
        return Decision.ACCEPTED, None

    def in_rescue_band(self, similarity: float) -> bool:
        """Below the merge threshold, at or above the rescue threshold (inclusive)."""
        return (
            self.rescue_threshold is not None
            and self.rescue_threshold <= similarity < self.merge_threshold
        )

    @property
    def lowest(self) -> float:
        """The lowest similarity at which a match may be skipped or merged into."""
        low = min(self.duplicate_threshold, self.merge_threshold)
        return low if self.rescue_threshold is None else min(low, self.rescue_threshold)


@dataclass(frozen=True, slots=True)
class ThresholdPolicy:
    default: Bands
    per_namespace: Mapping[str, Bands] = field(default_factory=dict)

    def bands_for(self, namespace: str) -> Bands:
        return self.per_namespace.get(namespace, self.default)


def lowest_band(policy: ThresholdPolicy, *, rescue: bool = True) -> float:
    """The lowest similarity at which a match can be skipped into or merged into,
    a cross-encoder rescue included unless `rescue` is false (less a rounding
    margin): below it a match counts only for its score."""
    bands = [policy.default, *policy.per_namespace.values()]
    if not rescue:
        return min(min(b.duplicate_threshold, b.merge_threshold) for b in bands) - 1e-6
    return min(b.lowest for b in bands) - 1e-6


def policy_from_settings(dedup: DedupSettings) -> ThresholdPolicy:
    """The bands `dedup` settings ask for, per namespace: the cross-encoder's
    rescue band where the cross-encoder is on and the namespace has `rescue`."""
    rescue = dedup.cross_encoder.rescue_threshold if dedup.cross_encoder.enabled else None

    def bands_of(bands: BandSettings) -> Bands:
        return Bands(
            bands.duplicate_threshold,
            bands.merge_threshold,
            bands.merge_policy,
            bands.detail_policy,
            rescue if bands.rescue else None,
        )

    return ThresholdPolicy(
        default=bands_of(dedup),
        per_namespace={name: bands_of(bands) for name, bands in dedup.namespaces.items()},
    )
