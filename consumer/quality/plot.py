"""Precision/recall curves as a PNG, drawn by matplotlib (Agg, no display needed).

matplotlib is optional (the `reports` extra): it is imported only when a plot is
drawn, so that nothing else pays for it. Callers check `have_matplotlib()` first
and print `MISSING_MATPLOTLIB` when it is absent.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = ["MISSING_MATPLOTLIB", "Series", "have_matplotlib", "plot_curves"]

MISSING_MATPLOTLIB: Final = "matplotlib is not installed: pip install 'memdedup[reports]'"
_DPI: Final = 100


@dataclass(frozen=True, slots=True)
class Series:
    """One curve: (x, y) points in data units, plus highlighted points."""

    name: str
    points: Sequence[tuple[float, float]]
    markers: Sequence[tuple[float, float]] = field(default_factory=tuple)
    hollow_markers: Sequence[tuple[float, float]] = field(default_factory=tuple)


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_curves(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str = "recall",
    y_label: str = "precision",
    hline: tuple[float, str] | None = None,
    marker_labels: tuple[str, str] | None = None,
    size: tuple[int, int] = (900, 600),
) -> bytes:
    """A PNG line plot of `series`, `size` pixels, with x in 0..1 and y in
    [y_min, 1], y_min a tenth below the lowest point (at most 0.5).
    `marker_labels`: legend entries for the filled and the hollow markers."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    width, height = size
    figure = Figure(figsize=(width / _DPI, height / _DPI), dpi=_DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    ys = [y for s in series for _, y in s.points] or [0.5]
    y_min = min(0.5, math.floor(min(ys) * 10) / 10)
    axes.set_xlim(0.0, 1.0)
    # A little room above 1.0, so that a marker at precision 1 is drawn whole.
    axes.set_ylim(y_min, 1.0 + (1.0 - y_min) * 0.02)
    axes.grid(True, color="0.85", linewidth=0.8)
    axes.set_title(title, loc="left")
    axes.set_xlabel(x_label)
    axes.set_ylabel(y_label)
    if hline is not None:
        value, label = hline
        axes.axhline(value, color="0.45", linestyle="--", linewidth=1)
        axes.annotate(
            label,
            (0.0, value),
            xytext=(6, 4),
            textcoords="offset points",
            color="0.35",
            fontsize="small",
        )
    for index, item in enumerate(series):
        color = f"C{index % 10}"
        axes.plot(*_columns(item.points), color=color, linewidth=1.6, label=item.name)
        if item.markers:
            axes.plot(
                *_columns(item.markers),
                linestyle="none",
                marker="o",
                markersize=9,
                color=color,
                markeredgecolor="black",
            )
        if item.hollow_markers:
            axes.plot(
                *_columns(item.hollow_markers),
                linestyle="none",
                marker="o",
                markersize=9,
                markerfacecolor="white",
                markeredgecolor=color,
                markeredgewidth=2,
            )
    handles, _ = axes.get_legend_handles_labels()
    if marker_labels is not None:
        filled, hollow = marker_labels
        handles += [
            Line2D([], [], linestyle="none", marker="o", color="0.3", label=filled),
            Line2D(
                [],
                [],
                linestyle="none",
                marker="o",
                markerfacecolor="white",
                markeredgecolor="0.3",
                markeredgewidth=2,
                label=hollow,
            ),
        ]
    if handles:
        axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _columns(points: Sequence[tuple[float, float]]) -> tuple[list[float], list[float]]:
    return [x for x, _ in points], [y for _, y in points]
