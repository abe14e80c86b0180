"""The cross-encoder pair verifier: one more judge of a semantic match, and a
rescue of paraphrases just below the merge band.

A cross-encoder reads both texts at once and answers P(same fact); it tells a
paraphrase from a changed value far better than cosine, but alone it does not
reach the precision the service needs. So it is used in two narrow ways (rule (d)
of tools/eval_cross_encoder.py, chosen on the memory pairs' dev split only):

- **veto**: a match that reached a band and that the guards, the alignment and
  the gray-zone verifier allowed is kept apart when P(same fact) < `veto_below`,
  or < `reworded_below` when the alignment found it reworded (unmatched words on
  both sides: the parse cannot vouch for it, so the model must);
- **rescue**: when no match reached an allowed band, the best candidate with
  cosine in [`rescue_threshold`, merge threshold) that no guard vetoes is merged
  (never skipped) when P(same fact) >= `rescue_from` and the alignment does not
  veto it (consumer.domain.vetting; one model run per event at most);
- **verb swap**: the alignment's veto of one verb put for another in one slot,
  with nothing else changed (`Alignment.verb_swap`: "works at" / "is employed
  by", but also "joined" / "left"), is lifted when P(same fact) >=
  `verb_swap_from`, a cut near certainty: a lifted pair is merged (never
  skipped) if nothing else vetoes it.

Two texts spelled alike (`spelled_alike`: a typo, case or a hyphen apart) are
not asked: the model reads a misspelt word as another word ("golden retreiver",
P 0.04), and the guards and the alignment, which already ran, see one text.

The model itself (onnxruntime and a tokenizer) lives in
consumer.embedding.cross_encoder; the domain reaches it through
:class:`PairScorer`. Verdicts never carry memory text.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final, Protocol

from consumer.domain.normalize import spelled_alike
from consumer.domain.verifier import Verdict

__all__ = ["CROSS_ENCODER_SOURCE", "SCORE_CACHE_SIZE", "CrossEncoderVerifier", "PairScorer"]

CROSS_ENCODER_SOURCE: Final = "cross-encoder"
SCORE_CACHE_SIZE: Final = 4096  # pairs scored, kept by default


class PairScorer(Protocol):
    """P(same fact) for (existing, new) pairs of raw texts. Blocking (CPU-bound):
    callers on the event loop run it in a worker thread."""

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


class CrossEncoderVerifier:
    """The cross-encoder's veto (`judge`, `verify`: a `Verifier` and a
    `PairJudge`) and its rescue (`rescues`, `judge_rescue`). Scores are cached per
    pair, since a stored text meets many new ones and a batch asks twice."""

    source = CROSS_ENCODER_SOURCE

    def __init__(
        self,
        scorer: PairScorer,
        *,
        veto_below: float,
        rescue_from: float,
        reworded_below: float | None = None,
        rescue_contained_from: float | None = None,
        verb_swap_from: float = 1.0,
        cache_size: int = SCORE_CACHE_SIZE,
    ) -> None:
        reworded_below = veto_below if reworded_below is None else reworded_below
        if rescue_contained_from is None:
            rescue_contained_from = rescue_from
        for name, value in (
            ("veto_below", veto_below),
            ("rescue_from", rescue_from),
            ("reworded_below", reworded_below),
            ("rescue_contained_from", rescue_contained_from),
            ("verb_swap_from", verb_swap_from),
        ):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within 0..1, got {value}")
        self._scorer = scorer
        self._veto_below = veto_below
        self._rescue_from = rescue_from
        self._reworded_below = max(reworded_below, veto_below)
        self._rescue_contained_from = rescue_contained_from
        self._verb_swap_from = verb_swap_from
        self._cache: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._cache_size = cache_size

    @property
    def veto_below(self) -> float:
        return self._veto_below

    @property
    def rescue_from(self) -> float:
        return self._rescue_from

    @property
    def rescue_contained_from(self) -> float:
        return self._rescue_contained_from

    @property
    def lowest_rescue_cut(self) -> float:
        """Below this P no pair is rescued, contained or not: the caller may skip
        the parse."""
        return min(self._rescue_from, self._rescue_contained_from)

    @property
    def verb_swap_from(self) -> float:
        """The P from which a verb swap is lifted; 1.0: never."""
        return self._verb_swap_from

    def _rescue_cut(self, contained: bool) -> float:
        return self._rescue_contained_from if contained else self._rescue_from

    @property
    def reworded_below(self) -> float:
        return self._reworded_below

    def _veto_cut(self, reworded: bool) -> float:
        return self._reworded_below if reworded else self._veto_below

    def probability(self, existing: str, new: str) -> float:
        """P(same fact) of one pair (1.0 for texts `spelled_alike`, with no model
        run); blocking on a cache miss."""
        if spelled_alike(existing, new):
            return 1.0
        return self._scored(existing, new)

    def _scored(self, existing: str, new: str) -> float:
        """The model's P(same fact), cached; blocking on a cache miss."""
        key = (existing, new)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        (p,) = self._scorer.probabilities([key])
        self._remember(key, p)
        return p

    def prime(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Score, in one batched call, the pairs not yet cached (blocking)."""
        missing = list(
            dict.fromkeys(p for p in pairs if p not in self._cache and not spelled_alike(*p))
        )
        if missing:
            for key, p in zip(missing, self._scorer.probabilities(missing), strict=True):
                self._remember(key, p)

    async def probability_async(self, existing: str, new: str) -> float:
        """As `probability`, with a cache miss scored in a worker thread."""
        if spelled_alike(existing, new):
            return 1.0
        cached = self._cache.get((existing, new))
        if cached is not None:
            return cached
        return await asyncio.to_thread(self._scored, existing, new)

    def judge(
        self, existing: str, new: str, similarity: float, *, reworded: bool = False
    ) -> Verdict:
        """The veto of a band match: same fact unless P < veto_below (reworded_below
        for a pair the alignment found `reworded`)."""
        return self._verdict(self.probability(existing, new), self._veto_cut(reworded))

    async def verify(
        self, existing: str, new: str, similarity: float, *, reworded: bool = False
    ) -> Verdict:
        p = await self.probability_async(existing, new)
        return self._verdict(p, self._veto_cut(reworded))

    def judge_rescue(self, existing: str, new: str, *, contained: bool = False) -> Verdict:
        """Whether a pair below the merge band is the same fact: P >= rescue_from,
        or >= rescue_contained_from for a pair the alignment finds `contained`."""
        return self._verdict(self.probability(existing, new), self._rescue_cut(contained))

    async def rescues(self, existing: str, new: str, *, contained: bool = False) -> Verdict:
        p = await self.probability_async(existing, new)
        return self._verdict(p, self._rescue_cut(contained))

    def lifts_verb_swap(self, existing: str, new: str) -> bool:
        """Whether the model finds a pair whose only veto is a verb swap the same
        fact at `verb_swap_from` (blocking on a cache miss). The model is asked even
        for texts `spelled_alike`: "teaches" / "reaches" is one letter apart."""
        if self._verb_swap_from >= 1.0:
            return False
        return self._scored(existing, new) >= self._verb_swap_from

    async def lifts_verb_swap_async(self, existing: str, new: str) -> bool:
        """As `lifts_verb_swap`, with a cache miss scored in a worker thread."""
        if self._verb_swap_from >= 1.0:
            return False
        cached = self._cache.get((existing, new))
        p = cached if cached is not None else await asyncio.to_thread(self._scored, existing, new)
        return p >= self._verb_swap_from

    def _verdict(self, p: float, cut: float) -> Verdict:
        same = p >= cut
        detail = f"P(same fact) {p:.3f} {'>=' if same else '<'} {cut:g}"
        return Verdict(same, p, self.source, detail)

    def _remember(self, key: tuple[str, str], p: float) -> None:
        self._cache[key] = p
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
