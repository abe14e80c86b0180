"""The gray-zone verifier: is a semantic match really the same fact?

Cosine similarity ranks candidates well but cannot tell "User lives in Paris"
from "User lives in Lyon", or a paraphrase from a pair that shares most words
and means something else (PAWS). Every match that reaches the merge band and
passes the guards (consumer.domain.guards) is therefore judged once more before
it is skipped or merged; a "different fact" verdict is a veto named
``verifier``, and the memory is accepted like after a guard veto.

Two verifiers:

- :class:`LocalVerifier` (the default): a small pair classifier over cheap text
  features (cosine, lexical, order and character overlap, what the guards see,
  proper nouns, unmatched words). Its parameters are plain numbers in
  ``consumer/data/verifier.json``, trained offline by ``tools/train_verifier.py``;
  inference is pure Python, a few tens of microseconds per pair.
- :class:`LlmVerifier`: asks an OpenAI-compatible chat completions endpoint "are
  these the same fact?"; on any failure (timeout, HTTP error, an answer that is
  not the JSON asked for) it falls back to the local verifier.

Verdicts never carry memory text; logs name content hashes only.

One module because both verifiers answer with one `Verdict` (and its veto) and
the LLM verifier falls back to the local one on every failure.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import httpx
import structlog

from consumer.domain.chat import ChatEndpoint, ChatFailed
from consumer.domain.guards import pair_signals, text_signals
from consumer.domain.lifting import guards_for_verifier
from consumer.domain.normalize import content_hash, normalize_content, spelled_alike
from consumer.domain.vetoes import GuardName, GuardVeto
from consumer.errors import MemdedupError

if TYPE_CHECKING:
    from consumer.domain.alignment import PairAligner
    from consumer.settings import DedupSettings, VerifierSettings

__all__ = [
    "DEFAULT_MODEL_PATH",
    "FEATURE_NAMES",
    "VERIFIER_GUARD",
    "LlmVerifier",
    "LocalVerifier",
    "PairJudge",
    "Verdict",
    "Verifier",
    "VerifierModel",
    "build_verifier",
    "pair_features",
]

log = structlog.get_logger(__name__)

DEFAULT_MODEL_PATH: Final = Path(__file__).resolve().parents[1] / "data" / "verifier.json"
MODEL_FORMAT: Final = "memdedup-verifier/1"
VERIFIER_GUARD: Final = GuardName.VERIFIER
_CACHE_SIZE: Final = 4096
_MAX_DETAIL: Final = 199


@dataclass(frozen=True, slots=True)
class Verdict:
    """``same_fact``: skip or merge may go ahead. ``probability``: the verifier's
    P(same fact), where it has one. ``source``: ``local``, ``llm`` or
    ``local (llm failed)``. ``detail``: why, briefly, without memory text."""

    same_fact: bool
    probability: float | None
    source: str
    detail: str

    def veto(self) -> GuardVeto | None:
        """ "Different fact" as a verifier veto naming its source; None when same."""
        if self.same_fact:
            return None
        return GuardVeto(GuardName.VERIFIER, f"{self.source}: {self.detail}"[:_MAX_DETAIL])


class Verifier(Protocol):
    """Judges one (stored memory, new event) pair that reached a band."""

    async def verify(self, existing: str, new: str, similarity: float) -> Verdict: ...


class PairJudge(Protocol):
    """A verifier that answers synchronously (the local one; the quality tools'
    pre-computed verdicts)."""

    def judge(self, existing: str, new: str, similarity: float) -> Verdict: ...


# --------------------------------------------------------------------------
# Features
# --------------------------------------------------------------------------

FEATURE_NAMES: Final[tuple[str, ...]] = (
    "cosine",
    "content_jaccard",
    "content_cover",
    "unmatched_max",
    "unmatched_min",
    "unmatched_fuzzy",
    "token_jaccard",
    "bigram_jaccard",
    "lcs_ratio",
    "order_discord",
    "char_trigram_jaccard",
    "length_ratio",
    "log_min_length",
    "proper_noun_diff",
    "quantities_differ",
    "cues_differ",
    "antonym_clashes",
    "relations_differ",
    "labels_differ",
    "same_bag_other_order",
    "guard_veto",
)

_WORD_RE: Final = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_SENTENCE_START_RE: Final = re.compile(r"(?:^|[.!?;:]\s+)([^\W\d_][\w'-]*)")
# Capitalised words that are not names.
_NOT_NAMES: Final = frozenset({"user", "i", "the", "a", "an", "we", "our", "my", "it"})


@dataclass(frozen=True, slots=True)
class _Text:
    content: tuple[str, ...]
    content_set: frozenset[str]
    tokens: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    trigrams: frozenset[str]
    names: frozenset[str]
    labels: tuple[str, ...]
    length: int


def _trigrams(text: str) -> frozenset[str]:
    padded = f" {text} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


@lru_cache(maxsize=_CACHE_SIZE)
def _analyse(text: str) -> _Text:
    """Per-text part of the features; cached because stored texts recur."""
    signals = text_signals(text)
    words = _WORD_RE.findall(text)
    starts = {m.group(1) for m in _SENTENCE_START_RE.finditer(text)}
    names = frozenset(
        w.casefold().removesuffix("'s")
        for i, w in enumerate(words)
        if w[:1].isupper() and i > 0 and w not in starts and w.casefold() not in _NOT_NAMES
    )
    folded = normalize_content(text)
    content = signals.content
    return _Text(
        content=content,
        content_set=frozenset(content),
        tokens=frozenset(w.casefold() for w in words),
        bigrams=frozenset(itertools.pairwise(content)),
        trigrams=_trigrams(folded),
        names=names,
        labels=signals.labels,
        length=len(words),
    )


def _jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def _order_discord(a: Sequence[str], b: Sequence[str]) -> float:
    """Share of pairs of shared words (each used once per side) whose order differs."""
    shared = [w for w in dict.fromkeys(a) if w in set(b) and a.count(w) == 1 and b.count(w) == 1]
    if len(shared) < 2:
        return 0.0
    position = {w: i for i, w in enumerate(b)}
    ranks = [position[w] for w in shared]
    pairs = discordant = 0
    for i in range(len(ranks)):
        for j in range(i + 1, len(ranks)):
            pairs += 1
            discordant += ranks[i] > ranks[j]
    return discordant / pairs


def _fuzzy(unmatched_a: Sequence[str], unmatched_b: Sequence[str]) -> float:
    """How close unmatched words are to the other side's (spelling, inflection):
    mean best character-trigram Jaccard, 1.0 when nothing is unmatched."""
    if not unmatched_a and not unmatched_b:
        return 1.0
    if not unmatched_a or not unmatched_b:
        return 0.0
    grams_b = [_trigrams(w) for w in unmatched_b]
    best = [max(_jaccard(_trigrams(w), g) for g in grams_b) for w in unmatched_a]
    return sum(best) / len(best)


def pair_features(
    existing: str, new: str, similarity: float, aligner: PairAligner | None = None
) -> list[float]:
    """The verifier's inputs for one pair, in the order of FEATURE_NAMES. With the
    parse alignment, `guard_veto` reads the guards as the consumer does
    (`consumer.domain.lifting.guards_for_verifier`): a word-order veto on words the
    parse finds moved with their roles is none, and so is a numbers veto on
    quantities that come with a clause the new text adds. A numbers veto on a
    detail without a clause of its own still counts: whether it changes the fact
    ("vegetarian on weekdays") is the verifier's to say."""
    a, b = _analyse(existing), _analyse(new)
    signals = pair_signals(existing, new)
    veto = guards_for_verifier(signals.veto, existing, new, aligner)
    shared = a.content_set & b.content_set
    only_a = [w for w in a.content if w not in b.content_set]
    only_b = [w for w in b.content if w not in a.content_set]
    smaller = min(len(a.content_set), len(b.content_set))
    longer = max(len(a.content), len(b.content))
    fuzzy = _fuzzy(only_a, only_b) if len(only_a) <= len(only_b) else _fuzzy(only_b, only_a)
    return [
        similarity,
        _jaccard(a.content_set, b.content_set),
        len(shared) / smaller if smaller else 0.0,
        float(max(len(only_a), len(only_b))),
        float(min(len(only_a), len(only_b))),
        fuzzy,
        _jaccard(a.tokens, b.tokens),
        _jaccard(a.bigrams, b.bigrams),
        _lcs(a.content, b.content) / longer if longer else 1.0,
        _order_discord(a.content, b.content),
        _jaccard(a.trigrams, b.trigrams),
        min(a.length, b.length) / max(a.length, b.length, 1),
        math.log1p(min(a.length, b.length)),
        float(len(a.names ^ b.names)),
        float(signals.quantities_differ),
        float(signals.cues_differ),
        float(signals.antonym_clashes),
        float(signals.relations_differ),
        float(a.labels != b.labels),
        float(signals.same_bag_other_order),
        float(veto is not None),
    ]


