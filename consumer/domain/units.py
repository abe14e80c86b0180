"""Amounts with a unit, in one base unit per dimension, so that equal amounts
written in other units compare equal: "8 weeks" / "56 days", "2 km" / "2,000 m",
"500 MB" / "0.5 GB", "half an hour" / "30 minutes", "five years" / "60 months",
"0.3 seconds" / "300 ms", "three quarters of an hour" / "45 minutes", "a year
and a half" / "18 months", "26.2 miles" / "42.1648 km", "2-3 weeks" / "14 to 21
days" (a rising range's unit counts its first number too); and the currencies
amounts are in ("$95" / "95 dollars", "40k EUR" / "€40,000").

The numbers guard (consumer.domain.guards) compares the quantities of two texts
as sets; `read_units` gives, for each amount followed by a known unit, its
plain value as the guard canonicalises it and the same amount in the base unit,
and the rates of one unit without a number ("every year", "a week", "daily").
Only conversions that are exact are listed (a month is not a number of days).
`currencies` names the currencies written next to a number.

One module because the amounts, their rates and the currencies are read from
the same text with one table of unit names and one number pattern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Final

__all__ = [
    "CURRENCY_SYMBOLS",
    "CURRENCY_WORDS",
    "Frequency",
    "UnitAmount",
    "UnitReading",
    "currencies",
    "frequencies",
    "is_unit_word",
    "may_have_rate_of_one",
    "read_units",
    "same_currencies",
    "unit_amounts",
]

# unit word (singular, plural and short forms) -> (dimension, factor to base unit)
_UNITS: Final[dict[str, tuple[str, Fraction]]] = {}


def _add(dimension: str, factor: Fraction, *names: str) -> None:
    for name in names:
        _UNITS[name] = (dimension, factor)


_add("minutes", Fraction(1, 60_000), "ms", "msec", "msecs", "millisecond", "milliseconds")
_add("minutes", Fraction(1, 60), "second", "seconds", "sec", "secs", "s")
_add("minutes", Fraction(1), "minute", "minutes", "min", "mins")
_add("minutes", Fraction(60), "hour", "hours", "hr", "hrs", "h")
# Days and weeks share the minutes' dimension ("every 24 hours" / "daily"); a
# whole number of days is written in days (`_base`). Months and years do not:
# a month has no fixed number of days.
_MINUTES_PER_DAY: Final = 1440
_add("minutes", Fraction(_MINUTES_PER_DAY), "day", "days", "d")
_add("minutes", Fraction(7 * _MINUTES_PER_DAY), "week", "weeks", "wk", "wks")
_add("minutes", Fraction(14 * _MINUTES_PER_DAY), "fortnight", "fortnights")
_add("months", Fraction(1), "month", "months", "mo", "mos")
_add("months", Fraction(12), "year", "years", "yr", "yrs")
_add("metres", Fraction(1, 1000), "mm", "millimetre", "millimetres", "millimeter", "millimeters")
_add("metres", Fraction(1, 100), "cm", "centimetre", "centimetres", "centimeter", "centimeters")
_add("metres", Fraction(1), "m", "metre", "metres", "meter", "meters")
_add("metres", Fraction(1000), "km", "kilometre", "kilometres", "kilometer", "kilometers")
# Imperial lengths and weights (exact by definition); not "in" (a preposition) nor
# "pound" (a currency too).
_add("metres", Fraction(254, 10_000), "inch", "inches")
_add("metres", Fraction(3048, 10_000), "ft", "foot", "feet")
_add("metres", Fraction(9144, 10_000), "yd", "yds", "yard", "yards")
_add("metres", Fraction(1_609_344, 1000), "mi", "mile", "miles")
_add("grams", Fraction(28_349_523_125, 10**9), "oz", "ounce", "ounces")
_add("grams", Fraction(45_359_237, 100_000), "lb", "lbs")
_add("grams", Fraction(1), "g", "gram", "grams", "gramme", "grammes")
_add("grams", Fraction(1000), "kg", "kilo", "kilos", "kilogram", "kilograms")
_add("grams", Fraction(10**6), "tonne", "tonnes", "metric ton", "metric tons")
_add("litres", Fraction(1, 1000), "ml", "millilitre", "millilitres", "milliliter", "milliliters")
_add("litres", Fraction(1), "l", "litre", "litres", "liter", "liters")
_add("bytes", Fraction(1000), "kb", "kilobyte", "kilobytes")
_add("bytes", Fraction(1000**2), "mb", "megabyte", "megabytes")
_add("bytes", Fraction(1000**3), "gb", "gigabyte", "gigabytes")
_add("bytes", Fraction(1000**4), "tb", "terabyte", "terabytes")

# "daily" is "every day": one unit of a rate.
_RATE_ADVERBS: Final[dict[str, str]] = {
    "hourly": "hour", "daily": "day", "weekly": "week", "fortnightly": "fortnight",
    "monthly": "month", "yearly": "year", "annually": "year",
}  # fmt: skip

_ONES: Final = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen",
)  # fmt: skip
_TENS: Final = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_WORD_VALUES: Final[dict[str, int]] = {
    **{word: value for value, word in enumerate(_ONES)},
    **{word: 20 + 10 * i for i, word in enumerate(_TENS)},
}
_ONE_WORD: Final = "|".join(sorted(_WORD_VALUES, key=len, reverse=True))
# "fourteen", "twenty-five", "four hundred", "four-hundred and twenty"
_WORD_NUMBER: Final = (
    rf"(?:{_ONE_WORD})(?:[\s-]+(?:{_ONE_WORD}))?(?:[\s-]+hundred(?:[\s-]+(?:and[\s-]+)?"
    rf"(?:{_ONE_WORD})(?:[\s-]+(?:{_ONE_WORD}))?)?)?"
)
# "a quarter of", "three quarters of": how many quarters.
_QUARTERS: Final[dict[str, int]] = {"a": 1, "one": 1, "two": 2, "three": 3}


def _word_value(words: str) -> Fraction:
    """The value of a number written in words ("twenty-five", "four hundred")."""
    total = current = 0
    for word in re.split(r"[\s-]+", words.lower()):
        if word == "hundred":
            current = max(current, 1) * 100
        elif word == "and":
            continue
        else:
            current += _WORD_VALUES[word]
    return Fraction(total + current)


_NUMBER: Final = r"\d+(?:,\d{3})*(?:\.\d+)?"
_UNIT_NAMES: Final = "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True))
# An amount: "2 km", "2,000m", "10-kilometre", "two weeks", "half an hour", "a half-hour",
# "1.5 GB", "a quarter of an hour", "three quarters of an hour". Not "a week":
# in "twice a week" it is a rate, not an amount.
_AMOUNT: Final = (
    rf"(?:(?P<half>half)(?:\s+(?:of\s+)?an?\s+|[\s-]+)"
    rf"|(?:(?P<quarters>{'|'.join(_QUARTERS)})\s+)?quarters?\s+of\s+an?\s+"
    rf"|(?P<num>{_NUMBER})|(?P<word>{_WORD_NUMBER}))"
    rf"(?:\s*-\s*|\s*)(?P<unit>{_UNIT_NAMES})(?![\w])"
)
_AMOUNT_RE: Final = re.compile(rf"(?<![\w.,]){_AMOUNT}", re.IGNORECASE)
# The same without "half" and "quarter", for the many texts that have neither.
_WHOLE_AMOUNT_RE: Final = re.compile(
    rf"(?<![\w.,])(?:(?P<num>{_NUMBER})|(?P<word>{_WORD_NUMBER}))"
    rf"(?:\s*-\s*|\s*)(?P<unit>{_UNIT_NAMES})(?![\w])",
    re.IGNORECASE,
)
# An amount and a half: "a year and a half", "two hours and a half", "two and a
# half years" (read before the amounts above, which would take "a year" or
# "two years" alone).
_AND_A_HALF_RE: Final = re.compile(
    rf"(?<![\w.,])(?:(?P<num>{_NUMBER})|(?P<word>{_WORD_NUMBER})|(?P<article>an?))\s+"
    rf"(?:(?P<unit>{_UNIT_NAMES})\s+and\s+a\s+half|and\s+a\s+half\s+(?P<unit_after>{_UNIT_NAMES}))"
    rf"(?![\w])",
    re.IGNORECASE,
)
# "every second Sunday" / "every second week": an ordinal, not a rate of one second.
_CALENDAR_AFTER: Final = (
    r"\s+(?:mon|tue|wed|thu|fri|sat|sun|day|week|fortnight|month|quarter|year)\w*"
)
# The same, with the rates: an amount after "every", "each" or "per" ("every 12
# months"), and a rate of one unit: "every year", "each week", "per hour", "a
# day" (as in "twice a day"), "daily". Slower, so read only when needed.
_RATED_RE: Final = re.compile(
    rf"(?<![\w.,])(?:(?P<rate>every|each|per)\s+)?{_AMOUNT}"
    rf"|(?<![\w.,])(?:every|each|per|an?)\s+(?P<one>{_UNIT_NAMES})(?![\w])"
    rf"(?!(?<=second){_CALENDAR_AFTER})"
    rf"|(?<![\w.,-])(?P<adverb>{'|'.join(_RATE_ADVERBS)})(?![\w])",
    re.IGNORECASE,
)
# Cheaper than _RATED_RE: whether a text may have a rate of one unit at all.
_RATE_OF_ONE_HINT_RE: Final = re.compile(
    rf"\b(?:(?:every|each|per|an?)\s+(?:{_UNIT_NAMES})|{'|'.join(_RATE_ADVERBS)})\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class UnitAmount:
    """`plain`: the value as the numbers guard sees it ("2", "0.5", "" for a
    word it does not count, like "a"); `base`: the amount in the base unit;
    `rate`: written after "every", "each" or "per" ("every 12 months")."""

    plain: str
    base: str
    rate: bool = False


@dataclass(frozen=True, slots=True)
class UnitReading:
    """A text's amounts with a unit, and its rates of one unit without a number
    ("every year", "a week", "daily"), each as the unit in its base unit."""

    amounts: tuple[UnitAmount, ...]
    rates: tuple[str, ...]


def _plain(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):g}"


def _unit_key(unit: str) -> str | None:
    key = unit if unit in _UNITS else unit.lower()
    return key if key in _UNITS else None


def is_unit_letter(letter: str) -> bool:
    """Whether a single letter after a number is a unit ("3h", "10m", "5g")."""
    return len(letter) == 1 and _unit_key(letter) is not None


def is_unit_word(word: str) -> bool:
    """Whether `word` names a unit without digits before it ("hour", "km"; not "m")."""
    key = _unit_key(word)
    return key is not None and len(key) > 1


def _base(value: Fraction, key: str) -> str:
    dimension, factor = _UNITS[key]
    amount = value * factor
    if dimension == "minutes" and amount >= _MINUTES_PER_DAY and amount % _MINUTES_PER_DAY == 0:
        return f"{_plain(amount / _MINUTES_PER_DAY)} days"
    return f"{_plain(amount)} {dimension}"


def _written_value(match: re.Match[str]) -> tuple[Fraction, str] | None:
    """The number a match's `num` or `word` group holds, and its plain form."""
    if match.group("num") is not None:
        value = Fraction(match.group("num").replace(",", ""))
    elif match.group("word") is not None:
        value = _word_value(match.group("word"))
    else:
        return None
    return value, _plain(value)


