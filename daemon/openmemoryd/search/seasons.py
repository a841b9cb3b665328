"""Seasons a query names: "last summer", "in the winter of 2023", "during the
summer"; "прошлым летом", "летом 2023 года", "зимой"; 去年夏天, 2023年冬天,
在夏天.

The seasons are the meteorological ones of the northern hemisphere, where
most people writing the three languages live: spring is March to May,
summer June to August, autumn September to November, winter December to
February; with ``search.seasons = "south"`` those of the southern one
(summer December to February, winter June to August). A season with a year
is that year's ("summer 2023" is June to August 2023); the one that crosses
the new year (winter in the north, summer in the south) is read both ways
people mean it ("winter 2023" is January and February 2023, and December
2023 to February 2024). "Last summer" is the last one over before today, "this
winter" the one under way or coming; a season without a year or a word
before it is any year's, and only after "in", "during", "over" (летом,
зимой; 在夏天, 夏天的时候): "summer clothes", "winter tyres", "autumn
colours" are things, not dates.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from typing import Final

from openmemoryd.search.day_ranges import ZH_YEARS_BACK, DateRange, month_range

__all__ = ["season_mentions"]

# The first month of each season, by the stems of its names.
_FIRST_MONTH: Final = (
    (("spring", "весн", "春"), 3),
    (("summer", "лет", "夏"), 6),
    (("autumn", "fall", "осен", "秋"), 9),
    (("winter", "зим", "冬"), 12),
)
_YEAR: Final = r"(?P<year>(?:19|20)\d\d)"
_EN: Final = r"(?P<season>spring|summer|autumn|fall|winter)"
_RU_ADVERB: Final = r"(?P<season>весной|летом|осенью|зимой)"
_RU_NOUN: Final = r"(?P<noun>весн[аоуы]|лет[оа]|осен[ьи]|зим[аыу])"  # лето 2023, лета 2023
_ZH: Final = r"(?P<season>[春夏秋冬](?:天|季))"
_MENTIONS: Final = tuple(
    (re.compile(pattern, re.IGNORECASE), which)
    for pattern, which in (
        (rf"\b(?:(?:in|during|over)\s+)?(?:the\s+)?{_EN}(?:\s+of)?,?\s+{_YEAR}\b", "year"),
        (rf"\b(?:last|this\s+past)\s+{_EN}\b", "last"),
        (rf"\bthis\s+{_EN}\b", "this"),
        # "the fall of Rome": a yearless season is one only when nothing
        # of its own follows
        (rf"\b(?:in|during|over)\s+(?:the\s+)?{_EN}\b(?!\s+(?:of|\d))", "any"),
        (
            rf"(?<!\w)(?:{_RU_ADVERB}|{_RU_NOUN})\s+{_YEAR}"
            r"(?:\s*(?:г\.|года|год))?(?!\w)",
            "year",
        ),
        (rf"(?<!\w)(?:прошл(?:ой|ым))\s+{_RU_ADVERB}(?!\w)", "last"),
        (rf"(?<!\w)(?:эт(?:ой|им))\s+{_RU_ADVERB}(?!\w)", "this"),
        (rf"(?<!\w){_RU_ADVERB}(?!\w)", "any"),
        (rf"{_YEAR}\s*年\s*的?\s*{_ZH}", "year"),
        (rf"(?P<years_back>去年|今年|前年)\s*的?\s*{_ZH}", "year"),
        (rf"(?:这个|今年这个)\s*{_ZH}", "this"),
        (rf"在\s*(?:那个)?\s*{_ZH}", "any"),
        (rf"{_ZH}(?=的时候|期间|里)", "any"),
    )
)


def season_mentions(
    query: str, today: date, *, south: bool = False
) -> Iterator[tuple[int, int, tuple[DateRange, ...]]]:
    """Each season *query* names: its span and the days it means on *today*
    (the one crossing the new year, with a year, is two spans of months);
    *south*: the southern hemisphere's seasons."""
    for pattern, which in _MENTIONS:
        for match in pattern.finditer(query):
            try:
                found = _season_days(match, which, today, south)
            except (OverflowError, ValueError):  # past the calendar's ends
                continue
            yield match.start(), match.end(), found


def _season_days(
    match: re.Match[str], which: str, today: date, south: bool
) -> tuple[DateRange, ...]:
    groups = match.groupdict()
    name = (groups.get("season") or groups.get("noun") or "").lower()
    first = next(month for stems, month in _FIRST_MONTH if any(s in name for s in stems))
    if south:  # six months on: summer from December, winter from June
        first = (first + 5) % 12 + 1
    if which == "any":
        if first == 12:  # any December, January or February (crossing the new year)
            return (
                DateRange(date(2000, 1, 1), date(2000, 2, 29), any_year=True),
                DateRange(date(2000, 12, 1), date(2000, 12, 31), any_year=True),
            )
        return (_season(2000, first, any_year=True),)
    if which == "year":
        if groups.get("years_back"):
            year = today.year - ZH_YEARS_BACK[groups["years_back"]]
        else:
            year = int(groups["year"])
        if first == 12:  # its January and February, and the winter it begins
            return DateRange(date(year, 1, 1), month_range(year, 2).end), _season(year, 12)
        return (_season(year, first),)
    if which == "this":  # the one under way, else this year's (winter: the coming one)
        year = today.year - 1 if first == 12 and today.month <= 2 else today.year
        return (_season(year, first),)
    for year in (today.year, today.year - 1, today.year - 2):  # the last one over
        season = _season(year, first)
        if season.end < today:
            return (season,)
    raise ValueError("no season before today")


def _season(year: int, first_month: int, any_year: bool = False) -> DateRange:
    """The three months from *first_month* of *year* (winter runs into the next)."""
    last = first_month + 2
    end = month_range(year + (last > 12), (last - 1) % 12 + 1).end
    return DateRange(date(year, first_month, 1), end, any_year=any_year)
