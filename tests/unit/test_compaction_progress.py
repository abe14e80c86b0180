"""The progress bar of long compaction runs, on a fake clock."""

from __future__ import annotations

import io
import re

import pytest

from consumer.compaction import Progress
from consumer.compaction.progress import format_duration


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class TerminalStream(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_shows_counts_percent_rate_and_eta() -> None:
    clock = FakeClock()
    progress = Progress(5000, "compact", io.StringIO(), clock=clock)
    progress.done = 1234
    clock.now += 1234 / 312

    assert progress.render() == "compact  1,234/5,000  24%  312/s  eta 12s"


def test_before_any_time_has_passed_rate_and_eta_are_unknown() -> None:
    progress = Progress(10, "compact", io.StringIO(), clock=FakeClock())
    assert progress.render().endswith("0/10  0%  --/s  eta --")


def test_off_a_terminal_a_short_run_writes_a_start_and_an_end_line() -> None:
    clock = FakeClock()
    out = io.StringIO()
    with Progress(200, "compact", out, clock=clock) as progress:
        for _ in range(200):
            clock.now += 0.01
            progress.advance()

    lines = out.getvalue().splitlines()
    assert [line.split()[1:3] for line in lines] == [["0/200", "0%"], ["200/200", "100%"]]
    assert "\r" not in out.getvalue()
    assert "\x1b" not in out.getvalue()
    assert lines[-1] == "compact  200/200  100%  100/s  eta 0s"


def test_off_a_terminal_many_updates_write_only_a_few_lines() -> None:
    clock = FakeClock()
    out = io.StringIO()
    with Progress(100_000, "compact", out, clock=clock) as progress:
        for _ in range(100_000):
            clock.now += 0.001  # 100 s in all
            progress.advance()

    # Start, a 10% step at most every 30 s, end.
    lines = out.getvalue().splitlines()
    assert [line.split()[2] for line in lines] == ["0%", "30%", "60%", "90%", "100%"]


def test_off_a_terminal_a_long_run_writes_at_most_a_line_per_ten_percent() -> None:
    clock = FakeClock()
    out = io.StringIO()
    with Progress(1000, "apply", out, line_interval_s=30, clock=clock) as progress:
        for _ in range(1000):
            clock.now += 1.0  # 1000 s in all
            progress.advance()

    lines = out.getvalue().splitlines()
    assert [line.split()[2] for line in lines] == [f"{p}%" for p in range(0, 101, 10)]


def test_off_a_terminal_a_stalled_run_writes_nothing_more() -> None:
    clock = FakeClock()
    out = io.StringIO()
    progress = Progress(100, "apply", out, clock=clock)
    progress.advance(5)
    for _ in range(100):
        clock.now += 60
        progress.advance(0)

    assert len(out.getvalue().splitlines()) == 1


def test_closing_early_writes_where_it_stopped() -> None:
    clock = FakeClock()
    out = io.StringIO()
    progress = Progress(100, "compact", out, clock=clock)
    progress.advance(55)
    clock.now += 1
    progress.advance(3)  # within the line interval: no line
    progress.close()
    progress.close()  # once only

    lines = out.getvalue().splitlines()
    assert [line.split()[1:3] for line in lines] == [["0/100", "0%"], ["58/100", "58%"]]


def test_close_adds_no_line_when_the_last_one_is_current() -> None:
    clock = FakeClock()
    out = io.StringIO()
    progress = Progress(100, "compact", out, clock=clock)
    progress.advance(35)
    clock.now += 31
    progress.advance(65)
    progress.close()

    assert [line.split()[2] for line in out.getvalue().splitlines()] == ["0%", "100%"]


def test_on_a_terminal_it_redraws_one_line_at_most_every_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("TTY_INTERACTIVE", raising=False)
    clock = FakeClock()
    out = TerminalStream()
    progress = Progress(1000, "compact", out, min_interval_s=0.2, clock=clock)
    progress.advance(1)  # first draw
    for _ in range(10):
        clock.now += 0.01
        progress.advance(1)  # within the interval: no redraw
    clock.now += 0.2
    progress.advance(1)
    progress.close()

    text = out.getvalue()
    # One line, redrawn in place: the first advance, none within the interval, the
    # next after it; the final state stays.
    assert "\r" in text
    assert text.count("\n") == 1
    drawn = re.findall(r"compact .*?(\d+)/1,000  \d+%", text)
    assert drawn[:2] == ["1", "12"]
    assert set(drawn) == {"1", "12"}
    assert text.removesuffix("\x1b[?25h").endswith("12/1,000  1%  40/s  eta 25s\n")


def test_more_than_the_total_is_shown_as_counted() -> None:
    out = io.StringIO()
    progress = Progress(10, "compact", out, clock=FakeClock())
    progress.advance(12)
    progress.close()

    line = out.getvalue().splitlines()[-1]
    assert "12/10  100%" in line


def test_an_empty_run_reports_done_on_close() -> None:
    out = io.StringIO()
    Progress(0, "compact", out, clock=FakeClock()).close()
    assert out.getvalue() == "compact  0/0  100%  --/s  eta --\n"


def test_a_dumb_terminal_gets_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    out = TerminalStream()
    with Progress(10, "compact", out, clock=FakeClock()) as progress:
        progress.advance(10)
    assert out.getvalue().splitlines() == [
        "compact  0/10  0%  --/s  eta --",
        "compact  10/10  100%  --/s  eta --",
    ]


def test_a_closed_stream_counts_as_no_terminal() -> None:
    out = TerminalStream()
    progress = Progress(10, "compact", out, tty=False, clock=FakeClock())
    progress.advance(10)
    assert "\r" not in out.getvalue()

    closed = io.StringIO()
    closed.close()
    Progress(10, "compact", closed, clock=FakeClock())  # no error on isatty


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="total"):
        Progress(-1, "compact", io.StringIO())
    progress = Progress(1, "compact", io.StringIO())
    with pytest.raises(ValueError, match="n must be"):
        progress.advance(-1)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (12.4, "12s"), (59.6, "1m00s"), (185, "3m05s"), (7620, "2h07m")],
)
def test_durations_read_short(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