# "a half-hour", "a half mile": half a unit with no article between.
_HALF_BEFORE_UNIT_RE: Final = re.compile(r"half[\s-]+(?!of\b|an?\b)", re.IGNORECASE)


def _units_of_day(key: str) -> bool:
    return _UNITS[key] == _UNITS["day"]


def _amount(match: re.Match[str]) -> UnitAmount | None:
    """The amount an `_AMOUNT` match holds, or None when it holds none."""
    key = _unit_key(match.group("unit"))
    if key is None:
        return None
    # Single letters are units only right after digits ("5 m", "2h"), never
    # after a word ("a m", "one s").
    if len(key) == 1 and match.group("num") is None:
        return None
    written = _written_value(match)
    if match.re is not _WHOLE_AMOUNT_RE and match.group("half") is not None:
        if _units_of_day(key) and _HALF_BEFORE_UNIT_RE.match(match.group(0)):
            return None  # "a half day" off work is no 12 hours; "half a day" is
        value, plain = Fraction(1, 2), ""
    elif written is not None:
        value, plain = written
    else:  # quarters: "a quarter of", "three quarters of"
        count = (match.group("quarters") or "a").lower()
        value = Fraction(_QUARTERS[count], 4)
        plain = "" if count == "a" else str(_QUARTERS[count])
    rate = match.re is _RATED_RE and match.group("rate") is not None
    return UnitAmount(plain, _base(value, key), rate)


