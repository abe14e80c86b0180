"""A dependency-free PNG line plot (numpy + zlib): precision/recall curves.

Good enough to eyeball a calibration: axes, grid, one polyline per series, a
marker per chosen point, a legend and labels in a 3x5 pixel font (upper case).
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["Series", "encode_png", "plot_curves", "write_png"]

Canvas = npt.NDArray[np.uint8]
Color = tuple[int, int, int]

PALETTE: Final[tuple[Color, ...]] = (
    (31, 119, 180),
    (214, 39, 40),
    (44, 160, 44),
    (255, 127, 14),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (23, 190, 207),
)
_BLACK: Final = (0, 0, 0)
_GREY: Final = (200, 200, 200)
_DARK_GREY: Final = (110, 110, 110)

# 3x5 glyphs, rows top to bottom; "#" is ink.
_FONT: Final[dict[str, tuple[str, ...]]] = {
    "A": (".#.", "#.#", "###", "#.#", "#.#"), "B": ("##.", "#.#", "##.", "#.#", "##."),
    "C": (".##", "#..", "#..", "#..", ".##"), "D": ("##.", "#.#", "#.#", "#.#", "##."),
    "E": ("###", "#..", "##.", "#..", "###"), "F": ("###", "#..", "##.", "#..", "#.."),
    "G": (".##", "#..", "#.#", "#.#", ".##"), "H": ("#.#", "#.#", "###", "#.#", "#.#"),
    "I": ("###", ".#.", ".#.", ".#.", "###"), "J": ("..#", "..#", "..#", "#.#", ".#."),
    "K": ("#.#", "#.#", "##.", "#.#", "#.#"), "L": ("#..", "#..", "#..", "#..", "###"),
    "M": ("#.#", "###", "###", "#.#", "#.#"), "N": ("##.", "#.#", "#.#", "#.#", "#.#"),
    "O": (".#.", "#.#", "#.#", "#.#", ".#."), "P": ("##.", "#.#", "##.", "#..", "#.."),
    "Q": (".#.", "#.#", "#.#", "##.", ".##"), "R": ("##.", "#.#", "##.", "#.#", "#.#"),
    "S": (".##", "#..", ".#.", "..#", "##."), "T": ("###", ".#.", ".#.", ".#.", ".#."),
    "U": ("#.#", "#.#", "#.#", "#.#", "###"), "V": ("#.#", "#.#", "#.#", "#.#", ".#."),
    "W": ("#.#", "#.#", "###", "###", "#.#"), "X": ("#.#", "#.#", ".#.", "#.#", "#.#"),
    "Y": ("#.#", "#.#", ".#.", ".#.", ".#."), "Z": ("###", "..#", ".#.", "#..", "###"),
    "0": ("###", "#.#", "#.#", "#.#", "###"), "1": (".#.", "##.", ".#.", ".#.", "###"),
    "2": ("##.", "..#", ".#.", "#..", "###"), "3": ("##.", "..#", ".#.", "..#", "##."),
    "4": ("#.#", "#.#", "###", "..#", "..#"), "5": ("###", "#..", "##.", "..#", "##."),
    "6": (".##", "#..", "###", "#.#", "###"), "7": ("###", "..#", ".#.", ".#.", ".#."),
    "8": ("###", "#.#", "###", "#.#", "###"), "9": ("###", "#.#", "###", "..#", "##."),
    ".": ("...", "...", "...", "...", ".#."), ",": ("...", "...", "...", ".#.", "#.."),
    "-": ("...", "...", "###", "...", "..."), "_": ("...", "...", "...", "...", "###"),
    ":": ("...", ".#.", "...", ".#.", "..."), "=": ("...", "###", "...", "###", "..."),
    ">": ("#..", ".#.", "..#", ".#.", "#.."), "<": ("..#", ".#.", "#..", ".#.", "..#"),
    "(": (".#.", "#..", "#..", "#..", ".#."), ")": (".#.", "..#", "..#", "..#", ".#."),
    "/": ("..#", "..#", ".#.", "#..", "#.."), "%": ("#.#", "..#", ".#.", "#..", "#.#"),
    " ": ("...", "...", "...", "...", "..."), "?": ("##.", "..#", ".#.", "...", ".#."),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Series:
    """One curve: (x, y) points in data units, plus highlighted points."""

    name: str
    points: Sequence[tuple[float, float]]
    markers: Sequence[tuple[float, float]] = field(default_factory=tuple)
    hollow_markers: Sequence[tuple[float, float]] = field(default_factory=tuple)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def encode_png(canvas: Canvas) -> bytes:
    """An 8-bit RGB PNG of an (height, width, 3) uint8 array."""
    if canvas.ndim != 3 or canvas.shape[2] != 3 or canvas.dtype != np.uint8:
        raise ValueError("canvas must be a (height, width, 3) uint8 array")
    height, width, _ = canvas.shape
    rows = np.concatenate([np.zeros((height, 1), dtype=np.uint8), canvas.reshape(height, -1)], 1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 9))
        + _chunk(b"IEND", b"")
    )


def write_png(path: Path, canvas: Canvas) -> None:
    path.write_bytes(encode_png(canvas))


def _dot(canvas: Canvas, x: int, y: int, color: Color, radius: int = 0) -> None:
    height, width, _ = canvas.shape
    y0, y1 = max(0, y - radius), min(height, y + radius + 1)
    x0, x1 = max(0, x - radius), min(width, x + radius + 1)
    if y0 < y1 and x0 < x1:
        canvas[y0:y1, x0:x1] = color


def _line(
    canvas: Canvas, start: tuple[int, int], end: tuple[int, int], color: Color, width: int = 0,
    dash: int = 0,
) -> None:  # fmt: skip
    (x0, y0), (x1, y1) = start, end
    steps = max(abs(x1 - x0), abs(y1 - y0), 1)
    for i in range(steps + 1):
        if dash and (i // dash) % 2:
            continue
        x = round(x0 + (x1 - x0) * i / steps)
        y = round(y0 + (y1 - y0) * i / steps)
        _dot(canvas, x, y, color, width)


def _text(canvas: Canvas, x: int, y: int, text: str, color: Color, scale: int = 2) -> None:
    for index, char in enumerate(text.upper()):
        glyph = _FONT.get(char, _FONT["?"])
        left = x + index * 4 * scale
        for row, bits in enumerate(glyph):
            for col, bit in enumerate(bits):
                if bit == "#":
                    top = y + row * scale
                    canvas[top : top + scale, left + col * scale : left + (col + 1) * scale] = color


def _text_width(text: str, scale: int = 2) -> int:
    return len(text) * 4 * scale


def plot_curves(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str = "recall",
    y_label: str = "precision",
    hline: tuple[float, str] | None = None,
    size: tuple[int, int] = (900, 600),
) -> Canvas:
    """Line plot of `series` with x in 0..1 and y in [y_min, 1], y_min a tenth below
    the lowest point (at most 0.5)."""
    width, height = size
    left, right, top, bottom = 70, 260, 50, 60
    canvas: Canvas = np.full((height, width, 3), 255, dtype=np.uint8)
    ys = [y for s in series for _, y in s.points] or [0.5]
    y_min = min(0.5, float(np.floor(min(ys) * 10) / 10))
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(x: float, y: float) -> tuple[int, int]:
        fx = min(max(x, 0.0), 1.0)
        fy = min(max((y - y_min) / (1.0 - y_min), 0.0), 1.0)
        return left + round(fx * plot_w), top + round((1.0 - fy) * plot_h)

    for i in range(11):
        gx = i / 10
        x, _ = px(gx, y_min)
        _line(canvas, (x, top), (x, top + plot_h), _GREY)
        label = f"{gx:.1f}"
        _text(canvas, x - _text_width(label) // 2, top + plot_h + 8, label, _BLACK)
    steps = round((1.0 - y_min) * 10)
    for i in range(steps + 1):
        gy = y_min + i / 10
        _, y = px(0.0, gy)
        _line(canvas, (left, y), (left + plot_w, y), _GREY)
        label = f"{gy:.1f}"
        _text(canvas, left - _text_width(label) - 8, y - 5, label, _BLACK)
    _line(canvas, (left, top), (left, top + plot_h), _BLACK)
    _line(canvas, (left, top + plot_h), (left + plot_w, top + plot_h), _BLACK)
    _text(canvas, left, 12, title, _BLACK)
    _text(canvas, left, top - 16, y_label, _DARK_GREY)
    _text(
        canvas,
        left + plot_w - _text_width(x_label),
        top + plot_h + 28,
        x_label,
        _DARK_GREY,
    )
    if hline is not None:
        value, label = hline
        _, y = px(0.0, value)
        _line(canvas, (left, y), (left + plot_w, y), _DARK_GREY, dash=6)
        _text(canvas, left + 6, y - 14, label, _DARK_GREY)

    for index, item in enumerate(series):
        color = PALETTE[index % len(PALETTE)]
        points = [px(x, y) for x, y in item.points]
        for a, b in itertools.pairwise(points):
            _line(canvas, a, b, color, width=1)
        for mx, my in item.markers:
            cx, cy = px(mx, my)
            _dot(canvas, cx, cy, _BLACK, 5)
            _dot(canvas, cx, cy, color, 4)
        for hx, hy in item.hollow_markers:
            cx, cy = px(hx, hy)
            _dot(canvas, cx, cy, color, 5)
            _dot(canvas, cx, cy, (255, 255, 255), 3)
        legend_y = top + 10 + index * 22
        legend_x = left + plot_w + 20
        canvas[legend_y : legend_y + 10, legend_x : legend_x + 16] = color
        _text(canvas, legend_x + 24, legend_y, item.name[:26], _BLACK)
    return canvas
