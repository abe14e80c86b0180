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
Each guard's docstring lists what it does not handle.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Final

from consumer.domain.units import unit_amounts

__all__ = [
    "GuardName",
    "GuardVeto",
    "PairSignals",
    "TextSignals",
    "check_pair",
    "pair_signals",
    "related_kind",
    "text_signals",
]


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


_MAX_DETAIL: Final = 199
_CACHE_SIZE: Final = 4096

# --------------------------------------------------------------------------
# Quantities: numbers, times, dates, weekdays, months, identifiers
# --------------------------------------------------------------------------

# Replaces an extracted quantity, so later word-level passes know one was there
# (for "May 3" / "Jan 5") and number-word runs stop at it.
_SENTINEL: Final = "\u2021"
_SENTINEL_PAD: Final = f" {_SENTINEL} "

_URL_RE: Final = re.compile(
    r"(?:https?://|www\.)[^\s<>\"']+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE
)
_URL_TRAIL: Final = ".,;:!?)]}'\""
_SCHEME_RE: Final = re.compile(r"^(?:https?://)?(?:www\.)?")
# "9am", "9 am", "9:30 pm", "9.30pm", "9 a.m.", "9 AM".
_TIME_12_RE: Final = re.compile(
    r"(?<![\w:.])(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?\s?m\b\.?", re.IGNORECASE
)
# "6 in the morning", "7 o'clock in the evening", "10 at night".
_TIME_DAYPART_RE: Final = re.compile(
    r"(?<![\w:.])(\d{1,2})(?::(\d{2}))?\s*(?:o'?clock\s+)?"
    r"(in\s+the\s+morning|in\s+the\s+afternoon|in\s+the\s+evening|at\s+night|tonight)\b",
    re.IGNORECASE,
)
# "09:00", "21:00", "9:00:00" (taken literally as a 24-hour clock).
_TIME_24_RE: Final = re.compile(r"(?<![\w:.])(\d{1,2}):(\d{2})(?::\d{2})?(?![\d:])")
_OCLOCK_RE: Final = re.compile(r"(?<![\w:.])(\d{1,2})\s*o'?clock\b", re.IGNORECASE)
_THOUSANDS_RE: Final = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
# Any token holding a digit, with the letters and separators around it:
# "2023", "3.12", "2023-05-01", "ABC-123", "x86_64", "16GB", "3rd", "v1.2".
_DIGIT_TOKEN_RE: Final = re.compile(
    r"(?<![^\W_])(?:[^\W_]+[-_./])*[^\W\d_]*\d[^\W_]*(?:[-_./][^\W_]+)*"
)
_INT_RE: Final = re.compile(r"\d+")
_DECIMAL_RE: Final = re.compile(r"\d+(?:\.\d+)+")
_VERSION_RE: Final = re.compile(r"v(\d+(?:\.\d+)*)")
_UNIT_NUMBER_RE: Final = re.compile(r"(\d+(?:\.\d+)?)([^\W\d_]{1,3})")
_DIGIT_SPLIT_RE: Final = re.compile(r"[-_./]")
_NUMBER_COMPOUND_RE: Final = re.compile(r"(\d+(?:\.\d+)?)(k?)[-/](?:[a-z]+(?:-[a-z]+)*)")
# "2026-08-09" and "06/2027": a date, spelled as the word pass spells one.
_ISO_DATE_RE: Final = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")
_MONTH_YEAR_RE: Final = re.compile(r"(\d{1,2})/(\d{4})")
_MONTH_NAMES: Final = (
    "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december",
)  # fmt: skip
_ID_JOINERS_RE: Final = re.compile(r"[-_]")
_QUANTITY_WORD_RE: Final = re.compile(rf"[^\W\d_]+(?:'[^\W\d_]+)?|{_SENTINEL}")