# The first number of a range whose unit follows the second only ("2-3 weeks",
# "14 to 21 days", "between two and three hours"): the unit counts it too. "and"
# joins a range only after "between" ("two cats and 3 hours" is none).
_RANGE_START_RE: Final = re.compile(
    rf"(?<![\w.,])(?P<between>between\s+)?(?:(?P<num>{_NUMBER})|(?P<word>{_WORD_NUMBER}))"
    rf"\s*(?:-|\u2013|\u2014|to|or|(?(between)and|(?!)))\s*$",
    re.IGNORECASE,
)


def _with_range_start(text: str, match: re.Match[str], amount: UnitAmount) -> list[UnitAmount]:
    """`amount`, and before it the first number of its range, in the same unit,
    when the range rises ("2-3 weeks": 14 and 21 days; not the score "6-2 h")."""
    end = _written_value(match)
    if end is None:
        return [amount]
    before = _RANGE_START_RE.search(text, max(0, match.start() - 40), match.start())
    start = _written_value(before) if before is not None else None
    key = _unit_key(match.group("unit"))
    if before is None or start is None or key is None or start[0] >= end[0]:
        return [amount]
    return [UnitAmount(start[1], _base(start[0], key), amount.rate), amount]


def _and_a_half(text: str) -> tuple[list[UnitAmount], list[tuple[int, int]]]:
    """The amounts "and a half" in `text` ("a year and a half" = 18 months) and
    where they stand (no other amount is read there)."""
    if "half" not in text.lower():
        return [], []
    found: list[UnitAmount] = []
    spans: list[tuple[int, int]] = []
    for match in _AND_A_HALF_RE.finditer(text):
        key = _unit_key(match.group("unit") or match.group("unit_after"))
        if key is None or len(key) == 1:
            continue  # single letters are units only right after digits
        value, plain = _written_value(match) or (Fraction(1), "")  # "a year and a half"
        found.append(UnitAmount(plain, _base(value + Fraction(1, 2), key)))
        spans.append(match.span())
    return found, spans


