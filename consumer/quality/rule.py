"""The consumer's decision for one (existing, new) pair, as a pure function.

`decide_pair` reproduces what `DedupEngine` decides when `existing` is the only
stored memory of the scope and `new` arrives:

1. exact: equal normalised texts (same content hash) are skipped;
2. semantic: the cosine `similarity` of the two normalised texts' embeddings is
   classified by the namespace's bands (`Bands.classify`, inclusive bounds);
   a pair that reaches a band is then checked by the guards
   (`check_pair(existing, new)`, as `MatchVetter.first_allowed` calls it), the
   parse alignment (consumer.domain.alignment) and the verifier
   (consumer.domain.verifier); a veto of any means "treated as below
   threshold": the memory is accepted. A skip of texts the alignment finds
   not equivalent becomes a merge; a match that only adds a detail is accepted
   where the namespace's `detail_policy` is `keep_both`;
3. the cross-encoder (consumer.domain.cross_verifier), where it is on: after the
   verifier, it vetoes a band match whose P(same fact) is below its `veto_below`;
   and a pair below the merge band, at or above the bands' `rescue_threshold`,
   that neither a guard nor the alignment vetoes is merged when P(same fact) is
   at or above its `rescue_from` (as `MatchVetter` rescues one).

The recent-cache check is left out: it only repeats what exact and semantic
decided earlier. "Duplicate predicted" means skipped or merged.
"""

from __future__ import annotations

from dataclasses import dataclass

from consumer.domain.alignment import Alignment, PairAligner
from consumer.domain.cross_verifier import CrossEncoderVerifier
from consumer.domain.lifting import guards_after_parse
from consumer.domain.normalize import content_hash, normalize_content
from consumer.domain.thresholds import Bands
from consumer.domain.verifier import PairJudge
from consumer.domain.vetoes import GuardVeto
from consumer.domain.vetting import decided_after_alignment, rescue_contained
from schemas import Decision, DecisionReason

__all__ = ["PairDecision", "decide_pair", "is_exact", "pair_veto", "rescues"]


@dataclass(frozen=True, slots=True)
class PairDecision:
    decision: Decision
    reason: DecisionReason  # EXACT, SEMANTIC or NEW
    similarity: float
    threshold: float | None  # the band's threshold when the semantic check decided
    veto: GuardVeto | None = None  # a guard's veto that turned a match into "accepted"

    @property
    def duplicate(self) -> bool:
        """Skipped or merged: the new memory is not stored on its own."""
        return self.decision is not Decision.ACCEPTED


def is_exact(existing: str, new: str) -> bool:
    """True when the exact check would catch the pair (same normalised content hash)."""
    return content_hash(normalize_content(existing)) == content_hash(normalize_content(new))


def alignment_veto(
    existing: str,
    new: str,
    alignment: Alignment,
    cross_encoder: CrossEncoderVerifier | None,
) -> GuardVeto | None:
    """The alignment's veto, unless it is a verb swap the cross-encoder lifts, as
    `MatchVetter._alignment_veto` asks it."""
    if alignment.veto is None:
        return None
    lifted = (
        alignment.verb_swap
        and cross_encoder is not None
        and cross_encoder.lifts_verb_swap(existing, new)
    )
    return None if lifted else alignment.veto


def pair_veto(
    existing: str,
    new: str,
    similarity: float,
    *,
    guards: bool = True,
    verifier: PairJudge | None = None,
    aligner: PairAligner | None = None,
    cross_encoder: CrossEncoderVerifier | None = None,
) -> GuardVeto | None:
    """The guards' veto, else the alignment's, else the verifier's, else the
    cross-encoder's, as
    `MatchVetter.first_allowed` (consumer.domain.vetting) asks them for a stored `existing` (its content
    is the event content stripped)."""
    existing = existing.strip()
    # The guards' veto as `MatchVetter._guard_veto` asks it.
    veto = guards_after_parse(existing, new, aligner) if guards else None
    alignment = aligner.check(existing, new) if veto is None and aligner is not None else None
    if alignment is not None:
        veto = alignment_veto(existing, new, alignment, cross_encoder)
    if veto is None and verifier is not None:
        veto = verifier.judge(existing, new, similarity).veto()
    vouched = alignment is not None and alignment.vouches
    if veto is None and cross_encoder is not None and not vouched:
        reworded = alignment is not None and alignment.reworded
        veto = cross_encoder.judge(existing, new, similarity, reworded=reworded).veto()
    return veto