_UNITS: Final[dict[str, int]] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19,
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
    "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11,
    "twelfth": 12, "thirteenth": 13, "fourteenth": 14, "fifteenth": 15,
    "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19,
    "twice": 2, "thrice": 3,
}  # fmt: skip
_TENS: Final[dict[str, int]] = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
    "twentieth": 20, "thirtieth": 30, "fortieth": 40, "fiftieth": 50,
    "sixtieth": 60, "seventieth": 70, "eightieth": 80, "ninetieth": 90,
}  # fmt: skip
_SCALES: Final[dict[str, int]] = {
    "dozen": 12, "hundred": 100, "hundredth": 100, "thousand": 1000,
    "thousandth": 1000, "million": 1_000_000, "billion": 1_000_000_000,
}  # fmt: skip
_SMALL_SCALES: Final = frozenset({"dozen", "hundred", "hundredth"})
_NUMBER_WORDS: Final = frozenset(_UNITS) | frozenset(_TENS) | frozenset(_SCALES)
_NOT_NUMBER_BEFORE_ONE: Final = frozenset(
    {"no", "any", "every", "some", "each", "which", "this", "that", "the", "other", "another"}
)
# "a second" / "per second" / "one second" is a unit of time, not an ordinal.
_NOT_ORDINAL_BEFORE_SECOND: Final = frozenset({"a", "per", "each", "split"})

_WEEKDAYS: Final[dict[str, str]] = {
    d: d for d in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
}
_WEEKDAYS_EXTRA: Final[dict[str, str]] = {
    "today": "today", "tomorrow": "tomorrow", "yesterday": "yesterday", "tonight": "tonight",
    "weekend": "weekend", "weekday": "weekday",
}  # fmt: skip
_MONTHS: Final = frozenset(
    {"january", "february", "march", "april", "june", "july", "august", "september",
     "october", "november", "december"}
)  # fmt: skip
_ABBREVIATIONS: Final[dict[str, str]] = {
    "mon": "monday", "tue": "tuesday", "tues": "tuesday", "wed": "wednesday",
    "thu": "thursday", "thur": "thursday", "thurs": "thursday", "fri": "friday",
    "sat": "saturday", "sun": "sunday", "jan": "january", "feb": "february",
    "mar": "march", "apr": "april", "jun": "june", "jul": "july", "aug": "august",
    "sep": "september", "sept": "september", "oct": "october", "nov": "november",
    "dec": "december",
}  # fmt: skip
_AMBIGUOUS_ABBREVIATIONS: Final = frozenset({"jan", "mar", "sat", "sun", "aug"})
_DATE_CUES: Final = frozenset({"every", "each", "on", "next", "last", "this", "until", "by"})
# "may" is a month only in a date-like context ("in May", "May 3", mid-sentence "May").
_MAY_CONTEXT: Final = frozenset(
    {"in", "of", "since", "until", "till", "by", "early", "late", "mid", "next", "last",
     "this", "during", "from", "before", "after", "through", "end", "start"}
)  # fmt: skip
_DAYPART_TIMES: Final[dict[str, str]] = {"noon": "12:00", "midday": "12:00", "midnight": "00:00"}
_URL_HINT_RE: Final = re.compile(r"https?://|www\.", re.IGNORECASE)
# Amounts without a digit or number word: "half an hour", "a week".
_UNIT_HINT_RE: Final = re.compile(r"\bhalf\s+an?\s", re.IGNORECASE)
_HAS_DIGIT_RE: Final = re.compile(r"\d")
# Every word the word-level pass could turn into a quantity; when none occurs it is skipped.
_QUANTITY_VOCABULARY: Final = frozenset(
    {*_NUMBER_WORDS, *_WEEKDAYS, *_WEEKDAYS_EXTRA, *_MONTHS, *_ABBREVIATIONS, *_DAYPART_TIMES,
     "may"}
    | {f"{day}s" for day in (*_WEEKDAYS, *_WEEKDAYS_EXTRA)}
)  # fmt: skip


def _clock(hour: int, minute: int) -> str:
    return f"{hour:02d}:{minute:02d}"


def _twelve_hour(hour: int, minute: int, pm: bool) -> str:
    if 1 <= hour <= 12:
        hour = hour % 12 + (12 if pm else 0)
    return _clock(hour, minute)


