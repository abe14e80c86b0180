"""Terminal tables for people, drawn by rich.

One row is one line and every cell is whole: columns never wrap nor crop (ids are
copied from these tables into other commands), so a table wider than the terminal
is as wide as it needs to be, as a `grep` of it expects. Widths count what a
terminal shows (wide characters take two columns). Bold headers and colour only
on a terminal that wants them (NO_COLOR is honoured); lines carry no trailing
spaces. Machine formats (--json) do not come through here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Final, TextIO

from rich import box
from rich.console import Console
from rich.table import Table

__all__ = ["is_terminal", "render_table"]

# Wider than any table: the table, not the console, sets the width.
_UNBOUNDED: Final = 100_000
# rich's SIMPLE_HEAD in ASCII: a line of dashes under the header, nothing else.
_HEADER_RULE: Final = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)


def is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def render_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    rule: bool = False,
    right: Collection[str] = (),
    color: bool = False,
) -> str:
    """The table's lines, joined by newlines (none at the end). Columns are two
    spaces apart; `rule` draws a line under the header; columns named in `right`
    are right-aligned."""
    table = Table(
        box=_HEADER_RULE if rule else None,
        show_edge=False,
        pad_edge=False,
        # Two spaces between columns: padding alone, or one each side of the rule's gap.
        padding=(0, 1) if rule else (0, 2, 0, 0),
        collapse_padding=True,
        header_style="bold" if color else "",
    )
    for header in headers:
        table.add_column(header, no_wrap=True, justify="right" if header in right else "left")
    for row in rows:
        table.add_row(*row)
    console = Console(
        width=_UNBOUNDED,
        force_terminal=color,
        color_system="auto" if color else None,
        highlight=False,
    )
    with console.capture() as capture:
        console.print(table)
    return "\n".join(line.rstrip() for line in capture.get().splitlines())
