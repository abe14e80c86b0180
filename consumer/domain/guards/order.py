"""The word-order guard: the same words in an order that swaps roles ("Alice loves Bob")."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final

from consumer.domain.guards.dates import _MONTHS
from consumer.domain.guards.text import (
    _COMMA_MARK,
    _COORD_MARK,
    _COPULA_MARK,
    _LABEL_PREFIX,
    _MAX_DETAIL,
    _NEGATION_MARK,
    _content,
    _is_separator,
    _labels,
    _stem,
    _without_negation,
    _Words,
)
from consumer.domain.vetoes import GuardName, GuardVeto

_PERSONS: Final[dict[str, str]] = {
    "i": "user", "me": "user", "my": "user", "mine": "user", "myself": "user",
    "user": "user", "he": "he", "him": "he", "his": "he", "himself": "he",
    "she": "she", "her": "she", "hers": "she", "herself": "she",
    "they": "they", "them": "they", "their": "they", "theirs": "they",
    "themselves": "they", "we": "we", "us": "we", "our": "we", "ours": "we",
    "you": "you", "your": "you", "yours": "you",
}  # fmt: skip
_PERSON_TOKENS: Final = frozenset(_PERSONS.values())

# Verbs that carry little meaning of their own ("goes to the gym" / "has lunch"):
# dropped when looking for a swap around "after" / "before".
_LIGHT_VERBS: Final = frozenset(
    {"go", "goes", "went", "going", "gone", "get", "gets", "got", "getting", "take", "takes",
     "took", "taking", "taken", "make", "makes", "made", "making"}
)  # fmt: skip
# Prepositions that order two events or things: "X after Y" / "Y after X".
_ORDERING_LABELS: Final = frozenset({"after", "before", "than", "over", "until"})
# "offer from Stripe" / "Stripe offer", "fan of Arsenal" / "Arsenal fan".
_COMPOUND_LABELS: Final = frozenset({"from", "of", "at"})

_LIGHT_STEMS: Final = frozenset(_stem(w) for w in _LIGHT_VERBS)

_MONTH_STEMS: Final = frozenset(_stem(m) for m in (*_MONTHS, "may"))


def _is_date_chunk(words: Sequence[str]) -> bool:
    """A short chunk holding a month or a number: "August 31" = "31 August"."""
    return len(words) <= 3 and any(w in _MONTH_STEMS or w.isdigit() for w in words)


def _month_first(units: Sequence[str]) -> tuple[str, ...]:
    """Units with each day written before its month put after it ("due 15 April" ->
    "due april 15"), so the two ways of writing a date compare in one order."""
    out = list(units)
    for at in range(len(out) - 1):
        day, month = out[at], out[at + 1]
        if day.isdigit() and 1 <= int(day) <= 31 and month in _MONTH_STEMS:
            out[at], out[at + 1] = month, day
    return tuple(out)


def _chunks(units: Sequence[str]) -> Counter[tuple[str, tuple[str, ...]]]:
    """Multiset of (preposition, words) chunks: equal when only whole phrases moved."""
    chunks: Counter[tuple[str, tuple[str, ...]]] = Counter()
    label = ""
    words: list[str] = []
    for unit in (*units, _COMMA_MARK):
        if _is_separator(unit):
            if words:
                key = tuple(sorted(words)) if _is_date_chunk(words) else tuple(words)
                chunks[(label, key)] += 1
            label = unit[1:] if unit.startswith(_LABEL_PREFIX) else ""
            words = []
        elif unit != _COPULA_MARK:
            words.append(unit)
    return chunks


def _anchored_fillers(
    units: Sequence[str], *, after_phrases: bool
) -> Counter[tuple[str, str, tuple[str, ...]]]:
    """(word, preposition, what it governs) for each prepositional phrase that
    directly follows a word outside any such phrase ("switch to Kafka" ->
    ("switch", "to", ("kafka",))), or with `after_phrases` also a phrase's last
    word ("to Lisbon on Monday" -> ("lisbon", "on", ("monday",))). A phrase at the
    start or after a list's "and" or a comma has no such word and is left out
    (it may have moved whole)."""
    fillers: Counter[tuple[str, str, tuple[str, ...]]] = Counter()
    label, anchor = "", ""
    words: list[str] = []
    for unit in (*units, _COMMA_MARK):
        if _is_separator(unit):
            if label and anchor and words:
                fillers[(anchor, label, tuple(words))] += 1
            follows = unit.startswith(_LABEL_PREFIX) and (after_phrases or not label)
            anchor = words[-1] if words and follows else ""
            label = unit[1:] if unit.startswith(_LABEL_PREFIX) else ""
            words = []
        elif unit != _COPULA_MARK:
            words.append(unit)
    return fillers


def _fillers_exchanged(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether the same words head the same prepositions in both texts but govern
    other things: "switch to Kafka ... back to RabbitMQ" / "switch to RabbitMQ ...
    back to Kafka", "tennis with Sam and golf with Max" / "... with Max and golf
    with Sam", "to Lisbon on Monday and to Porto on Friday" / "... on Friday ...
    on Monday". Every phrase stayed where it was; what fills them changed places."""
    for after_phrases in (False, True):
        fillers_a = _anchored_fillers(a, after_phrases=after_phrases)
        fillers_b = _anchored_fillers(b, after_phrases=after_phrases)
        if fillers_a == fillers_b:
            continue
        # The same slots and the same phrases, paired otherwise (a reordered list
        # changes the phrases: "in A, B" / "in B, A").
        if all(
            Counter(map(key, fillers_a.elements())) == Counter(map(key, fillers_b.elements()))
            for key in (_slot, _phrase)
        ):
            return True
    return False


