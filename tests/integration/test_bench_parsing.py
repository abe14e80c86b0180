"""bench/parsing.py end to end on a few texts with the real pipeline (figures are
computed, not asserted on: timings belong to the benchmark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.pair_rows import write_duplicates
from tests.scripts import import_script

pytestmark = pytest.mark.integration


def _bench() -> Any:
    return import_script("parsing", "bench")


def test_the_parse_bench_times_the_tuning_texts_only(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    write_duplicates(
        pairs / "a.jsonl",
        [
            ("Lives in Lyon.", "User lives in Lyon.", "train"),
            ("Gym Mon, Wed, Fri", "User goes to the gym on Monday, Wednesday and Friday.", "dev"),
            ("A test text the bench must not read.", "Nor this one.", "test"),
        ],
    )
    bench = _bench()
    assert bench.tuning_texts(pairs, 10) == [
        "Lives in Lyon.",
        "User lives in Lyon.",
        "Gym Mon, Wed, Fri",
        "User goes to the gym on Monday, Wednesday and Friday.",
    ]
    out = tmp_path / "parse.json"
    assert bench.main(["--pairs-dir", str(pairs), "--repeats", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["texts"] == 4
    assert result["texts_parsed_otherwise"] == 0
    for figure in ("spacy_as_shipped_ms", "aligner_pipeline_ms", "prime_ms", "one_at_a_time_ms"):
        assert result[figure] > 0


def test_the_parse_bench_says_where_its_texts_are_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _bench().main(["--pairs-dir", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "no train or dev pair" in capsys.readouterr().err