def _plain_number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def _canonical_digit_token(token: str) -> str:
    """Canonical form of a token holding a digit: "1st"->"1", "v1.2"->"1.2", "ABC-123"->"abc123"."""
    low = token.lower()
    if _INT_RE.fullmatch(low):
        return str(int(low))
    compound = _NUMBER_COMPOUND_RE.fullmatch(low)
    if compound:
        # "2-bedroom", "4-year-old", "15.49/month": the number; the words after
        # it are words ("two-bedroom" gives "2" too).
        value, thousands = compound.groups()
        if thousands:
            return _plain_number(float(value) * 1000)
        return str(int(value)) if value.isdigit() else value
    if _DECIMAL_RE.fullmatch(low):
        return low
    if not any(c.isalpha() for c in low):
        # Dates, ranges, phone numbers: keep the order, drop leading zeros.
        parts = [p for p in _DIGIT_SPLIT_RE.split(low) if p]
        return "-".join(str(int(p)) if p.isdigit() else p for p in parts)
    version = _VERSION_RE.fullmatch(low)
    if version:
        return version.group(1)
    unit = _UNIT_NUMBER_RE.fullmatch(low)
    if unit:
        value, suffix = unit.groups()
        if suffix == "k" and value.isdigit():
            return str(int(value) * 1000)
        return str(int(value)) if value.isdigit() else value
    return _ID_JOINERS_RE.sub("", low)


@dataclass(frozen=True, slots=True)
class _Quantities:
    """A text's quantities as written (canonical forms), and the same with each
    amount of a known unit in its base unit ("two weeks" -> "14 days")."""

    raw: frozenset[str]
    in_units: frozenset[str]
    has_units: bool


def _quantities(text: str) -> _Quantities:
    raw = _extract_quantities(text)
    amounts = unit_amounts(text) if raw or _UNIT_HINT_RE.search(text) else []
    if not amounts:
        return _Quantities(raw, raw, False)
    plain = {amount.plain for amount in amounts if amount.plain}
    return _Quantities(raw, (raw - plain) | {amount.base for amount in amounts}, True)


def _extract_quantities(text: str) -> frozenset[str]:
    """Every number, time, date, weekday, month and identifier in ``text``, canonicalised."""
    found: list[str] = []

    def url(match: re.Match[str]) -> str:
        value = match.group(0).rstrip(_URL_TRAIL).lower()
        found.append(_SCHEME_RE.sub("", value).rstrip("/"))
        return _SENTINEL_PAD

    def time12(match: re.Match[str]) -> str:
        minute = int(match.group(2) or 0)
        found.append(_twelve_hour(int(match.group(1)), minute, match.group(3).lower() == "p"))
        return _SENTINEL_PAD

    def daypart(match: re.Match[str]) -> str:
        minute = int(match.group(2) or 0)
        found.append(_twelve_hour(int(match.group(1)), minute, "morning" not in match.group(3)))
        return _SENTINEL_PAD

    def time24(match: re.Match[str]) -> str:
        found.append(_clock(int(match.group(1)), int(match.group(2))))
        return _SENTINEL_PAD

    def oclock(match: re.Match[str]) -> str:
        found.append(_clock(int(match.group(1)), 0))
        return _SENTINEL_PAD

    def digits(match: re.Match[str]) -> str:
        found.extend(_date_parts(match.group(0)) or [_canonical_digit_token(match.group(0))])
        return _SENTINEL_PAD

    rest = text
    # Cheap pre-checks keep the common, number-free memory on the fast path.
    if "@" in rest or _URL_HINT_RE.search(rest):
        rest = _URL_RE.sub(url, rest)
    if _HAS_DIGIT_RE.search(rest):
        rest = _TIME_12_RE.sub(time12, rest)
        rest = _TIME_DAYPART_RE.sub(daypart, rest)
        rest = _TIME_24_RE.sub(time24, rest)
        rest = _OCLOCK_RE.sub(oclock, rest)
        rest = _THOUSANDS_RE.sub("", rest)
        rest = _DIGIT_TOKEN_RE.sub(digits, rest)
    words = _QUANTITY_WORD_RE.findall(rest)
    if not _QUANTITY_VOCABULARY.isdisjoint(w.lower() for w in words):
        found.extend(_word_quantities(words))
    return frozenset(found)


def _date_parts(token: str) -> list[str]:
    """A numeric date as its parts, as "9 August 2026" gives them: year, month
    name, day ("2026-08-09"); month and year ("06/2027"). Empty for anything else."""
    iso = _ISO_DATE_RE.fullmatch(token)
    if iso:
        year, month, day = (int(part) for part in iso.groups())
        if 1 <= month <= 12 and 1 <= day <= 31:
            return [str(year), _MONTH_NAMES[month - 1], str(day)]
    month_year = _MONTH_YEAR_RE.fullmatch(token)
    if month_year:
        month, year = int(month_year.group(1)), int(month_year.group(2))
        if 1 <= month <= 12:
            return [_MONTH_NAMES[month - 1], str(year)]
    return []


