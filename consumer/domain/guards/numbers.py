"""The numbers guard: quantities (numbers, times, dates, identifiers, URLs) that differ.

One module because the reader and the veto share the canonical forms: each rule
of the veto ("a dog" / "one dog", rates of one unit) is written against how the
reader writes a quantity. Dates and clock times are read in `dates`, amounts
with units in consumer.domain.units.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Final

from consumer.domain.guards.dates import (
    _ABBREVIATIONS,
    _ABBREVIATIONS_OF,
    _DAYPART_TIMES,
    _MONTH_NAMES,
    _MONTHS,
    _OCLOCK_RE,
    _TIME_12_RE,
    _TIME_24_RE,
    _TIME_DAYPART_RE,
    _WEEKDAYS,
    _WEEKDAYS_EXTRA,
    _calendar_word,
    _clock,
    _date_parts,
    _range_start,
    _twelve_hour,
)
from consumer.domain.guards.text import _MAX_DETAIL, _SENTINEL
from consumer.domain.units import (
    CURRENCY_SYMBOLS,
    CURRENCY_WORDS,
    Frequency,
    currencies,
    frequencies,
    is_unit_letter,
    is_unit_word,
    may_have_rate_of_one,
    read_units,
    same_currencies,
    unit_amounts,
)
from consumer.domain.vetoes import GuardName, GuardVeto

_SENTINEL_PAD: Final = f" {_SENTINEL} "

_URL_RE: Final = re.compile(
    r"(?:https?://|www\.)[^\s<>\"']+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE
)
_URL_TRAIL: Final = ".,;:!?)]}'\""
_SCHEME_RE: Final = re.compile(r"^(?:https?://)?(?:www\.)?")

_THOUSANDS_RE: Final = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
# Any token holding a digit, with the letters and separators around it:
# "2023", "3.12", "2023-05-01", "ABC-123", "x86_64", "16GB", "3rd", "v1.2".
_DIGIT_TOKEN_RE: Final = re.compile(
    r"(?<![^\W_])(?:[^\W_]+[-_./])*[^\W\d_]*\d[^\W_]*(?:[-_./][^\W_]+)*"
)
_INT_RE: Final = re.compile(r"\d+")
_NUMERONYM_RE: Final = re.compile(r"([^\W\d_])(\d{1,2})([^\W\d_])")
_DECIMAL_RE: Final = re.compile(r"\d+(?:\.\d+)+")
_WHOLE_DECIMAL_RE: Final = re.compile(r"\d+\.0+")  # "4.0" = "4"
_ORDINAL_COMPOUND_RE: Final = re.compile(r"(\d+)(?:st|nd|rd|th)-[a-z]+(?:-[a-z]+)*")
_VERSION_RE: Final = re.compile(r"v(\d+(?:\.\d+)*)")
_UNIT_NUMBER_RE: Final = re.compile(r"(\d+(?:\.\d+)?)([^\W\d_]{1,3})")
_DIGIT_SPLIT_RE: Final = re.compile(r"[-_./]")
# "3-10" (as in "May 3-10"), "1980/1981": a range of two numbers, not one token
# (only when ascending: "6-2", "24/7" stay one token, as scores and votes).
_NUMBER_RANGE_RE: Final = re.compile(r"(\d{1,4})[-/](\d{1,4})")
# "Q3" = "third quarter" = "3rd quarter".
_QUARTER_RE: Final = re.compile(
    r"(?<![\w-])(?:([1-4])(?:st|nd|rd|th)|(first|second|third|fourth))[\s-]+quarter\b",
    re.IGNORECASE,
)
_ORDINALS: Final[dict[str, int]] = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_NUMBER_COMPOUND_RE: Final = re.compile(r"(\d+(?:\.\d+)?)(k?)[-/](?:[a-z]+(?:-[a-z]+)*)")

# A number and one capital letter joined by a hyphen: a label ("12-A", "1099-B"),
# as "12A" is, not a number and a word ("2-bedroom").
_HYPHEN_LABEL_RE: Final = re.compile(r"(\d+)-([A-Z])")
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
# Digits and a magnitude: "1.2 million", "$5 billion", "40 thousand".
_SCALED_RE: Final = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s*(thousand|million|billion|trillion)s?\b", re.IGNORECASE
)
_SCALED_VALUES: Final = {**_SCALES, "trillion": 10**12}
# Magnitude suffixes: "2.5k", "$1.5M", "3bn" (a lower-case "m" is metres, "b" bits).
_SUFFIX_VALUES: Final = {"k": 1000, "M": 1_000_000, "bn": 10**9, "B": 10**9}
_NUMBER_WORDS: Final = frozenset(_UNITS) | frozenset(_TENS) | frozenset(_SCALES)
_NOT_NUMBER_BEFORE_ONE: Final = frozenset(
    {"no", "any", "every", "some", "each", "which", "this", "that", "the", "other", "another"}
)
# "a second" / "per second" / "one second" is a unit of time, not an ordinal.
_NOT_ORDINAL_BEFORE_SECOND: Final = frozenset({"a", "per", "each", "split"})

_URL_HINT_RE: Final = re.compile(r"https?://|www\.", re.IGNORECASE)
# Amounts with no digit or number word: "half an hour", "an hour and a half".
_UNIT_HINT_RE: Final = re.compile(
    r"\b(?:half|quarters?)\s+(?:of\s+)?an?\s|\bhalf[\s-]\w|\band\s+a\s+half\b", re.IGNORECASE
)
_HAS_DIGIT_RE: Final = re.compile(r"\d")
# Every word the word-level pass could turn into a quantity; when none occurs it is skipped.
_QUANTITY_VOCABULARY: Final = frozenset(
    {*_NUMBER_WORDS, *_WEEKDAYS, *_WEEKDAYS_EXTRA, *_MONTHS, *_ABBREVIATIONS, *_DAYPART_TIMES,
     "may", "half", "other", "alternate", "fortnightly", "biweekly"}
    | {f"{day}s" for day in (*_WEEKDAYS, *_WEEKDAYS_EXTRA)}
)  # fmt: skip


def number_value(token: str) -> str:
    """One number token in the form the reader gives it ("994th" and "994" ->
    "994", "first" and "1st" -> "1", "Twelve" -> "12"); other tokens as
    written, in lower case."""
    low = token.lower()
    if low in _UNITS:
        return str(_UNITS[low])
    if low in _TENS:
        return str(_TENS[low])
    return _canonical_digit_token(token) if _HAS_DIGIT_RE.search(token) else low


def _plain_number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def _canonical_digit_token(token: str) -> str:
    """Canonical form of a token holding a digit: "1st"->"1", "v1.2"->"1.2", "ABC-123"->"abc123"."""
    low = token.lower()
    if _INT_RE.fullmatch(low):
        return str(int(low))
    labelled = _HYPHEN_LABEL_RE.fullmatch(token)
    if labelled:
        return "".join(labelled.groups()).lower()  # "seat 12-A" is seat 12A
    compound = _NUMBER_COMPOUND_RE.fullmatch(low)
    if compound:
        # "2-bedroom", "4-year-old", "15.49/month": the number; the words after
        # it are words ("two-bedroom" gives "2" too).
        value, thousands = compound.groups()
        if thousands:
            return _plain_number(float(value) * 1000)
        return str(int(value)) if value.isdigit() else value
    if _DECIMAL_RE.fullmatch(low):
        return str(int(float(low))) if _WHOLE_DECIMAL_RE.fullmatch(low) else low
    ordinal = _ORDINAL_COMPOUND_RE.fullmatch(low)
    if ordinal:
        return str(int(ordinal.group(1)))  # "2nd-year" as "second-year" reads
    if not any(c.isalpha() for c in low):
        # Dates, ranges, phone numbers: keep the order, drop leading zeros.
        parts = [p for p in _DIGIT_SPLIT_RE.split(low) if p]
        if len(parts) >= 3 and all(p.isdigit() for p in parts):
            return "".join(parts)  # "4471-2290-8813" = "447122908813": one identifier
        return "-".join(str(int(p)) if p.isdigit() else p for p in parts)
    version = _VERSION_RE.fullmatch(low)
    if version:
        return version.group(1)
    unit = _UNIT_NUMBER_RE.fullmatch(token)
    if unit:
        value, suffix = unit.groups()
        scale = _SUFFIX_VALUES.get(suffix) or _SUFFIX_VALUES.get(suffix.lower(), 0)
        if scale:
            return _plain_number(float(value) * scale)
        if _letter_label(suffix):
            return low  # "seat 14C" / "14D", "graded 6a" / "6c": a label, not an amount
        return str(int(value)) if value.isdigit() else value
    return _ID_JOINERS_RE.sub("", low)


# Single letters after a number that say how many of what ("4x a week", "3w"):
# no label. Units ("3h", "10m") are the unit reader's.
_MULTIPLIER_LETTERS: Final = frozenset("xwy")


def _letter_label(suffix: str) -> bool:
    """Whether a single letter after a number labels it ("14C", "14D", "4b",
    "6a") rather than measuring it ("3h", "10m", "5L"): a capital but "L"
    labels, a small letter unless it is a unit."""
    low = suffix.lower()
    if len(low) != 1 or low in _MULTIPLIER_LETTERS:
        return False
    return (suffix.isupper() and suffix != "L") or not is_unit_letter(low)


_SHARES_RE: Final = re.compile(r"(\d{1,2})/(\d{1,2})")


def _shares(token: str) -> list[str]:
    """Two shares of a whole: "60/40" gives [60, 40], as "60% ... 40%" does
    ("50/50" gives [50]); a descending pair that does not add up to 100 is no
    split ("24/7", "6/2")."""
    shares = _SHARES_RE.fullmatch(token)
    if shares is None:
        return []
    first, second = (int(number) for number in shares.groups())
    return sorted({str(first), str(second)}) if first + second == 100 else []


def _number_range(token: str) -> list[str]:
    """A range of two numbers as both: "3-10" gives [3, 10]; empty for anything else."""
    number_range = _NUMBER_RANGE_RE.fullmatch(token) if len(token) <= 9 else None
    if number_range is None:
        return []
    low, high = (int(number) for number in number_range.groups())
    return [str(low), str(high)] if low < high else []


@dataclass(frozen=True, slots=True)
class _Quantities:
    """A text's quantities as written (canonical forms), and the same with each
    amount of a known unit in its base unit ("two weeks" -> "14 days"); the
    currencies next to its numbers; the text, for the rates read only when the
    amounts differ (`_with_rates`)."""

    raw: frozenset[str]
    in_units: frozenset[str]
    has_units: bool
    currencies: frozenset[str]
    text: str = field(repr=False)
    unnumbered: bool = False  # an amount with no number: "half an hour"
    mentions: int = 0  # quantities read, repeats counted ("2 kids and 2 cats": 2)
    # Rates of one unit, in base units ("daily" -> "1 days"): read once per text.
    rates: frozenset[str] = frozenset()


def _unit_hint(text: str) -> bool:
    """Whether a text without numbers may have an amount ("half an hour")."""
    low = text.lower()
    return ("half" in low or "quarter" in low) and _UNIT_HINT_RE.search(text) is not None


def _quantities(text: str) -> _Quantities:
    text = _one_spelling(text)  # once, for the unit and currency readers too
    raw, words, mentions = _read_quantities(text)
    amounts = unit_amounts(text) if raw or _unit_hint(text) else []
    named = any(symbol in text for symbol in CURRENCY_SYMBOLS) or not words.isdisjoint(
        CURRENCY_WORDS
    )
    money = currencies(text) if raw and named else frozenset()
    rates = frozenset(read_units(text).rates) if may_have_rate_of_one(text) else frozenset()
    if not amounts:
        return _Quantities(raw, raw, False, money, text, mentions=mentions, rates=rates)
    plain = {amount.plain for amount in amounts if amount.plain}
    in_units = (raw - plain) | {amount.base for amount in amounts}
    unnumbered = sum(1 for amount in amounts if not amount.plain)  # "a year and a half"
    return _Quantities(
        raw, in_units, True, money, text, unnumbered > 0, mentions + unnumbered, rates
    )


def _same_with_rates(qa: _Quantities, qb: _Quantities) -> bool:
    """Whether the quantities are the same once a rate of one unit counts as
    one unit ("every year" / "every 12 months"), when one text has such a rate."""
    # Rates change only the amounts with a unit, written with a space ("12 months").
    if {q for q in qa.in_units if " " not in q} != {q for q in qb.in_units if " " not in q}:
        return False
    if not (may_have_rate_of_one(qa.text) or may_have_rate_of_one(qb.text)):
        return False
    rates_a, one_a = _with_rates(qa.text, qa.raw)
    rates_b, one_b = _with_rates(qb.text, qb.raw)
    return (one_a or one_b) and rates_a == rates_b


@lru_cache(maxsize=1024)
def _with_rates(text: str, raw: frozenset[str]) -> tuple[frozenset[str], bool]:
    """The quantities with every rate written "per <amount in base unit>", a rate
    of one unit included ("every year" and "every 12 months" give "per 12
    months"); and whether the text has such a rate of one unit."""
    reading = read_units(text)
    plain = {amount.plain for amount in reading.amounts if amount.plain}
    rated = {f"per {a.base}" if a.rate else a.base for a in reading.amounts}
    ones = {f"per {base}" for base in reading.rates}
    return frozenset((raw - plain) | rated | ones), bool(ones)


def _extract_quantities(text: str) -> frozenset[str]:
    """Every number, time, date, weekday, month and identifier in ``text``, canonicalised."""
    return _read_quantities(_one_spelling(text))[0]


def _read_quantities(text: str) -> tuple[frozenset[str], frozenset[str], int]:
    """`_extract_quantities`, the words left once the quantities with digits
    are taken out, in lower case, and how many quantities were read (repeats too)."""
    found: list[str] = []

    def url(match: re.Match[str]) -> str:
        value = match.group(0).rstrip(_URL_TRAIL).lower()
        found.append(_SCHEME_RE.sub("", value).rstrip("/"))
        return _SENTINEL_PAD

    def quarter(match: re.Match[str]) -> str:
        number = match.group(1) or str(_ORDINALS[match.group(2).lower()])
        found.append(f"q{number}")
        return _SENTINEL_PAD

    def time12(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            found.append(_range_start(match))  # "1 to 4 pm": 13:00
        minute = int(match.group(4) or 0)
        found.append(_twelve_hour(int(match.group(3)), minute, match.group(5).lower() == "p"))
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

    def scaled(match: re.Match[str]) -> str:
        value = float(match.group(1)) * _SCALED_VALUES[match.group(2).lower()]
        found.append(_plain_number(value))
        return _SENTINEL_PAD

    def digits(match: re.Match[str]) -> str:
        token = match.group(0)
        parts = token.split("/")
        if len(parts) > 1 and all(len(p) >= 3 and not p.isdigit() for p in parts):
            # "Black/isort/Flake8": a list of names, each read on its own
            return " ".join(_DIGIT_TOKEN_RE.sub(digits, part) for part in parts)
        found.extend(
            _date_parts(token)
            or _number_range(token)
            or _shares(token)
            or [_canonical_digit_token(token)]
        )
        return _SENTINEL_PAD

    rest = text
    # Cheap pre-checks keep the common, number-free memory on the fast path.
    if "@" in rest or _URL_HINT_RE.search(rest):
        rest = _URL_RE.sub(url, rest)
    if "quarter" in rest.lower():
        rest = _QUARTER_RE.sub(quarter, rest)
    if _HAS_DIGIT_RE.search(rest):
        rest = _TIME_12_RE.sub(time12, rest)
        rest = _TIME_DAYPART_RE.sub(daypart, rest)
        rest = _TIME_24_RE.sub(time24, rest)
        rest = _OCLOCK_RE.sub(oclock, rest)
        rest = _THOUSANDS_RE.sub("", rest)
        rest = _SCALED_RE.sub(scaled, rest)
        rest = _DIGIT_TOKEN_RE.sub(digits, rest)
    words = _QUANTITY_WORD_RE.findall(rest)
    lows = frozenset(w.lower() for w in words)
    # "March's outage": a calendar word with a possessive (`_calendar_word`).
    if not _QUANTITY_VOCABULARY.isdisjoint(lows | {low.removesuffix("'s") for low in lows}):
        found.extend(_word_quantities(words))
    return frozenset(found), lows, len(found)


# "the '90s", "90s music" (not "in her 90s", "a plank for 90s"); "Jan '25";
# "UA 857"; "401(k)".
_DECADE_RE: Final = re.compile(r"(?<![\w$€£.,:'\u2019])(['\u2019])?(1[89]|20)?(\d)0['\u2019]?s\b")
_NOT_A_DECADE_AFTER: Final = frozenset(
    {"his", "her", "their", "my", "your", "our", "its", "for", "in", "every", "within",
     "after", "under", "over", "about", "around", "than", "at", "each", "per"}
)  # fmt: skip
_MONTH_WORDS: Final = "|".join(sorted({*_MONTH_NAMES, *_ABBREVIATIONS}, key=len, reverse=True))
_SHORT_YEAR_RE: Final = re.compile(
    rf"\b((?:{_MONTH_WORDS})\.?|spring|summer|autumn|fall|winter|since|in|from|until|till|by|of)"
    r"\s+['\u2019](\d{2})\b"
    r"(?!['\u2019]?s\b)",
    re.IGNORECASE,
)
_SPACED_CODE_RE: Final = re.compile(r"\b([A-Z]{2,3}) (\d{2,5})\b(?![-.,:/]\d)")
_YEAR_RE: Final = re.compile(r"(?:19|20)\d\d")
_NOT_CODES: Final = frozenset({"am", "pm", "utc", "gmt", "cet", "est", "pst", "et", "pt", "bst"})
_LETTER_IN_PARENS_RE: Final = re.compile(r"(\d)\(([a-zA-Z])\)")
# "89,50 €", "€89,50": a decimal comma, as the euro countries write it.
_EURO_DECIMAL_RE: Final = re.compile(
    r"(?<![\d,.])(\d+),(\d{2})(?=\s?(?:€|EUR\b|euros?\b))|(?<=€)\s?(\d+),(\d{2})(?![\d,])",
    re.IGNORECASE,
)
# "type II", "stage III", "Phase IV": a numbered kind written in roman numerals;
# after any capitalised name two letters or more ("Linear Algebra II"; a lone
# "I" there is the pronoun: "On Monday I ...").
_ROMAN_RE: Final = re.compile(
    r"\b((?i:type|stage|grade|phase|level|tier|part|chapter|season|volume|world war))"
    r"\s+(I{1,3}|IV|VI{0,3}|IX|X)\b"
    r"|\b([A-Z][a-z]+)\s+(II|III|IV|VI{1,3}|IX)\b"
)
_ROMAN_VALUES: Final = {"I": 1, "II": 2, "III": 3, "IV": 4, "V": 5, "VI": 6, "VII": 7,
                        "VIII": 8, "IX": 9, "X": 10}  # fmt: skip


def _one_spelling(text: str) -> str:
    """Rewrite forms of one quantity that read differently into one: a decade
    ("'90s", "90s" -> "1990s"), a year after a month or season ("Jan '25" ->
    "Jan 2025"), a code split by a space ("UA 857" -> "UA857"; not a currency
    or a unit: "USD 500", "KM 12") and a letter in parentheses ("401(k)" ->
    "401k"), a numbered kind in roman numerals ("type II" -> "type 2") and a
    decimal comma beside a euro ("89,50 €" -> "89.50 €"). Callers pass the text
    through it once, before any reader."""
    if "-" in text:
        # "second-year" -> "2th-year": the ordinal compound `_canonical_digit_token` reads.
        text = _ORDINAL_YEAR_RE.sub(lambda m: f"{_UNITS[m.group(1).lower()]}th-", text)
    if "½" in text or "¼" in text or "¾" in text:
        text = _VULGAR_FRACTION_RE.sub(_decimal_fraction, text)
    if "I" in text or "V" in text or "X" in text:
        text = _ROMAN_RE.sub(_arabic, text)
    if not _HAS_DIGIT_RE.search(text):
        return text
    if "," in text and ("€" in text or "eur" in text.lower()):
        text = _EURO_DECIMAL_RE.sub(_euro_decimal, text)
    if "0" in text:
        text = _DECADE_RE.sub(_decade, text)
    if "'" in text or "\u2019" in text:
        text = _SHORT_YEAR_RE.sub(lambda m: f"{m.group(1)} {_century(m.group(2))}", text)
    text = _SPACED_CODE_RE.sub(_joined_code, text)
    return _LETTER_IN_PARENS_RE.sub(r"\1\2", text) if "(" in text else text


# "second-year student", "first-grade teacher": a rank, as "2nd-year" writes it.
_ORDINAL_YEAR_RE: Final = re.compile(
    rf"\b({'|'.join(w for w in _UNITS if w.endswith(('st', 'nd', 'rd', 'th')))})-"
    r"(?=(?:year|grade|floor|place)\b)",
    re.IGNORECASE,
)
_VULGAR_FRACTIONS: Final = {"½": ".5", "¼": ".25", "¾": ".75"}
_VULGAR_FRACTION_RE: Final = re.compile(r"(\d*)\s?([½¼¾])")


def _decimal_fraction(match: re.Match[str]) -> str:
    """ "½" -> "0.5", "1½" -> "1.5"."""
    return f" {match.group(1) or '0'}{_VULGAR_FRACTIONS[match.group(2)]}"


def _arabic(match: re.Match[str]) -> str:
    name, numeral = (match.group(1), match.group(2)) if match.group(1) else match.group(3, 4)
    return f"{name} {_ROMAN_VALUES[numeral]}"


def _euro_decimal(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return f"{match.group(1)}.{match.group(2)}"
    return f"{match.group(3)}.{match.group(4)}"


def _century(two_digits: str) -> str:
    return ("20" if int(two_digits) < 50 else "19") + two_digits


def _decade(match: re.Match[str]) -> str:
    """A decade as one token the unit reader leaves alone ("1990s" is no 1,990
    seconds): "decade-1990"."""
    apostrophe, century, digit = match.groups()
    if century:
        return f"decade-{century}{digit}0"
    before = match.string[: match.start()].split()
    after_a_cue = bool(before) and before[-1].lower() in _NOT_A_DECADE_AFTER
    # "the 20s": the 1920s or the 2020s; "in her 90s": an age; "for 90s": seconds.
    if digit == "2" or (not apostrophe and (digit in "01" or after_a_cue)):
        return match.group(0)
    return f"decade-{_century(digit + '0')}"


def _names_a_measure(word: str) -> bool:
    low = word.strip(".,;:)").lower()
    return (
        low in _MONTHS
        or low in _ABBREVIATIONS
        or low in _WEEKDAYS
        or low == "may"
        or is_unit_word(low)
        or low in CURRENCY_WORDS
    )


def _joined_code(match: re.Match[str]) -> str:
    letters, number = match.groups()
    low = letters.lower()
    following = match.string[match.end() :].split()[:1]
    if following and _names_a_measure(following[0]):
        return match.group(0)  # "due to CFO 26 Sep", "ETA 20 min": a date, an amount
    if (
        low in _NOT_CODES
        or low in CURRENCY_WORDS
        or is_unit_word(low)
        or _YEAR_RE.fullmatch(number)
    ):
        return match.group(0)
    return letters + number


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
        if low in _UNITS and not _not_a_number(low, prev, nxt, last):
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
        elif low == "half" and _half_of_a_thing(lows, i):
            flush()
            found.append("0.5")  # "half a tablet"; "half an hour" is an amount (units)
        elif _every_other(low, prev, nxt):
            flush()
            found.append("2")  # "every other week" = "every second week"
        elif last and total == 0 and 0 < current <= 12 and (clock := _word_clock(current, lows, i)):
            found.append(clock)
            total = current = 0
            last = ""
        else:
            flush()
            value = _calendar_word(words, lows, i)
            if value:
                found.append(value)
    spoken = _past_or_to(lows, len(lows) - 1) if last and total == 0 else None
    if spoken is not None and 0 < current <= 12:
        # "... at half past ten": the hour ends the text, with no word after it.
        shift, minute = spoken
        found.append(_clock((current + shift - 1) % 12 + 1, minute))
        current, last = 0, ""
    flush()
    return found


_HALVES_OF_THE_DAY: Final[dict[tuple[str, ...], bool]] = {
    ("in", "the", "morning"): False,
    ("in", "the", "afternoon"): True,
    ("in", "the", "evening"): True,
    ("at", "night"): True,
}


def _word_clock(hour: int, lows: Sequence[str], i: int) -> str:
    """The time a spelled hour names when the words from `i` say it is one: "two
    pm", "two in the morning" (= "2 am"), "ten at night", "seven o'clock", "seven
    o'clock in the evening"; "" when they do not ("two in the team")."""
    spoken = _past_or_to(lows, i - 1)
    minute = 0
    if spoken is not None:
        shift, minute = spoken
        hour = (hour + shift - 1) % 12 + 1  # "a quarter to one": 12:45
    if lows[i] in ("am", "pm"):
        return _twelve_hour(hour, minute, lows[i] == "pm")
    start = i + 1 if lows[i] == "o'clock" else i
    for words, pm in _HALVES_OF_THE_DAY.items():
        if tuple(lows[start : start + len(words)]) == words:
            return _twelve_hour(hour, minute, pm)
    if spoken is not None:
        return _clock(hour, minute)  # "half past nine" names a time of its own
    return _clock(hour, 0) if lows[i] == "o'clock" else ""


# "half past nine" = 9:30, "a quarter past four" = 4:15, "a quarter to five" = 4:45:
# (hour shift, minutes) by the two words before the hour.
_PAST_OR_TO: Final[dict[tuple[str, str], tuple[int, int]]] = {
    ("half", "past"): (0, 30),
    ("quarter", "past"): (0, 15),
    ("quarter", "to"): (-1, 45),
}


# Every word `spoken_clock` reads, fraction or link: a text without one tells no
# spoken clock time.
SPOKEN_CLOCK_WORDS: Final = frozenset(word for pair in _PAST_OR_TO for word in pair)


def spoken_clock(fraction: str, link: str) -> bool:
    """Whether `fraction` and `link` tell minutes of a spoken hour that follows
    them ("half past", "quarter to")."""
    return (fraction.lower(), link.lower()) in _PAST_OR_TO


def _past_or_to(lows: Sequence[str], hour_at: int) -> tuple[int, int] | None:
    if hour_at < 2:
        return None
    return _PAST_OR_TO.get((lows[hour_at - 2], lows[hour_at - 1]))


_EVERY_OTHER_WEEK: Final = frozenset({"fortnightly", "biweekly"})
ALTERNATE_WORDS: Final = frozenset({"alternate", "alt", "alt."})  # "alt. Fridays" in a note


def _every_other(low: str, prev: str, nxt: str) -> bool:
    """ "every other week", "alternate weeks", "fortnightly": a period of 2."""
    return (
        (low == "other" and prev == "every")
        or alternate_period(low, nxt)
        or low in _EVERY_OTHER_WEEK
    )


def alternate_period(word: str, following: str) -> bool:
    """Whether `word` is "alternate" or "alt." before a weekday (written out or
    abbreviated: "alternate Wed nights") or a calendar period ("alt. weeks"):
    every other one, a period of 2. Not "an alternate route"."""
    return word.lower() in ALTERNATE_WORDS and _is_period(following.lower())


_PERIODS: Final = frozenset(
    {"day", "week", "weekend", "month", "year", "night", "morning", "evening"}
)


def _is_period(low: str) -> bool:
    """A weekday or a calendar period, singular or plural ("alternate Fridays")."""
    word = low[:-1] if low.endswith("s") else low
    weekday = _ABBREVIATIONS.get(low.rstrip("."), "") in _WEEKDAYS  # "alternate Wed"
    return weekday or word in _WEEKDAYS or word in _WEEKDAYS_EXTRA or word in _PERIODS


_BEFORE_HALF_A_THING: Final = frozenset(
    {"a", "an", "the", "my", "his", "her", "their", "our", "your", "its", "this", "that"}
)


def _half_of_a_thing(lows: Sequence[str], i: int) -> bool:
    """Whether "half" at ``i`` is 0.5 of a thing ("half a tablet", "half of an
    apple", "half the bill", "half of my savings"), not of a unit ("half an hour"
    is 30 minutes) or a number ("half a dozen")."""
    j = i + 1
    if j < len(lows) and lows[j] == "of":
        j += 1
    if j + 1 >= len(lows) or lows[j] not in _BEFORE_HALF_A_THING:
        return False
    thing = lows[j + 1]
    return thing not in _SCALES and not is_unit_word(thing)


def _not_a_number(low: str, prev: str, nxt: str, last: str) -> bool:
    """Tell "a second", "every second" (but "every second week"), "at first",
    "no one", "every one" from numbers."""
    if low == "second":
        every_second = prev == "every" and not _is_period(nxt)
        return prev in _NOT_ORDINAL_BEFORE_SECOND or prev == _SENTINEL or bool(last) or every_second
    if low == "first":
        return prev == "at"
    if low == "one":
        return prev in _NOT_NUMBER_BEFORE_ONE
    return False


def _format_values(values: Iterable[str]) -> str:
    ordered = sorted(values)
    if not ordered:
        return "none"
    shown = ", ".join(repr(v[:24]) for v in ordered[:4])
    more = f", +{len(ordered) - 4}" if len(ordered) > 4 else ""
    return "{" + shown + more + "}"


def _numbers_veto(qa: _Quantities, qb: _Quantities) -> GuardVeto | None:
    """Veto when the canonical quantities differ as sets, or the currencies do.

    Caught: digits in any form (times with am/pm or 24h, dates, amounts, versions,
    "1,000" = "1000", "3" = "three" = "3rd" = "third"), number words up to
    billions, weekdays/months/today/tomorrow, identifiers ("ABC-123"), URLs and
    emails; also one side having a quantity the other lacks ("a cat" / "3 cats").
    A "one"/"1" on one side only, all else equal, is not a veto ("a dog" / "one
    dog"), unless it is the ordinal "first" ("junior year" / "first year").
    Equal in other forms: "Q3" = "third quarter" = "3rd quarter"; an ascending
    range "3-10" is the numbers 3 and 10 ("Apr 3-10" = "April 3 to April 10");
    an hour of a 12-hour clock before "to"/"until"/"-" and a time with am/pm
    shares its am/pm ("1 to 4 PM" = "13:00 to 16:00", "10-10:45am" = "10:00 to
    10:45"), unless that puts the start after the end ("11 to 1 pm" starts at
    11:00); "half a tablet" = "0.5 of a tablet"; a rate of one unit ("every
    year", "each week", "per hour", "a day", "daily") is the same rate with a
    number ("every year" = "every 12 months" = "annually", "once a week" =
    "every 7 days"), tried only when the quantities differ otherwise, so it
    never makes a veto. Currencies next to a number ("$95", "95 EUR", "forty
    dollars", "US$5"): vetoed when both texts name one and the sets differ
    ("$95" / "€95", "USD 5" / "CAD 5"); "$" and "dollars" are any dollar
    ("$5" = "5 CAD" = "5 USD"), and a currency on one side only is no
    difference ("$5" / "5").

    Limitations: sets, not sequences: "from 3 to 5" / "from 5 to 3" is equal
    here and left to the word-order guard ("between 3 and 5" / "between 5 and
    3" passes both, on purpose), and repeats do not count ("2 cats and 2
    dogs" = "2 cats"); a descending "6-2" stays one token (a score, a vote),
    so "6-2" / "6 to 2" vetoes; amounts with a known unit (consumer.domain.units)
    compare in base units ("two weeks" = "14 days", "0.3 seconds" = "300 ms",
    "an hour and a half" = "90 minutes", "2 hours" != "2 days"; a unit on one
    side only is not a difference, as it may be unknown or left out ("4 y/o" /
    "4 years old"), unless it has no number ("half an hour" / "an hour");
    units it does not know are ignored ("5 furlongs" = "5"); a rate of one unit
    only ever makes amounts equal, and "7 days a week" / "every week" vetoes;
    rates of one unit on both sides differ when neither text's rates are among
    the other's ("per minute" / "per second", "every year" / "every month"); a
    day is not 24 hours ("daily" / "every 24 hours" vetoes); "9:00" without
    am/pm is read as 09:00, so "9:00" / "9pm" vetoes, while "9 to 5 pm" starts
    at 09:00; "5 pounds" is a currency unless "5
    pounds of" or "5-pound", so a weight in pounds can differ from "$5"; "3 CAD
    drawings" names Canadian dollars; ordinals equal cardinals ("third" = "3");
    "second" / "first" in a non-numeric sense ("second opinion") count; "May"
    and "march" are told from the modal and the verb by context only; a
    letters+digits token is one identifier ("python3" / "python4" vetoes), equal
    to the same letters and number written apart ("Python 3", "Net-30" / "net
    30", "SOC2" / "SOC 2"), and a numeronym the other text writes out is no difference ("k8s" /
    "Kubernetes", "e2e" / "end-to-end"), and names joined by slashes
    ("Black/isort/Flake8") are read one by one;
    "no cats" / "zero cats" vetoes. Shares of a whole ("60/40" = "60% ...
    40%", "50/50" = "evenly"), a date with its year in figures ("22/06/2016"),
    a slash date either order allows ("10/4" = "Oct 4" or "10 April") when the
    other text writes the day beside its month, "since '22", "type II",
    "89,50 €", "68F" = "68°F", an hour with no am/pm after "at", "before", ...
    ("at 6" = "6 AM" or "6 PM") and a capitalised "Sat" or "Jan" standing alone
    are equal to their plain forms; so are a percentage and its fraction
    ("40%" / "0.4", "50%" / "half", "25%" / "a quarter"), "4.0" and "4", a
    grouped identifier and its digits ("4471-2290-8813" / "447122908813"),
    "second-year" / "2nd-year", "½" / "0.5", and a lower-case "nov" beside a number;
    a decimal comma is the same decimal with a point ("1,7" / "1.7"), a
    temperature in degrees Celsius the one in Fahrenheit it rounds to as written
    ("19°C" / "66°F"), "weekends" Saturdays and Sundays, a capitalised "Sat"
    before a part of the day Saturday ("Sat mornings"), and a spoken clock time
    ending the text is read ("at half past ten" = "10:30"). A range's unit counts
    its first number too ("2-3 weeks" = "14 to 21 days"; consumer.domain.units),
    and a date with a year that either order of day and month allows is equal to
    either written out ("3/4/1990" / "4 March 1990" or "3 April 1990").
    """
    return (
        _amounts_veto(qa, qb)
        or _rates_veto(qa, qb)
        or _frequency_veto(qa, qb)
        or _currency_veto(qa, qb)
    )


def _by_period(found: Iterable[Frequency]) -> dict[tuple[str, str], frozenset[Fraction]]:
    grouped: dict[tuple[str, str], set[Fraction]] = {}
    for frequency in found:
        grouped.setdefault((frequency.kind, frequency.dimension), set()).add(frequency.value)
    return {key: frozenset(values) for key, values in grouped.items()}


def _frequency_veto(qa: _Quantities, qb: _Quantities) -> GuardVeto | None:
    """Counts or amounts per period that differ once per one base unit: "$38/month"
    / "$38/quarter", "3x a week" / "3x a month" (the numbers are the same, the
    periods not). Only what both texts give per the same kind of period counts: a
    rate on one side only is no difference."""
    a, b = _by_period(frequencies(qa.text)), _by_period(frequencies(qb.text))
    for key in a.keys() & b.keys():
        if a[key].isdisjoint(b[key]):
            detail = f"rates differ: {_rate_words(a[key], key)} vs {_rate_words(b[key], key)}"
            return GuardVeto(GuardName.NUMBERS, detail[:_MAX_DETAIL])
    return None


def _rate_words(values: Iterable[Fraction], key: tuple[str, str]) -> str:
    unit = {"minutes": "day", "months": "month"}.get(key[1], key[1])
    scale = 1440 if key[1] == "minutes" else 1
    return _format_values(f"{float(v * scale):g}/{unit}" for v in values)


def _same_frequencies(qa: _Quantities, qb: _Quantities) -> bool:
    """Whether the texts give the same counts or amounts per period, written
    another way ("every 6 months" / "twice a year", "5x/week" / "5 times a
    week", "$456 a year" / "$38 a month"), and the same quantities besides."""
    return _same_frequencies_in(qa.text, qb.text)


# Cached: a pair whose amounts and rates of one unit both differ asks it twice
# (`_amounts_veto`, then `_rates_veto`).
@lru_cache(maxsize=1024)
def _same_frequencies_in(text_a: str, text_b: str) -> bool:
    found_a, found_b = frequencies(text_a), frequencies(text_b)
    if not found_a or not found_b or _by_period(found_a) != _by_period(found_b):
        return False
    rest_a, rest_b = _quantities(_blank(text_a, found_a)), _quantities(_blank(text_b, found_b))
    return rest_a.in_units == rest_b.in_units


def _blank(text: str, found: Sequence[Frequency]) -> str:
    for frequency in sorted(found, key=lambda f: f.span, reverse=True):
        start, end = frequency.span
        text = text[:start] + " " + text[end:]
    return text


def _amounts_veto(qa: _Quantities, qb: _Quantities) -> GuardVeto | None:
    a, b = qa.raw, qb.raw
    if qa.in_units == qb.in_units:
        return None  # the same amounts, in the same or in other units
    if a == b:
        if not (qa.has_units and qb.has_units) and not (qa.unnumbered or qb.unnumbered):
            return None
        a, b = qa.in_units, qb.in_units  # "every 2 hours" / "every 2 days"
    # A one on one side only is the count an article makes: "a dog" / "one dog",
    # "a single repo" / "one repo" beside other numbers; not "junior" / "first year".
    for sa, sb in ((qa.raw, qb.raw), (qa.in_units, qb.in_units)):  # "a day" / "one day"
        only_a, only_b = sa - sb, sb - sa
        if (only_b == {"1"} and _article_one(qa, qb, only_a)) or (
            only_a == {"1"} and _article_one(qb, qa, only_b)
        ):
            return None
    if _same_with_rates(qa, qb):
        return None  # "every year" / "every 12 months"
    if _same_frequencies(qa, qb):
        return None  # "every 6 months" / "twice a year"
    if _spelled_out(a - b, qb.text) and _spelled_out(b - a, qa.text):
        return None  # "k8s" / "Kubernetes", "e2e tests" / "end-to-end tests"
    if _kilo_as_km(qa, qb) or _kilo_as_km(qb, qa):
        return None  # "a 10 km loop" / "a 10K loop"
    if _slash_date_written_out(qa, qb) or _slash_date_written_out(qb, qa):
        return None  # "by 6/30" / "by June 30"
    if _dated_either_way(qa, qb) or _dated_either_way(qb, qa):
        return None  # "on 3/4/1990" / "on 4 March 1990"
    if _written_another_way(qa, qb) or _written_another_way(qb, qa):
        return None  # "split 50/50" / "split evenly", "68F" / "68°F", "at 6" / "6 AM"
    detail = f"numbers differ: {_format_values(a - b)} vs {_format_values(b - a)}"
    return GuardVeto(GuardName.NUMBERS, detail[:_MAX_DETAIL])


def _spelled_out(numeronyms: frozenset[str], text: str) -> bool:
    """Whether each of `numeronyms` is a numeronym ("k8s": a letter, the count of
    the letters left out, a letter) that `text` writes out ("Kubernetes"); a "2"
    may be "to" ("e2e" / "end-to-end", "p2p" / "peer to peer")."""
    for value in numeronyms:
        match = _NUMERONYM_RE.fullmatch(value)
        if match is None:
            return False
        first, count, last = match.groups()
        spelled = rf"\b{first}[^\W\d_]{{{count}}}{last}\b"
        if count == "2":
            spelled += rf"|\b{first}[^\W\d_]*[- ]to[- ]{last}[^\W\d_]*"
        if re.search(spelled, text, re.IGNORECASE) is None:
            return False
    return True


_KILO_RE: Final = re.compile(r"(?<![\w.$€£])(\d+)\s?[kK]\b")


def _kilo_as_km(km: _Quantities, kilo: _Quantities) -> bool:
    """Whether the thousands only `kilo` has are kilometres `km` states: a "5k"
    or "10K" (a race's distance, as runners write it) where the other text
    says "5 km" / "10 km", and nothing else differs. Money never: "$5k"."""
    only_km, only_kilo = km.raw - kilo.raw, kilo.raw - km.raw
    written = {match.group(1) for match in _KILO_RE.finditer(kilo.text)}
    if not only_kilo or {str(int(n) * 1000) for n in written} != only_kilo:
        return False
    metres = {f"{int(n) * 1000} metres" for n in written}
    return only_km == written and metres <= km.in_units and not kilo.currencies


def _orders_written_out(first: str, second: str, named: _Quantities) -> list[tuple[str, str, str]]:
    """Each order of two numbers, month then day, that `named` writes out as a
    month name beside that day: (month number, month name, day)."""
    found: list[tuple[str, str, str]] = []
    for month, day in ((first, second), (second, first)):
        name = _MONTH_NAMES[int(month) - 1] if 1 <= int(month) <= 12 else ""
        if name in named.raw and _month_day_written(name, day, named.text):
            found.append((month, name, day))
    return found


_SLASH_DATE_RE: Final = re.compile(r"(?<![\d/.])(\d{1,2})/(\d{1,2})(?![\d/])")


def _slash_date_written_out(slashed: _Quantities, named: _Quantities) -> bool:
    """Whether the numbers only `slashed` has are the months of its slash dates
    ("6/30", as the reader splits it) that `named` writes out with the same day
    ("June 30"), and nothing else differs."""
    only_slashed, only_named = slashed.raw - named.raw, named.raw - slashed.raw
    if not only_slashed or not only_named:
        return False
    explained: set[str] = set()
    names: set[str] = set()
    for match in _SLASH_DATE_RE.finditer(slashed.text):
        first, second = (str(int(number)) for number in match.groups())
        # Read as the reader wrote it: split ("6/30": 6 and 30) or, where either
        # order is a date, as one token ("10/4": "10-4", October 4 or 10 April).
        joined = f"{first}-{second}" in slashed.raw
        for month, name, day in _orders_written_out(first, second, named):
            if joined:
                explained.add(f"{first}-{second}")
                names.update((name, day))
            elif day in slashed.raw:
                explained.add(month)
                names.add(name)
    return bool(explained) and only_slashed <= explained and only_named <= names


_DATED_RE: Final = re.compile(r"(?<![\d/.])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])")


def _dated_either_way(slashed: _Quantities, named: _Quantities) -> bool:
    """Whether what only `slashed` has are dates with a year whose day and month
    either order allows ("3/4/1990", which the reader keeps as one token), each of
    which `named` writes out in one of those orders ("4 March 1990", "April 3,
    1990"), and nothing else differs."""
    only_slashed, only_named = slashed.raw - named.raw, named.raw - slashed.raw
    if not only_slashed or not only_named:
        return False
    explained: set[str] = set()
    parts: set[str] = set()
    for match in _DATED_RE.finditer(slashed.text):
        first, second, year = (str(int(number)) for number in match.groups())
        token = _canonical_digit_token(match.group(0))
        if token not in only_slashed or year not in named.raw:
            continue
        for _, name, day in _orders_written_out(first, second, named):
            explained.add(token)
            parts.update((year, name, day))
    return only_slashed <= explained and only_named <= parts


_EVEN_SPLIT_RE: Final = re.compile(r"\b50\s?[/-]\s?50\b|\bfifty[- ]fifty\b", re.IGNORECASE)
_EVEN_SPLIT_WORDS_RE: Final = re.compile(
    r"\b(?:evenly|equally|half[- ]and[- ]half|down the middle|in half|halves)\b", re.IGNORECASE
)
_UNMARKED_DEGREES_RE: Final = re.compile(r"(\d+(?:\.\d+)?)([fc])")
_TIME_CUE_BEFORE_HOUR: Final = r"\b(?:at|before|after|by|until|till|around|from|to)\s+"


def _written_another_way(one: _Quantities, other: _Quantities) -> bool:
    """Whether every quantity that differs is one `one` writes in a form the
    reader leaves as written and `other` states plainly, nothing else differing:
    an even split ("50/50" / "evenly", "half-and-half"), degrees without their
    sign ("68F" / "68°F"), an hour with no am/pm after "at", "before", ...
    ("at 6" / "6 AM", "06:00", "18:00"), or a capitalised weekday or month
    abbreviation that also names other things ("Sat" / "Saturday", "Jan" /
    "January"): the reader keeps those apart, read on its own."""
    only_one, only_other = one.raw - other.raw, other.raw - one.raw
    if not only_one and not only_other:
        return False
    if _percent_as_fraction(one, other, only_one, only_other):
        return True
    if _decimal_comma(one, only_one, only_other):
        return True
    if _converted_degrees(one, other, only_one, only_other):
        return True
    if only_one == {"weekend"} and only_other == _WEEKEND:
        return True  # "on weekends" / "on Saturdays and Sundays"
    if only_one == {"1"} and not only_other and _first_as_adverb(one.text):
        return True  # "show the example first" / "... before the explanation"
    if _label_written_apart(only_one, only_other, other.text):
        return True
    if only_one == {"50"} and not only_other:
        return bool(_EVEN_SPLIT_RE.search(one.text)) and bool(
            _EVEN_SPLIT_WORDS_RE.search(other.text)
        )
    if only_one and not only_other:
        return False
    if _bare_hours(one, only_one, only_other):
        return True
    if not only_one:
        return _abbreviated_calendar_names(only_other, one.text)
    return _unmarked_degrees(only_one, only_other, other.text)


_WEEKEND: Final = frozenset({"saturday", "sunday"})
# A decimal comma ("1,7", "12,50"): one or two digits after it, so never a
# thousands separator ("1,500") nor a list ("1,2,3").
_DECIMAL_COMMA_RE: Final = re.compile(r"(?<![\d.,])(\d+),(\d{1,2})(?![\d,])")


def _decimal_comma(one: _Quantities, only_one: frozenset[str], only_other: frozenset[str]) -> bool:
    """Whether each of `only_other` is a decimal ("1.7") that `one` writes with a
    decimal comma ("1,7", which the reader splits into 1 and 7), and `only_one`
    holds only the parts of those."""
    written = {
        _canonical_digit_token(f"{whole}.{part}"): (whole, part)
        for whole, part in _DECIMAL_COMMA_RE.findall(one.text)
    }
    parts: set[str] = set()
    for value in only_other:
        pieces = written.get(value)
        if pieces is None:
            return False
        parts.update(_canonical_digit_token(piece) for piece in pieces)
    return bool(only_other) and only_one <= parts


_DEGREES: Final = r"(?<![\d.])(-?\d+(?:\.\d+)?)\s?(?:°\s?|degrees?\s+)"
_CELSIUS_RE: Final = re.compile(rf"{_DEGREES}(?:C|Celsius|centigrade)\b", re.IGNORECASE)
_FAHRENHEIT_RE: Final = re.compile(rf"{_DEGREES}(?:F|Fahrenheit)\b", re.IGNORECASE)


def _converted_degrees(
    celsius: _Quantities,
    fahrenheit: _Quantities,
    only_celsius: frozenset[str],
    only_fahrenheit: frozenset[str],
) -> bool:
    """Whether the numbers that differ are temperatures `celsius` gives in degrees
    Celsius and `fahrenheit` in degrees Fahrenheit, each one the other converted
    and rounded as written ("19°C" / "66°F": 66.2; not "20°C" / "69°F")."""
    if not only_celsius or len(only_celsius) != len(only_fahrenheit):
        return False
    in_c = {_canonical_digit_token(v): v for v in _CELSIUS_RE.findall(celsius.text)}
    in_f = {_canonical_digit_token(v): v for v in _FAHRENHEIT_RE.findall(fahrenheit.text)}
    if not (only_celsius <= in_c.keys() and only_fahrenheit <= in_f.keys()):
        return False
    return all(
        any(_same_temperature(in_c[c], in_f[f]) for f in only_fahrenheit) for c in only_celsius
    ) and all(
        any(_same_temperature(in_c[c], in_f[f]) for c in only_celsius) for f in only_fahrenheit
    )


def _same_temperature(celsius: str, fahrenheit: str) -> bool:
    """Whether one temperature, converted, rounds to the other as that one is
    written: within half a unit of its last digit."""
    c, f = float(celsius), float(fahrenheit)

    def half_unit(written: str) -> float:
        decimals = len(written.partition(".")[2])
        return 0.5 * 10.0**-decimals + 1e-9

    return abs(c * 9 / 5 + 32 - f) <= half_unit(fahrenheit) or abs(
        (f - 32) * 5 / 9 - c
    ) <= half_unit(celsius)


_PERCENT_FRACTION_WORDS: Final[dict[str, str]] = {
    "50": r"half", "25": r"(?:a|one)[- ]quarter", "75": r"three[- ]quarters",
    "10": r"(?:a|one)[- ]tenth", "20": r"(?:a|one)[- ]fifth", "40": r"two[- ]fifths",
}  # fmt: skip
_LABEL_RE: Final = re.compile(r"([a-z]+)(\d+(?:\.\d+)?)")


def _percent_as_fraction(
    one: _Quantities, other: _Quantities, only_one: frozenset[str], only_other: frozenset[str]
) -> bool:
    """Whether each of `only_one` is a percentage ("40%", "50 percent") that
    `other` gives as a fraction ("0.4", "half", "a quarter"), and `only_other`
    holds only those fractions."""
    fractions: set[str] = set()
    for value in only_one:
        written = rf"(?<![\d.]){re.escape(value)}\s?(?:%|percent\b|per cent\b)"
        if not re.search(written, one.text, re.IGNORECASE):
            return False
        decimal = _plain_number(float(value) / 100) if _INT_RE.fullmatch(value) else ""
        if decimal and decimal in only_other:
            fractions.add(decimal)
            continue
        word = _PERCENT_FRACTION_WORDS.get(value)
        if word is None or not re.search(rf"\b{word}\b", other.text, re.IGNORECASE):
            return False
    return bool(only_one) and only_other <= fractions


def _label_written_apart(joined: frozenset[str], apart: frozenset[str], text: str) -> bool:
    """Whether each of `joined` is a label and its number ("net30" of "Net-30",
    "apache2.0" of "Apache-2.0") that `text` writes apart ("net 30", "Apache
    2.0"), and `apart` holds only those numbers."""
    numbers: set[str] = set()
    for value in joined:
        label = _LABEL_RE.fullmatch(value)
        if label is None:
            return False
        letters, digits = label.groups()
        if not re.search(rf"\b{letters}\s+0*{re.escape(digits)}\b", text, re.IGNORECASE):
            return False
        numbers.add(_canonical_digit_token(digits))
    return bool(joined) and apart <= numbers


def _unmarked_degrees(unmarked: frozenset[str], marked: frozenset[str], text: str) -> bool:
    """Whether each of `unmarked` ("68f") is a number `marked` has ("68") that
    `text` writes with its degree sign ("68°F", "68 °F")."""
    numbers: set[str] = set()
    for value in unmarked:
        match = _UNMARKED_DEGREES_RE.fullmatch(value)
        if match is None:
            return False
        number, scale = match.groups()
        if (
            re.search(rf"(?<![\d.]){re.escape(number)}\s?°\s?{scale}\b", text, re.IGNORECASE)
            is None
        ):
            return False
        numbers.add(number)
    return numbers == marked


def _bare_hours(bare: _Quantities, only_bare: frozenset[str], clock: frozenset[str]) -> bool:
    """Whether each of `clock` is a time on the hour ("06:00", "18:00") that
    `bare` gives as an hour of a 12-hour clock after "at", "before", "until", ...
    with no minutes or am/pm ("at 6"), and those hours are all `bare` has
    that the other text has not (an hour it also counts with is shared: "6 days
    a week, at 6")."""
    hours: set[str] = set()
    for time in clock:
        hour, _, minute = time.partition(":")
        if minute != "00" or not hour.isdigit():
            return False
        twelve = str(int(hour) % 12 or 12)
        written = re.search(
            rf"{_TIME_CUE_BEFORE_HOUR}{twelve}\b(?![:.,]?\d)", bare.text, re.IGNORECASE
        )
        if twelve not in bare.raw or written is None:
            return False
        hours.add(twelve)
    return bool(clock) and only_bare <= hours


_DAY_PARTS: Final = r"(?:morning|afternoon|evening|night)s?\b"


def _abbreviated_calendar_names(names: frozenset[str], text: str) -> bool:
    """Whether each of `names` (weekdays, months) is in `text` as its capitalised
    abbreviation ("Sat", "Jan:"), which the reader, alone, takes for a word."""
    for name in names:
        shorts = _ABBREVIATIONS_OF.get(name, ())
        pattern = "|".join(short.capitalize() for short in shorts)
        # Standing alone ("Sat,", "Jan:") or before a part of the day ("Sat
        # mornings"), not "meets Jan every Monday".
        alone = rf"(?:[,:;)]|\s[-\u2013\u2014]|\s{_DAY_PARTS}|$)"
        if not pattern or re.search(rf"\b(?:{pattern})\.?{alone}", text) is None:
            return False
    return True


def _month_day_written(month: str, day: str, text: str) -> bool:
    """Whether `text` writes the day beside its month ("June 30", "Jun 30th",
    "30 June", "the 30th of June")."""
    names = "|".join([month, *_ABBREVIATIONS_OF.get(month, ())])
    ordinal = rf"{day}(?:st|nd|rd|th)?"
    pattern = rf"\b(?:{names})\.?,?\s+{ordinal}\b|\b{ordinal}\s+(?:of\s+)?(?:{names})\b"
    return re.search(pattern, text, re.IGNORECASE) is not None


def _article_one(other: _Quantities, one: _Quantities, only_other: frozenset[str]) -> bool:
    """Whether the "1" only `one` has may be an article in `other`: nothing else
    differs, it is a count (not "first"), and `one` says more numbers, so the "1"
    is not a changed number ("2 kids and 1 cat" / "2 kids and 2 cats")."""
    return not only_other and one.mentions > other.mentions and not _ordinal_one(one.text)


def _rates_veto(qa: _Quantities, qb: _Quantities) -> GuardVeto | None:
    """Rates of one unit that differ: "per minute" / "per second", "daily" /
    "weekly", "a day" / "a week" (the unit words alone are not aligned: "second"
    reads as an ordinal). A rate on one side only, or one text's rates among the
    other's, is no difference ("twice a day" / "twice a day, every week")."""
    rates_a, rates_b = qa.rates, qb.rates
    if not rates_a or not rates_b or rates_a <= rates_b or rates_b <= rates_a:
        return None
    if _same_frequencies(qa, qb):
        return None  # "$38 a month" / "$456 a year"
    detail = f"rates differ: per {_format_values(rates_a)} vs per {_format_values(rates_b)}"
    return GuardVeto(GuardName.NUMBERS, detail[:_MAX_DETAIL])


_ORDINAL_ONE_RE: Final = re.compile(r"(?<!\bat )\b(?:first|1st)\b", re.IGNORECASE)


_FIRST_RE: Final = re.compile(r"\b(\w+)(\s+)first\b(?=\s*(?:[,.;:!?)]|$|then\b))", re.I)
# Words after which a closing "first" ranks ("finished first", "came first").
_RANKED_BY: Final = frozenset(
    {"the", "finished", "finish", "came", "come", "placed", "place", "ranked", "was", "is",
     "were", "are", "be", "been", "go", "goes", "went", "in"}
)  # fmt: skip


def _first_as_adverb(text: str) -> bool:
    """Whether the text's only 1 is a "first" that closes its clause as an
    adverb, "beforehand" ("discuss it with her first", "show the example first,
    then ..."), not a rank ("Kofi finished first") nor beside another one."""
    if re.search(r"\b(?:1|one|1st)\b", text, re.IGNORECASE):
        return False
    found = list(re.finditer(r"\bfirst\b", text, re.IGNORECASE))
    closing = [m for m in _FIRST_RE.finditer(text) if m.group(1).lower() not in _RANKED_BY]
    return bool(found) and len(closing) == len(found)


def _ordinal_one(text: str) -> bool:
    """Whether a text's "1" is an ordinal: "first" ranks, "a"/"one" counts."""
    return _ORDINAL_ONE_RE.search(text) is not None


def _currency_veto(qa: _Quantities, qb: _Quantities) -> GuardVeto | None:
    a, b = qa.currencies, qb.currencies
    if not a or not b or same_currencies(a, b):
        return None
    detail = f"currency differs: {_format_values(a - b)} vs {_format_values(b - a)}"
    return GuardVeto(GuardName.NUMBERS, detail[:_MAX_DETAIL])
