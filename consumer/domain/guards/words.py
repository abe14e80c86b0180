"""One pass over a text's words: the cues, stems and role units the word guards compare."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Final

from consumer.domain.guards.negation import (
    _AGAINST_STEMS,
    _ANTONYM_PHRASES,
    _ANTONYMS,
    _CALL,
    _GIVE,
    _NOUN_MARKERS,
    _POLARITY_WORDS,
    _is_negation_word,
    _negates,
)
from consumer.domain.guards.order import _LIGHT_STEMS, _PERSON_TOKENS, _PERSONS
from consumer.domain.guards.relations import _POSSESSIVES, _RELATIONS
from consumer.domain.guards.text import (
    _COMMA_MARK,
    _COORD_MARK,
    _COPULA_MARK,
    _LABEL_PREFIX,
    _NEGATION_MARK,
    _PUNCT,
    CONTRAST_PAIRS,
    _content,
    _labels,
    _stem,
    _without_negation,
    _Words,
)

_TOKEN_RE: Final = re.compile(r"[^\W_]+(?:['\-.][^\W_]+)*|[,;:.!?&]")

_COPULAS: Final = frozenset({"is", "are", "was", "were", "am", "be", "been", "being"})
_COORDINATORS: Final = frozenset({"and", "or", "nor", "plus", "but", "&"})
# Prepositions and subordinators start a labelled chunk: they carry the role of
# the words after them ("to Priya", "than the user", "because ...").
_LABELS: Final = frozenset(
    {"to", "from", "by", "with", "for", "of", "on", "in", "at", "into", "onto", "over",
     "under", "about", "than", "after", "before", "since", "until", "till", "between",
     "through", "during", "against", "via", "per", "toward", "towards", "near", "behind",
     "across", "around", "among", "inside", "outside", "within", "upon", "because",
     "if", "unless", "while", "whereas", "although", "though", "so", "then", "as",
     "when", "once", "instead"}
)  # fmt: skip
_STOPWORDS: Final = frozenset(
    {"a", "an", "the", "this", "that", "these", "those", "some", "any", "each", "every",
     "another", "such", "it", "its", "itself", "there", "here", "also", "too", "very",
     "just", "really", "still", "only", "even", "quite", "do", "does", "did", "doing",
     "has", "have", "had", "having", "will", "would", "shall", "should", "can", "could",
     "may", "might", "must", "who", "whom", "whose", "which", "what", "where", "how",
     "why", "anymore", "up", "out", "off", "down", "away", "back", "currently", "now"}
)  # fmt: skip
_IRREGULAR_PARTICIPLES: Final = frozenset(
    {"taught", "sold", "bought", "made", "held", "led", "paid", "told", "built",
     "caught", "found", "kept", "left", "lost", "met", "read", "sent", "spent", "won",
     "brought", "thought", "hit", "hurt", "put", "run", "set", "cut", "beat", "sung"}
)  # fmt: skip
_CLITICS: Final = ("'s", "'re", "'ve", "'ll", "'d", "'m")


def _analyse_words(lowered: str) -> _Words:
    """Tokenise once; derive negation cues, content words and role-structure units."""
    tokens = _TOKEN_RE.findall(lowered)
    cues: list[str] = []
    content: set[str] = set()
    units: list[str] = []
    participles: set[int] = set()
    poles: set[tuple[int, int]] = set()
    relations: set[int] = set()
    mentioned: set[int] = set()
    possessive_at = -10
    contrast_cues = 0
    n = len(tokens)
    skip_next = False
    for i, raw in enumerate(tokens):
        if skip_next:
            skip_next = False
            continue
        prev = tokens[i - 1] if i else ""
        nxt = tokens[i + 1] if i + 1 < n else ""
        phrase = _ANTONYM_PHRASES.get((raw, nxt))
        if phrase is not None:
            poles.add(phrase)
        if raw in _PUNCT:
            units.append(_COMMA_MARK)
            continue
        if _is_negation_word(raw):
            if _negates(tokens, i):
                cues.append("no longer" if raw == "no" and nxt == "longer" else raw)
                contrast_cues += raw == "not" and prev == ","
                units.append(_NEGATION_MARK)
                if nxt in ("longer", "more") and raw == "no":
                    skip_next = True
                if raw.startswith("non-"):
                    stem = _stem(raw[4:])
                    content.add(stem)
                    units.append(stem)
            continue
        if raw == "longer" and prev == "any":
            continue
        if raw == "against" and _stem(prev) in _AGAINST_STEMS:
            cues.append(f"{prev} against")
            units.append(_NEGATION_MARK)
            continue
        phrasal = (raw in _GIVE and nxt == "up") or (raw in _CALL and nxt == "off")
        if (raw in _POLARITY_WORDS and prev not in _NOUN_MARKERS) or phrasal:
            cues.append(f"{raw} {nxt}" if phrasal else raw)
            units.append(_stem(raw))
            continue
        word = raw
        if raw in _POSSESSIVES or raw.endswith("'s"):
            possessive_at = i
        if "'" in word:
            for clitic in _CLITICS:
                if word.endswith(clitic) and len(word) > len(clitic):
                    word = word[: -len(clitic)]
                    break
        if word in _PERSONS:
            units.append(_PERSONS[word])
        elif word in _COPULAS:
            units.append(_COPULA_MARK)
        elif word in _COORDINATORS:
            units.append(_COORD_MARK)
        elif word in _LABELS:
            units.append(_LABEL_PREFIX + word)
        elif word in _STOPWORDS:
            continue
        else:
            stem = _stem(word)
            if word.endswith(("ed", "en")) or word in _IRREGULAR_PARTICIPLES:
                participles.add(len(units))
            units.append(stem)
            content.add(stem)
            if stem in _RELATIONS:
                mentioned.add(_RELATIONS[stem])
                if i - possessive_at <= 2:
                    relations.add(_RELATIONS[stem])
        pole = _ANTONYMS.get(_stem(word))
        if pole is not None:
            poles.add(pole)
    ordered = _content(units)
    bag = tuple(sorted(ordered))
    return _Words(
        cues=tuple(cues),
        polarity_content=frozenset(content),
        units=tuple(units),
        participles=frozenset(participles),
        order=_without_negation(ordered),
        bag=bag,
        bag_without_persons=tuple(w for w in bag if w not in _PERSON_TOKENS),
        labels=_labels(units),
        passive=_COPULA_MARK in units and f"{_LABEL_PREFIX}by" in units,
        poles=frozenset(poles),
        relations=frozenset(relations),
        mentioned=frozenset(mentioned),
        bag_core=tuple(
            w
            for w in bag
            if w not in _PERSON_TOKENS and w not in _LIGHT_STEMS and w not in _RELATIONS
        ),
        contrast_cues=contrast_cues,
        contrasts=any(pair in CONTRAST_PAIRS for pair in pairwise(tokens))
        or "over" in tokens
        or "versus" in tokens,
    )
