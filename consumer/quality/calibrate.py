"""Per-namespace thresholds read off labelled pairs.

For each pair, what does not depend on the thresholds is computed once: its
cosine similarity, whether the exact check catches it, and whether the guards or
the verifier veto it (the verifier's verdict does not depend on the bands). At a
merge threshold `t` the pair is then predicted duplicate when it is exact, or
when `similarity >= t` and nothing vetoes it (the consumer's rule,
`consumer.quality.rule.decide_pair`).

Rules (thresholds on a 0.01 grid, 0.50..1.00):

- merge_threshold: the lowest grid value from which precision stays >= P at
  every higher grid value that predicts anything. Recall only falls as the
  threshold rises, so this is the highest recall with precision >= P, ignoring
  a lucky threshold whose precision dips again just above it. If no value
  qualifies, 1.0 (semantic merges off: only exact repeats are caught).
- duplicate_threshold: the same rule with precision >= max(P, 0.99), never below
  the merge threshold and never below the value configured now. Labels say
  duplicate or distinct, not "skip" or "merge": lowering the duplicate threshold
  adds no recall (anything it would skip is already merged), it only turns merges
  into skips, which drop the new memory's topics, entities and importance. So the
  labels can show that the skip band is too low, never that it is too high.
- A namespace with fewer than 20 pairs uses all pairs instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from consumer.engine.thresholds import Bands, ThresholdPolicy
from consumer.engine.verifier import PairJudge
from consumer.quality.metrics import Confusion
from consumer.quality.pairs import LabelledPair
from consumer.quality.plot import Canvas, Series, plot_curves
from consumer.quality.rule import is_exact, pair_veto

__all__ = [
    "ALL_PAIRS",
    "GRID",
    "MIN_NAMESPACE_PAIRS",
    "SKIP_PRECISION_FLOOR",
    "Calibration",
    "CurvePoint",
    "GroupCalibration",
    "PairFacts",
    "calibrate",
    "calibration_json",
    "calibration_plot",
    "choose_threshold",
    "pair_facts",
    "render_calibration",
    "sweep",
    "yaml_snippet",
]

GRID: Final[tuple[float, ...]] = tuple(round(0.50 + 0.01 * i, 2) for i in range(51))
MIN_NAMESPACE_PAIRS: Final = 20
SKIP_PRECISION_FLOOR: Final = 0.99
ALL_PAIRS: Final = "(all)"


@dataclass(frozen=True, slots=True)
class PairFacts:
    """What decides a pair apart from the thresholds."""

    similarity: float
    duplicate: bool
    exact: bool = False
    vetoed: bool = False

    def predicted(self, threshold: float) -> bool:
        return self.exact or (self.similarity >= threshold and not self.vetoed)


def pair_facts(
    pairs: Sequence[LabelledPair],
    similarities: Sequence[float],
    *,
    guards: bool = True,
    verifier: PairJudge | None = None,
    min_similarity: float = GRID[0],
) -> list[PairFacts]:
    """`vetoed`: the guards or the verifier veto the pair. The verifier is not
    asked below `min_similarity` (no grid threshold predicts such a pair duplicate)."""
    facts: list[PairFacts] = []
    for pair, similarity in zip(pairs, similarities, strict=True):
        exact = is_exact(pair.existing, pair.new)
        vetoed = (
            not exact
            and pair_veto(
                pair.existing,
                pair.new,
                similarity,
                guards=guards,
                verifier=verifier if similarity >= min_similarity else None,
            )
            is not None
        )
        facts.append(PairFacts(similarity, pair.duplicate, exact, vetoed))
    return facts


@dataclass(frozen=True, slots=True)
class CurvePoint:
    threshold: float
    confusion: Confusion


def confusion_at(facts: Sequence[PairFacts], threshold: float) -> Confusion:
    confusion = Confusion()
    for fact in facts:
        confusion.add(duplicate=fact.duplicate, predicted=fact.predicted(threshold))
    return confusion


def sweep(facts: Sequence[PairFacts], grid: Sequence[float] = GRID) -> list[CurvePoint]:
    return [CurvePoint(t, confusion_at(facts, t)) for t in sorted(grid)]


def choose_threshold(
    curve: Sequence[CurvePoint], target: float, *, floor: float = 0.0
) -> CurvePoint | None:
    """The lowest point at or above `floor` from which precision stays >= `target` at
    every higher point that predicts anything; None if the highest such point fails."""
    found: CurvePoint | None = None
    for point in sorted(curve, key=lambda p: p.threshold, reverse=True):
        if point.threshold < floor:
            break
        precision = point.confusion.precision
        if precision is None:
            continue
        if precision < target:
            break
        found = point
    return found


@dataclass(slots=True)
class GroupCalibration:
    name: str
    pairs: int  # pairs of this namespace (all pairs for ALL_PAIRS)
    basis_pairs: int  # pairs the thresholds were read from
    fallback: bool  # True: too few pairs, read from all pairs
    current: Bands
    at_current: Confusion
    curve: list[CurvePoint]
    merge: CurvePoint | None
    skip_safe: CurvePoint | None
    merge_threshold: float
    duplicate_threshold: float
    at_proposed: Confusion
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Calibration:
    target: float
    skip_target: float
    guards: bool
    groups: list[GroupCalibration]  # ALL_PAIRS first, then namespaces by name
    verifier: bool = False

    @property
    def overall(self) -> GroupCalibration:
        return self.groups[0]


def _calibrate_group(
    name: str,
    facts: Sequence[PairFacts],
    own_pairs: int,
    fallback: bool,
    current: Bands,
    target: float,
    skip_target: float,
) -> GroupCalibration:
    curve = sweep(facts)
    merge = choose_threshold(curve, target)
    notes: list[str] = []
    if merge is None:
        merge_threshold = 1.0
        notes.append(f"no threshold reaches precision {target:g}: semantic merges off")
    else:
        merge_threshold = merge.threshold
    skip_safe = choose_threshold(curve, skip_target)
    safe = skip_safe.threshold if skip_safe is not None else 1.0
    duplicate_threshold = max(merge_threshold, safe, current.duplicate_threshold)
    if safe > current.duplicate_threshold:
        notes.append(
            f"skip band raised: precision >= {skip_target:g} needs >= {safe:.2f} "
            f"(configured {current.duplicate_threshold:g})"
        )
    if fallback:
        notes.append(f"fewer than {MIN_NAMESPACE_PAIRS} pairs: thresholds from all pairs")
    return GroupCalibration(
        name=name,
        pairs=own_pairs,
        basis_pairs=len(facts),
        fallback=fallback,
        current=current,
        at_current=confusion_at(facts, current.merge_threshold),
        curve=curve,
        merge=merge,
        skip_safe=skip_safe,
        merge_threshold=merge_threshold,
        duplicate_threshold=duplicate_threshold,
        at_proposed=confusion_at(facts, merge_threshold),
        notes=notes,
    )


def calibrate(
    pairs: Sequence[LabelledPair],
    similarities: Sequence[float],
    policy: ThresholdPolicy,
    *,
    target: float,
    guards: bool = True,
    verifier: PairJudge | None = None,
    min_pairs: int = MIN_NAMESPACE_PAIRS,
) -> Calibration:
    """Thresholds for all pairs (the default bands) and for each namespace in `pairs`."""
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target precision must be within (0, 1], got {target}")
    facts = pair_facts(pairs, similarities, guards=guards, verifier=verifier)
    skip_target = max(target, SKIP_PRECISION_FLOOR)
    groups = [
        _calibrate_group(ALL_PAIRS, facts, len(facts), False, policy.default, target, skip_target)
    ]
    by_namespace: dict[str, list[PairFacts]] = {}
    for pair, fact in zip(pairs, facts, strict=True):
        if pair.namespace:
            by_namespace.setdefault(pair.namespace, []).append(fact)
    for namespace, own in sorted(by_namespace.items()):
        fallback = len(own) < min_pairs
        groups.append(
            _calibrate_group(
                namespace,
                facts if fallback else own,
                len(own),
                fallback,
                policy.bands_for(namespace),
                target,
                skip_target,
            )
        )
    return Calibration(target, skip_target, guards, groups, verifier is not None)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _prf(c: Confusion) -> str:
    return f"{_fmt(c.precision)} / {_fmt(c.recall)} / {_fmt(c.f1)} / {_fmt(c.false_merge_rate)}"


def yaml_snippet(calibration: Calibration, *, model_id: str = "") -> str:
    """The `dedup:` section to paste into the config file."""
    overall = calibration.overall
    header = (
        f"# memdedup calibrate: precision >= {calibration.target:g} "
        f"(skip >= {calibration.skip_target:g}), guards {'on' if calibration.guards else 'off'}"
        f", verifier {'on' if calibration.verifier else 'off'}"
    )
    if model_id:
        header += f", {model_id}"
    lines = [
        header,
        "dedup:",
        f"  duplicate_threshold: {overall.duplicate_threshold:.2f}",
        f"  merge_threshold: {overall.merge_threshold:.2f}  # all {overall.pairs} pairs"
        + (f"; {overall.notes[0]}" if overall.merge is None else ""),
    ]
    namespaces = calibration.groups[1:]
    if namespaces:
        lines.append("  namespaces:")
        for group in namespaces:
            basis = "all pairs" if group.fallback else f"{group.pairs} pairs"
            lines.append(
                f"    {group.name}: {{duplicate_threshold: {group.duplicate_threshold:.2f}, "
                f"merge_threshold: {group.merge_threshold:.2f}}}  # {basis}"
            )
    return "\n".join(lines)


def render_calibration(calibration: Calibration, *, rows: Sequence[float] | None = None) -> str:
    """Summary table, precision/recall table over thresholds, notes."""
    lines = [
        f"target: duplicate precision >= {calibration.target:g} for merges, "
        f">= {calibration.skip_target:g} for skips; guards "
        f"{'on' if calibration.guards else 'off'}, verifier "
        f"{'on' if calibration.verifier else 'off'}",
        "",
        "P / R / F1 / FMR = precision / recall / F1 of the duplicate class / false-merge rate",
        "",
        "| namespace | pairs | configured (skip, merge) | P / R / F1 / FMR configured "
        "| proposed merge | proposed skip | P / R / F1 / FMR proposed |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in calibration.groups:
        pairs = f"{g.pairs}" + (" (uses all)" if g.fallback else "")
        lines.append(
            f"| {g.name} | {pairs} | {g.current.duplicate_threshold:.2f}, "
            f"{g.current.merge_threshold:.2f} | {_prf(g.at_current)} "
            f"| {g.merge_threshold:.2f} | {g.duplicate_threshold:.2f} | {_prf(g.at_proposed)} |"
        )
    shown = [g for g in calibration.groups if not g.fallback]
    grid = rows if rows is not None else [t for t in GRID if round(t * 100) % 2 == 0]
    lines += [
        "",
        "precision / recall by merge threshold (pairs predicted duplicate: exact, or "
        "similarity >= t and no guard or verifier veto)",
        "",
        "| t | " + " | ".join(g.name for g in shown) + " |",
        "|---|" + "---|" * len(shown),
    ]
    for t in grid:
        cells = []
        for g in shown:
            point = next((p for p in g.curve if abs(p.threshold - t) < 1e-9), None)
            cells.append(
                "-"
                if point is None
                else f"{_fmt(point.confusion.precision)} / {_fmt(point.confusion.recall)}"
            )
        lines.append(f"| {t:.2f} | " + " | ".join(cells) + " |")
    notes = [f"{g.name}: {note}" for g in calibration.groups for note in g.notes]
    if notes:
        lines += ["", "notes:"] + [f"  - {note}" for note in notes]
    return "\n".join(lines)


def calibration_plot(calibration: Calibration) -> Canvas:
    """Precision over recall as the merge threshold moves; filled marker: proposed,
    hollow marker: configured."""
    series: list[Series] = []
    for g in calibration.groups:
        if g.fallback:
            continue
        points = [
            (p.confusion.recall or 0.0, p.confusion.precision)
            for p in g.curve
            if p.confusion.precision is not None
        ]
        chosen = [(g.at_proposed.recall or 0.0, g.at_proposed.precision or 0.0)]
        configured = [(g.at_current.recall or 0.0, g.at_current.precision or 0.0)]
        series.append(
            Series(
                name=f"{g.name} m={g.merge_threshold:.2f}",
                points=[(x, y) for x, y in points if y is not None],
                markers=chosen,
                hollow_markers=configured,
            )
        )
    return plot_curves(
        series,
        title="precision / recall over the merge threshold",
        hline=(calibration.target, f"p = {calibration.target:g}"),
    )


def _group_json(g: GroupCalibration) -> dict[str, Any]:
    return {
        "pairs": g.pairs,
        "basis_pairs": g.basis_pairs,
        "fallback_to_all_pairs": g.fallback,
        "configured": {
            "duplicate_threshold": g.current.duplicate_threshold,
            "merge_threshold": g.current.merge_threshold,
            "metrics": g.at_current.as_dict(),
        },
        "proposed": {
            "duplicate_threshold": g.duplicate_threshold,
            "merge_threshold": g.merge_threshold,
            "metrics": g.at_proposed.as_dict(),
        },
        "curve": [
            {
                "threshold": p.threshold,
                "precision": p.confusion.precision,
                "recall": p.confusion.recall,
                "f1": p.confusion.f1,
                "false_merge_rate": p.confusion.false_merge_rate,
            }
            for p in g.curve
        ],
        "notes": list(g.notes),
    }


def calibration_json(calibration: Calibration) -> Mapping[str, Any]:
    return {
        "target_precision": calibration.target,
        "skip_target_precision": calibration.skip_target,
        "guards": calibration.guards,
        "verifier": calibration.verifier,
        "groups": {g.name: _group_json(g) for g in calibration.groups},
    }
