"""Train the local gray-zone verifier (consumer/data/verifier.json).

Usage::

    python tools/train_verifier.py [--datasets-dir DIR] [--cache DIR] [--out FILE]
                                   [--check-only]

Data: the training splits of the public sets in ``../shared/datasets`` (PAWS-Wiki
dev, MRPC train, STS-B dev with duplicate = score >= 4.0), read in place and never
copied, plus the shipped memory pairs (``consumer/data/memory_pairs.jsonl``) and the
train and dev splits of ``bench/pairs/memory/`` (never its frozen test). Test
splits (PAWS test, MRPC test, STS-B test) are only scored, never trained on.

Every text is embedded once with the consumer's embedder (onnx-fp32
all-MiniLM-L6-v2, ``normalize_content`` first) and the vectors are cached under
``--cache`` (default ``/tmp/memdedup-verifier``), not in the repository. Only pairs
whose cosine reaches ``MIN_COSINE`` are trained on: the verifier sees nothing
below the merge band.

The model is scikit-learn's GradientBoostingClassifier (fixed seed), exported as
plain numbers: log-odds = init + learning_rate * sum of the trees' leaf values.

Honest figures on the memory pairs: 5-fold cross-validation, stratified by
category. Each fold's memory pairs are predicted by a model trained on the public
sets and the other four folds; the probability cut and merge threshold shipped as
defaults are chosen on these out-of-fold predictions. The shipped model is then
trained on all memory pairs, so ``memdedup evaluate`` on the shipped set scores
pairs the model has seen: the out-of-fold figures printed here are the ones to
quote. ``--check-only`` loads the shipped JSON and checks that it reproduces
scikit-learn's probabilities.

Runtime on 2 cores: about 1 minute with a warm cache (plus ~1 minute of
embedding on the first run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
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
from consumer.domain.guards import check_pair  # noqa: E402
from consumer.domain.normalize import normalize_content  # noqa: E402
from consumer.domain.verifier import (  # noqa: E402
    DEFAULT_MODEL_PATH,
    FEATURE_NAMES,
    MODEL_FORMAT,
    VerifierModel,
    pair_features,
)
from consumer.quality.pairs import LabelledPair, load_pairs, parse_pair  # noqa: E402

FloatArray = npt.NDArray[np.float64]

SEED = 0
MIN_COSINE = 0.60
MEMORY_WEIGHT = 8.0  # the memory pairs are the target domain and few
FOLDS = 5
TARGET_PRECISION = 0.97
DEFAULT_DATASETS_DIR = REPO_ROOT.parent / "shared" / "datasets"
MEMORY_PAIRS = REPO_ROOT / "consumer" / "data" / "memory_pairs.jsonl"
# Labelled memory pairs split by group (bench/pairs/README.md): train and dev only;
# the test split stays frozen for bench/quality.py.
MEMORY_SPLIT_DIR = REPO_ROOT / "bench" / "pairs" / "memory"
MEMORY_SPLITS = ("train", "dev")
TRAIN_SPLITS = (("paws-dev", "paws_wiki", "dev"), ("mrpc-train", "mrpc", "train"),
                ("stsb-dev", "stsb", "dev"))  # fmt: skip
TEST_SPLITS = (("paws-test", "paws_wiki", "test"), ("mrpc-test", "mrpc", "test"),
               ("stsb-test", "stsb", "test"))  # fmt: skip
BOOSTING = {"n_estimators": 200, "max_depth": 3, "learning_rate": 0.08, "subsample": 0.8,
            "min_samples_leaf": 10}  # fmt: skip
MERGE_GRID = tuple(round(0.60 + 0.01 * i, 2) for i in range(31))
CUT_GRID = tuple(round(0.05 + 0.01 * i, 2) for i in range(91))


@dataclass
class PairSet:
    name: str
    pairs: list[LabelledPair]
    cosine: FloatArray
    features: FloatArray
    labels: npt.NDArray[np.bool_]
    vetoed: npt.NDArray[np.bool_]
    exact: npt.NDArray[np.bool_]


def load_public(path: Path) -> list[LabelledPair]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [parse_pair(row, i) for i, row in enumerate(rows, start=1)]


def embed(texts: Sequence[str], cache_dir: Path) -> dict[str, FloatArray]:
    """Vectors of normalised texts, from the cache or the consumer's embedder."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    cache = cache_dir / "embeddings.npz"
    known: dict[str, FloatArray] = {}
    if cache.exists():
        stored = np.load(cache, allow_pickle=False)
        known = dict(zip(stored["texts"].tolist(), stored["vectors"], strict=True))
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        from consumer.embedding.embedders import load_embedder
        from consumer.settings import load_settings

        settings = load_settings()

        async def run() -> list[npt.NDArray[np.float32]]:  # the embedder's vectors
            embedder = await load_embedder(settings.embedding, data_dir=settings.qdrant.path)
            try:
                rows = []
                for start in range(0, len(missing), 512):
                    rows.append(np.asarray(await embedder.embed(missing[start : start + 512])))
                return rows
            finally:
                await embedder.close()

        started = time.perf_counter()
        matrix = np.concatenate(asyncio.run(run()))
        print(f"embedded {len(missing)} texts in {time.perf_counter() - started:.0f} s")
        known.update(zip(missing, matrix, strict=True))
        np.savez(
            cache,
            texts=np.array(list(known), dtype=str),
            vectors=np.stack(list(known.values())).astype(np.float32),
        )
    return known


