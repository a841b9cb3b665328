"""A month of a year named relative to today: "last March", "in March last
year", 去年3月, "в марте прошлого года".

Each was read as two things or none: "last March" as nothing (searched as
the words "last" and "march"), "in March last year" as any March of any
year *or* any day of last year, 去年3月 as the whole of last year. They are
written here as the month and the year they name (`in_years`), the form
the absolute patterns of `search.dates` read as one month: "last March" on
28 November 2026 is "March 2026" (the last March before this month; on a
day of March it is last year's), "this March" this year's, and "last
year", 去年, "прошлого года" the year before this one (前年,
"позапрошлого года" the one before that).

Only a month named beside its year is rewritten; "last week" or 去年 alone
are read as they always were, by `search.relative_dates`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from typing import Final

__all__ = ["in_years"]

_EN_MONTHS: Final = (
    "january february march april may june july august september october november december"
).split()
_EN: Final = "|".join(_EN_MONTHS)
_RU_MONTH: Final = (
    r"январ[ьяюе]|феврал[ьяюе]|март[аеу]?|апрел[ьяюе]|ма[йяюе]|июн[ьяюе]|июл[ьяюе]"
    r"|август[аеу]?|сентябр[ьяюе]|октябр[ьяюе]|ноябр[ьяюе]|декабр[ьяюе]"
)
_ZH_MONTH: Final = r"(?P<month>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_ZH_NUMBERS: Final = {c: i for i, c in enumerate("一二三四五六七八九十", start=1)}

# not "the last march of the band"
_LAST_MONTH_EN: Final = re.compile(
    rf"(?<!\bthe\s)\b(?P<which>last|this)\s+(?P<month>{_EN})\b", re.I
)
_MONTH_OF_YEAR_EN: Final = re.compile(
    rf"\b(?P<month>{_EN})\s+(?:of\s+)?(?:(?P<which>last|this)\s+year"
    r"|(?P<before>the\s+year\s+before\s+last))\b",
    re.I,
)
_ZH_YEAR_MONTH: Final = re.compile(rf"(?P<which>前年|去年|今年)\s*的?\s*{_ZH_MONTH}\s*月份?")
_RU_MONTH_OF_YEAR: Final = re.compile(
    rf"(?<!\w)(?P<month>{_RU_MONTH})\s+(?P<which>позапрошлого|прошлого|этого|текущего)\s+года(?!\w)",
    re.I,
)
_YEARS_BACK: Final = {
    "this": 0,
    "last": 1,
    "今年": 0,
    "去年": 1,
    "前年": 2,
    "этого": 0,
    "текущего": 0,
    "прошлого": 1,
    "позапрошлого": 2,
}


def in_years(query: str, today: date) -> str:
    """*query* with each month named relative to today's year written with
    that year ("last March" → "March 2026" on 28 November 2026)."""
    lowered = query.lower()
    if query.isascii() and not any(word in lowered for word in ("last", "this", "year")):
        return query  # the common case: nothing to read
    query = _LAST_MONTH_EN.sub(_en_last(today), query)
    query = _MONTH_OF_YEAR_EN.sub(
        lambda m: f"{m['month']} {_year(m['which'] or 'позапрошлого', today)}", query
    )
    query = _ZH_YEAR_MONTH.sub(_zh(today), query)
    return _RU_MONTH_OF_YEAR.sub(lambda m: f"{m['month']} {_year(m['which'], today)} года", query)


def _year(which: str, today: date) -> int:
    return today.year - _YEARS_BACK[which.lower()]


def _en_last(today: date) -> Callable[[re.Match[str]], str]:
    def write(match: re.Match[str]) -> str:
        if match["month"] in ("may", "MAY"):
            return match[0]  # "this may break": a verb unless written as the month
        month = _EN_MONTHS.index(match["month"].lower()) + 1
        year = today.year
        if match["which"].lower() == "last" and month >= today.month:
            year -= 1  # the last such month before this one
        return f"{match['month']} {year}"

    return write


def _zh(today: date) -> Callable[[re.Match[str]], str]:
    def write(match: re.Match[str]) -> str:
        raw = match["month"]
        if raw.isdigit():
            month = int(raw)
        else:
            tens, _, units = raw.partition("十")
            month = (10 + _ZH_NUMBERS.get(units, 0)) if "十" in raw else _ZH_NUMBERS[tens]
        return f"{_year(match['which'], today)}年{month}月"

    return write
