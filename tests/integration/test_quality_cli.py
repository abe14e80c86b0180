"""`memdedup evaluate` on the shipped memory pairs, with the real model and guards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PAIRS = "consumer/data/memory_pairs.jsonl"


def run_cli(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "consumer.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        # The ONNX export (default backend) is cached under the data directory.
        env={**os.environ, "MEMDEDUP_QDRANT__PATH": str(data_dir), "HF_HUB_OFFLINE": "1"},
        check=False,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    result = run_cli("evaluate", PAIRS, "--json", data_dir=tmp_path_factory.mktemp("data"))
    assert result.returncode == 0, result.stderr[-3000:]
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_evaluate_json_structure(report: dict[str, Any]) -> None:
    assert report["guards"] is True
    assert report["verifier"].startswith("local")
    assert report["model"]["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert report["bands"]["default"] == {"duplicate_threshold": 0.96, "merge_threshold": 0.77}
    overall = report["overall"]
    assert overall["n"] >= 300
    assert overall["n"] == overall["tp"] + overall["fp"] + overall["fn"] + overall["tn"]
    assert overall["duplicates"] == overall["tp"] + overall["fn"]
    for key in ("precision", "recall", "f1", "false_merge_rate"):
        assert 0.0 <= overall[key] <= 1.0
    assert set(report["by_namespace"]) == {"preferences", "biography", "decisions", "schedule"}
    assert set(report["by_category"]) == {
        "paraphrase",
        "near_exact",
        "related_distinct",
        "role_swap",
        "number_change",
        "negation",
        "unrelated",
    }
    assert sum(c["n"] for c in report["by_category"].values()) == overall["n"]
    for mistake in report["mistakes"]:
        assert mistake["mistake"] in ("false_merge", "missed_duplicate")
        assert len(mistake["existing_hash"]) == len(mistake["new_hash"]) == 12
        assert "existing" not in mistake  # texts only with --show-text
    # Exact repeats in the set are always caught, unrelated facts never merged.
    assert report["by_category"]["unrelated"]["fp"] == 0


@pytest.mark.parametrize("category", ["role_swap", "number_change", "negation"])
def test_no_false_merges_on_adversarial_pairs_with_guards(
    report: dict[str, Any], category: str
) -> None:
    counts = report["by_category"][category]
    assert counts["n"] >= 30
    assert counts["fp"] == 0, [m for m in report["mistakes"] if m["category"] == category]


def test_bad_pairs_file_exits_2_naming_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "pairs.jsonl"
    bad.write_text(
        '{"existing": "a", "new": "b", "label": "distinct"}\n{"existing": "a", "new": "b"}\n',
        encoding="utf-8",
    )
    result = run_cli("evaluate", str(bad), data_dir=tmp_path / "data")
    assert result.returncode == 2
    assert f"{bad}:2: `label` must be" in result.stderr
    missing = run_cli(
        "calibrate",
        str(tmp_path / "nope.jsonl"),
        "--target-precision",
        "0.97",
        data_dir=tmp_path / "data",
    )
    assert missing.returncode == 2
    assert "no such file" in missing.stderr