def _words_fillers_exchanged(a: _Words, b: _Words) -> bool:
    """`_fillers_exchanged` of two texts' words, dates read month first as the
    guard reads them."""
    return _fillers_exchanged(_month_first(a.units), _month_first(b.units))


def _slot(filler: tuple[str, str, tuple[str, ...]]) -> tuple[str, str]:
    return filler[0], filler[1]


def _phrase(filler: tuple[str, str, tuple[str, ...]]) -> tuple[str, tuple[str, ...]]:
    return filler[1], filler[2]


def _coordination_permuted(a: Sequence[str], b: Sequence[str]) -> bool:
    """True when b is a with the conjuncts of one "X and Y" / "X, Y or Z" reordered."""
    # Copulas are dropped: "plays guitar and sings" / "is singing and playing guitar".
    a = [u for u in a if u != _COPULA_MARK]
    b = [u for u in b if u != _COPULA_MARK]
    if len(a) != len(b):
        return False
    n = len(a)
    start = 0
    while start < n and a[start] == b[start]:
        start += 1
    end = n
    while end > start and a[end - 1] == b[end - 1]:
        end -= 1
    coords = (_COORD_MARK, _COMMA_MARK)
    for i in range(start, -1, -1):
        for j in range(end, n + 1):
            span_a, span_b = a[i:j], b[i:j]
            if not any(u in coords for u in span_a):
                continue
            parts_a = _split_parts(span_a)
            if parts_a is not None and parts_a == _split_parts(span_b):
                return True
    return False


def _split_parts(span: Sequence[str]) -> Counter[tuple[str, ...]] | None:
    parts: Counter[tuple[str, ...]] = Counter()
    current: list[str] = []
    for unit in (*span, _COORD_MARK):
        if unit in (_COORD_MARK, _COMMA_MARK):
            if not current:
                return None
            parts[tuple(current)] += 1
            current = []
        else:
            current.append(unit)
    return parts


