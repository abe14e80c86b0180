"""Deterministic vetoes on semantic skips and merges.

Cosine similarity of sentence embeddings is blind to changes that turn one
fact into another while keeping almost every word: numbers ("9am" / "9pm",
"PR #260" / "#480", "Monday" / "Tuesday"), polarity ("likes" / "doesn't like",
"open" / "closed", "decided against"), roles ("Alice loves Bob" / "Bob loves
Alice", "gym after lunch" / "lunch after the gym") and whose fact it is ("User
is vegetarian" / "User's son is vegetarian"). Such pairs score higher than
many true paraphrases, so no threshold separates them (see docs/thresholds.md).
:func:`check_pair` runs before a semantic skip or merge and vetoes it when the
two texts differ in one of those ways; a vetoed pair is then stored as a new
memory, which is redundant at worst but never loses a fact.

Pure, stdlib-only and deterministic; per-text features are cached (bounded).
Each guard's docstring lists what it does not handle. One module per guard
family:

- ``checks``: :func:`check_pair` and the signals the verifier reads;
- ``numbers`` (with ``dates``): quantities, times, dates, identifiers;
- ``negation``: negation cues, negative verbs, antonyms;
- ``order``: the same words in an order that swaps roles;
- ``relations``: the same fact about someone else;
- ``words``: the one pass over a text's words the last three compare;
- ``text``: what they all share.

Names with a leading underscore are private to this package, shared between its
modules. What a veto is (:class:`GuardName`, :class:`GuardVeto`) lives in
``consumer.domain.vetoes``, as the alignment, the verifier and reviewed pairs
veto too.
"""

from consumer.domain.guards.checks import (
    PairSignals,
    TextSignals,
    adds_quantities,
    check_pair,
    fillers_exchanged,
    keeps_quantities_adds_more,
    pair_signals,
    quantities_may_trade,
    text_signals,
)
from consumer.domain.guards.dates import CALENDAR_ABBREVIATIONS, is_calendar_name
from consumer.domain.guards.negation import NEGATING_PREFIXES
from consumer.domain.guards.numbers import (
    ALTERNATE_WORDS,
    SPOKEN_CLOCK_WORDS,
    alternate_period,
    number_value,
    spoken_clock,
)
from consumer.domain.guards.text import CONTRAST_PAIRS
from consumer.domain.vetoes import GuardName, GuardVeto, related_kind

__all__ = [
    "ALTERNATE_WORDS",
    "CALENDAR_ABBREVIATIONS",
    "CONTRAST_PAIRS",
    "NEGATING_PREFIXES",
    "SPOKEN_CLOCK_WORDS",
    "GuardName",
    "GuardVeto",
    "PairSignals",
    "TextSignals",
    "adds_quantities",
    "alternate_period",
    "check_pair",
    "fillers_exchanged",
    "is_calendar_name",
    "keeps_quantities_adds_more",
    "number_value",
    "pair_signals",
    "quantities_may_trade",
    "related_kind",
    "spoken_clock",
    "text_signals",
]
