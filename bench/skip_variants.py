"""What a skip would drop: each train and dev text of the memory pairs with one
small word changed for one that changes the fact ("and" / "or", "if" / "unless",
"is" / "was", "her" / "his", "within" / "outside", ...), decided against the
text as the consumer decides a pair (defaults, guards, parse alignment, local
verifier, cross-encoder).

Usage::

    python bench/skip_variants.py [--pairs-dir bench/pairs/memory] [--variants 8000]
                                 [--trades | --frames] [--seed 0] [--show 20] [--json FILE]

The variants carry no labels: a few say the same, some are ungrammatical. What
counts is how many in the skip band (cosine >= the skip threshold) are skipped:
a skip drops the variant's text, so each is a fact the service would lose if the
change mattered. Only train and dev texts are read. Runs in ~2 min on 2 cores.

``--trades``: each text with two of its words of one part of speech (nouns,
names, adjectives, numbers) traded instead ("Maya, age 7, and Leo, age 4" ->
"Leo, age 7, and Maya, age 4"), up to two per text; never two words side by
side, one a list's word of the other, or one the other's head. What counts is
how many in the merge band are merged or skipped. Many such variants are
garbled English; some say the same ("in Leeds in March" / "in March in Leeds").

``--frames``: each text whose main verb is told plainly, with that verb put
under one frame in the past ("moved to Lyon" -> "planned to move to Lyon",
"decided to move", "was going to move", "used to", "was scheduled to", ...).
What counts is how many in the merge band are merged: against an act told as
done, each frame says it may not have happened; against a state that holds, a
decision ("decided to use pytest" / "uses pytest") may say the same.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from consumer.domain.alignment import PairAligner  # noqa: E402
from consumer.domain.verifier import LocalVerifier, build_verifier  # noqa: E402
from consumer.embedding.cross_encoder import build_cross_encoder  # noqa: E402
from consumer.quality.evaluate import embed_similarities, policy_from_settings  # noqa: E402
from consumer.quality.pairs import LabelledPair, load_pairs  # noqa: E402
from consumer.quality.rule import decide_pair  # noqa: E402
from consumer.settings import load_settings  # noqa: E402

MEMORY_PAIRS_DIR = REPO_ROOT / "bench" / "pairs" / "memory"

# A small word and what it is changed for: each changes the fact it is in.
CHANGES: dict[str, tuple[str, ...]] = {
    "and": ("or",), "or": ("and",), "both": ("either",), "if": ("unless",),
    "because": ("although",), "before": ("after",), "after": ("before",),
    "since": ("until",), "until": ("since",), "by": ("after",), "to": ("from",),
    "from": ("to",), "for": ("against", "from"), "with": ("without",),
    "without": ("with",), "above": ("below",), "over": ("under",), "under": ("over",),
    "within": ("outside",), "more": ("less",), "less": ("more",), "all": ("some",),
    "every": ("some",), "each": ("one",), "most": ("few",), "many": ("few",),
    "few": ("many",), "always": ("never",), "never": ("always",), "often": ("rarely",),
    "usually": ("rarely",), "can": ("cannot",), "will": ("might",), "must": ("may",),
    "should": ("could",), "is": ("was",), "are": ("were",), "has": ("had",),
    "his": ("her",), "her": ("his",), "still": ("no longer",), "already": ("not yet",),
    "first": ("last",), "next": ("last",), "early": ("late",), "up": ("down",),
    "down": ("up",), "in": ("out of",), "on": ("off",), "at": ("near",),
    "than": ("as",), "only": ("also",),
}  # fmt: skip
_WORD = re.compile(r"\b\w+\b")


def tuning_texts(pairs_dir: Path) -> list[str]:
    """The distinct texts of the train and dev splits, sorted."""
    texts = {
        text.strip()
        for path in sorted(pairs_dir.glob("*.jsonl"))
        for pair in load_pairs(path)
        if pair.split in ("train", "dev")
        for text in (pair.existing, pair.new)
    }
    return sorted(texts)


def variants(texts: Sequence[str], limit: int, seed: int) -> list[tuple[str, str, str]]:
    """(text, variant, change) for every small word of `CHANGES` in each text,
    shuffled with `seed`, the first `limit`."""
    found = []
    for text in texts:
        for match in _WORD.finditer(text):
            word = match.group(0)
            for other in CHANGES.get(word.lower(), ()):
                changed = other.capitalize() if word[0].isupper() else other
                variant = text[: match.start()] + changed + text[match.end() :]
                found.append((text, variant, f"{word.lower()} -> {other}"))
    random.Random(seed).shuffle(found)
    return found[:limit]


_TRADED_POS = frozenset({"NOUN", "PROPN", "ADJ", "NUM"})


def trades(texts: Sequence[str], limit: int, seed: int) -> list[tuple[str, str, str]]:
    """(text, variant, part of speech) for up to two trades of two words in each
    text (`--trades`), shuffled with `seed`, the first `limit`."""
    from consumer.domain.alignment import load_parser

    rng = random.Random(seed)
    found = []
    for doc, text in zip(load_parser().pipe(texts), texts, strict=True):
        words = [
            t
            for t in doc
            if t.pos_ in _TRADED_POS
            and (t.is_alpha or t.text.isdigit())
            and not any(doc[i].text in "-'" for i in (t.i - 1, t.i + 1) if 0 <= i < len(doc))
        ]
        pairs = [
            (first, second)
            for at, first in enumerate(words)
            for second in words[at + 1 :]
            if first.pos_ == second.pos_
            and first.lower_ != second.lower_
            and second.i - first.i > 2
            and second not in first.conjuncts
            and first.i != second.head.i
            and second.i != first.head.i
        ]
        rng.shuffle(pairs)
        for first, second in pairs[:2]:
            end = second.idx + len(second.text)
            variant = (
                text[: first.idx] + second.text + text[first.idx + len(first.text) : second.idx]
                + first.text + text[end:]
            )  # fmt: skip
            found.append((text, variant, first.pos_))
    rng.shuffle(found)
    return found[:limit]


# Frames a main verb is put under: each says the act may not hold now, or was
# never done ("moved to Lyon" -> "planned to move to Lyon"). In the past, so that
# none agrees with its subject.
FRAMES: tuple[str, ...] = (
    "used to", "planned to", "wanted to", "hoped to", "decided to", "promised to",
    "agreed to", "tried to", "offered to", "was going to", "was scheduled to",
)  # fmt: skip


def framed(texts: Sequence[str], limit: int, seed: int) -> list[tuple[str, str, str]]:
    """(text, variant, frame) for each text whose main verb is told plainly (no
    negation, no passive, no frame of its own), with the verb and its
    auxiliaries put under one frame of `FRAMES` (`--frames`), shuffled with
    `seed`, the first `limit`."""
    from consumer.domain.alignment import load_parser

    rng = random.Random(seed)
    found = []
    for doc, text in zip(load_parser().pipe(texts), texts, strict=True):
        root = next((t for t in doc if t.dep_ == "ROOT"), None)
        if root is None or root.pos_ not in {"VERB", "AUX"} or root.tag_ in {"VB", "VBG"}:
            continue
        if any(c.dep_ in {"neg", "auxpass", "xcomp", "ccomp"} for c in root.children):
            continue
        told = sorted([c for c in root.children if c.dep_ == "aux"] + [root], key=lambda t: t.i)
        if told[-1].i - told[0].i != len(told) - 1:
            continue  # an auxiliary apart from its verb ("has she moved")
        start, end = told[0].idx, root.idx + len(root.text)
        joined = start > 0 and text[start - 1].isalnum()  # "I've got" -> "I was ..."
        frame = rng.choice(FRAMES)
        if frame.startswith("was ") and root.morph.get("Number", []) == ["Plur"]:
            frame = "were" + frame[3:]
        verb = root.lemma_.lower()
        variant = text[:start] + (" " if joined else "") + f"{frame} {verb}" + text[end:]
        if start == 0:
            variant = variant[0].upper() + variant[1:]
        found.append((text, variant, frame.replace("were ", "was ")))
    rng.shuffle(found)
    return found[:limit]


async def similarities(pairs: Sequence[LabelledPair], settings: Any) -> list[float]:
    """Cosine of each pair with the consumer's embedding model."""
    from consumer.embedding.embedders import load_embedder

    embedder = await load_embedder(settings.embedding, data_dir=settings.qdrant.path)
    try:
        return [float(s) for s in await embed_similarities(embedder, list(pairs))]
    finally:
        await embedder.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pairs-dir", type=Path, default=MEMORY_PAIRS_DIR)
    parser.add_argument("--variants", type=int, default=8000)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--trades", action="store_true", help="trade two words instead")
    mode.add_argument("--frames", action="store_true", help="frame the main verb instead")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=20, help="skipped variants to print")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)

    from consumer.observability.logs import configure_logging

    configure_logging(level="WARNING", fmt="console")
    settings = load_settings()
    bands = policy_from_settings(settings.dedup).default
    generate = trades if args.trades else framed if args.frames else variants
    rows = generate(tuning_texts(args.pairs_dir), args.variants, args.seed)
    # A traded or framed fact merged loses nothing but is a false merge: the merge
    # band counts.
    merge_band = args.trades or args.frames
    floor = bands.merge_threshold if merge_band else bands.duplicate_threshold
    pairs = [LabelledPair(existing=text, new=variant, duplicate=False) for text, variant, _ in rows]
    scores = asyncio.run(similarities(pairs, settings))
    aligner = PairAligner() if settings.dedup.alignment_enabled else None
    verifier = build_verifier(settings.dedup, aligner=aligner)
    if verifier is not None and not isinstance(verifier, LocalVerifier):
        verifier = verifier.fallback
    cross_encoder = build_cross_encoder(settings.dedup.cross_encoder)
    outcomes: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    by_change: dict[str, Counter[str]] = {}
    shown = 0
    for (text, variant, change), score in zip(rows, scores, strict=True):
        if score < floor:
            continue
        decision = decide_pair(
            text,
            variant,
            score,
            bands,
            guards=settings.dedup.guards_enabled,
            verifier=verifier,
            aligner=aligner,
            cross_encoder=cross_encoder,
        ).decision.value
        outcomes[decision] += 1
        by_change.setdefault(change, Counter())[decision] += 1
        if decision == "skipped":
            skipped[change] += 1
        reported = decision == "skipped" or (merge_band and decision == "merged")
        if reported and shown < args.show:
            print(f"{decision} ({change}, cosine {score:.3f}): {text!r} / {variant!r}")
            shown += 1
    band = sum(outcomes.values())
    print(
        f"\n{len(rows)} variants, {band} in the {'merge' if merge_band else 'skip'} band "
        f"(cosine >= {floor:g}): {outcomes['skipped']} skipped, "
        f"{outcomes['merged']} merged, {outcomes['accepted']} kept apart"
    )
    for change, count in skipped.most_common(10):
        print(f"  {count:5d} skipped: {change}")
    if args.json is not None:
        figures = {
            "variants": len(rows),
            "in_skip_band": band,
            "outcomes": dict(outcomes),
            "skipped_by_change": dict(skipped),
            "band_by_change": {change: dict(counts) for change, counts in by_change.items()},
            "seed": args.seed,
            "trades": args.trades,
            "frames": args.frames,
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