def _word_quantities(words: Sequence[str]) -> list[str]:
    """Number words ("twenty-five", "a hundred", "third"), weekdays, months, noon/midnight."""
    found: list[str] = []
    lows = [w.lower() for w in words]
    total = current = 0
    last = ""  # kind of the previous number word: "unit", "tens", "scale" or "" (no run)

    def flush() -> None:
        nonlocal total, current, last
        if last:
            found.append(str(total + current))
        total = current = 0
        last = ""

    for i, low in enumerate(lows):
        prev = lows[i - 1] if i else ""
        nxt = lows[i + 1] if i + 1 < len(lows) else ""
        if low in _UNITS and not _not_a_number(low, prev, last):
            if last == "unit":
                flush()  # "two three" is two numbers
            current += _UNITS[low]
            last = "unit"
        elif low in _TENS:
            if last in ("unit", "tens"):
                flush()
            current += _TENS[low]
            last = "tens"
        elif low in _SCALES and (last or prev == "a"):
            if low in _SMALL_SCALES:
                current = max(current, 1) * _SCALES[low]
            else:
                total += max(current, 1) * _SCALES[low]
                current = 0
            last = "scale"
        elif low == "and" and last and nxt in _NUMBER_WORDS:
            continue  # "one hundred and five"
        elif low == "other" and prev == "every":
            flush()
            found.append("2")  # "every other week" is "every second week"
        elif last and low in ("am", "pm", "o'clock") and total == 0 and 0 < current <= 12:
            hour = current
            total = current = 0
            last = ""
            found.append(
                _clock(hour, 0) if low == "o'clock" else _twelve_hour(hour, 0, low == "pm")
            )
        else:
            flush()
            value = _calendar_word(words, lows, i)
            if value:
                found.append(value)
    flush()
    return found


def _not_a_number(low: str, prev: str, last: str) -> bool:
    """Tell "a second", "at first", "no one", "every one" from numbers."""
    if low == "second":
        return prev in _NOT_ORDINAL_BEFORE_SECOND or prev == _SENTINEL or bool(last)
    if low == "first":
        return prev == "at"
    if low == "one":
        return prev in _NOT_NUMBER_BEFORE_ONE
    return False


def _calendar_word(words: Sequence[str], lows: Sequence[str], i: int) -> str:
    """Weekday, month, relative day or named time at ``i``, canonicalised, else ""."""
    low = lows[i]
    singular = low[:-1] if low.endswith("s") else low
    if singular in _WEEKDAYS:
        return _WEEKDAYS[singular]
    if singular in _WEEKDAYS_EXTRA:
        return _WEEKDAYS_EXTRA[singular]
    if low in _MONTHS:
        return low
    if low in _DAYPART_TIMES:
        return _DAYPART_TIMES[low]
    prev = lows[i - 1] if i else ""
    nxt = lows[i + 1] if i + 1 < len(lows) else ""
    if low == "may":
        if prev in _MAY_CONTEXT or _SENTINEL in (prev, nxt) or (i > 0 and words[i][0] == "M"):
            return "may"
        return ""
    # "Wed", "Oct" are dates wherever they stand; "Jan", "Mar", "Sat", "Sun" also
    # name people and things, so only beside a number or after "every", "on", ...
    dated = low not in _AMBIGUOUS_ABBREVIATIONS or _SENTINEL in (prev, nxt) or prev in _DATE_CUES
    if low in _ABBREVIATIONS and words[i][0].isupper() and dated:
        return _ABBREVIATIONS[low]
    return ""


def _format_values(values: Iterable[str]) -> str:
    ordered = sorted(values)
    if not ordered:
        return "none"
    shown = ", ".join(repr(v[:24]) for v in ordered[:4])
    more = f", +{len(ordered) - 4}" if len(ordered) > 4 else ""
    return "{" + shown + more + "}"