# --------------------------------------------------------------------------
# The local model
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tree:
    """One regression tree as flat arrays; a leaf has feature -1."""

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[float, ...]

    def predict(self, x: Sequence[float]) -> float:
        node = 0
        while self.feature[node] >= 0:
            node = (
                self.left[node]
                if x[self.feature[node]] <= self.threshold[node]
                else self.right[node]
            )
        return self.value[node]


@dataclass(frozen=True, slots=True)
class VerifierModel:
    """Gradient-boosted trees (log-odds: init + rate * sum of trees) and/or a
    logistic regression on standardised features; parameters from JSON."""

    features: tuple[str, ...]
    min_probability: float
    init: float = 0.0
    learning_rate: float = 1.0
    trees: tuple[_Tree, ...] = ()
    mean: tuple[float, ...] = ()
    scale: tuple[float, ...] = ()
    coef: tuple[float, ...] = ()
    intercept: float = 0.0

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> VerifierModel:
        if document.get("format") != MODEL_FORMAT:
            raise ValueError(f"not a {MODEL_FORMAT} document")
        features = tuple(document["features"])
        if features != FEATURE_NAMES:
            raise ValueError("the model's features are not this version's FEATURE_NAMES")
        trees = tuple(
            _Tree(
                tuple(int(v) for v in t["feature"]),
                tuple(float(v) for v in t["threshold"]),
                tuple(int(v) for v in t["left"]),
                tuple(int(v) for v in t["right"]),
                tuple(float(v) for v in t["value"]),
            )
            for t in document.get("trees", [])
        )
        logistic = document.get("logistic") or {}
        return cls(
            features=features,
            min_probability=float(document["min_probability"]),
            init=float(document.get("init", 0.0)),
            learning_rate=float(document.get("learning_rate", 1.0)),
            trees=trees,
            mean=tuple(float(v) for v in logistic.get("mean", ())),
            scale=tuple(float(v) for v in logistic.get("scale", ())),
            coef=tuple(float(v) for v in logistic.get("coef", ())),
            intercept=float(logistic.get("intercept", 0.0)),
        )

    @classmethod
    def load(cls, path: Path = DEFAULT_MODEL_PATH) -> VerifierModel:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))

    def log_odds(self, x: Sequence[float]) -> float:
        score = self.init + self.learning_rate * sum(tree.predict(x) for tree in self.trees)
        if self.coef:
            score += self.intercept + sum(
                c * (v - m) / s
                for c, v, m, s in zip(self.coef, x, self.mean, self.scale, strict=True)
            )
        return score

    def probability(self, x: Sequence[float]) -> float:
        z = self.log_odds(x)
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@lru_cache(maxsize=4)
def _load_model(path: Path) -> VerifierModel:
    return VerifierModel.load(path)


