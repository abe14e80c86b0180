"""The shipped labelled pair files keep the protocol bench/pairs/README.md states."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from consumer.quality.pairs import SPLITS, load_pairs, split_of

PAIR_DIR = Path(__file__).resolve().parents[2] / "bench" / "pairs" / "memory"
PAIR_FILES = sorted(PAIR_DIR.glob("*.jsonl"))


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_there_are_pair_files() -> None:
    assert PAIR_FILES, f"no *.jsonl under {PAIR_DIR}"


@pytest.mark.parametrize("path", PAIR_FILES, ids=lambda p: p.name)
def test_every_pair_has_the_split_of_its_group(path: Path) -> None:
    rows = _rows(path)
    assert all(row["split"] == split_of(str(row["group"])) for row in rows)
    # load_pairs enforces it too: a moved pair makes the file fail to load.
    assert len(load_pairs(path)) == len(rows)
    assert set(Counter(row["split"] for row in rows)) == set(SPLITS)


def test_ids_are_unique_and_no_text_is_shared_by_two_groups() -> None:
    rows = [row for path in PAIR_FILES for row in _rows(path)]
    ids = Counter(row["id"] for row in rows)
    assert [i for i, n in ids.items() if n > 1] == []
    groups_of: dict[str, set[object]] = {}
    for row in rows:
        for side in ("existing", "new"):
            text = " ".join(str(row[side]).lower().split())
            groups_of.setdefault(text, set()).add(row["group"])
    leaks = {text: groups for text, groups in groups_of.items() if len(groups) > 1}
    assert leaks == {}
