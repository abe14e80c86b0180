"""bench/quality.py end to end on a few labelled pairs, with the real model, the
guards, the alignment, the verifier and the cross-encoder (every figure it
prints is computed, nothing asserts on their values here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pair_rows import pair_rows

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

PAIRS = [
    # (existing, new, label, split)
    ("User keeps bees.", "I keep bees.", "duplicate", "train"),
    ("User keeps bees.", "User keeps bees in two hives on the shed roof.", "duplicate", "dev"),
    # a quantity that comes with an added detail: the guards alone veto it, the
    # alignment lifts that veto and the verifier may still keep the pair apart
    (
        "The team holds a weekly design review.",
        "The team holds a two-hour weekly design review.",
        "duplicate",
        "train",
    ),
    ("User keeps bees in three hives.", "User keeps bees in two hives.", "distinct", "train"),
    ("User bakes rye bread.", "User bakes spelt bread.", "distinct", "test"),
    ("User cycles to work.", "I cycle to work.", "duplicate", "test"),
    ("User's rent is $900 a month.", "User's rent is €900 a month.", "distinct", "dev"),
]


def test_quality_bench_reports_every_set(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    rows = pair_rows(PAIRS)
    # Two files, each with a test pair: each file's test split is reported too.
    (memory / "pairs.jsonl").write_text("\n".join(json.dumps(r) for r in rows[:5]) + "\n")
    (memory / "more.jsonl").write_text("\n".join(json.dumps(r) for r in rows[5:]) + "\n")
    shipped = tmp_path / "shipped.jsonl"
    shipped.write_text("\n".join(json.dumps(r) for r in rows[:4]) + "\n")
    probes = tmp_path / "probes.jsonl"
    probes.write_text("\n".join(json.dumps(r) for r in rows[3:5]) + "\n")
    out = tmp_path / "quality.json"
    result = subprocess.run(
        [
            sys.executable,
            "bench/quality.py",
            "--no-public",
            "--memory-dir",
            str(memory),
            "--pairs",
            str(shipped),
            "--probes",
            str(probes),
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env={**os.environ, "MEMDEDUP_QDRANT__PATH": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    document = json.loads(out.read_text())
    set_names = [s["name"] for s in document["sets"]]
    assert set_names == [
        "memory-test",
        "memory-test/more",
        "memory-test/pairs",
        "memory-train+dev",
        "shipped",
        "probes",
    ]
    sizes = {s["name"]: s["pairs"] for s in document["sets"]}
    assert sizes == {
        "memory-test": 2,
        "memory-test/more": 1,
        "memory-test/pairs": 1,
        "memory-train+dev": 5,
        "shipped": 4,
        "probes": 2,
    }
    assert "memory-test" in result.stdout