class LocalVerifier:
    """The learned pair classifier: same fact when P(same fact) >= min_probability."""

    source = "local"

    def __init__(
        self,
        model: VerifierModel,
        *,
        min_probability: float | None = None,
        aligner: PairAligner | None = None,
    ) -> None:
        self._model = model
        self._aligner = aligner
        self._min_probability = (
            model.min_probability if min_probability is None else min_probability
        )

    @classmethod
    def load(
        cls,
        path: Path | None = None,
        *,
        min_probability: float | None = None,
        aligner: PairAligner | None = None,
    ) -> LocalVerifier:
        model = _load_model(path or DEFAULT_MODEL_PATH)
        return cls(model, min_probability=min_probability, aligner=aligner)

    @property
    def min_probability(self) -> float:
        return self._min_probability

    def probability(self, existing: str, new: str, similarity: float) -> float:
        return self._model.probability(pair_features(existing, new, similarity, self._aligner))

    def judge(self, existing: str, new: str, similarity: float) -> Verdict:
        if spelled_alike(existing, new):
            # A typo lowers every overlap feature the model reads; the guards and
            # the alignment, which already ran, see one text.
            return Verdict(True, 1.0, self.source, "spelled alike: one text with a typo")
        p = self.probability(existing, new, similarity)
        same = p >= self._min_probability
        relation = ">=" if same else "<"
        detail = f"P(same fact) {p:.3f} {relation} {self._min_probability:g}"
        return Verdict(same, p, self.source, detail)

    async def verify(self, existing: str, new: str, similarity: float) -> Verdict:
        return self.judge(existing, new, similarity)