def decide_pair(
    existing: str,
    new: str,
    similarity: float,
    bands: Bands,
    *,
    guards: bool = True,
    verifier: PairJudge | None = None,
    aligner: PairAligner | None = None,
    cross_encoder: CrossEncoderVerifier | None = None,
) -> PairDecision:
    """What the consumer decides for `new` when `existing` is its only match.

    `similarity`: cosine of the embeddings of `normalize_content` of both texts.
    `guards`: `dedup.guards_enabled`. `verifier`: the consumer's verifier
    (`build_verifier(dedup)`), or None when it is off. `aligner`: the parse
    alignment (`dedup.alignment_enabled`), or None when it is off.
    `cross_encoder`: `dedup.cross_encoder` (`build_cross_encoder`), or None when
    it is off.
    """
    if is_exact(existing, new):
        return PairDecision(Decision.SKIPPED, DecisionReason.EXACT, similarity, None)
    decision, threshold = bands.classify(similarity)
    if decision is Decision.ACCEPTED:
        if cross_encoder is not None and bands.in_rescue_band(similarity):
            return _rescue(existing, new, similarity, bands, guards, aligner, cross_encoder)
        return PairDecision(Decision.ACCEPTED, DecisionReason.NEW, similarity, None)
    veto = pair_veto(
        existing,
        new,
        similarity,
        guards=guards,
        verifier=verifier,
        aligner=aligner,
        cross_encoder=cross_encoder,
    )
    if veto is not None:
        return PairDecision(Decision.ACCEPTED, DecisionReason.NEW, similarity, None, veto)
    return _allowed(existing, new, similarity, decision, threshold, bands, aligner)


def _allowed(
    existing: str,
    new: str,
    similarity: float,
    decision: Decision,
    threshold: float | None,
    bands: Bands,
    aligner: PairAligner | None,
) -> PairDecision:
    """An allowed match's decision once the alignment is read (`Bands.after_alignment`):
    a skip of texts that do not align becomes a merge, and "fact plus a detail"
    is accepted where the namespace keeps both."""
    alignment = aligner.check(existing.strip(), new) if aligner is not None else None
    decision, threshold = decided_after_alignment(bands, decision, threshold, alignment)
    if decision is Decision.ACCEPTED:
        return PairDecision(Decision.ACCEPTED, DecisionReason.NEW, similarity, None)
    return PairDecision(decision, DecisionReason.SEMANTIC, similarity, threshold)


def rescues(
    existing: str,
    new: str,
    *,
    guards: bool,
    aligner: PairAligner | None,
    cross_encoder: CrossEncoderVerifier,
) -> bool:
    """Whether the cross-encoder's rescue would merge a pair below the merge band
    (its similarity in the rescue band): no guard and no alignment check vetoes it
    and the cross-encoder finds the same fact (`MatchVetter._rescued`)."""
    existing = existing.strip()
    if guards and guards_after_parse(existing, new, aligner) is not None:
        return False
    if cross_encoder.probability(existing, new) < cross_encoder.lowest_rescue_cut:
        return False  # as `MatchVetter._rescued`: no parse needed
    alignment = aligner.check(existing, new) if aligner is not None else None
    if alignment is not None and alignment_veto(existing, new, alignment, cross_encoder):
        return False
    contained = rescue_contained(alignment, existing, new, guards=guards)
    return cross_encoder.judge_rescue(existing, new, contained=contained).same_fact


def _rescue(
    existing: str,
    new: str,
    similarity: float,
    bands: Bands,
    guards: bool,
    aligner: PairAligner | None,
    cross_encoder: CrossEncoderVerifier,
) -> PairDecision:
    """A pair in the rescue band: merged when `rescues`; a pair it does not rescue
    is accepted without a veto, as below any band."""
    if not rescues(existing, new, guards=guards, aligner=aligner, cross_encoder=cross_encoder):
        return PairDecision(Decision.ACCEPTED, DecisionReason.NEW, similarity, None)
    return _allowed(
        existing, new, similarity, Decision.MERGED, bands.rescue_threshold, bands, aligner
    )
