"""The demo's table: a re-emitted decision shows where its copy was read and is
counted apart from the memories."""

from __future__ import annotations

from consumer.cli.demo import OutputRow, mark_copies, render_table, summary


def row(event_id: str, outcome: str, offset: int, partition: int = 2) -> OutputRow:
    return OutputRow("memory.accepted", offset, partition, event_id, "acme/p", outcome, "", "", "")


def test_a_copy_takes_its_own_input_position_and_is_counted_apart() -> None:
    rows = [row("e1", "accepted", 0), row("e2", "accepted", 1), row("e2", "accepted", 1)]
    inputs = {"e1": [(2, 0)], "e2": [(2, 1), (2, 6)]}
    marked = mark_copies(rows, inputs)
    assert [(r.offset_in, copy) for r, copy in marked] == [(0, False), (1, False), (6, True)]
    assert summary(marked) == "accepted: 2, re-emitted: 1"
    table = render_table(marked).splitlines()
    assert table[-1].startswith("p2@6 ")
    assert "accepted (re-emitted)" in table[-1]


def test_dead_letters_and_distinct_outcomes_are_never_copies() -> None:
    rows = [row("e1", "accepted", 0), row("e1", "dlq:conflicting_event_id", 7)]
    marked = mark_copies(rows, {"e1": [(2, 0), (2, 7)]})
    assert [copy for _, copy in marked] == [False, False]
    assert summary(marked) == "accepted: 1, dlq:conflicting_event_id: 1"


def test_without_input_positions_a_copy_keeps_the_recorded_one() -> None:
    marked = mark_copies([row("e1", "merged", 3), row("e1", "merged", 3)])
    assert [(r.offset_in, copy) for r, copy in marked] == [(3, False), (3, True)]


def test_columns_line_up_by_display_width_and_only_a_terminal_gets_colour() -> None:
    from rich.cells import cell_len

    wide = OutputRow("memory.accepted", 0, 2, "事件-1", "acme/p", "accepted", "new", "m1", "")
    marked = mark_copies([wide, row("e2", "merged", 1)])
    header, rule, first, second = render_table(marked).splitlines()
    assert set(rule) == {"-"}
    # The scope starts at the same display column on every line, after a wide event id.
    column = cell_len(header[: header.index("scope")])
    assert cell_len(first[: first.index("acme/p")]) == column
    assert cell_len(second[: second.index("acme/p")]) == column
    assert all(line == line.rstrip() for line in (header, rule, first, second))
    assert "\x1b[" not in render_table(marked)
    assert "\x1b[" in render_table(marked, color=True)