def _outside(match: re.Match[str], spans: list[tuple[int, int]]) -> bool:
    return all(match.end() <= start or match.start() >= end for start, end in spans)


def read_units(text: str) -> UnitReading:
    """Every amount with a known unit in `text`, each marked when it is a rate,
    and every rate of one unit."""
    found, spans = _and_a_half(text)
    rates: list[str] = []
    for match in _RATED_RE.finditer(text):
        if spans and not _outside(match, spans):
            continue
        if match.group("adverb") is not None:
            rates.append(_base(Fraction(1), _RATE_ADVERBS[match.group("adverb").lower()]))
        elif match.group("one") is not None:
            # "every year", "a week"; single letters are no units here ("a m").
            key = _unit_key(match.group("one"))
            if key is not None and len(key) > 1:
                rates.append(_base(Fraction(1), key))
        else:
            amount = _amount(match)
            if amount is not None:
                found += _with_range_start(text, match, amount)
    return UnitReading(tuple(found), tuple(rates))


def may_have_rate_of_one(text: str) -> bool:
    """False when `text` has no rate of one unit ("every year", "daily"); a cheap
    test before `read_units`."""
    return _RATE_OF_ONE_HINT_RE.search(text) is not None


def unit_amounts(text: str) -> list[UnitAmount]:
    """Every amount with a known unit in `text` (none marked as a rate: see
    `read_units`)."""
    low = text.lower()
    pattern = _AMOUNT_RE if "half" in low or "quarter" in low else _WHOLE_AMOUNT_RE
    halves, spans = _and_a_half(text)
    found: list[UnitAmount] = []
    for match in pattern.finditer(text):
        amount = _amount(match) if not spans or _outside(match, spans) else None
        if amount is not None:
            found += _with_range_start(text, match, amount)
    return halves + found