def _copula_halves(units: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(subject, predicate) of a plain "X is Y", where Y is a noun phrase."""
    if units.count(_COPULA_MARK) != 1 or f"{_LABEL_PREFIX}than" in units:
        return None
    at = units.index(_COPULA_MARK)
    left, right = tuple(units[:at]), tuple(units[at + 1 :])
    if not left or not right or _is_separator(right[0]) or right[0] == _NEGATION_MARK:
        return None
    return left, right


def _copula_swapped(a: Sequence[str], b: Sequence[str]) -> bool:
    """True for "X is Y" / "Y is X" ("Python is my favourite" / "My favourite is Python")."""
    halves_a, halves_b = _copula_halves(a), _copula_halves(b)
    if halves_a is None or halves_b is None:
        return False
    return halves_a[0] == halves_b[1] and halves_a[1] == halves_b[0]


def _active_form(units: Sequence[str], participles: frozenset[int]) -> tuple[str, ...] | None:
    """Content words of "X is V-ed by Y ..." rewritten as "Y V X ..."; None if not passive."""
    try:
        at = units.index(_COPULA_MARK)
        by = units.index(f"{_LABEL_PREFIX}by", at)
    except ValueError:
        return None
    verb_at = at + 1
    negated = verb_at < len(units) and units[verb_at] == _NEGATION_MARK
    if negated:
        verb_at += 1
    if verb_at >= by or verb_at not in participles:
        return None
    end = by + 1
    while end < len(units) and not _is_separator(units[end]):
        end += 1
    agent = _content(units[by + 1 : end])
    if not agent:
        return None
    verb = ((_NEGATION_MARK,) if negated else ()) + (units[verb_at],)
    return (
        agent + verb + _content(units[:at]) + _content(units[verb_at + 1 : by])
        + _content(units[end:])
    )  # fmt: skip


def _comma_rotated(a: Sequence[str], b: Sequence[str]) -> bool:
    """True when b is "Y, X" for a = "X Y" ("Every morning, user drinks coffee")."""
    target = _content(a)
    for at, unit in enumerate(b):
        if unit == _COMMA_MARK and _content(b[at + 1 :]) + _content(b[:at]) == target:
            return True
    return False


def _compound_moved(a: Sequence[str], b: Sequence[str]) -> bool:
    """True for "the offer from Stripe" / "the Stripe offer": a trailing "from / of /
    at X" of ``a`` stands as a modifier just before the last words in ``b``."""
    seps = [i for i, u in enumerate(a) if _is_separator(u)]
    if not seps:
        return False
    at = seps[-1]
    label = a[at]
    if label[1:] not in _COMPOUND_LABELS or label in b:
        return False
    head, moved = list(a[:at]), list(a[at + 1 :])
    if not moved or not head:
        return False
    target = list(b)
    return any(
        head[:i] + moved + head[i:] == target for i in range(max(1, len(head) - 3), len(head))
    )


def _same_roles(
    a: Sequence[str], b: Sequence[str], part_a: frozenset[int], part_b: frozenset[int]
) -> bool:
    """Reorderings that keep every role: moved phrases, lists, "X is Y", passives."""
    if _fillers_exchanged(a, b):
        return False
    if _chunks(a) == _chunks(b):
        return True
    if _coordination_permuted(a, b) or _copula_swapped(a, b):
        return True
    if _compound_moved(a, b) or _compound_moved(b, a):
        return True
    if _comma_rotated(a, b) or _comma_rotated(b, a):
        return True
    content_a, content_b = _content(a), _content(b)
    return _active_form(a, part_a) == content_b or _active_form(b, part_b) == content_a


def _drop_persons(
    units: Sequence[str], participles: frozenset[int]
) -> tuple[tuple[str, ...], frozenset[int]]:
    kept: list[str] = []
    moved: set[int] = set()
    for index, unit in enumerate(units):
        if unit in _PERSON_TOKENS:
            continue
        if index in participles:
            moved.add(len(kept))
        kept.append(unit)
    return tuple(kept), frozenset(moved)


def _word_order_veto(a: _Words, b: _Words) -> GuardVeto | None:
    """Veto when both texts use the same content words but in an order that changes roles.

    Compared: content words (stopwords dropped, light stemming, "I"/"my"/"the
    user" read as one person) plus negation marks. The multisets must be equal;
    if they differ only in person words ("User's sister is older than the user"
    / "User is older than their sister") those are dropped and the rest compared.
    Same words in the same order still veto when prepositions trade places
    ("from X to Y" / "to X from Y") or a passive reverses the roles ("Alice is
    loved by Bob" / "Alice loves Bob").
    Also vetoed: "X after Y" / "Y after X" (and before, than, over, until) when
    only light verbs ("goes", "has", "takes") differ besides; and phrases that
    stayed in place while what they govern traded places ("switch to Kafka, back
    to RabbitMQ" / "switch to RabbitMQ, back to Kafka": `_fillers_exchanged`),
    even where the phrases alone would pass as moved whole.
    Not vetoed, because roles are kept: phrases moved whole ("in 2020, X" / "X in
    2020", "to Paris from Rome" / "from Rome to Paris"), a trailing "from / of / at
    X" as a modifier ("offer from Stripe" / "Stripe offer"), dates reordered
    ("August 31" / "31 August", also inside a run of words: "filing due April
    15" / "filing due 15 April"), reordered conjuncts
    ("German and French" / "French and German", also "between 3 and 5" /
    "between 5 and 3"), "X is Y" / "Y is X" with a noun-phrase Y, and the simple
    passive "Bob is loved by Alice" / "Alice loves Bob".

    Limitations: no parser, so other paraphrases that reorder the same words
    veto (safe: the pair is stored as new), e.g. "gave Tom the book" / "gave
    the book to Tom" and symmetric relations ("Alice is married to Bob" / "Bob
    is married to Alice"); swaps that also change a word ("Alice hired Bob" /
    "Bob was hired by Alice's team") are not seen; only the simple passive is
    undone; "she gave him" / "he gave her" is seen only because pronouns keep
    their person; where a negation sits is not compared ("does not say X is
    right" / "says X is not right" pass).
    """
    if a.order == b.order and a.labels == b.labels and not (a.passive or b.passive):
        return None  # the common case: same words in the same order
    if a.bag == b.bag:
        units_a, units_b = a.units, b.units
        part_a, part_b = a.participles, b.participles
    elif a.bag_without_persons == b.bag_without_persons:
        units_a, part_a = _drop_persons(a.units, a.participles)
        units_b, part_b = _drop_persons(b.units, b.participles)
    elif a.bag_core == b.bag_core and a.mentioned == b.mentioned:
        label = _ordering_swap(a.units, b.units)
        if label is None:
            return None
        detail = f"word order differs: what comes {label} what is swapped"
        return GuardVeto(GuardName.WORD_ORDER, detail[:_MAX_DETAIL])
    else:
        return None
    units_a, units_b = _month_first(units_a), _month_first(units_b)
    content_a, content_b = _content(units_a), _content(units_b)
    # Where the negation sits is not compared ("doesn't like tea nor coffee" /
    # "likes neither tea nor coffee"); the negation guard has matched the counts.
    if _without_negation(content_a) == _without_negation(content_b):
        labels_a, labels_b = _labels(units_a), _labels(units_b)
        swapped = labels_a != labels_b and sorted(labels_a) == sorted(labels_b)
        roles_a = _active_form(units_a, part_a) or content_a
        roles_b = _active_form(units_b, part_b) or content_b
        if not swapped and _without_negation(roles_a) == _without_negation(roles_b):
            return None
    elif _same_roles(units_a, units_b, part_a, part_b):
        return None
    words = sorted({w for w in content_a if w != _NEGATION_MARK})
    shown = ", ".join(words[:6]) + (", ..." if len(words) > 6 else "")
    detail = f"word order differs: same words ({shown}) in another order"
    return GuardVeto(GuardName.WORD_ORDER, detail[:_MAX_DETAIL])


def _core(units: Sequence[str]) -> list[str]:
    return [
        u
        for u in _content(units)
        if u not in _PERSON_TOKENS and u not in _LIGHT_STEMS and u != _NEGATION_MARK
    ]


def _ordering_swap(a: Sequence[str], b: Sequence[str]) -> str | None:
    """The label of an "X after Y" / "Y after X" swap that also changed a light verb
    ("goes to the gym after lunch" / "has lunch after the gym"), else None."""
    for label in _ORDERING_LABELS:
        mark = _LABEL_PREFIX + label
        if a.count(mark) != 1 or b.count(mark) != 1:
            continue
        at_a, at_b = a.index(mark), b.index(mark)
        object_a, object_b = _object_after(a, at_a), _object_after(b, at_b)
        if not object_a or not object_b or object_a == object_b:
            continue
        before_a, before_b = set(_core(a[:at_a])), set(_core(b[:at_b]))
        if set(object_a) <= before_b and set(object_b) <= before_a:
            return label
    return None


def _object_after(units: Sequence[str], at: int) -> list[str]:
    end = at + 1
    while end < len(units) and not _is_separator(units[end]):
        end += 1
    return _core(units[at + 1 : end])