# With --memory-splits the verifier judges what the guards and the parse
# alignment let through; without it, what the guards let through (as shipped).
ALIGNER: PairAligner | None = None


def build_set(name: str, pairs: list[LabelledPair], vectors: dict[str, FloatArray]) -> PairSet:
    cosine = np.array(
        [
            float(np.dot(vectors[normalize_content(p.existing)], vectors[normalize_content(p.new)]))
            for p in pairs
        ]
    )
    features = np.array(
        [pair_features(p.existing.strip(), p.new, c) for p, c in zip(pairs, cosine, strict=True)]
    )
    from consumer.quality.rule import is_exact

    return PairSet(
        name=name,
        pairs=pairs,
        cosine=cosine,
        features=features,
        labels=np.array([p.duplicate for p in pairs]),
        vetoed=np.array(
            [
                check_pair(p.existing.strip(), p.new) is not None
                or (
                    ALIGNER is not None
                    and ALIGNER.check(p.existing.strip(), p.new).veto is not None
                )
                for p in pairs
            ]
        ),
        exact=np.array([is_exact(p.existing, p.new) for p in pairs]),
    )


def fit(x: FloatArray, y: npt.NDArray[np.bool_], weight: FloatArray) -> Any:
    from sklearn.ensemble import GradientBoostingClassifier

    model = GradientBoostingClassifier(random_state=SEED, **BOOSTING)
    model.fit(x, y, sample_weight=weight)
    return model


def training_rows(sets: Sequence[PairSet], memory_mask: npt.NDArray[np.bool_] | None = None):  # type: ignore[no-untyped-def]
    xs, ys, ws = [], [], []
    for s in sets:
        keep = s.cosine >= MIN_COSINE
        weight = 1.0
        if s.name == "memory":
            weight = MEMORY_WEIGHT
            if memory_mask is not None:
                keep &= memory_mask
        xs.append(s.features[keep])
        ys.append(s.labels[keep])
        ws.append(np.full(int(keep.sum()), weight))
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)


def folds_by_category(pairs: Sequence[LabelledPair]) -> npt.NDArray[np.int64]:
    """Fold of each pair: every category spread evenly over the folds (seeded);
    the variants of one group (one base fact) always share a fold."""
    fold = np.zeros(len(pairs), dtype=np.int64)
    by_category: dict[str, list[int]] = {}
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        if p.group:
            groups.setdefault(p.group, []).append(i)
        else:
            by_category.setdefault(f"{p.category}/{p.namespace}", []).append(i)
    rng = random.Random(SEED)
    offset = 0
    for key in sorted(by_category):
        members = by_category[key]
        rng.shuffle(members)
        for j, i in enumerate(members):
            fold[i] = (j + offset) % FOLDS
        offset += len(members)
    for j, name in enumerate(sorted(groups, key=lambda g: (rng.random(), g))):
        fold[groups[name]] = j % FOLDS
    return fold


def predicted(s: PairSet, prob: FloatArray, merge: float, cut: float) -> npt.NDArray[np.bool_]:
    """The consumer's rule: exact, or in band, no guard veto and the verifier agrees."""
    return s.exact | ((s.cosine >= merge) & ~s.vetoed & (prob >= cut))


def prf(pred: npt.NDArray[np.bool_], labels: npt.NDArray[np.bool_]) -> dict[str, float]:
    tp = int((pred & labels).sum())
    fp = int((pred & ~labels).sum())
    fn = int((~pred & labels).sum())
    tn = int((~pred & ~labels).sum())
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1,
            "fmr": fp / (fp + tn) if fp + tn else 0.0, "tp": tp, "fp": fp, "fn": fn, "tn": tn}  # fmt: skip


