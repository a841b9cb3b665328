"""A span of days, as a query's dates mean it (`dates`, `relative_dates`).

Matching is by range with a little slack after the end (`SLACK_DAYS`):
people write about a day on the days that follow it ("yesterday I …"), and
a question about "June" is often answered by a note from early July.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final

__all__ = ["SLACK_DAYS", "DateRange", "month_range", "months_back", "week_start"]

SLACK_DAYS: Final = 3


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


def months_back(day: date, count: int) -> tuple[int, int]:
    """The year and month *count* calendar months before *day*'s."""
    months = day.year * 12 + day.month - 1 - count
    return months // 12, months % 12 + 1


def week_start(day: date) -> date:
    """The Monday of *day*'s week (weeks start on Monday, as `date.weekday` counts)."""
    return day - timedelta(days=day.weekday())