# --------------------------------------------------------------------------
# The LLM verifier
# --------------------------------------------------------------------------

VERIFY_PROMPT: Final = """Two memories were extracted from conversations with the same user.
Are these the same fact? Answer "same" only if storing one of them loses nothing
the other says: a paraphrase, a rewording or a trivial edit. Answer "different"
if they differ in who, what, when, where, how many, or whether (a negation, an
antonym, swapped roles, another value, another person, another time).

Memory A: {existing}
Memory B: {new}

Reply with JSON only: {{"same_fact": true}} or {{"same_fact": false}}"""

_JSON_OBJECT_RE: Final = re.compile(r"\{.*\}", re.DOTALL)


class LlmVerifier:
    """Asks an OpenAI-compatible endpoint (`POST {base_url}/chat/completions`);
    any failure falls back to ``fallback`` (the local verifier)."""

    source = "llm"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        fallback: LocalVerifier,
        api_key: str | None = None,
        timeout_s: float = 5.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._chat = ChatEndpoint(
            base_url=base_url,
            model=model,
            api_key=api_key,
            timeout_s=timeout_s,
            transport=transport,
        )
        self._fallback = fallback
        self.failures = 0

    @property
    def fallback(self) -> LocalVerifier:
        return self._fallback

    async def verify(self, existing: str, new: str, similarity: float) -> Verdict:
        started = time.perf_counter()
        try:
            same = await self._ask(existing, new)
        except _VerifyFailed as exc:
            self.failures += 1
            log.warning(
                "verifier_fallback",
                existing_hash=content_hash(normalize_content(existing))[:12],
                new_hash=content_hash(normalize_content(new))[:12],
                error=str(exc)[:200],
                duration_ms=round((time.perf_counter() - started) * 1000, 1),
            )
            verdict = self._fallback.judge(existing, new, similarity)
            return Verdict(
                verdict.same_fact,
                verdict.probability,
                "local (llm failed)",
                f"llm failed ({str(exc)[:60]}); {verdict.detail}"[:_MAX_DETAIL],
            )
        detail = f"{self._chat.model}: {'same fact' if same else 'different fact'}"
        return Verdict(same, None, self.source, detail[:_MAX_DETAIL])

    async def _ask(self, existing: str, new: str) -> bool:
        try:
            text = await self._chat.complete(VERIFY_PROMPT.format(existing=existing, new=new))
        except ChatFailed as exc:
            raise _VerifyFailed(str(exc)) from exc
        return _parse_answer(text)


class _VerifyFailed(MemdedupError):
    pass


def _parse_answer(text: object) -> bool:
    """``{"same_fact": true|false}``, possibly inside a code fence or prose."""
    if not isinstance(text, str):
        raise _VerifyFailed("the completion holds no text")
    match = _JSON_OBJECT_RE.search(text)
    if match is None:
        raise _VerifyFailed("the answer holds no JSON object")
    try:
        answer = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise _VerifyFailed(f"the answer is not JSON: {exc.msg}") from exc
    same = answer.get("same_fact") if isinstance(answer, dict) else None
    if not isinstance(same, bool):
        raise _VerifyFailed("the answer has no boolean same_fact")
    return same


def build_verifier(
    dedup: DedupSettings, *, aligner: PairAligner | None = None
) -> LocalVerifier | LlmVerifier | None:
    """The verifier `dedup.verifier` asks for; None when it is off. `aligner`: the
    consumer's parse alignment, when it is on (`pair_features`)."""
    settings: VerifierSettings = dedup.verifier
    if settings.kind == "off":
        return None
    local = LocalVerifier.load(
        settings.model_path, min_probability=settings.min_probability, aligner=aligner
    )
    if settings.kind == "local":
        return local
    assert settings.base_url, "verifier.base_url is required for kind llm"
    return LlmVerifier(
        base_url=settings.base_url,
        model=settings.model,
        fallback=local,
        api_key=os.environ.get(settings.api_key_env) or None,
        timeout_s=settings.timeout_s,
    )