# --- frequencies ---

# A period a count or an amount is given per: "twice a year", "5x/week", "$38/month",
# "every 6 months", "quarterly". A quarter is a period only here ("a quarter of an
# hour" is an amount).
_PERIODS: Final[dict[str, tuple[str, Fraction]]] = {
    **{name: _UNITS[name] for name in ("hour", "hours", "hr", "hrs", "day", "days")},
    **{name: _UNITS[name] for name in ("week", "weeks", "wk", "wks", "fortnight", "fortnights")},
    **{name: _UNITS[name] for name in ("month", "months", "mo", "mos", "year", "years", "yr")},
    "quarter": ("months", Fraction(3)),
    "quarters": ("months", Fraction(3)),
}
_PERIOD_ADVERBS: Final[dict[str, str]] = {**_RATE_ADVERBS, "quarterly": "quarter"}
_TIMES_WORDS: Final[dict[str, int]] = {"once": 1, "twice": 2, "thrice": 3}
_PERIOD_NAMES: Final = "|".join(sorted(map(re.escape, _PERIODS), key=len, reverse=True))
_COUNT: Final = rf"(?P<num>{_NUMBER})|(?P<word>{_WORD_NUMBER})"
# Ordered: a count per period ("3 times a week", "5x/week", "twice a year"), an
# amount per period ("$38/month", "$40 per month", "40 EUR a month"), a period
# with "every" ("every 6 months", "every other" or "second week"), an adverb ("quarterly").
_FREQUENCY_RE: Final = re.compile(
    rf"(?<![\w.,])(?:(?:{_COUNT})\s*(?:x|\u00d7|times)|(?P<times>once|twice|thrice))"
    rf"\s*(?:(?:a|an|per|each|every|/)\s*(?P<per_count>{_PERIOD_NAMES})"
    rf"|(?P<count_adverb>{'|'.join(_PERIOD_ADVERBS)}))(?![\w])"
    rf"|(?<![\w.,])(?P<amount>(?:[$€£]\s?)?(?P<value>{_NUMBER})(?P<kilo>[kK])?"
    rf"(?:\s?(?:[A-Z]{{3}}|dollars?|euros?|pounds?|bucks))?)"
    rf"\s*(?:/|\s(?:a|an|per|each)\s)\s*(?P<per_amount>{_PERIOD_NAMES})(?![\w])"
    rf"|(?<![\w.,-])every\s+(?:(?P<other>other|second)|(?P<every_num>{_NUMBER})|(?P<every_word>"
    rf"{_WORD_NUMBER}))?\s*(?P<per_every>{_PERIOD_NAMES})(?![\w])"
    rf"|(?<![\w.,-])(?P<adverb>{'|'.join(_PERIOD_ADVERBS)})(?![\w])",
    re.IGNORECASE,
)
_FREQUENCY_HINT_RE: Final = re.compile(
    rf"(?:\b(?:every|once|twice|thrice|times|{'|'.join(_PERIOD_ADVERBS)})\b|/\s*(?:{_PERIOD_NAMES})\b"
    rf"|\d\s*x\b|\b(?:a|an|per|each)\s+(?:{_PERIOD_NAMES})\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Frequency:
    """How often (`kind` "count": events) or how much (`kind` "amount": the number
    of an amount) per base unit of `dimension`, exact: "every 6 months" and
    "twice a year" are both a count of 1/6 a month; and where it was written."""

    kind: str
    value: Fraction
    dimension: str
    span: tuple[int, int]


def _period(name: str) -> tuple[str, Fraction] | None:
    return _PERIODS.get(name) or _PERIODS.get(name.lower())


def _frequency(match: re.Match[str]) -> Frequency | None:
    if match.group("per_count") is not None or match.group("count_adverb") is not None:
        times = match.group("times")
        if times is not None:
            count = Fraction(_TIMES_WORDS[times.lower()])
        elif match.group("num") is not None:
            count = Fraction(match.group("num").replace(",", ""))
        else:
            count = _word_value(match.group("word"))
        name = match.group("per_count") or _PERIOD_ADVERBS[match.group("count_adverb").lower()]
        kind, every = "count", Fraction(1)
    elif match.group("per_amount") is not None:
        if not re.search(r"[$€£A-Za-z]", match.group("amount")):
            return None  # "3/week" is a count or a date; only a named amount here
        count = Fraction(match.group("value").replace(",", ""))
        count *= 1000 if match.group("kilo") else 1
        kind, name, every = "amount", match.group("per_amount"), Fraction(1)
    elif match.group("per_every") is not None:
        if match.group("other") is not None:
            every = Fraction(2)
        elif match.group("every_num") is not None:
            every = Fraction(match.group("every_num").replace(",", ""))
        elif match.group("every_word") is not None:
            every = _word_value(match.group("every_word"))
        else:
            every = Fraction(1)
        kind, name, count = "count", match.group("per_every"), Fraction(1)
    else:
        kind, name, count, every = (
            "count",
            _PERIOD_ADVERBS[match.group("adverb").lower()],
            Fraction(1),
            Fraction(1),
        )
    period = _period(name)
    if period is None or every == 0:
        return None
    dimension, factor = period
    return Frequency(kind, count / (every * factor), dimension, match.span())


@lru_cache(maxsize=4096)  # asked per pair by the numbers guard and per parse
def frequencies(text: str) -> tuple[Frequency, ...]:
    """Every count or amount per period in `text`, per base unit (see `Frequency`)."""
    if _FREQUENCY_HINT_RE.search(text) is None:
        return ()
    found = (_frequency(match) for match in _FREQUENCY_RE.finditer(text))
    return tuple(f for f in found if f is not None)


# --- currencies ---

_DOLLAR: Final = "$"  # a dollar of no named country
_YEN_OR_YUAN: Final = "\u00a5"
# What a currency that names no country may be.
_FAMILIES: Final[dict[str, frozenset[str]]] = {
    _DOLLAR: frozenset({"usd", "cad", "aud", "nzd", "hkd", "sgd", "mxn"}),
    _YEN_OR_YUAN: frozenset({"jpy", "cny"}),
}
_CODES: Final = (
    "usd", "eur", "gbp", "jpy", "chf", "cad", "aud", "inr", "nzd", "cny", "hkd", "sgd",
    "sek", "nok", "dkk", "brl", "mxn",
)  # fmt: skip
# Symbols and words -> currency; a code is itself.
_CURRENCY_NAMES: Final[dict[str, str]] = {
    "$": _DOLLAR, "\u20ac": "eur", "\u00a3": "gbp", "\u00a5": _YEN_OR_YUAN, "\u20b9": "inr",
    "us$": "usd", "ca$": "cad", "c$": "cad", "au$": "aud", "a$": "aud", "nz$": "nzd",
    "hk$": "hkd", "s$": "sgd", "r$": "brl", "rs": "inr", "rs.": "inr",
    "dollar": _DOLLAR, "dollars": _DOLLAR, "euro": "eur", "euros": "eur", "pound": "gbp",
    "pounds": "gbp", "yen": "jpy", "yuan": "cny", "rmb": "cny", "rupee": "inr",
    "rupees": "inr", "franc": "chf", "francs": "chf",
    **{code: code for code in _CODES},
}  # fmt: skip
# For a cheap test before `currencies`: the symbols, and the words that name a
# currency (lower case), one of which a text must hold to name a currency.
CURRENCY_SYMBOLS: Final = "$\u20ac\u00a3\u00a5\u20b9"
CURRENCY_WORDS: Final = frozenset(name for name in _CURRENCY_NAMES if name.isalpha())
_SYMBOLS: Final = f"[{re.escape(CURRENCY_SYMBOLS)}]"
_CURRENCY_WORDS: Final = "|".join(sorted(CURRENCY_WORDS, key=len, reverse=True))
# A symbol, a code or a word: "$", "US$", "€", "EUR", "Rs.", "dollars".
_CURRENCY_RE: Final = re.compile(
    rf"(?<![^\W\d_])(?:(?:us|ca|c|au|a|nz|hk|s|r)\$|rs\.|(?:{_CURRENCY_WORDS})(?![^\W\d_]))"
    rf"|{_SYMBOLS}",
    re.IGNORECASE,
)
# A number right after a symbol or code: "$95", "US$ 5", "EUR 40,000", "Rs. 500".
_NUMBER_AFTER_RE: Final = re.compile(r"\s?\d")
# A number right before a currency: "95 EUR", "40k EUR", "95€", "forty dollars",
# "5 million euros", "a 10-dollar bill".
_NUMBER_BEFORE_RE: Final = re.compile(
    rf"(?:\d|(?<![\w])(?:{_ONE_WORD}|hundred|thousand|million|billion))"
    r"(?:\s*(?:k|mn|m|bn|thousand|million|billion))?\s*-?\s*$",
    re.IGNORECASE,
)
_OF_RE: Final = re.compile(r"\s+of\b", re.IGNORECASE)
_LOOK_BACK: Final = 40  # characters before a currency where its number may be


def currencies(text: str) -> frozenset[str]:
    """The currencies written next to a number in `text`: ISO codes in lower
    case ("usd", "eur"), "$" for a dollar of no named country ("$5", "5
    dollars") and "¥" for yen or yuan. "5 pounds" is a currency here, but
    not "5 pounds of" or "5-pound"."""
    found: set[str] = set()
    for match in _CURRENCY_RE.finditer(text):
        name, start = match.group(0).lower(), match.start()
        number_after = (not name.isalpha() or name in _CODES or name == "rs") and bool(
            _NUMBER_AFTER_RE.match(text, match.end())
        )
        if not number_after and not _NUMBER_BEFORE_RE.search(
            text, max(0, start - _LOOK_BACK), start
        ):
            continue
        if name in ("pound", "pounds") and (
            text[start - 1] == "-" or _OF_RE.match(text, match.end())
        ):
            continue  # "a 600-pound altar", "1,200 pounds of beef": a weight
        found.add(_CURRENCY_NAMES[name])
    return frozenset(found)


def _covered(a: frozenset[str], b: frozenset[str]) -> bool:
    for currency in a:
        if currency in b or _FAMILIES.get(currency, frozenset()) & b:
            continue  # the same, or "$" / "usd"
        if any(currency in _FAMILIES.get(other, frozenset()) for other in b):
            continue  # "usd" / "$"
        return False
    return True


def same_currencies(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two texts' currencies can be the same: a "$" is any dollar
    ("$" / "CAD"), while "USD" / "CAD" differ."""
    return _covered(a, b) and _covered(b, a)
