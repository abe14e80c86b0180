"""Parse benchmark: what the parse alignment costs a text, against spaCy's own
pipeline on the same texts in the same run.

Usage::

    python bench/parsing.py [--pairs-dir bench/pairs/memory] [--texts 2000]
                          [--repeats 5] [--json FILE]

Texts: the first ``--texts`` distinct texts of the labelled pairs' train and dev
splits (memories as an extraction model writes them: sentences, notes, first and
third person). Best of ``--repeats`` runs each, in ms a text:

* **spaCy as shipped**: the small English pipeline as the aligner loads it (no
  entity recogniser, its tokenizer's exceptions) with thinc's default ops, whose
  matrix products go to blis, ``nlp.pipe`` in batches of 64: the baseline;
* **the aligner's pipeline**: ``load_parser`` (products through numpy, on one BLAS
  thread), the same call;
* **prime**: ``PairAligner.prime`` on a cold cache: the batched parse, the second
  parse of memories that leave their subject out, and reading each parse into
  the words the alignment compares (what a consumer batch pays);
* **one at a time**: ``PairAligner.parsed`` per text on a cold cache, a tenth of
  the texts (what an event decided alone pays).

It also counts the texts whose tags, heads, labels, lemmas or parts of speech
differ between the two pipelines: it should be none. Runs in ~1 min on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from consumer.domain.alignment import (
    PairAligner,
    load_parser,
    one_blas_thread,
)
from consumer.quality.pairs import load_pairs

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PAIRS_DIR = REPO_ROOT / "bench" / "pairs" / "memory"
PIPE_BATCH = 64


def tuning_texts(pairs_dir: Path, limit: int) -> list[str]:
    """The first `limit` distinct texts of the train and dev splits."""
    texts: dict[str, None] = {}
    for path in sorted(pairs_dir.glob("*.jsonl")):
        for pair in load_pairs(path):
            if pair.split in ("train", "dev"):
                texts.setdefault(pair.existing.strip(), None)
                texts.setdefault(pair.new.strip(), None)
    return list(texts)[:limit]


def best_ms_per_text(
    run: Callable[[Any], object], count: int, repeats: int, setup: Callable[[], Any] = lambda: None
) -> float:
    """Best of `repeats` runs of `run(setup())`, `setup` untimed, in ms a text."""
    times = []
    for _ in range(repeats):
        state = setup()
        started = time.perf_counter()
        run(state)
        times.append(time.perf_counter() - started)
    return min(times) / count * 1e3


def warm_aligner() -> PairAligner:
    """A new aligner (a cold cache) with its pipeline loaded."""
    aligner = PairAligner(cache_size=1_000_000)
    aligner.warm_up()
    return aligner


def reading(doc: Any) -> list[tuple[str, str, int, str, str]]:
    return [(t.tag_, t.dep_, t.head.i, t.lemma_, t.pos_) for t in doc]


def measure(texts: Sequence[str], repeats: int) -> dict[str, Any]:
    shipped = load_parser(blis=True)
    ours = load_parser()
    shipped_ms = best_ms_per_text(
        lambda _: list(shipped.pipe(texts, batch_size=PIPE_BATCH)), len(texts), repeats
    )

    def ours_pipe(_: object) -> None:
        with one_blas_thread():
            list(ours.pipe(texts, batch_size=PIPE_BATCH))

    ours_ms = best_ms_per_text(ours_pipe, len(texts), repeats)
    prime_ms = best_ms_per_text(
        lambda aligner: aligner.prime(texts), len(texts), repeats, warm_aligner
    )
    singles = texts[: max(1, len(texts) // 10)]
    single_ms = best_ms_per_text(
        lambda aligner: [aligner.parsed(text) for text in singles],
        len(singles),
        repeats,
        warm_aligner,
    )
    with one_blas_thread():
        differ = sum(
            reading(a) != reading(b)
            for a, b in zip(
                shipped.pipe(texts, batch_size=PIPE_BATCH),
                ours.pipe(texts, batch_size=PIPE_BATCH),
                strict=True,
            )
        )
    return {
        "texts": len(texts),
        "repeats": repeats,
        "spacy_as_shipped_ms": round(shipped_ms, 3),
        "aligner_pipeline_ms": round(ours_ms, 3),
        "prime_ms": round(prime_ms, 3),
        "one_at_a_time_ms": round(single_ms, 3),
        "aligner_pipeline_over_shipped": round(ours_ms / shipped_ms, 3),
        "prime_over_aligner_pipeline": round(prime_ms / ours_ms, 3),
        "texts_parsed_otherwise": differ,
        "machine": platform.machine(),
        "python": platform.python_version(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pairs-dir", type=Path, default=DEFAULT_PAIRS_DIR)
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    texts = tuning_texts(args.pairs_dir, args.texts)
    if not texts:
        parser.error(f"no train or dev pair in {args.pairs_dir}/*.jsonl: point --pairs-dir at one")
    result = measure(texts, args.repeats)
    rows = [
        ("spaCy as shipped (blis), batched", result["spacy_as_shipped_ms"]),
        ("the aligner's pipeline, batched", result["aligner_pipeline_ms"]),
        ("prime: parse, second parses, words", result["prime_ms"]),
        ("one text at a time", result["one_at_a_time_ms"]),
    ]
    print(f"{result['texts']} texts, best of {result['repeats']}; ms a text")
    for label, value in rows:
        print(f"  {label:<38} {value:8.3f}")
    print(
        f"  aligner's pipeline / spaCy as shipped  {result['aligner_pipeline_over_shipped']:8.3f}"
    )
    print(f"  prime / aligner's pipeline             {result['prime_over_aligner_pipeline']:8.3f}")
    print(f"  texts parsed otherwise                 {result['texts_parsed_otherwise']:8d}")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
