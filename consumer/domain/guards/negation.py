"""The negation guard: one text negated (a cue, a negative verb, an antonym), the other not."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from consumer.domain.guards.text import _MAX_DETAIL, _PUNCT, _stem, _Words
from consumer.domain.vetoes import GuardName, GuardVeto

_NEGATORS: Final = frozenset(
    {"not", "no", "never", "none", "nobody", "nothing", "nowhere", "neither", "cannot",
     "without", "noone", "unable"}
)  # fmt: skip
_NO_APOSTROPHE_NEGATIONS: Final = frozenset(
    {"dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "cant", "wont",
     "wouldnt", "shouldnt", "couldnt", "hasnt", "havent", "hadnt", "aint", "mustnt",
     "neednt"}
)  # fmt: skip
_NEGATION_WORDS: Final = _NEGATORS | _NO_APOSTROPHE_NEGATIONS
# Verbs whose meaning is the negation of a common preference or state verb
# ("likes" / "dislikes", "loves" / "hates", "passes" / "fails", "smokes" / "quit").
_POLARITY_WORDS: Final = frozenset(
    {"dislike", "dislikes", "disliked", "disliking", "hate", "hates", "hated", "hating",
     "detest", "detests", "detested", "loathe", "loathes", "loathed", "despise",
     "despises", "despised", "refuse", "refuses", "refused", "refusing", "reject",
     "rejects", "rejected", "fail", "fails", "failed", "failing", "lack", "lacks",
     "lacked", "lacking", "avoid", "avoids", "avoided", "avoiding", "stop", "stops",
     "stopped", "stopping", "quit", "quits", "quitting", "cease", "ceased", "ceases",
     "cancel", "cancels", "cancelled", "canceled", "cancelling", "canceling", "discontinue",
     "discontinues", "discontinued", "terminate", "terminates", "terminated"}
)  # fmt: skip
# After these, "stop" / "quit" / "fail" are nouns ("the third stop", "bus stop").
_NOUN_MARKERS: Final = frozenset(
    {"a", "an", "the", "this", "that", "next", "last", "final", "first", "second", "third",
     "bus", "tram", "train", "pit", "one", "each", "every", "no", "without"}
)  # fmt: skip
_GIVE: Final = frozenset({"give", "gives", "gave", "given", "giving"})
# "called off": cancelled, in two words.
_CALL: Final = frozenset({"call", "calls", "called", "calling"})
# Negator + next word that is not a negation: "not only", "no doubt", "nothing but",
# "never mind", "without doubt", "can't wait".
_NOT_NEGATING_NEXT: Final[dict[str, frozenset[str]]] = {
    "not": frozenset({"only", "just", "merely", "simply", "solely"}),
    "no": frozenset({"doubt", "matter"}),
    "nothing": frozenset({"but"}),
    "never": frozenset({"mind"}),
    "without": frozenset({"doubt"}),
    "can't": frozenset({"wait", "help"}),
    "cannot": frozenset({"wait", "help"}),
    "cant": frozenset({"wait", "help"}),
}

# "decided against X" / "voted against X" negate "decided to X".
_AGAINST_VERBS: Final = frozenset(
    {"decide", "decided", "decides", "deciding", "vote", "voted", "votes", "advise",
     "advised", "advises", "recommend", "recommended", "recommends", "argue", "argued",
     "argues", "opt", "opted", "opts", "rule", "ruled", "warn", "warned", "lean", "leaning",
     "leaned", "chose", "chosen", "choose", "went", "go", "decision"}
)  # fmt: skip
# Antonyms with no negation cue: each group's first member is one pole, the
# second the other ("open" / "closed", "attend" / "skip"). Forms are stemmed.
_ANTONYM_GROUPS: Final[tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]] = (
    (("open", "opens", "opened", "opening", "reopen", "reopened"),
     ("closed", "close", "closes", "closing", "shut", "shuts")),
    (("attend", "attends", "attended", "attending", "join", "joins", "joining"),
     ("skip", "skips", "skipped", "skipping", "miss", "misses", "missed", "missing")),
    (("happening", "happen", "happens", "scheduled", "confirmed", "going ahead"),
     ("postponed", "called off")),
    (("enable", "enabled", "enables", "enabling"),
     ("disable", "disabled", "disables", "disabling")),
    (("allow", "allowed", "allows", "permitted", "permit"),
     ("forbid", "forbidden", "forbids", "ban", "banned", "bans", "prohibited", "prohibit",
      "disallowed", "disallow")),
    (("accept", "accepted", "accepts", "accepting", "approve", "approved", "approves"),
     ("decline", "declined", "declines", "declining", "deny", "denied", "denies")),
    (("include", "included", "includes", "including"),
     ("exclude", "excluded", "excludes", "excluding")),
    (("available",), ("unavailable", "busy")),
    (("remote", "remotely"), ("onsite", "on-site", "in-office")),
    (("married",), ("single", "divorced")),
    (("win", "won", "wins", "winning"), ("lose", "lost", "loses", "losing")),
    (("increase", "increased", "increases", "raise", "raised"),
     ("decrease", "decreased", "decreases", "cut", "lower", "lowered", "reduce", "reduced")),
    (("add", "added", "adds", "adding"), ("remove", "removed", "removes", "removing", "drop",
                                            "dropped", "drops", "dropping")),
    (("buy", "buys", "bought", "buying", "purchase", "purchased"),
     ("sell", "sells", "sold", "selling")),
    (("light",), ("dark",)),
    (("online",), ("offline",)),
    (("public",), ("private",)),
    (("lock", "locked", "locks"), ("unlock", "unlocked", "unlocks")),
    (("agree", "agrees", "agreed"), ("disagree", "disagrees", "disagreed")),
    (("like", "likes", "liked", "love", "loves", "loved", "enjoy", "enjoys", "enjoyed"),
     ("unlike",)),
    (("true", "correct"), ("false", "wrong", "incorrect")),
    (("arrive", "arrives", "arrived", "arriving"), ("leave", "leaves", "leaving", "depart",
                                                   "departs", "departed", "departing")),
    (("start", "starts", "started", "starting", "begin", "begins", "began", "beginning"),
     ("end", "ends", "ended", "ending", "finish", "finishes", "finished")),
    (("hot",), ("cold",)),
    (("early",), ("late",)),
    (("more",), ("less", "fewer")),
    (("over", "above"), ("under", "below")),  # "is over 40" / "is under 40"
    (("at least",), ("at most",)),
    (("indoor", "indoors"), ("outdoor", "outdoors")),
    (("old", "older"), ("new", "newer", "young", "younger")),
    # a stance: "is in favour of the merger" / "opposes the merger", "is against it"
    (("support", "supports", "supported", "supporting", "favor", "favour", "favors", "favours",
      "favored", "favoured"),
     ("oppose", "opposes", "opposed", "opposing", "against")),
)  # fmt: skip

_AGAINST_STEMS: Final = frozenset(_stem(w) for w in _AGAINST_VERBS)
_POLARITY_STEMS: Final = frozenset(_stem(w) for w in _POLARITY_WORDS)

# stem -> (group, pole): pole 0 or 1 of an antonym group.
_ANTONYMS: Final[dict[str, tuple[int, int]]] = {
    _stem(form): (group, pole)
    for group, poles in enumerate(_ANTONYM_GROUPS)
    for pole, forms in enumerate(poles)
    for form in forms
    if " " not in form
}
# Two-word antonyms ("called off", "going ahead"), matched on raw tokens.
_ANTONYM_PHRASES: Final[dict[tuple[str, str], tuple[int, int]]] = {
    (form.split()[0], form.split()[1]): (group, pole)
    for group, poles in enumerate(_ANTONYM_GROUPS)
    for pole, forms in enumerate(poles)
    for form in forms
    if " " in form
}


def _is_negation_word(word: str) -> bool:
    return word in _NEGATION_WORDS or word.endswith("n't") or word.startswith("non-")


def _negates(tokens: Sequence[str], i: int) -> bool:
    """False for the idioms that look negative but are not ("not only", "No, ...")."""
    word = tokens[i]
    prev = tokens[i - 1] if i else ""
    prev2 = tokens[i - 2] if i > 1 else ""
    nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
    nxt2 = tokens[i + 2] if i + 2 < len(tokens) else ""
    if nxt in _NOT_NEGATING_NEXT.get(word, ()):
        return False
    if word == "no" and (not nxt or nxt in _PUNCT):
        return False  # "No, ..." / "No." is an answer, not a negated fact
    if word == "without" and nxt == "a" and nxt2 == "doubt":
        return False
    return not (word == "not" and (prev == "if" or (prev == "or" and prev2 == "whether")))


def _negation_veto(a: _Words, b: _Words) -> GuardVeto | None:
    """Veto when exactly one side is negated, or the negation counts differ in parity,
    and the two sides share most content words.

    Cues: "not", "n't" (and "dont"), "no", "never", "no longer", "none", "nothing",
    "nobody", "without", "neither", "cannot", "non-", and negative verbs (dislikes,
    hates, fails, refuses, avoids, lacks, stopped, quit, gave up ...), so "likes"
    / "hates" and "passes" / "fails" veto while "never drinks" / "does not
    drink" does not. Not cues: "not only", "No, ...", "no doubt", "nothing but",
    "whether or not", "can't wait", "nor" (counted once with "neither").
    "Same content": overlap of content words >= half of the smaller side, so
    "is vegetarian" / "doesn't eat meat" (no shared words) is not vetoed.

    Antonyms without a cue (a short list of groups: "open" / "closed", "attend" /
    "skip", "happening" / "cancelled", "enable" / "disable", "light" / "dark",
    "support" / "oppose", ...) count as one negation when both texts use the group,
    each with a pole the other lacks, so "is open" / "is closed" vetoes, "is not
    open" / "is closed" does not, nor does a text with both poles against one.
    "decided / voted / advised against" is a cue.

    Limitations: no scope, so "doesn't dislike coffee" / "likes coffee" vetoes
    (two cues vs none) and "likes tea, not coffee" / "likes coffee, not tea" is
    left to the word-order guard; antonyms outside the list ("remote" / "in the
    office") are not seen; "no longer lives in X" /
    "used to live in X" vetoes.
    """
    # "is unhappy" / "is not happy": a negating prefix on a word the other text
    # has without it counts as a cue.
    prefixed_a, prefixed_b = _prefix_negations(a, b), _prefix_negations(b, a)
    ca, cb = len(a.cues) + len(prefixed_a), len(b.cues) + len(prefixed_b)
    # "PDFs, not Figma links" / "PDFs instead of Figma links": one contrast.
    if a.contrast_cues and b.contrasts:
        ca -= a.contrast_cues
    if b.contrast_cues and a.contrasts:
        cb -= b.contrast_cues
    clashes = _antonym_clashes(a, b)
    if len(clashes) % 2:
        # An odd number of antonym swaps flips the polarity once: "is not open" /
        # "is closed" agree, "is open" / "is closed" do not.
        if (ca + 1) % 2 == cb % 2:
            return None
    elif (ca == 0) == (cb == 0) and ca % 2 == cb % 2:
        return None
    small = min(len(a.polarity_content), len(b.polarity_content))
    if small and len(a.polarity_content & b.polarity_content) * 2 < small:
        return None
    if clashes and ca == cb == 0:
        shown = ", ".join("/".join(_ANTONYM_GROUPS[g][p][0] for p in (0, 1)) for g in clashes)
        detail = f"negation differs: antonyms ({shown})"
        return GuardVeto(GuardName.NEGATION, detail[:_MAX_DETAIL])
    cues_a = ", ".join([*a.cues, *prefixed_a][:4]) or "none"
    cues_b = ", ".join([*b.cues, *prefixed_b][:4]) or "none"
    detail = f"negation differs: [{cues_a}] vs [{cues_b}]"
    return GuardVeto(GuardName.NEGATION, detail[:_MAX_DETAIL])


# Prefixes that negate the word they open ("unhappy", "impatient", "dishonest");
# the alignment reads them too, by part of speech.
NEGATING_PREFIXES: Final = ("un", "in", "im", "ir", "il", "dis")


def _prefix_negations(text: _Words, other: _Words) -> list[str]:
    """Content words of `text` that are a negating prefix on a word `other` has
    and `text` has not ("unhappy" against "happy", "distrusts" against "trust"),
    but for those already counted (cues, negative verbs, antonyms)."""
    found: list[str] = []
    for stem in sorted(text.polarity_content):
        if stem in _ANTONYMS or stem in _POLARITY_STEMS or stem in text.cues:
            continue
        for prefix in NEGATING_PREFIXES:
            base = stem.removeprefix(prefix)
            known = base in other.polarity_content and base not in text.polarity_content
            if base != stem and len(base) >= 3 and known:
                found.append(stem)
                break
    return found


def _antonym_clashes(a: _Words, b: _Words) -> list[int]:
    """Antonym groups both texts use, each with a pole the other lacks ("open" /
    "closed"; not "fighting against the group and those who support it" /
    "fighting against the band", where one text has both)."""
    if not a.poles or not b.poles:
        return []
    groups = {g for g, _ in a.poles} & {g for g, _ in b.poles}
    return sorted(
        g
        for g in groups
        if {p for h, p in a.poles if h == g}.isdisjoint({p for h, p in b.poles if h == g})
    )
