"""Whether a match that reaches a band may be skipped or merged into: a reviewer's
separation, the guards, the parse alignment, the verifier and the cross-encoder,
in that order (the first veto keeps the pair apart), and the parses the alignment
will need, primed. When no match of a band is allowed, the cross-encoder may
rescue one just below the merge band (consumer.domain.cross_verifier)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from consumer.domain.alignment import Alignment, PairAligner
from consumer.domain.batch import BatchState
from consumer.domain.cross_verifier import CrossEncoderVerifier
from consumer.domain.guards import check_pair
from consumer.domain.lifting import (
    detail_in_a_clause,
    guard_veto_after_alignment,
    may_be_lifted,
)
from consumer.domain.models import Candidate, GuardHit, MemoryRecord, Scope, ScoredMemory
from consumer.domain.reviewed import ReviewedPairs
from consumer.domain.thresholds import Bands
from consumer.domain.verifier import Verifier
from consumer.domain.vetoes import GuardName, GuardVeto
from schemas import Decision


def rescue_contained(alignment: Alignment | None, existing: str, new: str, *, guards: bool) -> bool:
    """Whether a rescue may use the lower cut of a contained pair
    (`dedup.cross_encoder.rescue_contained_from`): the alignment finds it
    contained and the guards raised nothing, not even a veto the parse lifts (a
    lifted word-order veto leans on the parse alone already), but for quantities
    that come with a clause the new text adds ("User is colorblind" / "..., which
    was first noticed at age six"; not "works from home" / "... on Fridays")."""
    if alignment is None or not alignment.contained:
        return False
    veto = check_pair(existing, new) if guards else None
    if veto is None:
        return True
    return detail_in_a_clause(veto, existing, new, alignment) and (
        check_pair(existing, new, numbers=False) is None
    )


def decided_after_alignment(
    bands: Bands, decision: Decision, threshold: float | None, alignment: Alignment | None
) -> tuple[Decision, float | None]:
    """An allowed match's decision once its alignment is read
    (`Bands.after_alignment`); without an alignment, the band's own."""
    if alignment is None:
        return decision, threshold
    return bands.after_alignment(
        decision,
        threshold,
        equivalent=alignment.skippable,
        detail_added=alignment.detail_added,
    )


# Band matches of one candidate whose parses are primed in the batch's one pipe
# call; parsing a later one on its own costs about twice as much per text.
_PRIMED_MATCHES = 2


class MatchVetter:
    """The vetoes on one engine's matches (`DedupEngine`)."""

    def __init__(
        self,
        *,
        guards: bool,
        reviewed: ReviewedPairs,
        aligner: PairAligner | None,
        verifier: Verifier | None,
        full_matches_from: float,
        cross_encoder: CrossEncoderVerifier | None = None,
    ) -> None:
        self._guards = guards
        # Pairs a reviewer separated; loaded per partition by the caller
        # (consumer.review.load_reviewed_pairs) before the partition is decided.
        self._reviewed = reviewed
        self._aligner = aligner
        self._verifier = verifier
        self._full_matches_from = full_matches_from
        self._cross_encoder = cross_encoder

    @property
    def reviewed(self) -> ReviewedPairs:
        return self._reviewed

    @property
    def verifier(self) -> Verifier | None:
        return self._verifier

    @property
    def cross_encoder(self) -> CrossEncoderVerifier | None:
        return self._cross_encoder

    @property
    def guards_enabled(self) -> bool:
        return self._guards

    async def first_allowed(
        self, candidate: Candidate, matches: Sequence[ScoredMemory], bands: Bands
    ) -> tuple[ScoredMemory | None, Decision, float | None, list[GuardHit], Alignment | None]:
        """The best match that reaches a band and that neither a guard nor the
        verifier vetoes. A vetoed pair is treated as below threshold, and the next
        match is tried. When none is allowed, the best match the cross-encoder
        rescues from below the merge band (`_rescued`), merged."""
        vetoes: list[GuardHit] = []
        for match in matches:
            decision, threshold = bands.classify(match.score)
            if decision is Decision.ACCEPTED:
                break
            memory = match.read()
            veto, alignment = self._reviewed_veto(candidate, memory), None
            if veto is None:
                veto, alignment = await self._band_veto(memory, candidate, match.score)
            if veto is None:
                decision, threshold = decided_after_alignment(bands, decision, threshold, alignment)
                if decision is Decision.ACCEPTED:  # kept apart by the namespace
                    return None, decision, threshold, vetoes, alignment
                return match, decision, threshold, vetoes, alignment
            vetoes.append(GuardHit(veto, memory.memory_id, match.score))
        rescued = await self._rescued(candidate, matches, bands)
        if rescued is not None:
            match, decision, threshold, alignment = rescued
            return (
                match if decision is Decision.MERGED else None,
                decision,
                threshold,
                vetoes,
                alignment,
            )
        return None, Decision.ACCEPTED, None, vetoes, None

    async def _rescued(
        self, candidate: Candidate, matches: Sequence[ScoredMemory], bands: Bands
    ) -> tuple[ScoredMemory, Decision, float | None, Alignment | None] | None:
        """The best match below the merge band, at or above the rescue threshold,
        that no reviewer or guard keeps apart, if the cross-encoder finds it the
        same fact and the alignment does not veto it: merged (the namespace's
        detail policy applies as for any merge). One candidate at most is asked
        (one model run, one parse): a match not rescued stays below the band,
        no veto."""
        if self._cross_encoder is None or bands.rescue_threshold is None:
            return None
        for match in matches:
            if match.score >= bands.merge_threshold:
                continue
            if not bands.in_rescue_band(match.score):
                break
            memory = match.read()
            if self._reviewed_veto(candidate, memory) or await self._guard_veto(
                memory.content, candidate.event.content
            ):
                continue
            # The model first: most candidates it rejects need no parse.
            p = await self._cross_encoder.probability_async(memory.content, candidate.event.content)
            if p < self._cross_encoder.lowest_rescue_cut:
                return None
            alignment = await self._alignment(memory.content, candidate.event.content)
            if await self._alignment_veto(memory, candidate, alignment) is not None:
                return None
            contained = rescue_contained(
                alignment, memory.content, candidate.event.content, guards=self._guards
            )
            verdict = await self._cross_encoder.rescues(
                memory.content, candidate.event.content, contained=contained
            )
            if not verdict.same_fact:
                return None
            decision, threshold = decided_after_alignment(
                bands, Decision.MERGED, bands.rescue_threshold, alignment
            )
            return match, decision, threshold, alignment
        return None

    async def race_decision(
        self, memory: MemoryRecord, candidate: Candidate, similarity: float, bands: Bands
    ) -> tuple[Decision, float | None]:
        """The decision `candidate` takes against `memory` at `similarity`, as
        `first_allowed` decides a band match (for a race between consumers; a
        reviewer's separation is not asked): accepted when a guard, the alignment
        (but a verb swap the cross-encoder lifts), the verifier or the
        cross-encoder keeps them apart, or the namespace keeps a detail apart;
        skipped only for texts that align word for word, else merged."""
        decision, threshold = bands.classify(similarity)
        if decision is Decision.ACCEPTED:
            return decision, None
        veto, alignment = await self._band_veto(memory, candidate, similarity)
        if veto is not None:
            return Decision.ACCEPTED, None
        return decided_after_alignment(bands, decision, threshold, alignment)

    async def _band_veto(
        self, memory: MemoryRecord, candidate: Candidate, similarity: float
    ) -> tuple[GuardVeto | None, Alignment | None]:
        """The first veto of a band match, in order: the guards, the alignment (but
        a verb swap the cross-encoder lifts), the verifier, the cross-encoder; and
        the alignment, where it was read (not after a guard's veto)."""
        veto = await self._guard_veto(memory.content, candidate.event.content)
        if veto is not None:
            return veto, None
        alignment = await self._alignment(memory.content, candidate.event.content)
        veto = (
            await self._alignment_veto(memory, candidate, alignment)
            or await self._verifier_veto(memory, candidate, similarity)
            or await self._cross_encoder_veto(memory, candidate, alignment)
        )
        return veto, alignment

    async def prime(self, candidates: Sequence[Candidate], state: BatchState) -> None:
        """Parse, in one batch, the texts of the pairs the alignment will most
        likely judge: each candidate with its first band neighbours that the
        guards do not keep apart for good (`_pair_texts_to_prime`), and the
        candidates that reach a band with another of their batch; a pair left
        out is parsed when it comes."""
        if self._aligner is None:
            return
        texts: list[str] = []
        for candidate in candidates:
            texts += self._pair_texts_to_prime(candidate, state)
        texts += self._close_in_batch(candidates, state)
        if texts:
            await asyncio.to_thread(self._aligner.prime, texts)

    def _pair_texts_to_prime(self, candidate: Candidate, state: BatchState) -> list[str]:
        """The texts of the band matches `first_allowed` will most likely align,
        best first: a match the guards keep apart for good needs no parse, and
        only the first `_PRIMED_MATCHES` others are primed (most candidates stop
        at the first; a later one is parsed when it comes)."""
        new = candidate.event.content
        in_band = sorted(
            (-found.score, found.memory_id, found.memory.content)
            for found in state.neighbours.get(candidate.event.event_id, [])
            if found.memory is not None and found.score >= self._full_matches_from
        )
        return self._first_to_parse([existing for _, _, existing in in_band], new)

    def _first_to_parse(self, matches: Sequence[str], new: str) -> list[str]:
        """The texts of the first `_PRIMED_MATCHES` pairs of `new` with `matches`
        (best first) that need a parse, each stored text with the new one."""
        texts: list[str] = []
        for existing in matches:
            if self._needs_a_parse(existing, new):
                texts += [existing, new]
                if len(texts) == 2 * _PRIMED_MATCHES:
                    break
        return texts

    def _needs_a_parse(self, existing: str, new: str) -> bool:
        """Whether aligning the pair may decide it: not when a guard keeps it
        apart with a veto no parse can lift."""
        if not self._guards:
            return True
        veto = check_pair(existing, new)
        return veto is None or may_be_lifted(veto, existing, new)

    def _close_in_batch(self, candidates: Sequence[Candidate], state: BatchState) -> list[str]:
        """Texts of candidates that reach a band with an earlier candidate of their
        scope in this batch (which may become their in-batch match), with those
        earlier ones' texts, as `_pair_texts_to_prime` picks stored neighbours."""
        by_scope: dict[Scope, list[Candidate]] = {}
        for candidate in candidates:
            if candidate.normalized in state.vectors:
                by_scope.setdefault(candidate.scope, []).append(candidate)
        texts: list[str] = []
        for members in by_scope.values():
            if len(members) < 2:
                continue
            matrix = np.asarray([state.vectors[c.normalized] for c in members], dtype=np.float32)
            scores = matrix @ matrix.T
            for later, candidate in enumerate(members):
                earlier = np.flatnonzero(scores[later, :later] >= self._full_matches_from)
                best_first = sorted(earlier.tolist(), key=lambda i: -scores[later, i])
                texts += self._first_to_parse(
                    [members[i].event.content for i in best_first], candidate.event.content
                )
        return texts

    async def _guard_veto(self, existing: str, new: str) -> GuardVeto | None:
        """The guards' veto, where they are on; quantities the alignment finds an
        added detail are not one (`guard_veto_after_alignment`)."""
        if not self._guards:
            return None
        veto = check_pair(existing, new)
        if not may_be_lifted(veto, existing, new):
            return veto
        alignment = await self._alignment(existing, new)
        return guard_veto_after_alignment(veto, existing, new, alignment)

    async def _alignment(self, existing: str, new: str) -> Alignment | None:
        """The parse alignment of a band candidate, parsed in a worker thread."""
        if self._aligner is None:
            return None
        if self._aligner.has_parsed(existing, new):
            return self._aligner.check(existing, new)  # no parse left: tens of microseconds
        return await asyncio.to_thread(self._aligner.check, existing, new)

    async def _verifier_veto(
        self, memory: MemoryRecord, candidate: Candidate, similarity: float
    ) -> GuardVeto | None:
        """The verifier's "different fact" as a veto; None when it agrees or is off."""
        if self._verifier is None:
            return None
        verdict = await self._verifier.verify(memory.content, candidate.event.content, similarity)
        return verdict.veto()

    async def _alignment_veto(
        self, memory: MemoryRecord, candidate: Candidate, alignment: Alignment | None
    ) -> GuardVeto | None:
        """The alignment's veto, unless it is a verb swap the cross-encoder lifts
        (`Alignment.verb_swap`)."""
        if alignment is None or alignment.veto is None:
            return None
        lifted = (
            alignment.verb_swap
            and self._cross_encoder is not None
            and await self._cross_encoder.lifts_verb_swap_async(
                memory.content, candidate.event.content
            )
        )
        return None if lifted else alignment.veto

    async def _cross_encoder_veto(
        self, memory: MemoryRecord, candidate: Candidate, alignment: Alignment | None
    ) -> GuardVeto | None:
        """The cross-encoder's "different fact" on a band match, as a verifier veto
        whose detail names it (with the stricter cut for a pair the alignment found
        reworded); None when it agrees or is off, or when the alignment vouches
        that only amounts or a negation are written otherwise (`Alignment.vouches`)."""
        if self._cross_encoder is None:
            return None
        if alignment is not None and alignment.vouches:
            return None
        reworded = alignment is not None and alignment.reworded
        verdict = await self._cross_encoder.verify(
            memory.content, candidate.event.content, 0.0, reworded=reworded
        )
        return verdict.veto()

    def _reviewed_veto(self, candidate: Candidate, memory: MemoryRecord) -> GuardVeto | None:
        if self._reviewed.separated(candidate.scope, candidate.content_hash, memory.content_hash):
            return GuardVeto(GuardName.REVIEWED_PAIR, "a reviewer reversed a decision on this pair")
        return None
