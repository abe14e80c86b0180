"""What every guard family shares: role-unit marks, light stemming, a text's word features."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

_MAX_DETAIL: Final = 199

# Replaces an extracted quantity, so later word-level passes know one was there
# (for "May 3" / "Jan 5") and number-word runs stop at it.
_SENTINEL: Final = "\u2021"

_PUNCT: Final = frozenset(",;:.!?")

# "rather than", "instead of", "as opposed to": words that set one thing against
# another with no negation cue (the negation guard and the alignment read them).
CONTRAST_PAIRS: Final = frozenset({("rather", "than"), ("instead", "of"), ("opposed", "to")})

_NEGATION_MARK: Final = "~"
_COPULA_MARK: Final = "="
_COORD_MARK: Final = "&"
_COMMA_MARK: Final = ","
_LABEL_PREFIX: Final = "@"


def _stem(word: str) -> str:
    """Light stemming so "likes"/"liked"/"like" and "cats"/"cat" compare equal."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    stem = word
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                break
            stem = word[: -len(suffix)]
            if len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]  # "stopped" -> "stop", "running" -> "run"
            break
    if len(stem) >= 4 and stem.endswith("e"):
        stem = stem[:-1]  # "like" -> "lik", to meet "likes" -> "lik"
    return stem


@dataclass(frozen=True, slots=True)
class _Words:
    """Word-level features of one text."""

    cues: tuple[str, ...]  # negation cues, in order
    polarity_content: frozenset[str]  # content stems, for "same content" under negation
    units: tuple[str, ...]  # content stems, "~" negation, "=" copula, "&" / "," / "@label"
    participles: frozenset[int]  # unit indexes of participle-like words (for the passive)
    order: tuple[str, ...]  # content words in order, negation marks left out
    bag: tuple[str, ...]  # sorted content: equal bags = same words in any order
    bag_without_persons: tuple[str, ...]
    labels: tuple[str, ...]  # prepositions and subordinators, in order
    passive: bool  # has "is ... by": same words may still mean swapped roles
    poles: frozenset[tuple[int, int]]  # (antonym group, pole) of the antonyms used
    relations: frozenset[int]  # relation groups possessed: "User's son", "their manager"
    mentioned: frozenset[int]  # relation groups named anywhere ("parent of two kids")
    bag_core: tuple[str, ...]  # bag without persons, relations and light verbs
    # "PDFs, not Figma links": cues that set one thing against another, and
    # whether the text sets things against each other in other words ("rather
    # than", "instead of", "over"): one contrast, written two ways.
    contrast_cues: int = 0
    contrasts: bool = False


def _is_separator(unit: str) -> bool:
    return unit in (_COORD_MARK, _COMMA_MARK) or unit.startswith(_LABEL_PREFIX)


def _without_negation(words: Sequence[str]) -> tuple[str, ...]:
    return tuple(w for w in words if w != _NEGATION_MARK)


def _labels(units: Sequence[str]) -> tuple[str, ...]:
    """Prepositions and subordinators in order: "from X to Y" / "to X from Y" differ here."""
    return tuple(u for u in units if u.startswith(_LABEL_PREFIX))


def _content(units: Sequence[str]) -> tuple[str, ...]:
    """Content words and negation marks, in order (the sequence a role swap reorders)."""
    return tuple(u for u in units if u != _COPULA_MARK and not _is_separator(u))
