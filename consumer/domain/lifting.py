"""Which of the guards' vetoes the parse alignment lifts: quantities that come
with an added detail ("User has a cooktop" / "User has a four-zone cooktop"),
and words the word-order guard finds moved that the alignment finds in their
roles ("In 2019 the user went diving" / "User went diving in 2019"). Read by the
vetter (consumer.domain.vetting), the quality tools' rule and the verifier, whose
"a guard vetoes" input is the veto the parse leaves."""

from __future__ import annotations

import re
from typing import Final

from consumer.domain.alignment import Alignment, PairAligner
from consumer.domain.guards import (
    adds_quantities,
    check_pair,
    fillers_exchanged,
    keeps_quantities_adds_more,
    quantities_may_trade,
)
from consumer.domain.vetoes import GuardName, GuardVeto


def numbers_may_be_detail(veto: GuardVeto | None, existing: str, new: str) -> bool:
    """Whether a guard's veto is the numbers guard's on quantities that only the new
    text states, beside none (`adds_quantities`) or beside all of the stored text's
    (`keeps_quantities_adds_more`): the alignment then tells an added detail
    ("User has a cooktop" / "User has a four-zone cooktop") from a changed fact."""
    if veto is None or veto.guard is not GuardName.NUMBERS:
        return False
    return adds_quantities(existing, new) or keeps_quantities_adds_more(existing, new)


def _numbers_lifted(
    veto: GuardVeto | None,
    existing: str,
    new: str,
    alignment: Alignment,
    *,
    needs_a_clause: bool,
) -> bool:
    if needs_a_clause and not alignment.adds_a_clause:
        return False
    return numbers_may_be_detail(veto, existing, new) and _detail_with_quantities(
        existing, new, alignment
    )


def _detail_with_quantities(existing: str, new: str, alignment: Alignment) -> bool:
    """Whether quantities the new text adds come with an added detail: nothing of
    the stored text missing or changed (`Alignment.detail_added`); where the
    stored text has quantities of its own, also no verb acting on what both say
    ("is on November 14" / "was rescheduled from November 14 to November 21") and
    an added phrase of its own, not only a modifier of a stored word ("every
    Thursday" / "every other Thursday")."""
    if not alignment.detail_added:
        return False
    if adds_quantities(existing, new):
        return True
    return not alignment.verb_added_on_shared and alignment.adds_a_phrase


def guard_veto_after_alignment(
    veto: GuardVeto | None,
    existing: str,
    new: str,
    alignment: Alignment | None,
    *,
    detail_needs_a_clause: bool = False,
) -> GuardVeto | None:
    """The guards' veto once the alignment is known: quantities that come with an
    added detail (nothing of the stored text missing or changed) are that detail,
    and words the word-order guard finds moved are not a changed fact when the
    alignment matches every word and none took over another's role or place
    (`Alignment.reordered`: "In 2019 the user went diving" / "User went diving in
    2019", a passive, a cleft); then only the other guards are asked.
    `detail_needs_a_clause`: the quantities must come with a clause the new text
    adds (`detail_in_a_clause`), as the verifier's input reads them."""
    if alignment is None or alignment.veto is not None:
        return veto
    if _numbers_lifted(veto, existing, new, alignment, needs_a_clause=detail_needs_a_clause):
        return check_pair(existing, new, numbers=False)
    if order_lifted(veto, existing, new, alignment):
        return check_pair(existing, new, word_order=False)
    return veto


# Words that set one alternative against another ("Postgres instead of MongoDB",
# "tea rather than coffee", "taller than Ben", "chose Postgres over MongoDB"): the
# order of the two is the fact, and the parser often reads them as a plain list,
# whose order it ignores, or misreads one ("Postgres" as an adverb).
_ALTERNATIVES: Final = re.compile(r"\b(?:instead|rather|than|versus|vs|over)\b", re.IGNORECASE)


def order_lifted(
    veto: GuardVeto | None, existing: str, new: str, alignment: Alignment | None
) -> bool:
    """Whether the alignment lifts the word-order guard's veto: every word is
    matched in its role (`Alignment.equivalent` or `Alignment.reordered`), and
    neither text has two quantities of one kind, which the alignment does not
    see and which can trade what they count when moved, and neither sets one
    alternative against another (`_ALTERNATIVES`). Never where every phrase stayed
    in place and only what fills them traded places (`fillers_exchanged`): the
    parse then reads a list wrong rather than a role kept ("Plays tennis with Sam
    and golf with Max": "golf" read as a conjunct of "Sam")."""
    if not order_may_be_paraphrase(veto) or alignment is None or alignment.veto is not None:
        return False
    if not (alignment.equivalent or alignment.reordered):
        return False
    if fillers_exchanged(existing, new):
        return False
    if any(_ALTERNATIVES.search(text) for text in (existing, new)):
        return False
    return not (quantities_may_trade(existing) or quantities_may_trade(new))


def order_may_be_paraphrase(veto: GuardVeto | None) -> bool:
    """Whether a guard's veto is the word-order guard's: its word lists cannot
    tell words moved with their roles ("In 2019 the user went diving", a passive
    with its agent) from roles traded; the parse alignment can."""
    return veto is not None and veto.guard is GuardName.WORD_ORDER


def may_be_lifted(veto: GuardVeto | None, existing: str, new: str) -> bool:
    """Whether the alignment may lift a guard's veto (`guard_veto_after_alignment`)."""
    return numbers_may_be_detail(veto, existing, new) or order_may_be_paraphrase(veto)


def guards_for_verifier(
    veto: GuardVeto | None, existing: str, new: str, aligner: PairAligner | None
) -> GuardVeto | None:
    """The verifier's "a guard vetoes" input: the guards' veto with a word-order
    veto the parse lifts (`order_lifted`) taken off, and a numbers veto on
    quantities that come with a clause the new text adds (`detail_in_a_clause`),
    the other guards then asked. A numbers veto on a detail without a clause of
    its own stays ("Kofi is vegetarian" / "... on weekdays"): whether it narrows
    the fact is the verifier's to say. Parses only a pair those guards veto."""
    if aligner is None or not may_be_lifted(veto, existing, new):
        return veto
    alignment = aligner.check(existing, new)
    return guard_veto_after_alignment(veto, existing, new, alignment, detail_needs_a_clause=True)


def detail_in_a_clause(
    veto: GuardVeto | None, existing: str, new: str, alignment: Alignment | None
) -> bool:
    """Whether a numbers veto is on quantities that come with a clause the new
    text adds ("User is colorblind" / "..., which was first noticed at age six";
    `Alignment.adds_a_clause`), the rest of the stored fact unchanged."""
    if alignment is None or alignment.veto is not None:
        return False
    return _numbers_lifted(veto, existing, new, alignment, needs_a_clause=True)


def guards_after_parse(existing: str, new: str, aligner: PairAligner | None) -> GuardVeto | None:
    """The guards' veto on a pair once the alignment (None: off) has lifted what
    it may (`guard_veto_after_alignment`); parses only a pair a guard vetoes."""
    veto = check_pair(existing, new)
    if aligner is None or not may_be_lifted(veto, existing, new):
        return veto
    return guard_veto_after_alignment(veto, existing, new, aligner.check(existing, new))