def choose_operating_point(s: PairSet, prob: FloatArray) -> tuple[float, float, dict[str, float]]:
    """Merge threshold and probability cut with the highest recall at precision >=
    TARGET_PRECISION (ties: higher precision, then the higher threshold and cut)."""
    best: tuple[tuple[float, float, float, float], float, float, dict[str, float]] | None = None
    for merge in MERGE_GRID:
        for cut in CUT_GRID:
            m = prf(predicted(s, prob, merge, cut), s.labels)
            if m["precision"] < TARGET_PRECISION:
                continue
            key = (m["recall"], m["precision"], merge, cut)
            if best is None or key > best[0]:
                best = (key, merge, cut, m)
    if best is None:
        raise SystemExit("no operating point reaches the target precision")
    return best[1], best[2], best[3]


def export(model: Any, min_probability: float, meta: dict[str, Any]) -> dict[str, Any]:
    prior = float(model.init_.class_prior_[1])
    trees = []
    for estimator in model.estimators_[:, 0]:
        tree = estimator.tree_
        trees.append(
            {
                "feature": [int(v) for v in tree.feature],
                "threshold": [round(float(v), 6) for v in tree.threshold],
                "left": [int(v) for v in tree.children_left],
                "right": [int(v) for v in tree.children_right],
                "value": [round(float(v), 6) for v in tree.value[:, 0, 0]],
            }
        )
    return {
        "format": MODEL_FORMAT,
        "features": list(FEATURE_NAMES),
        "min_probability": min_probability,
        "init": round(float(np.log(prior / (1 - prior))), 6),
        "learning_rate": float(model.learning_rate),
        "trees": trees,
        "training": meta,
    }


