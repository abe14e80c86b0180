"""Progress of long compaction runs, written to stderr.

On a terminal, a rich progress bar redraws one line in place (at most every
`min_interval_s`). On anything else (a log file, CI) whole lines keep logs
short: one when work starts, one per 10% step but no more often than every
`line_interval_s`, and one at the end. A run shorter than that interval writes
two lines. rich is imported only when a bar is drawn.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Final, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

__all__ = ["Progress", "format_duration"]

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
    """A terminal that can redraw a line (not TERM=dumb, where rich would not)."""
    if os.environ.get("TERM") in {"dumb", "unknown"}:
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _rate_and_eta(done: float, total: float, rate: float | None) -> str:
    """`312/s  eta 12s`, or `--/s  eta --` before anything is known."""
    if not rate:
        return "--/s  eta --" if rate is None else "0/s  eta --"
    return f"{rate:,.0f}/s  eta {format_duration(max(0.0, total - done) / rate)}"


def _percent(done: int, total: int) -> int:
    # Integer arithmetic: 58/100 must read 58%, not 57% (0.58 * 100 < 58).
    return min(done, total) * 100 // total if total else 100


class Progress:
    """`compact  1,234/5,000  24%  312/s  eta 12s`, with a bar on a terminal."""

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
        self._bar: tuple[RichProgress, TaskID] | None = None
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
            bar, _ = self._terminal_bar()
            bar.stop()  # ends the line and shows the cursor again
        elif self._last_written != self.done:  # unless the last line says it already
            self._write_line(now)
        self._out.flush()

    def render(self, now: float | None = None) -> str:
        """The plain progress line, without line ending."""
        return f"{self.label}  {self._figures(self._clock() if now is None else now)}"

    def _figures(self, now: float) -> str:
        """`1,234/5,000  24%  312/s  eta 12s`"""
        elapsed = now - self._started
        rate = self.done / elapsed if elapsed > 0 else None
        return (
            f"{self.done:,}/{self.total:,}  {_percent(self.done, self.total)}%  "
            f"{_rate_and_eta(self.done, self.total, rate)}"
        )

    def _step(self) -> int:
        if not self.total:
            return 0
        percent = _percent(self.done, self.total)
        return percent - percent % _STEP_PERCENT

    def _terminal_bar(self) -> tuple[RichProgress, TaskID]:
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, TextColumn
            from rich.progress import Progress as RichProgress

            bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[figures]}"),  # those of a plain line
                console=Console(file=self._out, force_terminal=True),
                auto_refresh=False,  # drawn from advance(), at most every min_interval_s
                get_time=self._clock,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            # An empty run is complete: its bar is full, as its 100% says.
            task = bar.add_task(self.label, total=max(self.total, 1), figures="")
            bar.start()
            self._bar = (bar, task)
        return self._bar

    def _draw(self, now: float) -> None:
        bar, task = self._terminal_bar()
        completed = min(self.done, self.total) if self.total else 1
        bar.update(task, completed=completed, figures=self._figures(now))
        bar.refresh()
        self._last_drawn = now

    def _write_line(self, now: float) -> None:
        self._out.write(self.render(now) + "\n")
        self._out.flush()
        self._last_written = self.done
        self._last_written_at = now
