"""What a veto is: which check kept two texts apart, what it found, and the kind
of change that names.

The text guards (``consumer.domain.guards``), the parse alignment, the verifier
and the reviewed pairs all veto with these, so they sit below all of them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class GuardName(StrEnum):
    """Which guard vetoed; the value is what goes into decision events."""

    WORD_ORDER = "word_order"
    NUMBERS = "numbers"
    NEGATION = "negation"
    # The parse-based alignment of both texts (consumer.domain.alignment).
    ALIGNMENT = "alignment"
    # Not a text guard: a reviewer reversed a decision on this pair before.
    REVIEWED_PAIR = "reviewed_pair"
    # Not a text guard: the gray-zone verifier judged the texts different facts
    # (consumer.domain.verifier).
    VERIFIER = "verifier"


@dataclass(frozen=True, slots=True)
class GuardVeto:
    """A veto: ``detail`` says briefly what differed (under 200 characters)."""

    guard: GuardName
    detail: str


# What a veto says changed, for a decision's `related` memories; a reviewer's
# separation is not a changed fact.
_RELATED_KINDS: Final = {
    GuardName.NUMBERS: "number_change",
    GuardName.NEGATION: "negation",
    GuardName.WORD_ORDER: "role_change",
    GuardName.VERIFIER: "different_fact",
}
_ALIGNMENT_KINDS: Final = frozenset({"value_change", "role_change", "time_change", "negation"})


def related_kind(veto: GuardVeto) -> str | None:
    """The kind of change a veto found (value_change, number_change, negation,
    time_change, role_change, different_fact), or None for a reviewer's separation."""
    if veto.guard is GuardName.ALIGNMENT:
        kind = veto.detail.split(":", 1)[0]
        return kind if kind in _ALIGNMENT_KINDS else "different_fact"
    return _RELATED_KINDS.get(veto.guard)
