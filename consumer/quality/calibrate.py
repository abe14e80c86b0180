"""Per-namespace thresholds read off labelled pairs.

For each pair, what does not depend on the thresholds is computed once: its
cosine similarity, whether the exact check catches it, whether the guards, the
alignment, the verifier or the cross-encoder veto it (no verdict depends on the
bands), and whether the cross-encoder's rescue would merge it. At a merge
threshold `t` the pair is then predicted duplicate when it is exact, when
`similarity >= t` and nothing vetoes it, or when it lies in the rescue band
(`rescue_threshold <= similarity < t`) and the rescue merges it (the consumer's
rule, `consumer.quality.rule.decide_pair`). The namespace's `detail_policy` is
not modelled: `keep_both` keeps apart pairs that only add a detail.

Which pairs (`consumer.quality.pairs`: `split` is fixed by the pair's group):

- A file with splits (any pair has a `split`): the thresholds are read from the
  `train` and `dev` pairs only, then scored on the `test` pairs, which no choice
  saw. A pair of such a file without a `split` takes its group's
  (`split_of(group)`); one without a group either is left out.
- A file without splits: the thresholds are read from all pairs and scored on
  the same pairs (in-sample), which flatters them; the report says so.

Rules (thresholds on a 0.01 grid, 0.50..1.00):

- merge_threshold: the lowest grid value from which precision stays >= P at
  every higher grid value that merges anything besides exact repeats (they are
  merged at any threshold, so they speak neither for nor against a band).
  Recall only falls as the threshold rises, so this is the highest recall with
  precision >= P, ignoring a lucky threshold whose precision dips again just
  above it.
- Refusal: when no grid value below 1.00 qualifies, the group is not calibrated.
  1.00 is not a merge band but semantic merges switched off (only repeats whose
  embeddings are identical); proposing it, or the bottom of the grid, as "the
  threshold for P" would give a number no one can apply. The reason names the
  best precision a band reaches (threshold, recall), and says when only
  semantic merges off would reach P; the group keeps its configured bands.
  Also refused: calibration pairs with no distinct pair (precision cannot fail,
  so it proves nothing) or no duplicate.
- duplicate_threshold: the same rule with precision >= max(P, 0.99), never below
  the merge threshold and never below the value configured now. Labels say
  duplicate or distinct, not "skip" or "merge": lowering the duplicate threshold
  adds no recall (anything it would skip is already merged), it only turns merges
  into skips, which drop the new memory's topics, entities and importance. So the
  labels can show that the skip band is too low, never that it is too high.
- A namespace with fewer than 20 calibration pairs uses all calibration pairs
  instead (its test figures are still its own test pairs).

One module because the per-pair facts, the sweep and the refusal rules are one
procedure whose steps share these rules; the report lives in calibration_report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from consumer.domain.alignment import PairAligner
from consumer.domain.cross_verifier import CrossEncoderVerifier
from consumer.domain.thresholds import Bands, ThresholdPolicy
from consumer.domain.verifier import PairJudge
from consumer.quality.metrics import Confusion
from consumer.quality.pairs import LabelledPair, split_of
from consumer.quality.rule import is_exact, pair_veto, rescues

__all__ = [
    "ALL_PAIRS",
    "CALIBRATION_SPLITS",
    "GRID",
    "IN_SAMPLE",
    "MIN_NAMESPACE_PAIRS",
    "SKIP_PRECISION_FLOOR",
    "SPLIT_ADVICE",
    "TEST_SPLIT",
    "TRAIN_DEV",
    "Calibration",
    "CurvePoint",
    "GroupCalibration",
    "PairFacts",
    "TestFigures",
    "calibrate",
    "choose_threshold",
    "figure",
    "pair_facts",
    "refusal_reason",
    "sweep",
    "usable",
]

GRID: Final[tuple[float, ...]] = tuple(round(0.50 + 0.01 * i, 2) for i in range(51))
MIN_NAMESPACE_PAIRS: Final = 20
SKIP_PRECISION_FLOOR: Final = 0.99
ALL_PAIRS: Final = "(all)"
CALIBRATION_SPLITS: Final = ("train", "dev")
TEST_SPLIT: Final = "test"
TRAIN_DEV: Final = "train+dev"
IN_SAMPLE: Final = "all (in-sample)"
SPLIT_ADVICE: Final = (
    "give each pair a `group` (the base fact its variants were written from) and run "
    "`python tools/split_pairs.py FILE`: calibrate then reads thresholds from train+dev "
    "and scores them on the held-out test pairs"
)


@dataclass(frozen=True, slots=True)
class PairFacts:
    """What decides a pair apart from the thresholds."""

    similarity: float
    duplicate: bool
    exact: bool = False
    vetoed: bool = False
    # The cross-encoder would rescue the pair from `rescue_from` up to any merge
    # threshold above its similarity (`consumer.quality.rule.rescues`).
    rescued: bool = False
    rescue_from: float | None = None

    def predicted(self, threshold: float) -> bool:
        if self.exact:
            return True
        if self.similarity >= threshold:
            return not self.vetoed
        return self.rescued and self.rescue_from is not None and self.similarity >= self.rescue_from


def pair_facts(
    pairs: Sequence[LabelledPair],
    similarities: Sequence[float],
    *,
    guards: bool = True,
    verifier: PairJudge | None = None,
    min_similarity: float = GRID[0],
    aligner: PairAligner | None = None,
    cross_encoder: CrossEncoderVerifier | None = None,
    rescue_threshold: float | None = None,
) -> list[PairFacts]:
    """`vetoed`: the guards, the alignment, the verifier or the cross-encoder veto
    the pair. None of them is asked below `min_similarity` (no grid threshold
    predicts such a pair duplicate). `rescued`: with a cross-encoder and a
    `rescue_threshold`, a pair at or above it that the rescue would merge once the
    merge threshold is above its similarity."""
    facts: list[PairFacts] = []
    for pair, similarity in zip(pairs, similarities, strict=True):
        exact = is_exact(pair.existing, pair.new)
        asked = similarity >= min_similarity
        vetoed = (
            not exact
            and pair_veto(
                pair.existing,
                pair.new,
                similarity,
                guards=guards,
                verifier=verifier if asked else None,
                aligner=aligner if asked else None,
                cross_encoder=cross_encoder if asked else None,
            )
            is not None
        )
        rescued = (
            not exact
            and cross_encoder is not None
            and rescue_threshold is not None
            and similarity >= rescue_threshold
            and rescues(
                pair.existing,
                pair.new,
                guards=guards,
                aligner=aligner,
                cross_encoder=cross_encoder,
            )
        )
        facts.append(
            PairFacts(
                similarity,
                pair.duplicate,
                exact,
                vetoed,
                rescued,
                rescue_threshold if cross_encoder is not None else None,
            )
        )
    return facts


@dataclass(frozen=True, slots=True)
class CurvePoint:
    threshold: float
    confusion: Confusion
    # Pairs predicted duplicate other than exact repeats (None: not counted, taken as
    # all predicted). Without any, precision at this point says nothing about the band.
    semantic: int | None = None

    @property
    def merges_semantic(self) -> bool:
        count = self.confusion.predicted if self.semantic is None else self.semantic
        return count > 0


def confusion_at(facts: Sequence[PairFacts], threshold: float) -> Confusion:
    confusion = Confusion()
    for fact in facts:
        confusion.add(duplicate=fact.duplicate, predicted=fact.predicted(threshold))
    return confusion


def sweep(facts: Sequence[PairFacts], grid: Sequence[float] = GRID) -> list[CurvePoint]:
    return [
        CurvePoint(
            t,
            confusion_at(facts, t),
            sum(1 for f in facts if f.predicted(t) and not f.exact),
        )
        for t in sorted(grid)
    ]


def choose_threshold(
    curve: Sequence[CurvePoint], target: float, *, floor: float = 0.0
) -> CurvePoint | None:
    """The lowest point at or above `floor` from which precision stays >= `target` at
    every higher point that merges anything besides exact repeats (those are merged
    at any threshold: they speak neither for nor against a band); None if the
    highest such point fails."""
    found: CurvePoint | None = None
    for point in sorted(curve, key=lambda p: p.threshold, reverse=True):
        if point.threshold < floor:
            break
        precision = point.confusion.precision
        if precision is None or not point.merges_semantic:
            continue
        if precision < target:
            break
        found = point
    return found


def usable(point: CurvePoint | None) -> bool:
    """A chosen point that is a merge band: below 1.00, which is semantic merges off."""
    return point is not None and point.threshold < 1.0


def figure(value: float | None) -> str:
    """A figure to three decimals, "-" when undefined."""
    return "-" if value is None else f"{value:.3f}"


def refusal_reason(curve: Sequence[CurvePoint], target: float) -> str:
    """Why no merge band holds precision >= `target` on `curve` (`usable` fails for
    `choose_threshold`): the best precision a band reaches, at which threshold and
    recall."""
    bands = [
        p
        for p in curve
        if p.threshold < 1.0 and p.confusion.precision is not None and p.merges_semantic
    ]
    if not bands:
        reason = (
            f"target {target:g} not reachable: no pair but exact repeats is merged "
            f"at or above {GRID[0]:.2f}"
        )
    else:
        best = max(bands, key=lambda p: (p.confusion.precision or 0.0, -p.threshold))
        precision = best.confusion.precision or 0.0
        where = f"{precision:.3f} at {best.threshold:.2f} (recall {figure(best.confusion.recall)})"
        dip = max(
            (
                p
                for p in curve
                if p.threshold > best.threshold
                and p.merges_semantic
                and p.confusion.precision is not None
                and p.confusion.precision < target
            ),
            key=lambda p: p.threshold,
            default=None,
        )
        if precision < target or dip is None:
            reason = f"target {target:g} not reachable: best precision {where}"
        else:
            reason = (
                f"target {target:g} not held: precision {where}, but "
                f"{figure(dip.confusion.precision)} at {dip.threshold:.2f} above it"
            )
    top = max(curve, key=lambda p: p.threshold, default=None)
    if top is not None and top.threshold >= 1.0 and (top.confusion.precision or 0.0) >= target:
        reason += f"; only 1.00 reaches it, i.e. semantic merges off (recall {figure(top.confusion.recall)})"
    return reason


@dataclass(frozen=True, slots=True)
class TestFigures:
    """The held-out test pairs of a group, scored at the configured bands and at the
    proposed ones (None when the group was refused: its bands stay as configured)."""

    pairs: int
    configured: Confusion
    proposed: Confusion | None


@dataclass(slots=True)
class GroupCalibration:
    name: str
    pairs: int  # calibration pairs of this namespace (all calibration pairs for ALL_PAIRS)
    basis_pairs: int  # pairs the thresholds were read from
    fallback: bool  # True: too few pairs, read from all calibration pairs
    current: Bands
    at_current: Confusion  # on the calibration pairs
    curve: list[CurvePoint]
    merge: CurvePoint | None
    skip_safe: CurvePoint | None
    # What the YAML snippet writes: the proposal, or the configured bands if refused.
    merge_threshold: float
    duplicate_threshold: float
    at_proposed: Confusion  # on the calibration pairs, at merge_threshold
    notes: list[str] = field(default_factory=list)
    refused: str | None = None  # why no thresholds are proposed
    calibrated_on: str = IN_SAMPLE
    test: TestFigures | None = None  # None: no test pairs (no splits in the file)


@dataclass(slots=True)
class Calibration:
    target: float
    skip_target: float
    guards: bool
    groups: list[GroupCalibration]  # ALL_PAIRS first, then namespaces by name
    verifier: bool = False
    calibrated_on: str = IN_SAMPLE
    cross_encoder: bool = False
    calibration_pairs: int = 0
    test_pairs: int = 0
    left_out: int = 0  # pairs of a split file with neither `split` nor `group`

    @property
    def overall(self) -> GroupCalibration:
        return self.groups[0]

    @property
    def in_sample(self) -> bool:
        return self.calibrated_on == IN_SAMPLE


def _calibrate_group(
    name: str,
    facts: Sequence[PairFacts],
    own_pairs: int,
    fallback: bool,
    current: Bands,
    target: float,
    skip_target: float,
    *,
    calibrated_on: str = IN_SAMPLE,
    test: Sequence[PairFacts] | None = None,
) -> GroupCalibration:
    curve = sweep(facts)
    at_current = confusion_at(facts, current.merge_threshold)
    notes: list[str] = []
    refused: str | None = None
    merge = choose_threshold(curve, target)
    if not any(not f.duplicate for f in facts):
        refused = (
            f"no distinct pair among the {len(facts)} calibration pairs: "
            "precision cannot fail, so it proves nothing"
        )
    elif not any(f.duplicate for f in facts):
        refused = f"no duplicate pair among the {len(facts)} calibration pairs"
    elif not usable(merge):
        refused = refusal_reason(curve, target)
    skip_safe = choose_threshold(curve, skip_target)
    if refused is not None:
        merge = None
        merge_threshold = current.merge_threshold
        duplicate_threshold = current.duplicate_threshold
        at_proposed = at_current
    else:
        assert merge is not None
        merge_threshold = merge.threshold
        if merge_threshold <= GRID[0]:
            notes.append(
                f"precision >= {target:g} holds down to the bottom of the grid "
                f"({GRID[0]:.2f}): the vetoes, not the band, hold it there"
                + ("; check on held-out pairs" if calibrated_on == IN_SAMPLE else "")
            )
        safe = skip_safe.threshold if skip_safe is not None else 1.0
        duplicate_threshold = max(merge_threshold, safe, current.duplicate_threshold)
        if safe > current.duplicate_threshold:
            notes.append(
                f"skip band raised: precision >= {skip_target:g} needs >= {safe:.2f} "
                f"(configured {current.duplicate_threshold:g})"
            )
        at_proposed = confusion_at(facts, merge_threshold)
    if fallback:
        notes.append(
            f"fewer than {MIN_NAMESPACE_PAIRS} calibration pairs: thresholds from all of them"
        )
    figures = None
    if test is not None:
        if not test:
            notes.append("no test pairs: nothing to check the thresholds on")
        elif len(test) < MIN_NAMESPACE_PAIRS:
            notes.append(f"only {len(test)} test pairs: its test figures say little")
        figures = TestFigures(
            pairs=len(test),
            configured=confusion_at(test, current.merge_threshold),
            proposed=None if refused is not None else confusion_at(test, merge_threshold),
        )
    return GroupCalibration(
        name=name,
        pairs=own_pairs,
        basis_pairs=len(facts),
        fallback=fallback,
        current=current,
        at_current=at_current,
        curve=curve,
        merge=merge,
        skip_safe=skip_safe,
        merge_threshold=merge_threshold,
        duplicate_threshold=duplicate_threshold,
        at_proposed=at_proposed,
        notes=notes,
        refused=refused,
        calibrated_on=calibrated_on,
        test=figures,
    )


def _split(pair: LabelledPair) -> str | None:
    """The pair's split; a pair without one takes its group's (None without a group)."""
    if pair.split is not None:
        return pair.split
    return split_of(pair.group) if pair.group else None


def calibrate(
    pairs: Sequence[LabelledPair],
    similarities: Sequence[float],
    policy: ThresholdPolicy,
    *,
    target: float,
    guards: bool = True,
    verifier: PairJudge | None = None,
    min_pairs: int = MIN_NAMESPACE_PAIRS,
    aligner: PairAligner | None = None,
    cross_encoder: CrossEncoderVerifier | None = None,
) -> Calibration:
    """Thresholds for all pairs (the default bands) and for each namespace in `pairs`:
    read from train+dev and scored on test when the pairs have splits, else read
    from and scored on all pairs (in-sample)."""
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target precision must be within (0, 1], got {target}")
    facts = pair_facts(
        pairs,
        similarities,
        guards=guards,
        verifier=verifier,
        aligner=aligner,
        cross_encoder=cross_encoder,
        # The default bands' rescue band (none where dedup.rescue is off).
        rescue_threshold=policy.default.rescue_threshold,
    )
    skip_target = max(target, SKIP_PRECISION_FLOOR)
    has_splits = any(pair.split is not None for pair in pairs)
    calibrated_on = TRAIN_DEV if has_splits else IN_SAMPLE
    # namespace (None: all pairs) -> (calibration facts, test facts)
    basis: dict[str | None, tuple[list[PairFacts], list[PairFacts]]] = {None: ([], [])}
    left_out = 0
    for pair, fact in zip(pairs, facts, strict=True):
        split = _split(pair) if has_splits else None
        if has_splits and split is None:
            left_out += 1
            continue
        side = 1 if split == TEST_SPLIT else 0
        basis[None][side].append(fact)
        if pair.namespace:
            basis.setdefault(pair.namespace, ([], []))[side].append(fact)
    all_cal, all_test = basis.pop(None)
    if not all_cal:
        raise ValueError("no calibration pairs: every pair is in the test split")

    def group(
        name: str, own: list[PairFacts], test: list[PairFacts], bands: Bands, fb: bool
    ) -> GroupCalibration:
        return _calibrate_group(
            name,
            all_cal if fb else own,
            len(own),
            fb,
            bands,
            target,
            skip_target,
            calibrated_on=calibrated_on,
            test=test if has_splits else None,
        )

    groups = [group(ALL_PAIRS, all_cal, all_test, policy.default, False)]
    for namespace, (own, test) in sorted(basis.items(), key=lambda item: str(item[0])):
        assert namespace is not None
        groups.append(
            group(namespace, own, test, policy.bands_for(namespace), len(own) < min_pairs)
        )
    if left_out:
        groups[0].notes.append(
            f"{left_out} pairs without a `split` or `group` left out (they cannot be placed)"
        )
    return Calibration(
        target,
        skip_target,
        guards,
        groups,
        verifier is not None,
        calibrated_on=calibrated_on,
        cross_encoder=cross_encoder is not None,
        calibration_pairs=len(all_cal),
        test_pairs=len(all_test),
        left_out=left_out,
    )
