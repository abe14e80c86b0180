"""The entry points: check_pair (the first veto wins) and the signals the verifier reads."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from consumer.domain.guards.negation import _antonym_clashes, _negation_veto
from consumer.domain.guards.numbers import _numbers_veto, _Quantities, _quantities
from consumer.domain.guards.order import _word_order_veto, _words_fillers_exchanged
from consumer.domain.guards.relations import _relation_veto
from consumer.domain.guards.text import _Words
from consumer.domain.guards.words import _analyse_words
from consumer.domain.vetoes import GuardVeto

_CACHE_SIZE: Final = 4096


@dataclass(frozen=True, slots=True)
class _Features:
    quantities: _Quantities
    words: _Words


def _prepare(text: str) -> str:
    text = unicodedata.normalize("NFC", text)
    return text.replace("\u2019", "'").replace("\u2018", "'")


@lru_cache(maxsize=_CACHE_SIZE)
def _features(text: str) -> _Features:
    """Per-text features; cached because the stored side recurs across events."""
    prepared = _prepare(text)
    return _Features(_quantities(prepared), _analyse_words(prepared.casefold()))


def check_pair(
    existing: str, new: str, *, numbers: bool = True, word_order: bool = True
) -> GuardVeto | None:
    """Veto a semantic skip/merge of ``new`` into ``existing``, or None to allow it.

    Guards run in order numbers, negation, word order; the first veto wins.
    ``numbers=False`` leaves the numbers guard out (for a pair whose quantities
    are an added detail: `adds_quantities`); ``word_order=False`` the word-order
    guard (for a pair the parse alignment finds the same words in the same roles).
    """
    if existing == new:
        return None
    fa, fb = _features(existing), _features(new)
    return (
        (_numbers_veto(fa.quantities, fb.quantities) if numbers else None)
        or _negation_veto(fa.words, fb.words)
        or (_word_order_veto(fa.words, fb.words) if word_order else None)
        or _relation_veto(fa.words, fb.words)
    )


def fillers_exchanged(existing: str, new: str) -> bool:
    """Whether the same words head the same prepositions in both texts, with what
    those govern traded between them ("switch to Kafka, back to RabbitMQ" /
    "switch to RabbitMQ, back to Kafka"): the word-order guard's surest veto,
    which no parse should lift (the parser often reads such a list wrong)."""
    return _words_fillers_exchanged(_features(existing).words, _features(new).words)


def adds_quantities(existing: str, new: str) -> bool:
    """Whether ``existing`` states no quantity at all and ``new`` does ("User has a
    cooktop" / "User has a four-zone cooktop"): no value of the stored fact can
    have changed, so the numbers alone cannot tell a changed fact from an added
    detail; the parse alignment can."""
    qa, qb = _features(existing).quantities, _features(new).quantities
    return not qa.raw and not qa.currencies and bool(qb.raw)


def keeps_quantities_adds_more(existing: str, new: str) -> bool:
    """Whether ``new`` states every quantity ``existing`` states, in the same units
    and currencies, and more ("passed JLPT N3" / "passed JLPT N3 in December
    2022"): the numbers alone cannot tell an added detail from a changed value
    ("every Thursday" / "every other Thursday"); the parse alignment may."""
    qa, qb = _features(existing).quantities, _features(new).quantities
    return (
        bool(qa.raw)
        and qa.raw < qb.raw
        and qa.in_units <= qb.in_units
        and qa.currencies <= qb.currencies
    )


def quantities_may_trade(text: str) -> bool:
    """Whether ``text`` states two quantities of one kind (two numbers, two
    times, two days or months): moved, they can trade what they count ("5 km on
    Mondays and 10 km on Saturdays" / "10 km on Mondays and 5 km on Saturdays")
    while the numbers guard sees the same set and the parse alignment sees none."""
    kinds = Counter(_quantity_kind(value) for value in _features(text).quantities.raw)
    return any(count >= 2 for kind, count in kinds.items() if kind)


def _quantity_kind(value: str) -> str:
    if _TIME_VALUE_RE.fullmatch(value):
        return "time"
    try:
        number = float(value)
    except ValueError:
        return "calendar" if value.isalpha() else ""
    # A year stands beside a day and a month in a date ("14 June 2025"), not for
    # a count another number could take over.
    return "year" if value.isdigit() and 1800 <= number <= 2199 else "number"


_TIME_VALUE_RE: Final = re.compile(r"\d{2}:\d{2}")


@dataclass(frozen=True, slots=True)
class TextSignals:
    """Per-text analysis shared with the verifier."""

    content: tuple[str, ...]  # content stems in order ("I" / "my" / "the user" -> "user")
    labels: tuple[str, ...]  # prepositions and subordinators in order
    quantities: frozenset[str]
    cues: int  # negation cues


def text_signals(text: str) -> TextSignals:
    features = _features(text)
    words = features.words
    return TextSignals(words.order, words.labels, features.quantities.raw, len(words.cues))


@dataclass(frozen=True, slots=True)
class PairSignals:
    quantities_differ: int  # quantities on one side only
    cues_differ: int  # |negation cues a - negation cues b|
    antonym_clashes: int
    relations_differ: int  # relation groups possessed on one side, unnamed on the other
    same_bag_other_order: bool
    veto: GuardVeto | None


def pair_signals(existing: str, new: str) -> PairSignals:
    fa, fb = _features(existing), _features(new)
    wa, wb = fa.words, fb.words
    return PairSignals(
        quantities_differ=len(fa.quantities.raw ^ fb.quantities.raw),
        cues_differ=abs(len(wa.cues) - len(wb.cues)),
        antonym_clashes=len(_antonym_clashes(wa, wb)),
        relations_differ=len((wa.relations - wb.mentioned) | (wb.relations - wa.mentioned)),
        same_bag_other_order=wa.bag == wb.bag and wa.order != wb.order,
        veto=check_pair(existing, new),
    )
