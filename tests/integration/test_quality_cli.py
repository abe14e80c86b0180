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


# A distinct pair nothing can keep apart: the texts differ only in case ("Polish", the
# language; "polish", for nails), which normalisation folds, so the exact check skips
# it at every threshold and no band reaches precision 1.0.
CAPITONYM = {
    "existing": "User is taking a Polish class on Tuesday evenings.",
    "new": "User is taking a polish class on Tuesday evenings.",
    "label": "distinct",
    "namespace": "preferences",
    "category": "capitonym",
}


def write_split_file(path: Path) -> dict[str, int]:
    """A few groups of bench/pairs/memory/life.jsonl and the capitonym pair, each
    split assigned afresh from its group (tools/split_pairs.py's rule); returns pairs
    per split."""
    from consumer.quality.pairs import split_of

    rows = [
        json.loads(line)
        for line in (REPO / "bench/pairs/memory/life.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    ]
    groups = sorted({row["group"] for row in rows})
    chosen: set[str] = set()
    for split, count in (("train", 6), ("dev", 3), ("test", 5)):
        chosen.update([g for g in groups if split_of(g) == split][:count])
    hard_group = next(f"hard-{i}" for i in range(100) if split_of(f"hard-{i}") == "train")
    rows = [row for row in rows if row["group"] in chosen] + [{**CAPITONYM, "group": hard_group}]
    counts = {"train": 0, "dev": 0, "test": 0}
    for row in rows:
        row["split"] = split_of(row["group"])
        counts[row["split"]] += 1
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return counts


def test_calibrate_split_file_reports_test_figures_and_refuses_an_unreachable_target(
    tmp_path: Path,
) -> None:
    pairs = tmp_path / "split.jsonl"
    counts = write_split_file(pairs)
    assert counts["test"] >= 20
    data = tmp_path / "data"
    calibration_pairs = counts["train"] + counts["dev"]

    result = run_cli("calibrate", str(pairs), "--target-precision", "0.5", "--json", data_dir=data)
    assert result.returncode == 0, result.stderr[-3000:]
    document = json.loads(result.stdout)
    assert document["calibrated_on"] == "train+dev"
    assert document["pairs"] == {
        "calibration": calibration_pairs,
        "test": counts["test"],
        "left_out": 0,
    }
    overall = document["groups"]["(all)"]
    assert overall["refused"] is None
    assert overall["proposed"]["metrics"]["n"] == calibration_pairs
    test = overall["test"]
    assert test["pairs"] == counts["test"]
    for key in ("configured", "proposed"):
        figures = test[key]
        assert figures["n"] == counts["test"]
        for name in ("precision", "recall", "f1", "false_merge_rate"):
            assert figures[name] is None or 0.0 <= figures[name] <= 1.0
    assert (
        sum(g["test"]["pairs"] for n, g in document["groups"].items() if n != "(all)")
        == (counts["test"])
    )

    png = tmp_path / "curve.png"
    text = run_cli(
        "calibrate", str(pairs), "--target-precision", "0.5", "--png", str(png), data_dir=data
    )
    assert text.returncode == 0, text.stderr[-3000:]
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert f"precision/recall curve written to {png}" in text.stdout
    assert (
        f"calibrated on: train+dev ({calibration_pairs} pairs); "
        f"test: {counts['test']} held-out pairs" in text.stdout
    )
    assert "P / R / F1 / FMR proposed, test" in text.stdout

    refused = run_cli("calibrate", str(pairs), "--target-precision", "1.0", data_dir=data)
    assert refused.returncode == 3, refused.stderr[-3000:]
    assert "memdedup calibrate: default bands not calibrated: target 1 not reachable" in (
        refused.stderr
    )
    assert "# default bands NOT calibrated, kept as configured: target 1 not" in refused.stdout
    assert "  duplicate_threshold: 0.96  # unchanged" in refused.stdout
    assert "  merge_threshold: 0.77  # unchanged" in refused.stdout


def test_calibrate_without_splits_says_the_figures_are_in_sample(tmp_path: Path) -> None:
    result = run_cli(
        "calibrate", PAIRS, "--target-precision", "0.97", "--json", data_dir=tmp_path / "data"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    document = json.loads(result.stdout)
    assert document["calibrated_on"] == "all (in-sample)"
    assert document["in_sample"] is True
    assert "tools/split_pairs.py" in document["advice"]
    assert all(g["test"] is None for g in document["groups"].values())
    assert "in-sample" in document["yaml"].splitlines()[0]
