"""The relation guard: the same fact about someone else ("User" / "User's son")."""

from __future__ import annotations

from typing import Final

from consumer.domain.guards.text import _MAX_DETAIL, _stem, _Words
from consumer.domain.vetoes import GuardName, GuardVeto

# Whose fact it is: "User is vegetarian" / "User's son is vegetarian". Words of
# one group are synonyms ("kid" / "child").
_RELATION_GROUPS: Final[tuple[tuple[str, ...], ...]] = (
    ("son", "sons"), ("daughter", "daughters"),
    ("child", "children", "kid", "kids", "baby", "toddler"),
    ("mother", "mom", "mum", "mommy", "mummy"), ("father", "dad", "daddy"),
    ("parent", "parents"), ("brother", "brothers", "bro"), ("sister", "sisters", "sis"),
    ("sibling", "siblings"), ("wife",), ("husband", "hubby"),
    ("partner", "spouse", "girlfriend", "boyfriend", "fiance", "fiancee", "married", "gf", "bf"),
    ("grandmother", "grandma", "granny"), ("grandfather", "grandpa"),
    ("grandparent", "grandparents"), ("uncle",), ("aunt",), ("cousin", "cousins"),
    ("niece",), ("nephew",), ("friend", "friends"), ("roommate", "flatmate", "housemate"),
    ("neighbour", "neighbor", "neighbours", "neighbors"),
    ("manager", "boss", "supervisor"), ("colleague", "coworker", "co-worker", "colleagues"),
    ("teammate", "teammates"), ("dog", "puppy"), ("cat", "kitten"), ("pet", "pets"),
)  # fmt: skip

_POSSESSIVES: Final = frozenset({"my", "your", "his", "her", "their", "our"})

_RELATIONS: Final[dict[str, int]] = {
    _stem(word): group for group, words in enumerate(_RELATION_GROUPS) for word in words
}
_MOTHER, _FATHER, _PARENT = (_RELATIONS[_stem(w)] for w in ("mother", "father", "parent"))


def _as_parents(groups: frozenset[int], mentioned: frozenset[int]) -> frozenset[int]:
    """ "mom and dad" (both mentioned) are the parents."""
    both = {_MOTHER, _FATHER}
    if both <= mentioned and groups & both:
        return (groups - both) | {_PARENT}
    return groups


def _relation_veto(a: _Words, b: _Words) -> GuardVeto | None:
    """Veto when the texts are about different people or pets and otherwise agree:
    "User is vegetarian" / "User's son is vegetarian", "User's mother is a teacher"
    / "User's father is a teacher".

    Relations are family members, partners, friends, colleagues, managers,
    neighbours and pets, with synonyms in one group ("kid" / "child", "mom" /
    "mother"). "The rest agrees": the other content words overlap by at least
    half of the smaller side. Reported as a word-order (roles) veto.

    Limitations: a list of words, no parser: "User and their son are vegetarian"
    / "User is vegetarian" vetoes (safe), a relation named differently ("User's
    spouse" / "User's wife") vetoes, and people named by their names ("Anna" /
    "User's sister Anna") are not seen.
    """
    only_a = _as_parents(a.relations, a.mentioned) - _as_parents(b.mentioned, b.mentioned)
    only_b = _as_parents(b.relations, b.mentioned) - _as_parents(a.mentioned, a.mentioned)
    if not only_a and not only_b:
        return None
    rest_a = {w for w in a.polarity_content if w not in _RELATIONS}
    rest_b = {w for w in b.polarity_content if w not in _RELATIONS}
    small = min(len(rest_a), len(rest_b))
    if not small or len(rest_a & rest_b) * 2 < small:
        return None
    shown_a = ", ".join(_RELATION_GROUPS[g][0] for g in sorted(only_a)) or "none"
    shown_b = ", ".join(_RELATION_GROUPS[g][0] for g in sorted(only_b)) or "none"
    detail = f"subject differs: {shown_a} vs {shown_b}"
    return GuardVeto(GuardName.WORD_ORDER, detail[:_MAX_DETAIL])
