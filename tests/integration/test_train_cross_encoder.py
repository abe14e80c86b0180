"""tools/train_cross_encoder.py: pairs written for another machine read back the
same, and a distilled student trains from teachers (tiny data, CPU, 1 epoch)."""

from __future__ import annotations

import gzip
import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import import_script

pytestmark = pytest.mark.integration


def _tool() -> Any:
    return import_script("train_cross_encoder", "tools")


def _synthetic(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text(
        "".join(
            json.dumps({"existing": a, "new": b, "label": label}) + "\n" for a, b, label in rows
        ),
        encoding="utf-8",
    )
    return path


def _prepare(tool: Any, tmp_path: Path) -> Path:
    first = _synthetic(
        tmp_path / "s0.jsonl",
        [
            ("User likes tea.", "I like tea.", "duplicate"),
            ("User lives in Oslo.", "User lives in Bergen.", "distinct"),
        ],
    )
    second = _synthetic(
        tmp_path / "s1.jsonl",
        [
            ("User owns a bike.", "I own a bike.", "duplicate"),
            ("User walks to work.", "User doesn't walk to work.", "distinct"),
        ],
    )
    out = tmp_path / "pairs.json.gz"
    assert tool.main(["--synth", str(first), str(second), "--prepare", str(out)]) == 0
    return out


def _write_prepared(path: Path, stats: Any, examples: list[Any], dev: list[Any]) -> Path:
    """A few pairs in the format `--prepare` writes (a run small enough for a test)."""
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(
            {
                "stats": stats,
                "examples": [[e.a, e.b, e.label, e.source] for e in examples],
                "dev": [[e.a, e.b, e.label, e.source] for e in dev],
            },
            handle,
        )
    return path


def test_prepared_pairs_read_back_as_written(tmp_path: Path) -> None:
    tool = _tool()
    out = _prepare(tool, tmp_path)
    examples, dev, stats = tool._load_prepared(out)
    with gzip.open(out, "rt", encoding="utf-8") as handle:
        raw = json.load(handle)
    assert [[e.a, e.b, e.label, e.source] for e in examples] == raw["examples"]
    # Each synthetic file keeps its own source (a teacher trains on one of them).
    assert stats["by_source"]["synthetic-0"] == {"pairs": 2, "duplicate": 1}
    assert stats["by_source"]["synthetic-1"] == {"pairs": 2, "duplicate": 1}
    expected = (tool.normalize_content("User likes tea."), tool.normalize_content("I like tea."))
    assert expected in {(e.a, e.b) for e in examples}
    assert dev
    assert all(e.source == "memory-dev" for e in dev)


def test_teachers_then_a_student_on_their_mean(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    tool = _tool()
    prepared = _prepare(tool, tmp_path)
    examples, dev, stats = tool._load_prepared(prepared)
    synthetic = [e for e in examples if e.source.startswith("synthetic-")]
    real = [e for e in examples if not e.source.startswith("synthetic-")][:4]
    small = _write_prepared(tmp_path / "small.json.gz", stats, synthetic + real, dev[:8])
    run = tmp_path / "run"
    code = tool.main(
        [
            "--prepared", str(small), "--teachers", "2", "--epochs", "1",
            "--out-dir", str(run), "--no-export", "--threads", "1",
        ]
    )  # fmt: skip
    assert code == 0
    for name in ("teacher-0", "teacher-1", "student"):
        metrics = json.loads((run / name / "metrics.json").read_text(encoding="utf-8"))
        assert metrics["best_epoch"] == 1
        assert (run / name / "epoch-1" / "model.safetensors").is_file()
    # Teacher k saw the real pairs and the k-th synthetic file only.
    log = (run / "teacher-0" / "train.log").read_text(encoding="utf-8")
    assert f"{len(real) + 2} pairs" in log
    assert f"{len(real) + 4} pairs" in (run / "student" / "train.log").read_text(encoding="utf-8")


def test_student_targets_mix_label_and_teachers(tmp_path: Path) -> None:
    """With one 'teacher' saying 0.5 everywhere, a target is half the label's weight away."""
    tool = _tool()

    class Args:
        device = "cpu"
        max_length = 32
        hard_weight = 0.25

    examples = [tool.Example("a", "b", 1.0, "x"), tool.Example("c", "d", 0.0, "x")]
    original = tool.both_orders

    def halves(model: Any, tokenizer: Any, items: Any, max_length: int) -> list[float]:
        return [0.5] * len(items)

    class Loaded:
        def to(self, device: Any) -> Loaded:
            return self

    auto = importlib.import_module("transformers")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tool, "both_orders", halves)
        patch.setattr(
            auto.AutoModelForSequenceClassification,
            "from_pretrained",
            staticmethod(lambda *a, **k: Loaded()),
        )
        patch.setattr(auto.AutoTokenizer, "from_pretrained", staticmethod(lambda *a, **k: None))
        targets = tool.soft_targets(Args(), [tmp_path, tmp_path], examples)
    assert tool.both_orders is original
    assert targets == pytest.approx([0.25 * 1 + 0.75 * 0.5, 0.75 * 0.5])


def test_a_student_learns_what_the_shipped_model_says(tmp_path: Path) -> None:
    """`--teacher-model`: the target is the label's share plus the rest of the
    exported model's P(same fact) as the service reads it, the mean of both orders."""
    tool = _tool()
    from consumer.embedding.cross_encoder import DEFAULT_MODEL_DIR, OnnxPairScorer

    examples = [
        tool.Example("user likes tea", "i like tea", 1.0, "x"),
        tool.Example("user lives in oslo", "user lives in bergen", 0.0, "x"),
    ]

    class Args:
        threads = 1
        hard_weight = 0.25

    targets = tool.exported_model_targets(Args(), DEFAULT_MODEL_DIR, examples)
    scorer = OnnxPairScorer.load()
    for example, target in zip(examples, targets, strict=True):
        forward, backward = scorer.probabilities([(example.a, example.b), (example.b, example.a)])
        expected = 0.25 * example.label + 0.75 * (forward + backward) / 2
        # The service's scores, not batched ones: the int8 activations' scales
        # follow the batch (the first pair's P is 0.0005 apart in a batch of 64;
        # up to 0.03 seen for other pairs).
        assert target == pytest.approx(expected, abs=1e-9)
    assert targets[0] > 0.5 > targets[1]


def test_a_student_cut_to_its_first_layers_trains_and_saves_them(tmp_path: Path) -> None:
    """`--base` an exported model and `--layers 2`: the shipped model's first two
    layers and head, trained and saved as a model of two layers."""
    pytest.importorskip("transformers")
    tool = _tool()
    from consumer.embedding.cross_encoder import DEFAULT_MODEL_DIR

    prepared = _prepare(tool, tmp_path)
    examples, dev, stats = tool._load_prepared(prepared)
    small = _write_prepared(tmp_path / "small.json.gz", stats, examples[:6], dev[:8])
    run = tmp_path / "run"
    code = tool.main(
        [
            "--prepared", str(small), "--layers", "2", "--epochs", "1",
            "--out-dir", str(run), "--no-export", "--threads", "1",
            "--base", str(DEFAULT_MODEL_DIR),
        ]
    )  # fmt: skip
    assert code == 0
    config = json.loads((run / "epoch-1" / "config.json").read_text(encoding="utf-8"))
    assert config["num_hidden_layers"] == 2
    log = (run / "train.log").read_text(encoding="utf-8")
    assert "rebuilt from its exported int8 weights" in log
    assert "cut to its first 2 layers" in log


def test_the_shipped_model_rebuilt_for_torch_scores_as_it_does(tmp_path: Path) -> None:
    """`--base` naming an exported model: its int8 weights, dequantized, give a
    torch model that agrees with it up to the int8 activations' rounding."""
    pytest.importorskip("transformers")
    tool = _tool()
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from consumer.embedding.cross_encoder import DEFAULT_MODEL_DIR, OnnxPairScorer

    rebuilt = tool.rebuilt_from_export(DEFAULT_MODEL_DIR, tmp_path / "base")
    model = AutoModelForSequenceClassification.from_pretrained(
        str(rebuilt), attn_implementation="eager"
    ).eval()
    pairs = [(e.a, e.b) for e in tool.dev_examples()[:64]]
    torch_scores = tool.score_torch(model, AutoTokenizer.from_pretrained(str(rebuilt)), pairs, 96)
    shipped = OnnxPairScorer.load().probabilities(pairs)
    differences = [abs(a - b) for a, b in zip(torch_scores, shipped, strict=True)]
    # A head left at random, or one weight matrix not transposed, is ~0.3 away on average.
    assert sum(differences) / len(differences) < 0.05
    assert {s >= 0.5 for s in shipped} == {True, False}


def test_a_student_has_one_kind_of_teacher(capsys: pytest.CaptureFixture[str]) -> None:
    tool = _tool()
    with pytest.raises(SystemExit) as exit_:
        tool.main(["--teacher-model", "consumer/data/cross_encoder", "--teachers", "2"])
    assert exit_.value.code == 2
    assert "--teacher-model and --teachers" in capsys.readouterr().err
