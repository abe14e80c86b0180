"""Offline evaluation of the int8 cross-encoder verifier, alone and combined with the pipeline.

Usage::

    python tools/eval_cross_encoder.py --model-dir /tmp/ce/model \\
        [--limit 1500] [--both-orders] [--json /tmp/ce/eval.json] [--markdown FILE]

Sets (the loaders and the pipeline are those of ``bench/quality.py``): the memory
pairs' frozen **test** split, **dev** split (held out from the cross-encoder's
training) and **train** split (in its training data), the shipped pairs (in the
training data too), PAWS-Wiki dev (a tuning split, never trained on), PAWS-Wiki
test and MRPC test (``--limit`` pairs sampled with seed 0, as bench/quality.py does).

Scores: cosine of the configured embedder (onnx-fp32 all-MiniLM-L6-v2), the
cross-encoder's P(same fact) (``tools/train_cross_encoder.py``; ``--variant``, int8
by default) on ``normalize_content`` of both texts in the order (existing, new), or
the mean of both orders with ``--both-orders``; AUC of both, CE precision / recall
at the thresholds of the selection split.

Decisions compared (predicted duplicate = skipped or merged):

* ``cosine``: cosine >= the default merge threshold;
* ``today's pipeline``: ``decide_pair`` with the defaults (bands, guards, parse
  alignment, the local GBM verifier);
* ``CE alone``: P >= the selection split's best-F1 threshold;
* ``(a)``: the pipeline with the cross-encoder instead of the GBM verifier as the
  band's veto (veto when P < t_a);
* ``(b)``: (a), and a rescue: a pair with cosine in [low, merge threshold) that no
  guard and no alignment check vetoes is merged when P >= t_b;
* ``(c)``: today's pipeline, and an extra veto when P < t_c;
* ``(d)``: (c), and the rescue of (b) (P >= t_d >= t_c).

Every threshold is chosen on the memory split(s) of ``--choose-on`` (``dev``: the
only split the cross-encoder never saw; ``train+dev``), never on a test split: for
each precision level (``--min-precision`` and 0.97) the best F1 whose precision on
the selection split reaches the level. The rule's pipeline part is rebuilt from its
parts (exact, bands, guards, alignment, verifier) and checked against
``decide_pair`` pair by pair. Per-kind counts on memory dev / test are printed for
the rules named by ``--kinds-for``.

Measured on the 2-core machine (shared, load 3-5): 2-3 min for the default sets
(embedding ~1 min, CE int8 ~1 min for ~6,400 pairs in one order, parses ~20 s).
The cross-encoder scores one pair a run, as the service does (batched, an int8
model's P moves with the pairs beside it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

REPO_ROOT = Path(__file__).resolve().parents[1]
for path in (REPO_ROOT, REPO_ROOT / "bench", REPO_ROOT / "tools"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import quality as bq  # noqa: E402  (bench/quality.py)
from train_cross_encoder import OnnxScorer, normalize_content  # noqa: E402

from consumer.domain.alignment import PairAligner  # noqa: E402
from consumer.domain.verifier import LocalVerifier, Verdict, build_verifier  # noqa: E402
from consumer.quality.evaluate import policy_from_settings  # noqa: E402
from consumer.quality.pairs import load_pairs  # noqa: E402
from consumer.quality.rule import decide_pair, is_exact, pair_veto  # noqa: E402
from consumer.settings import load_settings  # noqa: E402

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


MEMORY_DIR: Final = bq.MEMORY_PAIRS_DIR
GRID: Final = np.round(np.arange(0.01, 1.0, 0.01), 2)
TARGETS: Final = (0.95, 0.97)


@dataclass
class SetData:
    name: str
    pairs: list[Any]
    labels: BoolArray
    cosine: FloatArray
    ce: FloatArray
    exact: BoolArray
    guard_veto: BoolArray
    align_veto: BoolArray
    gbm_veto: BoolArray
    equivalent: BoolArray
    detail_added: BoolArray
    pipeline: BoolArray  # decide_pair with today's defaults
    pipeline_skipped: BoolArray
    kinds: list[str]


# --------------------------------------------------------------------- metrics


def prf(pred: BoolArray, labels: BoolArray) -> dict[str, float | int | None]:
    tp = int(np.sum(pred & labels))
    fp = int(np.sum(pred & ~labels))
    fn = int(np.sum(~pred & labels))
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f = 2 * p * r / (p + r) if p and r else (0.0 if p is not None and r is not None else None)
    return {"precision": p, "recall": r, "f1": f, "fp": fp, "tp": tp, "fn": fn}


def auc(scores: FloatArray, labels: BoolArray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores))


def oracle_best_f1(scores: FloatArray, labels: BoolArray) -> tuple[float, float]:
    best = (0.0, 1.0)
    for t in GRID:
        f = prf(scores >= t, labels)["f1"] or 0.0
        if f > best[0]:
            best = (float(f), float(t))
    return best


def choose(
    candidates: Sequence[tuple[Any, BoolArray]], labels: BoolArray, min_precision: float
) -> tuple[Any, dict[str, Any]]:
    """The parameter whose prediction has the best F1 among those with precision >=
    `min_precision` (ties: the higher recall, then the first), else the best F1."""

    def key(item: tuple[Any, BoolArray]) -> tuple[float, float]:
        m = prf(item[1], labels)
        return (m["f1"] or 0.0, m["recall"] or 0.0)

    ok = [c for c in candidates if (prf(c[1], labels)["precision"] or 0.0) >= min_precision]
    pool = ok or list(candidates)
    param, pred = max(pool, key=key)
    return param, {"met_min_precision": bool(ok), **prf(pred, labels)}


# ---------------------------------------------------------------- the pipeline


class CeJudge:
    """A PairJudge backed by precomputed cross-encoder probabilities."""

    def __init__(self, scores: dict[tuple[str, str], float], threshold: float) -> None:
        self.scores = scores
        self.threshold = threshold

    def judge(self, existing: str, new: str, similarity: float) -> Any:
        p = self.scores[(normalize_content(existing), normalize_content(new))]
        return Verdict(p >= self.threshold, p, "cross-encoder", f"p={p:.3f}")


def build_set(
    name: str,
    pairs: list[Any],
    cosine: FloatArray,
    ce: FloatArray,
    bands: Any,
    verifier: Any,
    aligner: Any,
) -> SetData:
    n = len(pairs)
    exact = np.zeros(n, dtype=np.bool_)
    guard = np.zeros(n, dtype=np.bool_)
    align = np.zeros(n, dtype=np.bool_)
    gbm = np.zeros(n, dtype=np.bool_)
    equivalent = np.zeros(n, dtype=np.bool_)
    detail = np.zeros(n, dtype=np.bool_)
    pipeline = np.zeros(n, dtype=np.bool_)
    skipped = np.zeros(n, dtype=np.bool_)
    aligner.prime([t for p in pairs for t in (p.existing.strip(), p.new)])
    for i, (pair, s) in enumerate(zip(pairs, cosine, strict=True)):
        existing = pair.existing.strip()
        exact[i] = is_exact(pair.existing, pair.new)
        guard[i] = pair_veto(pair.existing, pair.new, s, guards=True) is not None
        alignment = aligner.check(existing, pair.new)
        align[i] = alignment.veto is not None
        equivalent[i] = alignment.equivalent
        detail[i] = alignment.detail_added
        gbm[i] = not verifier.judge(existing, pair.new, float(s)).same_fact
        decision = decide_pair(
            pair.existing,
            pair.new,
            float(s),
            bands,
            guards=True,
            verifier=verifier,
            aligner=aligner,
        )
        pipeline[i] = decision.duplicate
        skipped[i] = decision.decision.value == "skipped"
    data = SetData(
        name=name,
        pairs=pairs,
        labels=np.array([p.duplicate for p in pairs], dtype=np.bool_),
        cosine=cosine,
        ce=ce,
        exact=exact,
        guard_veto=guard,
        align_veto=align,
        gbm_veto=gbm,
        equivalent=equivalent,
        detail_added=detail,
        pipeline=pipeline,
        pipeline_skipped=skipped,
        kinds=[f"{p.category or '-'} ({p.label})" for p in pairs],
    )
    # The rule rebuilt from its parts must be the engine's rule.
    rebuilt, _ = combine(data, bands, veto=data.gbm_veto)
    mismatch = int(np.sum(rebuilt != pipeline))
    if mismatch:
        raise SystemExit(f"{name}: rebuilt pipeline differs from decide_pair on {mismatch} pairs")
    return data


def concat(name: str, parts: Sequence[SetData]) -> SetData:
    def cat(attr: str) -> Any:
        return np.concatenate([getattr(p, attr) for p in parts])

    return SetData(
        name=name,
        pairs=[x for p in parts for x in p.pairs],
        labels=cat("labels"),
        cosine=cat("cosine"),
        ce=cat("ce"),
        exact=cat("exact"),
        guard_veto=cat("guard_veto"),
        align_veto=cat("align_veto"),
        gbm_veto=cat("gbm_veto"),
        equivalent=cat("equivalent"),
        detail_added=cat("detail_added"),
        pipeline=cat("pipeline"),
        pipeline_skipped=cat("pipeline_skipped"),
        kinds=[k for p in parts for k in p.kinds],
    )


def combine(
    d: SetData,
    bands: Any,
    *,
    veto: BoolArray,
    rescue: BoolArray | None = None,
) -> tuple[BoolArray, BoolArray]:
    """(predicted duplicate, skipped) for the band rule with `veto` as the verifier's
    veto; `rescue`: pairs below the merge band merged anyway."""
    reached = d.cosine >= bands.merge_threshold
    allowed = reached & ~d.guard_veto & ~d.align_veto & ~veto
    if bands.detail_policy == "keep_both":
        allowed &= ~d.detail_added
    skipped = (allowed & (d.cosine >= bands.duplicate_threshold) & d.equivalent) | d.exact
    dup = d.exact | allowed
    if rescue is not None:
        dup = dup | rescue
    return dup, skipped


def rescue_mask(d: SetData, bands: Any, low: float, t: float) -> BoolArray:
    """Below the merge band, at or above `low`, no guard or alignment veto, P >= t."""
    band = (d.cosine >= low) & (d.cosine < bands.merge_threshold)
    mask: BoolArray = band & ~d.guard_veto & ~d.align_veto & (d.ce >= t)
    return mask


# ---------------------------------------------------------------------- report


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def hard_false_merges(d: SetData, pred: BoolArray) -> int:
    return sum(
        1
        for k, p, y in zip(d.kinds, pred, d.labels, strict=True)
        if p and not y and k.split(" ")[0] in bq.HARD_DISTINCT_KINDS
    )


def distinct_skipped(d: SetData, skipped: BoolArray) -> int:
    return int(np.sum(skipped & ~d.labels & ~d.exact))


async def cosine_scores(sets: dict[str, list[Any]]) -> dict[str, FloatArray]:
    settings = load_settings()
    scores: dict[str, FloatArray] = (await bq.embed_all(sets, settings))[0]
    return scores


def ce_scores(
    scorer: OnnxScorer, pairs: Sequence[Any], both_orders: bool
) -> tuple[FloatArray, FloatArray | None]:
    # One pair a run, as the service scores: an int8 model's activation scales
    # follow the batch, which moves a batched pair's P by up to 0.10.
    forward = [(normalize_content(p.existing), normalize_content(p.new)) for p in pairs]
    one = np.asarray(scorer.score(forward, batch=1), dtype=np.float64)
    if not both_orders:
        return one, None
    other = np.asarray(scorer.score([(b, a) for a, b in forward], batch=1), dtype=np.float64)
    return (one + other) / 2, one


def latency(scorer: OnnxScorer, pairs: Sequence[tuple[str, str]]) -> dict[str, float]:
    """ms per pair scored one at a time (what a band candidate costs) and batched."""
    single = []
    for pair in pairs[:5]:
        scorer.score([pair])  # warm-up
    for pair in pairs:
        started = time.perf_counter()
        scorer.score([pair])
        single.append((time.perf_counter() - started) * 1e3)
    started = time.perf_counter()
    scorer.score(list(pairs), batch=32)
    batched = (time.perf_counter() - started) * 1e3 / len(pairs)
    single.sort()
    return {
        "single_mean_ms": round(statistics.fmean(single), 2),
        "single_p50_ms": round(single[len(single) // 2], 2),
        "single_p99_ms": round(single[int(len(single) * 0.99) - 1], 2),
        "batched32_ms_per_pair": round(batched, 2),
        "pairs": len(pairs),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, default=Path("/tmp/ce/model"))  # noqa: S108
    parser.add_argument(
        "--variant",
        default="int8",
        choices=("int8", "int8-all", "int8-emb", "int8-all-emb", "fp32"),
    )
    parser.add_argument("--max-length", type=int, default=96)
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")
    parser.add_argument("--limit", type=int, default=1500, help="pairs per public set (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--datasets-dir", type=Path, default=bq.DEFAULT_DATASETS_DIR)
    parser.add_argument("--both-orders", action="store_true", help="mean of both text orders")
    parser.add_argument(
        "--min-precision", type=float, default=0.95, help="dev precision a chosen rule must reach"
    )
    parser.add_argument(
        "--choose-on",
        default="dev",
        choices=("dev", "train+dev"),
        help="memory split(s) every threshold is chosen on (dev: the split the CE never saw)",
    )
    parser.add_argument(
        "--kinds-for",
        default="[P>=0.97] (d)",
        help="rules (substring of the name) broken down by kind on the memory sets",
    )
    parser.add_argument("--json", type=Path, default=None, help="write all figures here")
    parser.add_argument(
        "--dump-scores", type=Path, default=None, help="write every set's CE and cosine (npz)"
    )
    parser.add_argument("--markdown", type=Path, default=None, help="write the tables here")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    memory = [p for path in sorted(MEMORY_DIR.glob("*.jsonl")) for p in load_pairs(path)]
    sets: dict[str, list[Any]] = {
        "memory-test": [p for p in memory if p.split == "test"],
        "memory-dev": [p for p in memory if p.split == "dev"],
        "memory-train": [p for p in memory if p.split == "train"],
        "shipped": load_pairs(bq.MEMORY_PAIRS),
        # PAWS dev: a tuning split (not in the CE's training data), to see what a
        # rule does to PAWS before looking at PAWS test.
        "paws-dev": bq.load_public(
            args.datasets_dir / "paws_wiki" / "dev.jsonl", args.limit, args.seed
        ),
        "paws-test": bq.load_public(
            args.datasets_dir / "paws_wiki" / "test.jsonl", args.limit, args.seed
        ),
        "mrpc-test": bq.load_public(
            args.datasets_dir / "mrpc" / "test.jsonl", args.limit, args.seed
        ),
    }
    cosine = asyncio.run(cosine_scores(sets))
    embed_s = time.perf_counter() - started

    scorer = OnnxScorer(
        args.model_dir, variant=args.variant, max_length=args.max_length, threads=args.threads
    )
    timing = latency(
        scorer,
        [(normalize_content(p.existing), normalize_content(p.new)) for p in sets["memory-dev"]][
            :200
        ],
    )
    ce: dict[str, FloatArray] = {}
    forward_only: dict[str, FloatArray | None] = {}
    ce_started = time.perf_counter()
    for name, pairs in sets.items():
        ce[name], forward_only[name] = ce_scores(scorer, pairs, args.both_orders)
    ce_s = time.perf_counter() - ce_started
    n_scored = sum(len(p) for p in sets.values()) * (2 if args.both_orders else 1)

    settings = load_settings()
    bands = policy_from_settings(settings.dedup).default
    aligner = PairAligner()
    verifier = build_verifier(settings.dedup, aligner=aligner)
    if verifier is not None and not isinstance(verifier, LocalVerifier):
        verifier = verifier.fallback
    data = {
        name: build_set(name, pairs, cosine[name], ce[name], bands, verifier, aligner)
        for name, pairs in sets.items()
    }
    dev = (
        data["memory-dev"]
        if args.choose_on == "dev"
        else concat("memory-train+dev", [data["memory-train"], data["memory-dev"]])
    )

    # ---- thresholds, all on memory dev
    ce_f1, ce_t = oracle_best_f1(dev.ce, dev.labels)
    at_precision: dict[float, float | None] = {}
    for target in TARGETS:
        ok = [t for t in GRID if (prf(dev.ce >= t, dev.labels)["precision"] or 0) >= target]
        at_precision[target] = float(min(ok)) if ok else None
    grid = [float(t) for t in GRID]

    def rule_a(d: SetData, t: float) -> BoolArray:
        return combine(d, bands, veto=d.ce < t)[0]

    def rule_c(d: SetData, t: float) -> BoolArray:
        return d.pipeline & (d.ce >= t)

    lows = [round(bands.merge_threshold - 0.05 * k, 2) for k in range(1, 10)]
    rules: dict[str, Callable[[SetData], tuple[BoolArray, BoolArray]]] = {
        "cosine >= merge threshold": lambda d: (
            d.cosine >= bands.merge_threshold,
            d.cosine >= bands.duplicate_threshold,
        ),
        "today's pipeline": lambda d: (d.pipeline, d.pipeline_skipped),
        f"CE alone (P >= {ce_t:.2f}, dev best F1)": lambda d: (
            d.ce >= ce_t,
            np.zeros(len(d.labels), dtype=np.bool_),
        ),
    }
    chosen: dict[str, Any] = {}
    levels = list(dict.fromkeys((args.min_precision, *TARGETS)))
    for level in levels:
        tag = f"P>={level:g}"
        # (a) the CE instead of the GBM verifier as the band's veto.
        t_a, dev_a = choose([(t, rule_a(dev, t)) for t in grid], dev.labels, level)

        # (b) (a), and a rescue below the band: no guard / alignment veto, P >= t.
        def rule_b(d: SetData, params: tuple[float, float], t_a: float = t_a) -> BoolArray:
            low, t = params
            return combine(d, bands, veto=d.ce < t_a, rescue=rescue_mask(d, bands, low, t))[0]

        b_params, dev_b = choose(
            [((low, t), rule_b(dev, (low, t))) for low in lows for t in grid if t >= t_a],
            dev.labels,
            level,
        )
        # (c) today's pipeline, and P >= t.
        t_c, dev_c = choose([(t, rule_c(dev, t)) for t in grid], dev.labels, level)

        # (d) (c), and the rescue of (b) with its own threshold.
        def rule_d(d: SetData, params: tuple[float, float], t_c: float = t_c) -> BoolArray:
            low, t = params
            return rule_c(d, t_c) | rescue_mask(d, bands, low, t)

        d_params, dev_d = choose(
            [((low, t), rule_d(dev, (low, t))) for low in lows for t in grid if t >= t_c],
            dev.labels,
            level,
        )
        chosen[tag] = {
            "a_veto_below": t_a,
            "a_dev": dev_a,
            "b_rescue": b_params,
            "b_dev": dev_b,
            "c_veto_below": t_c,
            "c_dev": dev_c,
            "d_rescue": d_params,
            "d_dev": dev_d,
        }

        def make_a(t: float) -> Callable[[SetData], tuple[BoolArray, BoolArray]]:
            return lambda d: combine(d, bands, veto=d.ce < t)

        def make_b(t: float, low: float, tb: float) -> Callable[[SetData], Any]:
            return lambda d: combine(d, bands, veto=d.ce < t, rescue=rescue_mask(d, bands, low, tb))

        def make_c(t: float) -> Callable[[SetData], tuple[BoolArray, BoolArray]]:
            return lambda d: (rule_c(d, t), d.pipeline_skipped & (d.ce >= t))

        def make_d(t: float, low: float, td: float) -> Callable[[SetData], Any]:
            return lambda d: (
                rule_c(d, t) | rescue_mask(d, bands, low, td),
                d.pipeline_skipped & (d.ce >= t),
            )

        rules[f"[{tag}] (a) CE as band veto (P >= {t_a:.2f})"] = make_a(t_a)
        rules[f"[{tag}] (b) (a) + rescue (cos >= {b_params[0]:.2f}, P >= {b_params[1]:.2f})"] = (
            make_b(t_a, *b_params)
        )
        rules[f"[{tag}] (c) pipeline + CE veto (P >= {t_c:.2f})"] = make_c(t_c)
        rules[f"[{tag}] (d) (c) + rescue (cos >= {d_params[0]:.2f}, P >= {d_params[1]:.2f})"] = (
            make_d(t_c, *d_params)
        )

    results: dict[str, Any] = {
        "model_dir": str(args.model_dir),
        "variant": args.variant,
        "both_orders": args.both_orders,
        "latency": timing,
        "ce_scoring_s": round(ce_s, 1),
        "ce_ms_per_pair_batched": round(ce_s * 1e3 / n_scored, 2),
        "embed_s": round(embed_s, 1),
        "thresholds_from_dev": {
            "ce_best_f1": ce_t,
            "ce_dev_best_f1": round(ce_f1, 4),
            "ce_at_precision": at_precision,
            "rules": chosen,
            "chosen_on": args.choose_on,
        },
        "sets": {},
    }
    lines: list[str] = []
    lines.append(
        f"CE {args.variant}, {'mean of both orders' if args.both_orders else 'one order'}; "
        f"thresholds from memory {args.choose_on} (min precision {args.min_precision}); "
        f"defaults merge >= {bands.merge_threshold}, skip >= {bands.duplicate_threshold}\n"
    )
    lines.append(f"### Scores: AUC, and CE thresholds chosen on memory {args.choose_on}\n")
    header = (
        "| set | pairs | cosine AUC | CE AUC | CE F1 @chosen t (P/R) | CE best F1 on the set itself (t) "
        "| CE @ P>=0.95 t: P/R | CE @ P>=0.97 t: P/R |"
    )
    lines += [header, "|---|---|---|---|---|---|---|---|"]
    for name, d in data.items():
        m = prf(d.ce >= ce_t, d.labels)
        own_f1, own_t = oracle_best_f1(d.ce, d.labels)
        cells = []
        for target in TARGETS:
            t = at_precision[target]
            if t is None:
                cells.append("not reached on dev")
            else:
                mt = prf(d.ce >= t, d.labels)
                cells.append(f"{fmt(mt['precision'])}/{fmt(mt['recall'])} (t {t:.2f})")
        row = {
            "pairs": len(d.labels),
            "duplicates": int(d.labels.sum()),
            "cosine_auc": auc(d.cosine, d.labels),
            "ce_auc": auc(d.ce, d.labels),
            "ce_at_dev_t": m,
            "ce_own_best_f1": own_f1,
            "ce_own_best_t": own_t,
        }
        if forward_only[name] is not None:
            row["ce_auc_one_order"] = auc(np.asarray(forward_only[name]), d.labels)
        results["sets"][name] = row
        lines.append(
            f"| {name} | {len(d.labels)} | {row['cosine_auc']:.3f} | {row['ce_auc']:.3f} "
            f"| {fmt(m['f1'])} ({fmt(m['precision'])}/{fmt(m['recall'])}) "
            f"| {own_f1:.3f} ({own_t:.2f}) | {cells[0]} | {cells[1]} |"
        )
    lines.append("\n### Decisions: P / R / F1 (hard false merges; distinct pairs skipped)\n")
    names = list(data)
    lines.append("| rule | " + " | ".join(names) + " |")
    lines.append("|---|" + "---|" * len(names))
    decisions: dict[str, dict[str, Any]] = {}
    for rule_name, rule in rules.items():
        cells = []
        decisions[rule_name] = {}
        for name in names:
            d = data[name]
            pred, skipped = rule(d)
            m = prf(pred, d.labels)
            hard = hard_false_merges(d, pred)
            skips = distinct_skipped(d, skipped)
            decisions[rule_name][name] = {**m, "hard_false_merges": hard, "distinct_skipped": skips}
            extra = f" ({hard}; {skips})" if name.startswith("memory") else ""
            cells.append(f"{fmt(m['precision'])} / {fmt(m['recall'])} / {fmt(m['f1'])}{extra}")
        lines.append(f"| {rule_name} | " + " | ".join(cells) + " |")
    results["decisions"] = decisions
    # Per kind, on the memory sets: how often each rule predicts "duplicate".
    shown = [r for r in rules if r in ("today's pipeline",) or args.kinds_for in r]
    for name in ("memory-dev", "memory-test"):
        d = data[name]
        preds = {r: rules[r](d)[0] for r in shown}
        lines.append(f"\n#### {name}: pairs predicted duplicate, by kind\n")
        lines.append("| kind (label) | pairs | CE P >= dev t | " + " | ".join(shown) + " |")
        lines.append("|---|---|---|" + "---|" * len(shown))
        for kind in sorted(set(d.kinds), key=lambda k: (k.split("(")[1], k)):
            idx = np.array([k == kind for k in d.kinds])
            cells = [str(int(np.sum(preds[r][idx]))) for r in shown]
            lines.append(
                f"| {kind} | {int(idx.sum())} | {int(np.sum(d.ce[idx] >= ce_t))} | "
                + " | ".join(cells)
                + " |"
            )
    lines.append(
        f"\nCE latency ({args.variant}, {args.threads} thread): one pair at a time mean "
        f"{timing['single_mean_ms']} ms (p50 {timing['single_p50_ms']}, p99 "
        f"{timing['single_p99_ms']}), batched {timing['batched32_ms_per_pair']} ms/pair; "
        f"{n_scored} pairs scored in {ce_s:.0f} s"
    )
    if args.dump_scores is not None:
        arrays: dict[str, npt.NDArray[Any]] = {f"{name}.ce": d.ce for name, d in data.items()}
        arrays |= {f"{name}.cosine": d.cosine for name, d in data.items()}
        arrays |= {f"{name}.labels": d.labels for name, d in data.items()}
        np.savez(args.dump_scores, **arrays)  # type: ignore[arg-type]
    results["total_s"] = round(time.perf_counter() - started, 1)
    text = "\n".join(lines)
    print(text)
    print(f"\ntotal runtime {results['total_s']} s")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, default=float), encoding="utf-8")
    if args.markdown is not None:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
