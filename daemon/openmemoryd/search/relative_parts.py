"""A part of a week, month or year counted from today, or of a year named:
"at the end of last month", "early this year", "the end of 2023", "в
начале этой недели", "в конце прошлого года"; 本月初, 上个月底, 今年年初,
去年年底, 2023年底.

Read whole, "the end of last month" would be all of last month, and 去年年底
("the end of last year") all of last year. A part is a third of its span,
as a part of a named month is ("early August", 8月初): a week's first,
middle or last three days (Monday to Wednesday, Tuesday to Thursday,
Friday to Sunday), a month's days 1-10, 11-20 or 21 to its end, a year's
January to April, May to August or September to December. The span must
be named ("this", "last", "прошлого", 上个, 去年, a year): "at the end of
the month", "в начале месяца" and 月初发工资 are habits, not dates; 周末 is
the weekend, which `relative_dates` reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Final

from openmemoryd.search.day_ranges import (
    ZH_YEARS_BACK,
    DateRange,
    month_range,
    month_third,
    months_back,
    week_start,
    which_third,
    year_range,
)
from openmemoryd.search.relative_dates import unit_of

__all__ = ["part_mentions"]

_YEAR: Final = r"(?P<ayear>(?:19|20)\d\d)"
_EN: Final = re.compile(
    r"\b(?:(?:at|in)\s+)?(?P<part>early|mid|late|(?:the\s+)?(?:beginning|start|middle|end)\s+of)"
    r"[-\s]+(?:the\s+)?(?:(?P<which>this|last|previous)\s+(?P<unit>week|month|year)"
    rf"|{_YEAR})\b",
    re.IGNORECASE,
)
_RU: Final = re.compile(
    r"(?<!\w)(?:в\s+)?(?P<part>начал[еоау]|середин[еауы]|конц[еау]|конец)\s+"
    r"(?:(?P<which>прошл|позапрошл|эт|текущ)\w*\s+(?P<unit>недел|месяц|год)\w*"
    rf"|{_YEAR}(?:\s*(?:г\.|года|год))?)(?!\w)",
    re.IGNORECASE,
)
# 8月初 is August's (`dates`): a month here is one counted from today
_ZH: Final = re.compile(
    r"(?:(?P<which>上上个?|上个?|这个?|本)(?P<unit>月|周|星期)"
    rf"|(?P<year>去年|今年|前年)年?|{_YEAR}\s*年)"
    # 年初一 is a lunar day, 今年中国 "this year, China"
    r"(?P<part>初(?![一二三四五六七八九十])|中(?![\u4e00-\u9fff])|中(?=的)|底|末)"
)
_BACK: Final = {"last": 1, "previous": 1, "прошл": 1, "позапрошл": 2, "上": 1, "上上": 2}


def part_mentions(query: str, today: date) -> Iterator[tuple[int, int, DateRange]]:
    """Each part of a week, month or year counted from *today* in *query*."""
    for pattern in (_EN, _RU, _ZH):
        for match in pattern.finditer(query):
            unit, back = _unit_and_back(match.groupdict(), today)
            if unit == "week" and match["part"] in ("末", "底"):
                continue  # 这周末 is the weekend (`relative_dates`)
            try:
                span = _span(unit, back, today)
            except (OverflowError, ValueError):  # past the calendar's ends
                continue
            yield match.start(), match.end(), _part(span, unit, which_third(match["part"]))


def _unit_and_back(groups: dict[str, str | None], today: date) -> tuple[str, int]:
    """The unit (``week``, ``month``, ``year``) and how many of them back from *today*."""
    if groups.get("ayear"):  # "the end of 2023", 2023年底
        return "year", today.year - int(groups["ayear"] or "0")
    which = (groups.get("which") or "").lower()
    back = _BACK.get(which.rstrip("个"), 0)
    if groups.get("year"):
        return "year", ZH_YEARS_BACK[groups["year"] or ""]
    return unit_of(groups.get("unit") or ""), back


def _span(unit: str, back: int, today: date) -> DateRange:
    if unit == "week":
        start = week_start(today) - timedelta(weeks=back)
        return DateRange(start, start + timedelta(days=6))
    if unit == "month":
        return month_range(*months_back(today, back))
    return year_range(today.year - back)


def _part(span: DateRange, unit: str, third: int) -> DateRange:
    if unit == "month":
        return month_third(span, third)
    if unit == "week":  # Monday-Wednesday, Tuesday-Thursday, Friday-Sunday
        first = span.start + timedelta(days=(0, 1, 4)[third - 1])
        return DateRange(first, first + timedelta(days=2))
    first_month = (1, 5, 9)[third - 1]
    return DateRange(
        date(span.start.year, first_month, 1), month_range(span.start.year, first_month + 3).end
    )
