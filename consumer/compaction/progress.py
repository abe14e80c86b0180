"""A small progress bar for long compaction runs, written to stderr.

On a terminal it redraws one line in place (at most every `min_interval_s`).
On anything else (a log file, CI) it writes a few whole lines so logs stay short:
one when work starts, one per 10% step but no more often than every
`line_interval_s`, and one at the end. A run shorter than that interval writes
two lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import Final, TextIO

__all__ = ["Progress", "format_duration"]

_BAR_WIDTH: Final = 24
_STEP_PERCENT: Final = 10


def format_duration(seconds: float) -> str:
    """12s, 3m05s, 2h07m."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _is_tty(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class Progress:
    """`compact  [#######.....]  1,234/5,000  24%  312/s  eta 12s`"""

    def __init__(
        self,
        total: int,
        label: str,
        out: TextIO,
        min_interval_s: float = 0.2,
        *,
        line_interval_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        tty: bool | None = None,
    ) -> None:
        if total < 0:
            raise ValueError(f"total must be >= 0, got {total}")
        self.total = total
        self.label = label
        self.done = 0
        self._out = out
        self._min_interval_s = min_interval_s
        self._line_interval_s = line_interval_s
        self._clock = clock
        self._tty = _is_tty(out) if tty is None else tty
        self._started = clock()
        self._last_drawn: float | None = None
        # Off a terminal: the 10% step of the last line written, and when.
        self._last_step = 0
        self._last_written: int | None = None
        self._last_written_at: float | None = None
        self._closed = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def advance(self, n: int = 1) -> None:
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        if self._closed:
            return
        now = self._clock()
        if not self._tty and self._last_written_at is None:
            self._write_line(now)  # the start, before this first advance
        self.done += n
        if self._tty:
            if self._last_drawn is None or now - self._last_drawn >= self._min_interval_s:
                self._draw(now)
            return
        step = self._step()
        written_at = self._last_written_at
        if (
            step > self._last_step
            and written_at is not None
            and now - written_at >= self._line_interval_s
        ):
            self._last_step = step
            self._write_line(now)

    def close(self) -> None:
        """Draw the final state and end the line; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        now = self._clock()
        if self._tty:
            self._draw(now)
            self._out.write("\n")
        elif self._last_written != self.done:  # unless the last line says it already
            self._write_line(now)
        self._out.flush()

    def render(self, now: float | None = None) -> str:
        """The progress line, without line ending."""
        now = self._clock() if now is None else now
        shown = min(self.done, self.total)
        # Integer arithmetic: 58/100 must read 58%, not 57% (0.58 * 100 < 58).
        percent = shown * 100 // self.total if self.total else 100
        filled = shown * _BAR_WIDTH // self.total if self.total else _BAR_WIDTH
        bar = "#" * filled + "." * (_BAR_WIDTH - filled)
        elapsed = now - self._started
        rate = self.done / elapsed if elapsed > 0 else None
        rate_text = "--/s" if rate is None else f"{rate:,.0f}/s"
        if rate:
            eta_text = f"eta {format_duration(max(0, self.total - self.done) / rate)}"
        else:
            eta_text = "eta --"
        return (
            f"{self.label}  [{bar}]  {self.done:,}/{self.total:,}  "
            f"{percent}%  {rate_text}  {eta_text}"
        )

    def _step(self) -> int:
        if not self.total:
            return 0
        percent = min(self.done, self.total) * 100 // self.total
        return percent - percent % _STEP_PERCENT

    def _draw(self, now: float) -> None:
        # \x1b[K clears what a longer previous line left (rate and eta change width).
        line = self.render(now)
        self._out.write(f"\r{line}\x1b[K")
        self._out.flush()
        self._last_drawn = now

    def _write_line(self, now: float) -> None:
        self._out.write(self.render(now) + "\n")
        self._out.flush()
        self._last_written = self.done
        self._last_written_at = now
