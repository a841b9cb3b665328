"""A span of days, as a query's dates mean it (`dates`, `relative_dates`).

Matching is by range with a little slack after the end (`SLACK_DAYS`):
people write about a day on the days that follow it ("yesterday I …"), and
a question about "June" is often answered by a note from early July.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final

__all__ = [
    "SLACK_DAYS",
    "ZH_YEARS_BACK",
    "DateRange",
    "month_range",
    "month_third",
    "months_back",
    "week_start",
    "which_third",
    "year_range",
]

SLACK_DAYS: Final = 3
# 今年, 去年, 前年 before a season, a holiday or a part of a year: how many
# years back from today's
ZH_YEARS_BACK: Final = {"今年": 0, "去年": 1, "前年": 2}


@dataclass(frozen=True, slots=True)
class DateRange:
    """Days from `start` to `end` inclusive; `any_year` means the month and
    day in any year ("on 25 May"): the dates then carry the leap year 2000."""

    start: date
    end: date
    any_year: bool = False

    def contains(self, day: date, slack_days: int = SLACK_DAYS) -> bool:
        if self.any_year:
            try:
                start = self.start.replace(year=day.year)
                end = self.end.replace(year=day.year)
            except ValueError:  # 29 February in a common year
                return False
            return start <= day <= end + timedelta(days=slack_days)
        return self.start <= day <= self.end + timedelta(days=slack_days)


def month_range(year: int, month: int) -> DateRange:
    """The whole of *month* of *year*; ValueError when it is not on the calendar."""
    first = date(year, month, 1)
    following = date(year + (month == 12), month % 12 + 1, 1)
    return DateRange(first, following - timedelta(days=1))


def year_range(year: int) -> DateRange:
    """The whole of *year*; ValueError when it is not on the calendar."""
    return DateRange(date(year, 1, 1), date(year, 12, 31))


def months_back(day: date, count: int) -> tuple[int, int]:
    """The year and month *count* calendar months before *day*'s."""
    months = day.year * 12 + day.month - 1 - count
    return months // 12, months % 12 + 1


def week_start(day: date) -> date:
    """The Monday of *day*'s week (weeks start on Monday, as `date.weekday` counts)."""
    return day - timedelta(days=day.weekday())


# A part of a month (or week, or year): its first, middle or last third, by
# the words for each in the three languages.
THIRDS: Final = (
    (("early", "beginning", "start", "начал", "初", "上旬"), 1),
    (("mid", "middle", "середин", "中"), 2),  # 中旬, 年中
    (("late", "end", "кон", "下旬", "底", "末"), 3),
)


def which_third(part: str) -> int:
    """1, 2 or 3: the third of a span a part word names ("early", "в конце", 下旬)."""
    lowered = part.lower()
    return next(
        third
        for words, third in THIRDS
        if any(word in lowered for word in words)  # "the end of", "в конце"
    )


def month_third(month: DateRange, third: int) -> DateRange:
    """Days 1-10, 11-20 or 21-end of *month*."""
    if third == 1:
        return DateRange(month.start, month.start.replace(day=10))
    if third == 2:
        return DateRange(month.start.replace(day=11), month.start.replace(day=20))
    return DateRange(month.start.replace(day=21), month.end)
