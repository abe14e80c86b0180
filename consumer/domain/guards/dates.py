"""Times, dates, weekdays and months, read into the forms the numbers guard compares."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from consumer.domain.guards.text import _SENTINEL

# "9am", "9 am", "9:30 pm", "9.30pm", "9 a.m.", "9 AM"; with the start of a
# range that shares the am/pm (groups 1-2): "1 to 4 pm", "10-10:45am", "9 until 11 a.m.".
_TIME_12_RE: Final = re.compile(
    r"(?<![\w:.])(?:(\d{1,2})(?::(\d{2}))?(?:\s*[-\u2013]\s*|\s+(?:to|until|till)\s+))?"
    r"(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?\s?m\b\.?",
    re.IGNORECASE,
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

# "2026-08-09" and "06/2027": a date, spelled as the word pass spells one.
_ISO_DATE_RE: Final = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")
_MONTH_YEAR_RE: Final = re.compile(r"(\d{1,2})/(\d{4})")
# "22/06/2016", "06/22/2016", "22.06.2016": a day and a month in either order, then the year.
_DAY_MONTH_YEAR_RE: Final = re.compile(r"(\d{1,2})([/.-])(\d{1,2})\2(\d{4})")
_DAY_AND_MONTH_RE: Final = re.compile(r"(\d{1,2})/(\d{1,2})")
_NOT_DATES: Final = frozenset({"24/7"})  # "around the clock"
_MONTH_NAMES: Final = (
    "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december",
)  # fmt: skip

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
    "mon": "monday", "tue": "tuesday", "tues": "tuesday", "wed": "wednesday", "weds": "wednesday",
    "thu": "thursday", "thur": "thursday", "thurs": "thursday", "fri": "friday",
    "sat": "saturday", "sun": "sunday", "jan": "january", "feb": "february",
    "mar": "march", "apr": "april", "jun": "june", "jul": "july", "aug": "august",
    "sep": "september", "sept": "september", "oct": "october", "nov": "november",
    "dec": "december",
}  # fmt: skip
# Public for the alignment, which pairs "Jun" with "June" as one word.
CALENDAR_ABBREVIATIONS: Final = _ABBREVIATIONS
# Each weekday's and month's abbreviations ("september": "sep", "sept").
_ABBREVIATIONS_OF: Final[dict[str, tuple[str, ...]]] = {
    name: tuple(short for short, full in _ABBREVIATIONS.items() if full == name)
    for name in set(_ABBREVIATIONS.values())
}
_AMBIGUOUS_ABBREVIATIONS: Final = frozenset({"jan", "mar", "sat", "sun"})
_DATE_CUES: Final = frozenset(
    {"every", "each", "on", "next", "last", "this", "until", "by", "before", "after"}
)
# A part of the day after a weekday: "Sun AM", "Sat pm".
_DAY_HALVES: Final = frozenset({"am", "pm", "a.m", "p.m", "morning", "evening", "night"})
# "may" is a month only in a date-like context ("in May", "May 3", mid-sentence "May").
_MAY_CONTEXT: Final = frozenset(
    {"in", "of", "since", "until", "till", "by", "early", "late", "mid", "next", "last",
     "this", "during", "from", "before", "after", "through", "end", "start"}
)  # fmt: skip
_DAYPART_TIMES: Final[dict[str, str]] = {"noon": "12:00", "midday": "12:00", "midnight": "00:00"}
_CALENDAR_NAMES: Final = frozenset({*_WEEKDAYS, *_MONTHS})
_WEEKDAY_ABBREVIATIONS: Final = frozenset(k for k, v in _ABBREVIATIONS.items() if v in _WEEKDAYS)


def is_calendar_name(word: str) -> bool:
    """A weekday or a month (not "may"), written out or abbreviated, lower case."""
    return _ABBREVIATIONS.get(word, word) in _CALENDAR_NAMES


def _clock(hour: int, minute: int) -> str:
    return f"{hour:02d}:{minute:02d}"


def _twelve_hour(hour: int, minute: int, pm: bool) -> str:
    if 1 <= hour <= 12:
        hour = hour % 12 + (12 if pm else 0)
    return _clock(hour, minute)


def _range_start(match: re.Match[str]) -> str:
    """The start of a range `_TIME_12_RE` matched: "1 to 4 pm" starts at 13:00,
    and a start after the end in the same half of the day is in the other half
    ("11 to 1 pm" starts at 11:00). A start that is no hour of a 12-hour clock
    stays as written: "13:30 to 4 pm" (13:30), "08:00 to 5 pm" (08:00), "0 to 4 pm" (0)."""
    start, start_minute = match.group(1), int(match.group(2) or 0)
    hour, end_hour, end_minute = int(start), int(match.group(3)), int(match.group(4) or 0)
    if start.startswith("0") or not (1 <= hour <= 12 and 1 <= end_hour <= 12):
        return str(hour) if match.group(2) is None else _clock(hour, start_minute)
    pm = match.group(5).lower() == "p"
    if (hour % 12, start_minute) > (end_hour % 12, end_minute):
        pm = not pm
    return _twelve_hour(hour, start_minute, pm)


def _date_parts(token: str) -> list[str]:
    """A numeric date as its parts, as "9 August 2026" gives them: year, month
    name, day ("2026-08-09"); month and year ("06/2027"); day and month where only
    one order is a date ("14/06", "12/25"; not "03/04", nor "60/40"), with the
    year after them too ("22/06/2016"). Empty for anything else."""
    iso = _ISO_DATE_RE.fullmatch(token)
    if iso:
        year, month, day = (int(part) for part in iso.groups())
        if 1 <= month <= 12 and 1 <= day <= 31:
            return [str(year), _MONTH_NAMES[month - 1], str(day)]
    day_month_year = _DAY_MONTH_YEAR_RE.fullmatch(token)
    if day_month_year:
        day_or_month, _, month_or_day, full_year = day_month_year.groups()
        month_and_day = _month_and_day(int(day_or_month), int(month_or_day))
        return [full_year, *month_and_day] if month_and_day else []
    month_year = _MONTH_YEAR_RE.fullmatch(token)
    if month_year:
        month, year = int(month_year.group(1)), int(month_year.group(2))
        if 1 <= month <= 12:
            return [_MONTH_NAMES[month - 1], str(year)]
    day_and_month = _DAY_AND_MONTH_RE.fullmatch(token)
    if day_and_month and token not in _NOT_DATES:
        return _month_and_day(int(day_and_month.group(1)), int(day_and_month.group(2)))
    return []


def _month_and_day(first: int, second: int) -> list[str]:
    """Month name and day of a numeric date whose order only one reading allows
    ("14/06", "12/25"); empty when both or neither do ("03/04", "60/40")."""
    if 12 < first <= 31 and 1 <= second <= 12:
        return [_MONTH_NAMES[second - 1], str(first)]
    if 12 < second <= 31 and 1 <= first <= 12:
        return [_MONTH_NAMES[first - 1], str(second)]
    return []


def _calendar_word(words: Sequence[str], lows: Sequence[str], i: int) -> str:
    """Weekday, month, relative day or named time at ``i`` ("March's" too),
    canonicalised, else ""."""
    low = lows[i].removesuffix("'s")
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
    # name people and things, so only beside a number, after "every", "on", ...,
    # before a part of the day ("Sun AM") or beside another calendar word ("Sat/Sun").
    dated = (
        low not in _AMBIGUOUS_ABBREVIATIONS
        or _SENTINEL in (prev, nxt)
        or prev in _DATE_CUES
        or (low in _WEEKDAY_ABBREVIATIONS and nxt in _DAY_HALVES)
        or any(is_calendar_name(n) for n in (prev, nxt))
    )
    # A note in lower case ("mot due 22 nov"): beside a number, unless it is a word too.
    beside_a_number = _SENTINEL in (prev, nxt) and low not in _AMBIGUOUS_ABBREVIATIONS
    if low in _ABBREVIATIONS and (words[i][0].isupper() or beside_a_number) and dated:
        return _ABBREVIATIONS[low]
    return ""
