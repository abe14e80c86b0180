"""Amounts with a unit, in one base unit per dimension, so that equal amounts
written in other units compare equal: "8 weeks" / "56 days", "2 km" / "2,000 m",
"500 MB" / "0.5 GB", "half an hour" / "30 minutes", "five years" / "60 months".

The numbers guard (consumer.domain.guards) compares the quantities of two texts
as sets; `unit_amounts` gives, for each amount followed by a known unit, its
plain value as the guard canonicalises it and the same amount in the base unit.
Only conversions that are exact are listed (a month is not a number of days).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

__all__ = ["UnitAmount", "unit_amounts"]

# unit word (singular, plural and short forms) -> (dimension, factor to base unit)
_UNITS: Final[dict[str, tuple[str, Fraction]]] = {}


def _add(dimension: str, factor: Fraction, *names: str) -> None:
    for name in names:
        _UNITS[name] = (dimension, factor)


_add("minutes", Fraction(1, 60), "second", "seconds", "sec", "secs", "s")
_add("minutes", Fraction(1), "minute", "minutes", "min", "mins")
_add("minutes", Fraction(60), "hour", "hours", "hr", "hrs", "h")
_add("days", Fraction(1), "day", "days", "d")
_add("days", Fraction(7), "week", "weeks", "wk", "wks")
_add("days", Fraction(14), "fortnight", "fortnights")
_add("months", Fraction(1), "month", "months", "mo", "mos")
_add("months", Fraction(12), "year", "years", "yr", "yrs")
_add("metres", Fraction(1, 1000), "mm", "millimetre", "millimetres", "millimeter", "millimeters")
_add("metres", Fraction(1, 100), "cm", "centimetre", "centimetres", "centimeter", "centimeters")
_add("metres", Fraction(1), "m", "metre", "metres", "meter", "meters")
_add("metres", Fraction(1000), "km", "kilometre", "kilometres", "kilometer", "kilometers")
_add("grams", Fraction(1), "g", "gram", "grams", "gramme", "grammes")
_add("grams", Fraction(1000), "kg", "kilo", "kilos", "kilogram", "kilograms")
_add("litres", Fraction(1, 1000), "ml", "millilitre", "millilitres", "milliliter", "milliliters")
_add("litres", Fraction(1), "l", "litre", "litres", "liter", "liters")
_add("bytes", Fraction(1000), "kb", "kilobyte", "kilobytes")
_add("bytes", Fraction(1000**2), "mb", "megabyte", "megabytes")
_add("bytes", Fraction(1000**3), "gb", "gigabyte", "gigabytes")
_add("bytes", Fraction(1000**4), "tb", "terabyte", "terabytes")

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
# "2 km", "2,000m", "10-kilometre", "two weeks", "half an hour", "1.5 GB". Not
# "a week": in "twice a week" it is a rate, not an amount.
_AMOUNT_RE: Final = re.compile(
    rf"(?<![\w.,])(?:(?P<half>half)\s+an?\s+|(?P<num>{_NUMBER})|(?P<word>{_WORD_NUMBER}))"
    rf"(?:\s*-\s*|\s*)(?P<unit>{_UNIT_NAMES})(?![\w])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class UnitAmount:
    """`plain`: the value as the numbers guard sees it ("2", "0.5", "" for a
    word it does not count, like "a"); `base`: the amount in the base unit."""

    plain: str
    base: str


def _plain(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):g}"


def unit_amounts(text: str) -> list[UnitAmount]:
    """Every amount with a known unit in `text`."""
    found: list[UnitAmount] = []
    for match in _AMOUNT_RE.finditer(text):
        unit = match.group("unit")
        key = unit if unit in _UNITS else unit.lower()
        if key not in _UNITS:
            continue
        # Single letters are units only right after digits ("5 m", "2h"), never
        # after a word ("a m", "one s").
        if len(key) == 1 and match.group("num") is None:
            continue
        if match.group("half") is not None:
            value, plain = Fraction(1, 2), ""
        elif match.group("num") is not None:
            value = Fraction(match.group("num").replace(",", ""))
            plain = _plain(value)
        else:
            value = _word_value(match.group("word"))
            plain = _plain(value)
        dimension, factor = _UNITS[key]
        found.append(UnitAmount(plain, f"{_plain(value * factor)} {dimension}"))
    return found