def _numbers_veto(qa: _Quantities, qb: _Quantities) -> GuardVeto | None:
    """Veto when the canonical quantities differ as sets.

    Caught: digits in any form (times with am/pm or 24h, dates, amounts, versions,
    "1,000" = "1000", "3" = "three" = "3rd" = "third"), number words up to
    billions, weekdays/months/today/tomorrow, identifiers ("ABC-123"), URLs and
    emails; also one side having a quantity the other lacks ("a cat" / "3 cats").
    A lone "one"/"1" against no quantity at all is not a veto ("a dog" / "one dog").

    Limitations: sets, not sequences: "from 3 to 5" / "from 5 to 3" is equal
    here and left to the word-order guard ("between 3 and 5" / "between 5 and
    3" passes both, on purpose), and repeats do not count ("2 cats and 2
    dogs" = "2 cats"); amounts with a known unit (consumer.domain.units)
    compare in base units ("two weeks" = "14 days", "2 hours" != "2 days"; a
    unit on one side only is not a difference, as the unit may be unknown or
    left out: "4 y/o" / "4 years old"); other units are ignored ("5 miles" =
    "5"), as are currencies ("$5" = "5 euros"); "9:00" without am/pm is read as 09:00, so "9:00" / "9pm" vetoes;
    ordinals equal cardinals ("third" = "3"); "second" / "first" in a
    non-numeric sense ("second opinion") count; "May" and "march" are told
    from the modal and the verb by context only; a letters+digits token is one
    identifier, so "python3" / "Python 3" vetoes; "no cats" / "zero cats" vetoes.
    """
    a, b = qa.raw, qb.raw
    if qa.in_units == qb.in_units:
        return None  # the same amounts, in the same or in other units
    if a == b:
        if not (qa.has_units and qb.has_units):
            return None
        a, b = qa.in_units, qb.in_units  # "every 2 hours" / "every 2 days"
    if (not a and b == {"1"}) or (not b and a == {"1"}):
        return None
    detail = f"numbers differ: {_format_values(a - b)} vs {_format_values(b - a)}"
    return GuardVeto(GuardName.NUMBERS, detail[:_MAX_DETAIL])


# --------------------------------------------------------------------------
# Word-level tokens: negation cues, content words, role structure
# --------------------------------------------------------------------------

_TOKEN_RE: Final = re.compile(r"[^\W_]+(?:['\-.][^\W_]+)*|[,;:.!?&]")
_PUNCT: Final = frozenset(",;:.!?")

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
     "stopped", "stopping", "quit", "quits", "quitting", "cease", "ceased", "ceases"}
)  # fmt: skip
# After these, "stop" / "quit" / "fail" are nouns ("the third stop", "bus stop").
_NOUN_MARKERS: Final = frozenset(
    {"a", "an", "the", "this", "that", "next", "last", "final", "first", "second", "third",
     "bus", "tram", "train", "pit", "one", "each", "every", "no", "without"}
)  # fmt: skip
_GIVE: Final = frozenset({"give", "gives", "gave", "given", "giving"})
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

_PERSONS: Final[dict[str, str]] = {
    "i": "user", "me": "user", "my": "user", "mine": "user", "myself": "user",
    "user": "user", "he": "he", "him": "he", "his": "he", "himself": "he",
    "she": "she", "her": "she", "hers": "she", "herself": "she",
    "they": "they", "them": "they", "their": "they", "theirs": "they",
    "themselves": "they", "we": "we", "us": "we", "our": "we", "ours": "we",
    "you": "you", "your": "you", "yours": "you",
}  # fmt: skip
_PERSON_TOKENS: Final = frozenset(_PERSONS.values())
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
     ("cancelled", "canceled", "cancel", "cancels", "cancelling", "canceling", "postponed",
      "called off")),
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
    (("old", "older"), ("new", "newer", "young", "younger")),
)  # fmt: skip
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
# Whose fact it is: "User is vegetarian" / "User's son is vegetarian". Words of
# one group are synonyms ("kid" / "child").
_RELATION_GROUPS: Final[tuple[tuple[str, ...], ...]] = (
    ("son", "sons"), ("daughter", "daughters"),
    ("child", "children", "kid", "kids", "baby", "toddler"),
    ("mother", "mom", "mum", "mommy", "mummy"), ("father", "dad", "daddy"),
    ("parent", "parents"), ("brother", "brothers"), ("sister", "sisters"),
    ("sibling", "siblings"), ("wife",), ("husband",),
    ("partner", "spouse", "girlfriend", "boyfriend", "fiance", "fiancee", "married"),
    ("grandmother", "grandma", "granny"), ("grandfather", "grandpa"),
    ("grandparent", "grandparents"), ("uncle",), ("aunt",), ("cousin", "cousins"),
    ("niece",), ("nephew",), ("friend", "friends"), ("roommate", "flatmate", "housemate"),
    ("neighbour", "neighbor", "neighbours", "neighbors"),
    ("manager", "boss", "supervisor"), ("colleague", "coworker", "co-worker", "colleagues"),
    ("teammate", "teammates"), ("dog", "puppy"), ("cat", "kitten"), ("pet", "pets"),
)  # fmt: skip
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


