"""A calibration as people and tools read it: the report table, the YAML to
apply, the JSON and the precision/recall plot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from consumer.quality.calibrate import (
    GRID,
    IN_SAMPLE,
    SPLIT_ADVICE,
    TRAIN_DEV,
    Calibration,
    GroupCalibration,
    figure,
)
from consumer.quality.metrics import Confusion
from consumer.quality.plot import Series, plot_curves


def _prf(c: Confusion | None) -> str:
    if c is None:
        return "-"
    return f"{figure(c.precision)} / {figure(c.recall)} / {figure(c.f1)} / {figure(c.false_merge_rate)}"


def _basis_line(calibration: Calibration) -> str:
    if calibration.in_sample:
        return f"in-sample: all {calibration.calibration_pairs} pairs"
    return (
        f"read from train+dev ({calibration.calibration_pairs} pairs), "
        f"test ({calibration.test_pairs} pairs) held out"
    )


def yaml_snippet(calibration: Calibration, *, model_id: str = "") -> str:
    """The `dedup:` section to paste into the config file. A refused group keeps its
    configured bands, written out with the reason (a namespace left out would take
    the new defaults)."""
    overall = calibration.overall
    header = (
        f"# memdedup calibrate: precision >= {calibration.target:g} "
        f"(skip >= {calibration.skip_target:g}), guards {'on' if calibration.guards else 'off'}"
        f", verifier {'on' if calibration.verifier else 'off'}"
        f", cross-encoder {'on' if calibration.cross_encoder else 'off'}"
    )
    if model_id:
        header += f", {model_id}"
    header += f"; {_basis_line(calibration)}"
    lines = [header, "dedup:"]
    if overall.refused is not None:
        lines += [
            f"  # default bands NOT calibrated, kept as configured: {overall.refused}",
            f"  duplicate_threshold: {overall.duplicate_threshold:.2f}  # unchanged",
            f"  merge_threshold: {overall.merge_threshold:.2f}  # unchanged",
        ]
    else:
        lines += [
            f"  duplicate_threshold: {overall.duplicate_threshold:.2f}",
            f"  merge_threshold: {overall.merge_threshold:.2f}  # {overall.pairs} pairs",
        ]
    namespaces = calibration.groups[1:]
    if namespaces:
        lines.append("  namespaces:")
        for group in namespaces:
            if group.refused is not None:
                comment = f"unchanged, not calibrated: {group.refused}"
            elif group.fallback:
                comment = "from all pairs"
            else:
                comment = f"{group.pairs} pairs"
            lines.append(
                f"    {group.name}: {{duplicate_threshold: {group.duplicate_threshold:.2f}, "
                f"merge_threshold: {group.merge_threshold:.2f}}}  # {comment}"
            )
    return "\n".join(lines)


def render_calibration(calibration: Calibration, *, rows: Sequence[float] | None = None) -> str:
    """Where the figures come from, summary table, precision/recall table over
    thresholds, refusals, notes."""
    lines = [
        f"target: duplicate precision >= {calibration.target:g} for merges, "
        f">= {calibration.skip_target:g} for skips; guards "
        f"{'on' if calibration.guards else 'off'}, verifier "
        f"{'on' if calibration.verifier else 'off'}, cross-encoder "
        f"{'on' if calibration.cross_encoder else 'off'}",
    ]
    if calibration.in_sample:
        lines += [
            f"calibrated on: {IN_SAMPLE}. WARNING: these pairs have no `split`, so the "
            "thresholds are read from the same pairs their figures are measured on; "
            "expect lower precision on new pairs.",
            f"  For figures you can trust, {SPLIT_ADVICE}.",
        ]
    else:
        lines.append(
            f"calibrated on: {TRAIN_DEV} ({calibration.calibration_pairs} pairs); "
            f"test: {calibration.test_pairs} held-out pairs, never used to choose"
        )
    lines += [
        "",
        "P / R / F1 / FMR = precision / recall / F1 of the duplicate class / false-merge rate",
        "",
    ]
    basis = "in-sample" if calibration.in_sample else TRAIN_DEV
    if calibration.in_sample:
        lines += [
            "| namespace | pairs | configured (skip, merge) | P / R / F1 / FMR configured "
            "| proposed merge | proposed skip | P / R / F1 / FMR proposed |",
            "|---|---|---|---|---|---|---|",
        ]
    else:
        lines += [
            "| namespace | pairs train+dev / test | configured (skip, merge) "
            f"| P / R / F1 / FMR configured, {basis} | proposed merge | proposed skip "
            f"| P / R / F1 / FMR proposed, {basis} | P / R / F1 / FMR configured, test "
            "| **P / R / F1 / FMR proposed, test** |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
    for g in calibration.groups:
        pairs = f"{g.pairs}" if g.test is None else f"{g.pairs} / {g.test.pairs}"
        if g.fallback:
            pairs += " (uses all)"
        if g.refused is not None:
            proposed = "refused | - | -"
        else:
            proposed = (
                f"{g.merge_threshold:.2f} | {g.duplicate_threshold:.2f} | {_prf(g.at_proposed)}"
            )
        row = (
            f"| {g.name} | {pairs} | {g.current.duplicate_threshold:.2f}, "
            f"{g.current.merge_threshold:.2f} | {_prf(g.at_current)} | {proposed} |"
        )
        if g.test is not None:
            row += f" {_prf(g.test.configured)} | {_prf(g.test.proposed)} |"
        lines.append(row)
    shown = [g for g in calibration.groups if not g.fallback]
    grid = rows if rows is not None else [t for t in GRID if round(t * 100) % 2 == 0]
    lines += [
        "",
        f"precision / recall by merge threshold, {basis} (pairs predicted duplicate: exact, "
        "or similarity >= t and no guard or verifier veto, or rescued by the cross-encoder "
        "between the rescue threshold and t)",
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
                else f"{figure(point.confusion.precision)} / {figure(point.confusion.recall)}"
            )
        lines.append(f"| {t:.2f} | " + " | ".join(cells) + " |")
    refused = [g for g in calibration.groups if g.refused is not None]
    if refused:
        lines += ["", "refused (bands kept as configured):"] + [
            f"  - {g.name}: {g.refused}" for g in refused
        ]
    notes = [f"{g.name}: {note}" for g in calibration.groups for note in g.notes]
    if notes:
        lines += ["", "notes:"] + [f"  - {note}" for note in notes]
    return "\n".join(lines)


def calibration_plot(calibration: Calibration) -> bytes:
    """A PNG of precision over recall as the merge threshold moves (calibration
    pairs); filled marker: proposed (none when refused), hollow marker: configured.
    Needs matplotlib (the `reports` extra)."""
    series: list[Series] = []
    for g in calibration.groups:
        if g.fallback:
            continue
        points = [
            (p.confusion.recall or 0.0, p.confusion.precision)
            for p in g.curve
            if p.confusion.precision is not None
        ]
        chosen = (
            []
            if g.refused is not None
            else [(g.at_proposed.recall or 0.0, g.at_proposed.precision or 0.0)]
        )
        configured = [(g.at_current.recall or 0.0, g.at_current.precision or 0.0)]
        label = "refused" if g.refused is not None else f"m={g.merge_threshold:.2f}"
        series.append(
            Series(
                name=f"{g.name} {label}",
                points=[(x, y) for x, y in points if y is not None],
                markers=chosen,
                hollow_markers=configured,
            )
        )
    return plot_curves(
        series,
        title="precision / recall over the merge threshold",
        hline=(calibration.target, f"p = {calibration.target:g}"),
        marker_labels=("proposed", "configured"),
    )


def _group_json(g: GroupCalibration) -> dict[str, Any]:
    return {
        "calibrated_on": g.calibrated_on,
        "pairs": g.pairs,
        "basis_pairs": g.basis_pairs,
        "fallback_to_all_pairs": g.fallback,
        "refused": g.refused,
        "configured": {
            "duplicate_threshold": g.current.duplicate_threshold,
            "merge_threshold": g.current.merge_threshold,
            "metrics": g.at_current.as_dict(),
        },
        "proposed": None
        if g.refused is not None
        else {
            "duplicate_threshold": g.duplicate_threshold,
            "merge_threshold": g.merge_threshold,
            "metrics": g.at_proposed.as_dict(),
        },
        "test": None
        if g.test is None
        else {
            "pairs": g.test.pairs,
            "configured": g.test.configured.as_dict(),
            "proposed": None if g.test.proposed is None else g.test.proposed.as_dict(),
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
        "cross_encoder": calibration.cross_encoder,
        "calibrated_on": calibration.calibrated_on,
        "in_sample": calibration.in_sample,
        "advice": SPLIT_ADVICE if calibration.in_sample else None,
        "pairs": {
            "calibration": calibration.calibration_pairs,
            "test": calibration.test_pairs,
            "left_out": calibration.left_out,
        },
        "groups": {g.name: _group_json(g) for g in calibration.groups},
    }
