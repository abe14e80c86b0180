"""Labelled pair rows for tests that write pair files: a pair's split is fixed by
a hash of its group's name (`split_of`), so each pair gets a group of its own
that falls in the split asked."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from consumer.quality.pairs import split_of


def groups_in(split: str) -> Iterator[str]:
    """Group names that `split_of` puts in `split`."""
    return (g for g in (f"g{i}" for i in itertools.count()) if split_of(g) == split)


def pair_rows(pairs: Iterable[tuple[str, str, str, str]]) -> list[dict[str, str]]:
    """(existing, new, label, split) as pair-file rows, each in a group of its own."""
    groups: dict[str, Iterator[str]] = {}
    rows = []
    for existing, new, label, split in pairs:
        group = next(groups.setdefault(split, groups_in(split)))
        rows.append(
            {"existing": existing, "new": new, "label": label, "split": split, "group": group}
        )
    return rows


def write_duplicates(path: Path, rows: Iterable[tuple[str, str, str]]) -> Path:
    """A pair file of (existing, new, split) rows, each labelled duplicate."""
    pairs = [(existing, new, "duplicate", split) for existing, new, split in rows]
    path.write_text("\n".join(json.dumps(r) for r in pair_rows(pairs)) + "\n", encoding="utf-8")
    return path