_AGAINST_STEMS: Final = frozenset(_stem(w) for w in _AGAINST_VERBS)
_LIGHT_STEMS: Final = frozenset(_stem(w) for w in _LIGHT_VERBS)
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
_POSSESSIVES: Final = frozenset({"my", "your", "his", "her", "their", "our"})
_MONTH_STEMS: Final = frozenset(_stem(m) for m in (*_MONTHS, "may"))
_RELATIONS: Final[dict[str, int]] = {
    _stem(word): group for group, words in enumerate(_RELATION_GROUPS) for word in words
}


def _is_negation_word(word: str) -> bool:
    return word in _NEGATION_WORDS or word.endswith("n't") or word.startswith("non-")


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
        if (raw in _POLARITY_WORDS and prev not in _NOUN_MARKERS) or (raw in _GIVE and nxt == "up"):
            cues.append(raw if raw not in _GIVE else f"{raw} up")
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
    )


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
    "skip", "happening" / "cancelled", "enable" / "disable", "light" / "dark", ...)
    count as one negation when both texts use the group with different poles, so
    "is open" / "is closed" vetoes and "is not open" / "is closed" does not.
    "decided / voted / advised against" is a cue.

    Limitations: no scope, so "doesn't dislike coffee" / "likes coffee" vetoes
    (two cues vs none) and "likes tea, not coffee" / "likes coffee, not tea" is
    left to the word-order guard; antonyms outside the list ("remote" / "in the
    office") are not seen; "no longer lives in X" /
    "used to live in X" vetoes.
    """
    ca, cb = len(a.cues), len(b.cues)
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
    cues_a = ", ".join(a.cues[:4]) or "none"
    cues_b = ", ".join(b.cues[:4]) or "none"
    detail = f"negation differs: [{cues_a}] vs [{cues_b}]"
    return GuardVeto(GuardName.NEGATION, detail[:_MAX_DETAIL])


def _antonym_clashes(a: _Words, b: _Words) -> list[int]:
    """Antonym groups both texts use, with different poles ("open" / "closed")."""
    if not a.poles or not b.poles:
        return []
    groups = {g for g, _ in a.poles} & {g for g, _ in b.poles}
    return sorted(
        g for g in groups if {p for h, p in a.poles if h == g} != {p for h, p in b.poles if h == g}
    )


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


def _is_date_chunk(words: Sequence[str]) -> bool:
    """A short chunk holding a month or a number: "August 31" = "31 August"."""
    return len(words) <= 3 and any(w in _MONTH_STEMS or w.isdigit() for w in words)


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
    only light verbs ("goes", "has", "takes") differ besides.
    Not vetoed, because roles are kept: phrases moved whole ("in 2020, X" / "X in
    2020", "to Paris from Rome" / "from Rome to Paris"), a trailing "from / of / at
    X" as a modifier ("offer from Stripe" / "Stripe offer"), dates reordered
    ("August 31" / "31 August"), reordered conjuncts
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
    only_a, only_b = a.relations - b.mentioned, b.relations - a.mentioned
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


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


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


def check_pair(existing: str, new: str) -> GuardVeto | None:
    """Veto a semantic skip/merge of ``new`` into ``existing``, or None to allow it.

    Guards run in order numbers, negation, word order; the first veto wins.
    """
    if existing == new:
        return None
    fa, fb = _features(existing), _features(new)
    return (
        _numbers_veto(fa.quantities, fb.quantities)
        or _negation_veto(fa.words, fb.words)
        or _word_order_veto(fa.words, fb.words)
        or _relation_veto(fa.words, fb.words)
    )


# --------------------------------------------------------------------------
# Signals for the verifier (consumer.domain.verifier): what the guards see,
# as numbers, whether or not it reaches a veto.
# --------------------------------------------------------------------------


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