def paws_gain(s: PairSet, prob: FloatArray, merge: float, cut: float) -> list[str]:
    """Pipeline precision vs cosine's best precision at the same or higher recall."""
    lines = []
    order = np.argsort(-s.cosine, kind="stable")
    tp = np.cumsum(s.labels[order])
    positives = int(s.labels.sum())
    recalls, precisions = tp / positives, tp / np.arange(1, len(order) + 1)
    for label, m_t, c in (("defaults", merge, cut), ("verifier 0.5", merge, 0.5)):
        m = prf(predicted(s, prob, m_t, c), s.labels)
        ok = recalls >= m["recall"] - 1e-12
        cos_p = float(precisions[ok].max()) if ok.any() else float("nan")
        lines.append(
            f"  {s.name} {label} (merge {m_t:.2f}, cut {c:.2f}): recall {m['recall']:.3f}, "
            f"pipeline P {m['precision']:.3f}, cosine P {cos_p:.3f}, "
            f"gain {m['precision'] - cos_p:+.3f}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--datasets-dir", type=Path, default=DEFAULT_DATASETS_DIR)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdedup-verifier"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--check-only", action="store_true")
    parser.add_argument(
        "--memory-splits",
        action="store_true",
        help="also train on bench/pairs/memory train+dev, behind the parse alignment "
        "(a candidate model: see docs/quality.md; the shipped one is trained without)",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()

    from consumer.observability.logs import configure_logging

    configure_logging(level="WARNING", fmt="console")
    split_pairs = [
        pair
        for path in sorted(MEMORY_SPLIT_DIR.glob("*.jsonl"))
        for pair in load_pairs(path)
        if args.memory_splits and pair.split in MEMORY_SPLITS
    ]
    global ALIGNER
    ALIGNER = PairAligner() if args.memory_splits else None
    raw: dict[str, list[LabelledPair]] = {"memory": [*load_pairs(MEMORY_PAIRS), *split_pairs]}
    for name, folder, split in (*TRAIN_SPLITS, *TEST_SPLITS):
        raw[name] = load_public(args.datasets_dir / folder / f"{split}.jsonl")
    texts = [normalize_content(t) for ps in raw.values() for p in ps for t in (p.existing, p.new)]
    vectors = embed(texts, args.cache)
    sets = {name: build_set(name, pairs, vectors) for name, pairs in raw.items()}
    print(f"features for {sum(len(p) for p in raw.values())} pairs "
          f"({time.perf_counter() - started:.0f} s so far)")  # fmt: skip
    memory = sets["memory"]
    train_sets = [sets["memory"]] + [sets[n] for n, _, _ in TRAIN_SPLITS]

    if args.check_only:
        shipped = VerifierModel.load(args.out)
        x, y, w = training_rows(train_sets)
        model = fit(x, y, w)
        ours = np.array([shipped.probability(row) for row in memory.features])
        theirs = model.predict_proba(memory.features)[:, 1]
        print(f"max |shipped - sklearn| on memory pairs: {np.abs(ours - theirs).max():.2e}")
        return 0

    # Out-of-fold probabilities on the memory pairs.
    fold = folds_by_category(memory.pairs)
    oof = np.zeros(len(memory.pairs))
    for k in range(FOLDS):
        x, y, w = training_rows(train_sets, memory_mask=fold != k)
        model = fit(x, y, w)
        oof[fold == k] = model.predict_proba(memory.features[fold == k])[:, 1]
    # Public sets only: the memory pairs wholly held out.
    x, y, w = training_rows([sets[n] for n, _, _ in TRAIN_SPLITS])
    public_only = fit(x, y, w).predict_proba(memory.features)[:, 1]

    merge, cut, at_point = choose_operating_point(memory, oof)
    print(f"\nchosen on out-of-fold predictions: merge_threshold {merge:.2f}, "
          f"min_probability {cut:.2f}")  # fmt: skip

    x, y, w = training_rows(train_sets)
    final = fit(x, y, w)
    print(f"trained on {len(y)} pairs with cosine >= {MIN_COSINE} "
          f"({int(y.sum())} duplicate), memory weight {MEMORY_WEIGHT}")  # fmt: skip

    def row(name: str, m: dict[str, float]) -> str:
        return (f"| {name} | {m['precision']:.3f} | {m['recall']:.3f} | {m['f1']:.3f} | "
                f"{m['fmr']:.3f} | {m['tp']} / {m['fn']} / {m['fp']} / {m['tn']} |")  # fmt: skip

    print("\n### Memory pairs at the chosen defaults\n")
    print("| model | precision | recall | F1 | FMR | TP / FN / FP / TN |")
    print("|---|---|---|---|---|---|")
    print(row(f"out-of-fold ({FOLDS}-fold CV)", at_point))
    print(row("public sets only", prf(predicted(memory, public_only, merge, cut), memory.labels)))
    in_sample = final.predict_proba(memory.features)[:, 1]
    print(row("shipped (in-sample)", prf(predicted(memory, in_sample, merge, cut), memory.labels)))
    no_verifier = prf(predicted(memory, np.ones(len(oof)), merge, 0.0), memory.labels)
    print(row("guards only, same threshold", no_verifier))
    print("\nout-of-fold, by category:")
    categories = sorted({p.category or "" for p in memory.pairs})
    pred = predicted(memory, oof, merge, cut)
    for category in categories:
        mask = np.array([p.category == category for p in memory.pairs])
        print(f"  {category}: {int(pred[mask].sum())} of {int(mask.sum())} predicted duplicate")

    print("\n### Public test splits (never trained on)\n")
    for name, _, _ in TEST_SPLITS:
        s = sets[name]
        prob = final.predict_proba(s.features)[:, 1]
        m = prf(predicted(s, prob, merge, cut), s.labels)
        c = prf(s.cosine >= merge, s.labels)
        print(f"  {name}: pipeline P/R/F1 {m['precision']:.3f}/{m['recall']:.3f}/{m['f1']:.3f}, "
              f"cosine >= {merge:.2f} {c['precision']:.3f}/{c['recall']:.3f}/{c['f1']:.3f}")  # fmt: skip
        if name.startswith("paws"):
            print("\n".join(paws_gain(s, prob, merge, cut)))

    meta = {
        "seed": SEED,
        "min_cosine": MIN_COSINE,
        "memory_weight": MEMORY_WEIGHT,
        "boosting": BOOSTING,
        "pairs": len(y),
        "sets": ["memory_pairs (all)"]
        + (["bench/pairs/memory (train+dev)"] if args.memory_splits else [])
        + [n for n, _, _ in TRAIN_SPLITS],
        "chosen_merge_threshold": merge,
        "out_of_fold_memory": {k: round(v, 4) for k, v in at_point.items()},
    }
    document = export(final, cut, meta)
    args.out.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
    shipped = VerifierModel.from_json(document)
    drift = max(
        abs(shipped.probability(r) - p) for r, p in zip(memory.features, in_sample, strict=True)
    )
    print(f"\nwrote {args.out} ({args.out.stat().st_size // 1024} KiB, {len(document['trees'])} "
          f"trees); max |json - sklearn| {drift:.1e}; {time.perf_counter() - started:.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
