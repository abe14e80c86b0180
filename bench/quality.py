"""Dedup quality on labelled pairs: cosine alone vs the consumer's full decision.

Usage::

    python bench/quality.py [--limit N] [--datasets-dir DIR] [--no-public]
                            [--pairs FILE] [--json FILE]

Data sets: the memory pairs of ``bench/pairs/memory/`` (split by group into
train / dev / frozen test, ``consumer.quality.pairs.split_of``: the test split is
reported, train+dev beside it only to show what tuning saw), the shipped memory
pairs (``consumer/data/memory_pairs.jsonl``, which earlier defaults were read off),
the probe pairs (``bench/pairs/probes.jsonl``: hard distinct pairs of the kinds a
false merge loses, in-sample since rules were written against them)
and the public sets in ``../shared/datasets`` (PAWS-Wiki dev/test, STS-B dev/test with
duplicate = gold score >= 4.0, MRPC train/test), read in place, never copied.
``--limit`` pairs are sampled (seed 0) from each public split (0: all).

For each set it embeds both sides with the configured embedder
(``consumer.embedding.embedders.load_embedder``: onnx-fp32 all-MiniLM-L6-v2 by default),
exactly as the engine embeds (``normalize_content`` first), and compares:

* **cosine**: predicted duplicate when ``cosine >= t``;
* **pipeline**: the consumer's decision (``consumer.quality.rule.decide_pair``):
  exact check, bands, then the guards' veto, then the verifier's (the local one,
  ``dedup.verifier``). At a threshold ``t`` other than the defaults, ``t`` is the
  merge threshold (predicted duplicate = skipped or merged);
* **guards only**: the pipeline without the verifier or the parse alignment;
* **pipeline without alignment**: guards and verifier, as before the parse
  alignment (``consumer.domain.alignment``) existed, side by side with it;
* **pipeline without cross-encoder**: the pipeline without the cross-encoder's
  veto and rescue (``dedup.cross_encoder``, consumer.domain.cross_verifier);
  "pipeline @ defaults" has them where the settings turn it on, as the engine.
  The best-F1 sweeps leave it out.

It prints, per set, precision / recall / F1 at the shipped defaults
(merge_threshold 0.77: anything at or above it is merged or skipped) and at each
method's best-F1 threshold (grid 0.50..1.00, step 0.01), the pipeline / cosine
ratios, and the PAWS target: pipeline precision at least 0.15 higher than cosine
alone at the same recall. "Cosine precision at recall R" is the best precision
cosine reaches at any threshold with recall >= R (interpolated precision, the
most favourable reading for cosine). Targets are printed, never asserted.

Runtime on 2 cores with the default ``--limit 1500``: about 1 minute (~16k
sentences through onnx-fp32); ``--limit 0`` embeds ~28k sentences.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from consumer.domain.alignment import PairAligner  # noqa: E402
from consumer.domain.cross_verifier import CrossEncoderVerifier  # noqa: E402
from consumer.domain.thresholds import Bands  # noqa: E402
from consumer.domain.verifier import LocalVerifier, build_verifier  # noqa: E402
from consumer.embedding.cross_encoder import build_cross_encoder  # noqa: E402
from consumer.quality.calibrate import GRID, pair_facts  # noqa: E402
from consumer.quality.evaluate import embed_similarities, policy_from_settings  # noqa: E402
from consumer.quality.metrics import Confusion  # noqa: E402
from consumer.quality.pairs import LabelledPair, load_pairs, parse_pair  # noqa: E402
from consumer.quality.rule import decide_pair, pair_veto  # noqa: E402
from consumer.settings import load_settings  # noqa: E402

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

DEFAULT_DATASETS_DIR = REPO_ROOT.parent / "shared" / "datasets"
MEMORY_PAIRS = REPO_ROOT / "consumer" / "data" / "memory_pairs.jsonl"
MEMORY_PAIRS_DIR = REPO_ROOT / "bench" / "pairs" / "memory"
PROBE_PAIRS = REPO_ROOT / "bench" / "pairs" / "probes.jsonl"
# Distinct kinds whose false merges are counted apart (the targets: zero).
HARD_DISTINCT_KINDS = ("number_change", "negation", "role_swap", "value_swap")
PAWS_GAIN_TARGET = 0.15
PUBLIC_SPLITS: tuple[tuple[str, str, str], ...] = (
    ("paws-dev", "paws_wiki", "dev"),
    ("paws-test", "paws_wiki", "test"),
    ("stsb-dev", "stsb", "dev"),
    ("stsb-test", "stsb", "test"),
    ("mrpc-train", "mrpc", "train"),
    ("mrpc-test", "mrpc", "test"),
)


@dataclass(frozen=True)
class Point:
    threshold: float
    precision: float | None
    recall: float | None
    f1: float | None
    fmr: float | None


def point(threshold: float, predicted: BoolArray, labels: BoolArray) -> Point:
    c = Confusion(
        tp=int(np.sum(predicted & labels)),
        fp=int(np.sum(predicted & ~labels)),
        fn=int(np.sum(~predicted & labels)),
        tn=int(np.sum(~predicted & ~labels)),
    )
    return Point(threshold, c.precision, c.recall, c.f1, c.false_merge_rate)


def best_f1(points: Sequence[Point]) -> Point:
    return max(points, key=lambda p: (p.f1 if p.f1 is not None else -1.0, -p.threshold))


def interpolated_precision(scores: FloatArray, labels: BoolArray, recall: float) -> float | None:
    """Best cosine precision over every threshold whose recall is >= `recall`."""
    order = np.argsort(-scores, kind="stable")
    sorted_labels = labels[order]
    tp = np.cumsum(sorted_labels)
    predicted = np.arange(1, len(scores) + 1)
    # Only cut between distinct scores (a threshold keeps or drops all ties).
    sorted_scores = scores[order]
    cut = np.r_[sorted_scores[1:] != sorted_scores[:-1], True]
    positives = int(labels.sum())
    if not positives:
        return None
    recalls = tp[cut] / positives
    precisions = tp[cut] / predicted[cut]
    ok = recalls >= recall - 1e-12
    return float(precisions[ok].max()) if ok.any() else None


def load_public(path: Path, limit: int, seed: int) -> list[LabelledPair]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if 0 < limit < len(rows):
        rows = random.Random(seed).sample(rows, limit)
    return [parse_pair(row, i) for i, row in enumerate(rows, start=1)]


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}"


def evaluate_set(
    name: str,
    pairs: Sequence[LabelledPair],
    scores: FloatArray,
    bands: Bands,
    verifier: LocalVerifier | None,
    aligner: PairAligner | None = None,
    cross_encoder: CrossEncoderVerifier | None = None,
) -> dict[str, Any]:
    labels = np.array([p.duplicate for p in pairs], dtype=np.bool_)
    ce_s = None
    if cross_encoder is not None:
        # Every pair the veto or the rescue may ask, scored in batches once.
        started = time.perf_counter()
        floor = bands.lowest
        asked_ce = [
            (p.existing.strip(), p.new) for p, s in zip(pairs, scores, strict=True) if s >= floor
        ]
        cross_encoder.prime(asked_ce)
        ce_s = time.perf_counter() - started
    started = time.perf_counter()
    guard_facts = pair_facts(pairs, scores.tolist(), guards=True)
    guard_s = time.perf_counter() - started
    # The verifier's cost: every pair the guards let through from the lowest grid
    # threshold up (what calibration asks it), timed alone.
    asked = [
        (p.existing.strip(), p.new, float(s))
        for p, s, f in zip(pairs, scores, guard_facts, strict=True)
        if not f.vetoed and not f.exact and s >= GRID[0]
    ]
    verifier_us = None
    if verifier is not None and asked:
        started = time.perf_counter()
        for existing, new, similarity in asked:
            verifier.judge(existing, new, similarity)
        verifier_us = round((time.perf_counter() - started) / len(asked) * 1e6, 1)
    started = time.perf_counter()
    facts = pair_facts(pairs, scores.tolist(), guards=True, verifier=verifier, aligner=aligner)
    pipeline_us = round((time.perf_counter() - started) / max(len(pairs), 1) * 1e6, 1)
    guard_vetoed = np.array([f.vetoed for f in guard_facts], dtype=np.bool_)
    by_guard: dict[str, list[int]] = {}
    for pair, fact, similarity in zip(pairs, facts, scores, strict=True):
        if fact.vetoed:
            veto = pair_veto(
                pair.existing,
                pair.new,
                float(similarity),
                guards=True,
                verifier=verifier,
                aligner=aligner,
            )
            name_ = veto.guard.value if veto is not None else "verifier"
            counts = by_guard.setdefault(name_, [0, 0])
            counts[0 if pair.duplicate else 1] += 1
    exact = np.array([f.exact for f in facts], dtype=np.bool_)
    vetoed = np.array([f.vetoed for f in facts], dtype=np.bool_)
    cosine_curve = [point(t, scores >= t, labels) for t in GRID]
    pipeline_curve = [point(t, exact | ((scores >= t) & ~vetoed), labels) for t in GRID]
    guards_curve = [point(t, exact | ((scores >= t) & ~guard_vetoed), labels) for t in GRID]
    decided = np.array(
        [
            decide_pair(
                p.existing,
                p.new,
                float(s),
                bands,
                guards=True,
                verifier=verifier,
                aligner=aligner,
                cross_encoder=cross_encoder,
            ).duplicate
            for p, s in zip(pairs, scores, strict=True)
        ],
        dtype=np.bool_,
    )
    # The pipeline without the cross-encoder, side by side with it.
    decided_without_ce = np.array(
        [
            decide_pair(
                p.existing, p.new, float(s), bands, guards=True, verifier=verifier, aligner=aligner
            ).duplicate
            for p, s in zip(pairs, scores, strict=True)
        ],
        dtype=np.bool_,
    )
    without_ce_default = point(bands.merge_threshold, decided_without_ce, labels)
    # Today's pipeline without the parse alignment, for the side-by-side report.
    decided_before = np.array(
        [
            decide_pair(
                p.existing, p.new, float(s), bands, guards=True, verifier=verifier
            ).duplicate
            for p, s in zip(pairs, scores, strict=True)
        ],
        dtype=np.bool_,
    )
    before_default = point(bands.merge_threshold, decided_before, labels)
    guards_default = point(
        bands.merge_threshold,
        exact | ((scores >= bands.merge_threshold) & ~guard_vetoed),
        labels,
    )
    cosine_default = point(bands.merge_threshold, scores >= bands.merge_threshold, labels)
    pipeline_default = point(bands.merge_threshold, decided, labels)
    # Pipeline precision minus cosine's best precision at the same (or higher) recall.
    gains = []
    for p in pipeline_curve:
        if p.recall is None or p.precision is None or p.recall < 0.05:
            continue
        cos_p = interpolated_precision(scores, labels, p.recall)
        if cos_p is not None:
            gains.append((p.threshold, p.recall, p.precision, cos_p, p.precision - cos_p))
    at_default = None
    if pipeline_default.recall is not None and pipeline_default.precision is not None:
        cos_p = interpolated_precision(scores, labels, pipeline_default.recall)
        if cos_p is not None:
            at_default = (pipeline_default.recall, pipeline_default.precision, cos_p)
    by_kind: dict[str, dict[str, int]] = {}
    for pair, s_ in zip(pairs, scores, strict=True):
        outcome = decide_pair(
            pair.existing,
            pair.new,
            float(s_),
            bands,
            verifier=verifier,
            aligner=aligner,
            cross_encoder=cross_encoder,
        )
        kind = by_kind.setdefault(
            f"{pair.category or '-'} ({pair.label})",
            {"pairs": 0, "predicted_duplicate": 0, "skipped": 0, "cosine_duplicate": 0},
        )
        kind["pairs"] += 1
        kind["predicted_duplicate"] += int(outcome.duplicate)
        kind["skipped"] += int(outcome.decision.value == "skipped")
        kind["cosine_duplicate"] += int(float(s_) >= bands.merge_threshold)
    distinct_skipped = sum(v["skipped"] for k, v in by_kind.items() if k.endswith("(distinct)"))
    hard_merges = sum(
        v["predicted_duplicate"]
        for k, v in by_kind.items()
        if k.endswith("(distinct)") and k.split(" ")[0] in HARD_DISTINCT_KINDS
    )
    return {
        "name": name,
        "pairs": len(pairs),
        "by_kind": by_kind,
        "distinct_skipped": distinct_skipped,
        "hard_distinct_merged": hard_merges,
        "duplicates": int(labels.sum()),
        "vetoed": int(vetoed.sum()),
        "vetoed_duplicates": int((vetoed & labels).sum()),
        "vetoed_distinct": int((vetoed & ~labels).sum()),
        "vetoes_by_guard": {g: {"duplicate": c[0], "distinct": c[1]} for g, c in by_guard.items()},
        "guard_us_per_pair": round(guard_s / max(len(pairs), 1) * 1e6, 1),
        "verifier_us_per_pair": verifier_us,
        "verifier_pairs_timed": len(asked),
        "pipeline_us_per_pair": pipeline_us,
        "alignment": aligner is not None,
        "cross_encoder": cross_encoder is not None,
        "cross_encoder_pairs_scored": None if ce_s is None else len(asked_ce),
        "cross_encoder_ms_per_pair": (
            None if ce_s is None or not asked_ce else round(ce_s / len(asked_ce) * 1e3, 2)
        ),
        "without_cross_encoder_default": without_ce_default.__dict__,
        "before_alignment_default": before_default.__dict__,
        "guards_default": guards_default.__dict__,
        "guards_best": best_f1(guards_curve).__dict__,
        "cosine_default": cosine_default.__dict__,
        "pipeline_default": pipeline_default.__dict__,
        "cosine_best": best_f1(cosine_curve).__dict__,
        "pipeline_best": best_f1(pipeline_curve).__dict__,
        "gain_at_default": at_default,
        "gain_curve": gains,
    }


def print_set(result: dict[str, Any]) -> None:
    cd, pd = result["cosine_default"], result["pipeline_default"]
    cb, pb = result["cosine_best"], result["pipeline_best"]
    print(
        f"\n### {result['name']}: {result['pairs']} pairs ({result['duplicates']} duplicate); "
        f"guards veto {result['vetoed']} ({result['vetoed_duplicates']} duplicate, "
        f"{result['vetoed_distinct']} distinct), guards {result['guard_us_per_pair']} us/pair, "
        f"verifier {result['verifier_us_per_pair']} us/pair "
        f"({result['verifier_pairs_timed']} pairs timed), whole pipeline "
        f"{result['pipeline_us_per_pair']} us/pair (parses cached per text)\n"
    )
    if result["vetoes_by_guard"]:
        parts = [
            f"{g} {c['duplicate']} dup / {c['distinct']} distinct"
            for g, c in sorted(result["vetoes_by_guard"].items())
        ]
        print("vetoes by guard: " + "; ".join(parts) + "\n")
    print("| | t | precision | recall | F1 | false-merge rate |")
    print("|---|---|---|---|---|---|")
    for label, m in (
        ("cosine @ defaults", cd),
        ("guards only @ defaults", result["guards_default"]),
        ("pipeline without alignment @ defaults", result["before_alignment_default"]),
        ("pipeline without cross-encoder @ defaults", result["without_cross_encoder_default"]),
        ("pipeline @ defaults", pd),
        ("cosine @ best F1", cb),
        ("guards only @ best F1", result["guards_best"]),
        ("pipeline @ best F1", pb),
    ):
        print(
            f"| {label} | {m['threshold']:.2f} | {fmt(m['precision'])} | {fmt(m['recall'])} "
            f"| {fmt(m['f1'])} | {fmt(m['fmr'])} |"
        )
    print(
        f"\npipeline / cosine: at defaults precision x{ratio(pd['precision'], cd['precision'])}, "
        f"recall x{ratio(pd['recall'], cd['recall'])}, F1 x{ratio(pd['f1'], cd['f1'])}; "
        f"best F1 x{ratio(pb['f1'], cb['f1'])}"
    )
    if result["gain_at_default"] is not None:
        r, p, c = result["gain_at_default"]
        print(
            f"at the pipeline's default recall {r:.3f}: pipeline precision {p:.3f}, "
            f"cosine {c:.3f} -> gain {p - c:+.3f}"
        )
    if any(k != "- (duplicate)" and k != "- (distinct)" for k in result["by_kind"]):
        print(
            f"\nby kind at defaults (distinct pairs skipped: {result['distinct_skipped']}; "
            f"false merges on {'/'.join(HARD_DISTINCT_KINDS)}: "
            f"{result['hard_distinct_merged']}):\n"
        )
        print(
            "| kind (label) | pairs | pipeline: predicted duplicate | of which skipped "
            "| cosine >= merge threshold |"
        )
        print("|---|---|---|---|---|")
        for kind, v in sorted(result["by_kind"].items(), key=lambda kv: kv[0].split("(")[1]):
            print(
                f"| {kind} | {v['pairs']} | {v['predicted_duplicate']} | {v['skipped']} "
                f"| {v['cosine_duplicate']} |"
            )


def summary_rows(results: Sequence[dict[str, Any]]) -> None:
    print("\n### Summary (F1; pipeline / cosine ratio)\n")
    print(
        "| set | cosine P/R/F1 @defaults | without alignment P/R/F1 "
        "| without cross-encoder P/R/F1 | pipeline P/R/F1 @defaults "
        "| ratio F1 | cosine best F1 (t) | pipeline best F1 (t) | ratio | distinct skipped "
        "| hard false merges |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        cd, pd = r["cosine_default"], r["pipeline_default"]
        cb, pb = r["cosine_best"], r["pipeline_best"]
        gd = r["before_alignment_default"]
        wd = r["without_cross_encoder_default"]
        print(
            f"| {r['name']} | {fmt(cd['precision'])}/{fmt(cd['recall'])}/{fmt(cd['f1'])} "
            f"| {fmt(gd['precision'])}/{fmt(gd['recall'])}/{fmt(gd['f1'])} "
            f"| {fmt(wd['precision'])}/{fmt(wd['recall'])}/{fmt(wd['f1'])} "
            f"| {fmt(pd['precision'])}/{fmt(pd['recall'])}/{fmt(pd['f1'])} "
            f"| {ratio(pd['f1'], cd['f1'])} | {fmt(cb['f1'])} ({cb['threshold']:.2f}) "
            f"| {fmt(pb['f1'])} ({pb['threshold']:.2f}) | {ratio(pb['f1'], cb['f1'])} "
            f"| {r['distinct_skipped']} | {r['hard_distinct_merged']} |"
        )


def paws_target(results: Sequence[dict[str, Any]]) -> None:
    print(
        f"\n### PAWS target: pipeline precision >= cosine precision + {PAWS_GAIN_TARGET} "
        "at the same recall\n"
    )
    print("| set | operating point | recall | pipeline P | cosine P at that recall | gain | met |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        if not r["name"].startswith("paws"):
            continue
        rows: list[tuple[str, float, float, float]] = []
        if r["gain_at_default"] is not None:
            rec, p, c = r["gain_at_default"]
            rows.append(("defaults", rec, p, c))
        pb = r["pipeline_best"]
        for t, rec, p, c, _ in r["gain_curve"]:
            if abs(t - pb["threshold"]) < 1e-9:
                rows.append((f"best F1 (t {t:.2f})", rec, p, c))
        if r["gain_curve"]:
            t, rec, p, c, _ = max(r["gain_curve"], key=lambda g: g[4])
            rows.append((f"largest gain (t {t:.2f})", rec, p, c))
        for label, rec, p, c in rows:
            met = "yes" if p - c >= PAWS_GAIN_TARGET else "no"
            print(
                f"| {r['name']} | {label} | {rec:.3f} | {p:.3f} | {c:.3f} | {p - c:+.3f} | {met} |"
            )


async def embed_all(
    sets: dict[str, list[LabelledPair]], settings: Any
) -> tuple[dict[str, FloatArray], dict[str, float]]:
    from consumer.embedding.embedders import load_embedder

    started = time.perf_counter()
    embedder = await load_embedder(settings.embedding, data_dir=settings.qdrant.path)
    loaded = time.perf_counter()
    everything = [p for pairs in sets.values() for p in pairs]
    try:
        sims = await embed_similarities(embedder, everything)
    finally:
        await embedder.close()
    done = time.perf_counter()
    out: dict[str, FloatArray] = {}
    start = 0
    for name, pairs in sets.items():
        out[name] = np.asarray(sims[start : start + len(pairs)], dtype=np.float64)
        start += len(pairs)
    return out, {"model_load_s": loaded - started, "embedding_s": done - loaded}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=1500, help="pairs per public split (0: all)")
    parser.add_argument("--datasets-dir", type=Path, default=DEFAULT_DATASETS_DIR)
    parser.add_argument("--no-public", action="store_true", help="only the memory pairs")
    parser.add_argument(
        "--public",
        default=",".join(name for name, _, _ in PUBLIC_SPLITS),
        help="public splits to run, comma-separated (default: all)",
    )
    parser.add_argument(
        "--pairs", type=Path, default=MEMORY_PAIRS, help="memory pairs (default: shipped)"
    )
    parser.add_argument(
        "--memory-dir",
        type=Path,
        default=MEMORY_PAIRS_DIR,
        help="split memory pair files (*.jsonl; default bench/pairs/memory)",
    )
    parser.add_argument(
        "--probes",
        type=Path,
        default=PROBE_PAIRS,
        help="probe pairs (default bench/pairs/probes.jsonl; a missing file is left out)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="write all figures here")
    args = parser.parse_args(argv)

    from consumer.observability.logs import configure_logging

    configure_logging(level="WARNING", fmt="console")
    started = time.perf_counter()
    settings = load_settings()
    bands = policy_from_settings(settings.dedup).default
    sets: dict[str, list[LabelledPair]] = {}
    memory_files = sorted(args.memory_dir.glob("*.jsonl"))
    if memory_files:
        by_file = {path.stem: load_pairs(path) for path in memory_files}
        split_pairs = [p for pairs in by_file.values() for p in pairs]
        unsplit = [p for p in split_pairs if p.split is None]
        if unsplit:
            print(
                f"{len(unsplit)} memory pairs have no split: run tools/split_pairs.py",
                file=sys.stderr,
            )
            return 2
        # The frozen test first: it is the figure that counts.
        sets["memory-test"] = [p for p in split_pairs if p.split == "test"]
        if len(memory_files) > 1:
            # Each file's test split too: the files were written apart (fresh.jsonl
            # by writers who had not seen the others), and a rule tuned on some of
            # them shows on the others first.
            for stem, pairs in by_file.items():
                tested = [p for p in pairs if p.split == "test"]
                if tested:
                    sets[f"memory-test/{stem}"] = tested
        sets["memory-train+dev"] = [p for p in split_pairs if p.split != "test"]
    sets["shipped"] = load_pairs(args.pairs)
    if args.probes.exists():
        # In-sample: rules were written against these pairs (bench/pairs/README.md).
        sets["probes"] = load_pairs(args.probes)
    if not args.no_public:
        chosen = set(args.public.split(","))
        for name, folder, split in PUBLIC_SPLITS:
            if name not in chosen:
                continue
            path = args.datasets_dir / folder / f"{split}.jsonl"
            if not path.exists():
                print(f"skipping {path}: not found", file=sys.stderr)
                continue
            sets[name] = load_public(path, args.limit, args.seed)
    scores, timing = asyncio.run(embed_all(sets, settings))
    texts = len({t for pairs in sets.values() for p in pairs for t in (p.existing, p.new)})
    print(
        f"# dedup quality: {settings.embedding.model_id} ({settings.embedding.backend}), "
        f"defaults skip >= {bands.duplicate_threshold:g}, merge >= {bands.merge_threshold:g}; "
        f"--limit {args.limit}, seed {args.seed}; {texts} distinct texts embedded in "
        f"{timing['embedding_s']:.1f} s (model load {timing['model_load_s']:.1f} s)"
    )
    print(
        "\nPositive = labelled duplicate; predicted = skipped or merged (pipeline) or "
        "cosine >= t (cosine). false-merge rate = distinct pairs predicted duplicate / "
        "distinct pairs."
    )
    aligner = PairAligner() if settings.dedup.alignment_enabled else None
    verifier = build_verifier(settings.dedup, aligner=aligner)
    if verifier is not None and not isinstance(verifier, LocalVerifier):
        print("dedup.verifier is an LLM: the benchmark measures its local fallback")
        verifier = verifier.fallback
    # A cache that holds every pair of a set: each is decided more than once.
    cross_encoder = build_cross_encoder(settings.dedup.cross_encoder, cache_size=1_000_000)
    results = [
        evaluate_set(name, pairs, scores[name], bands, verifier, aligner, cross_encoder)
        for name, pairs in sets.items()
    ]
    for result in results:
        print_set(result)
    summary_rows(results)
    paws_target(results)
    total = time.perf_counter() - started
    print(f"\ntotal runtime {total:.1f} s")
    if args.json is not None:
        args.json.write_text(
            json.dumps({"timing": timing, "total_s": total, "sets": results}, indent=2),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
