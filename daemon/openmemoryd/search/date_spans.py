"""Spans of days a query names from one end to another.

- The last N days up to today: "in the last 3 days", "over the past two
  weeks", "past 24 hours", "the past month"; "за последние три дня", "за
  последнюю неделю", "последние 2 месяца"; 最近三天, 过去一周, 近三个月,
  这两天 (`rolling_mentions`).
- Two dates joined: "from 3 March to 5 April", "between August 11 and
  August 15 2023", "from last Monday to yesterday"; "с 3 марта по 5
  апреля"; 3月3日到4月5日: the days from the first to the last, not two
  single days (`joined_and_since`). Spans within one month ("3-5 March",
  "с 3 по 5 марта", 3月3日到5日) are read whole by `dates`.
- The week of a date: "the week of March 3", 3月3日那周: its calendar week.
- Since a date: "since 3 March", "after 3 March", "since last week", "since
  2024"; "с 3 марта", "после 3 марта", "с прошлой недели"; 3月3日以来,
  3月3日起, 自从3月3日, 上周以来: from that day to today. A date without its
  year is its last occurrence before today.

A date the span is read from stays as the single day it was when the words
around it are not a span's: "the Saturday after October 28, 2023" is a day
of the week counted from the date (`relative_dates`), not "since".
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator, Sequence
from datetime import date, timedelta
from functools import lru_cache
from typing import Final

from openmemoryd.search.day_ranges import DateRange, months_back, week_start
from openmemoryd.search.relative_dates import EN_COUNT, RU_COUNT, ZH_COUNT, count_of, unit_of

__all__ = ["Mention", "joined_and_since", "rolling_mentions", "since_cue"]

# A date mention: its span in the query and the days it means.
Mention = tuple[int, int, DateRange]

_EN_BEFORE: Final = r"\b(?:(?:in|over|during|within|for)\s+)?"
_RU_UNIT: Final = (
    r"(?P<unit>дн(?:я|ей)|день|сутки|суток|недел[июь]|недель|месяц(?:а|ев)?|год|года|лет"
    r"|час(?:а|ов)?)"
)
_ROLLING: Final = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        rf"{_EN_BEFORE}(?:the\s+)?(?:last|past|previous)\s+{EN_COUNT}\s+"
        r"(?P<unit>days?|weeks?|months?|years?|hours?)\b(?!\s+(?:of|in)\b)",
        rf"{_EN_BEFORE}(?:the\s+)?(?:last|past)\s+(?P<n>few|several)\s+(?P<unit>weeks|months|years)\b"
        r"(?!\s+(?:of|in)\b)",
        # "last month" alone is the calendar month (`relative_dates`); "the
        # past month", "in the last month" are the days up to today
        rf"{_EN_BEFORE}(?:the\s+(?:last|past)|past)\s+(?P<unit>week|month|year)\b(?!\s+of\b)",
        rf"{_EN_BEFORE}(?:the\s+)?past\s+(?P<unit>day|hour)\b",
        # "последний день отпуска" is a day of its own: without a count, "за"
        rf"(?<!\w)(?P<za>за\s+)?(?:последн|прошедш)(?:ие|их|юю|ий|ее|ую)\s+(?:{RU_COUNT}\s+)?"
        rf"{_RU_UNIT}(?!\w)",
        # 将近三个月 is "nearly three months"; 这一天 "this very day"
        rf"(?P<zh>最近|过去|(?<![接将])近|这)\s*的?\s*{ZH_COUNT}\s*个?\s*"
        r"(?P<unit>天|日|周|星期|礼拜|月|年|小时)",
    )
)
_RU_ONE: Final = ("день", "сутки", "неделю", "месяц", "год", "час")
_FEW: Final = 3  # "the past few weeks"; "the last few days" is `relative_dates`' "recently"


def rolling_mentions(query: str, today: date) -> Iterator[Mention]:
    """Each "last N days" in *query*, with the days up to *today* it means."""
    for pattern in _ROLLING:
        for match in pattern.finditer(query):
            found = _rolling_range(match, today)
            if found is not None:
                yield match.start(), match.end(), found


def _rolling_range(match: re.Match[str], today: date) -> DateRange | None:
    groups = match.groupdict()
    raw = groups.get("n")
    # "последнюю неделю перед отпуском" is a week of its own, "за последние
    # недели" says not how many: without a count, "за" and one
    if (
        raw is None
        and "za" in match.re.groupindex
        and (not groups.get("za") or groups["unit"].lower() not in _RU_ONE)
    ):
        return None
    if groups.get("zh") == "这" and raw in ("一", "1"):
        return None
    count = _FEW if raw is not None and raw.lower() in ("few", "several") else count_of(raw or "1")
    unit = unit_of(groups["unit"])
    try:
        if unit == "hour":
            start = today - timedelta(days=math.ceil(count / 24))
        elif unit == "day":
            start = today - timedelta(days=count)
        elif unit == "week":
            start = today - timedelta(weeks=count)
        elif unit == "month":
            start = _clamped(*months_back(today, count), today.day)
        else:
            start = _clamped(today.year - count, today.month, today.day)
    except (OverflowError, ValueError):  # before year 1
        return None
    return DateRange(start, today)


def _clamped(year: int, month: int, day: int) -> date:
    """*day* of the month, or its last day when it is shorter (31 March less a month)."""
    following = date(year + (month == 12), month % 12 + 1, 1)
    return min(date(year, month, 1) + timedelta(days=day - 1), following - timedelta(days=1))


_OPENER: Final = re.compile(
    r"(?:\b(?P<between>between)|\bfrom|(?<!\w)(?P<mezhdu>между)|(?<!\w)(?:с|со|от)|从|自)\s*$",
    re.IGNORECASE,
)
_CONNECTOR: Final = re.compile(
    r"\s*(?:(?P<both>and|и)|-|–|—|to|till|until|through|thru|по|до|到|至|~|～)\s*", re.IGNORECASE
)
# "from March until June": the month's own form holds "until"
_OWN_CONNECTOR: Final = re.compile(r"(?:until|till|through)\s", re.IGNORECASE)
_SINCE_BEFORE: Final = re.compile(
    r"(?:\b(?:since|after)(?:\s+the)?|(?<!\w)(?:начиная\s+)?(?:с|со)|(?<!\w)после|自从)\s*$",
    re.IGNORECASE,
)
# "the Saturday after 28 October", "the day after", "в субботу после", "на
# следующий день после": a day counted from the date, not since it
_DAY_BEFORE: Final = re.compile(
    r"(?:day|weekend|день|понедельник|вторник|среду|четверг|пятницу|субботу|воскресенье"
    r"|выходные)\s*$",
    re.IGNORECASE,
)
# 以来, 起 (not 起床 "got up"), 之后 / 以后 / 开始 (not before 的: "之后的周六" is a
# day of the week counted from the date)
_SINCE_AFTER: Final = re.compile(r"\s*(?:以来|起(?![床来飞身草])|之后(?!的)|以后(?!的)|开始(?!的))")
_SINCE_OWN: Final = re.compile(r"since\s", re.IGNORECASE)  # "since March"


# How far before a date its cue words are looked for ("between the",
# "начиная с"): a bound, so that a query of thousands of dates costs each
# one a look at its own neighbourhood, not at all the text before it.
_LOOK_BACK: Final = 40


def _before(pattern: re.Pattern[str], query: str, end: int) -> re.Match[str] | None:
    """*pattern* (anchored with ``$``) ending at *end*, within `_LOOK_BACK`."""
    return pattern.search(query, max(0, end - _LOOK_BACK), end)


def joined_and_since(query: str, mentions: Sequence[Mention], today: date) -> list[Mention]:
    """*mentions* with two joined by "to", "по", 到 (…) read as one span, and
    those after "since", "с", 以来 (…) read as from that day to *today*.

    A mention that means several ranges (a moving holiday named without a
    year is each of the last years' days; "3/4/2026" is two days) is one end
    as a whole: "from Thanksgiving to Christmas" is each year's Thanksgiving
    to that year's Christmas, not the last year's alone beside the others'
    single holidays."""
    ends_of: dict[tuple[int, int], list[DateRange]] = {}
    for start, end, days in mentions:
        ends_of.setdefault((start, end), []).append(days)
    groups = [(start, end, ranges) for (start, end), ranges in ends_of.items()]
    order = sorted(range(len(groups)), key=lambda i: groups[i][0])
    drop: set[int] = set()
    for first, second in itertools.pairwise(order):
        if first in drop:
            continue
        joined = _join(query, groups[first], groups[second], today)
        if joined is None:
            continue
        groups[first], unused = joined
        start, end, _ = groups[second]
        if unused:  # "New Year" is its night's two days: "between Christmas and" ends at one
            groups[second] = start, end, unused
        else:
            drop.add(second)
    kept = [
        _week_of(query, (start, end, days))
        for i, (start, end, ranges) in enumerate(groups)
        if i not in drop
        for days in ranges
    ]
    ends = {end for _, end, _ in kept}
    return [_since(query, mention, ends, today) for mention in kept]


# "the week of 3 March", 3月3日那周 / 那一周 / 所在的那个星期: the calendar week
# the day falls in
_WEEK_OF_BEFORE: Final = re.compile(r"\b(?:the\s+)?week\s+of\s+$", re.IGNORECASE)
_WEEK_OF_AFTER: Final = re.compile(r"\s*(?:所在的?)?(?:那|这)(?:一|个)?(?:周|星期|个星期)")


def _week_of(query: str, mention: Mention) -> Mention:
    start, end, day = mention
    if day.start != day.end:
        return mention
    before = _before(_WEEK_OF_BEFORE, query, start)
    after = _WEEK_OF_AFTER.match(query, end)
    if before is None and after is None:
        return mention
    try:
        if day.any_year:  # its weekday depends on the year: the days around it, in its year
            first = max(day.start - timedelta(days=3), day.start.replace(month=1, day=1))
            last = min(day.start + timedelta(days=3), day.start.replace(month=12, day=31))
            week = DateRange(first, last, any_year=True)
        else:
            monday = week_start(day.start)
            week = DateRange(monday, monday + timedelta(days=6))
    except OverflowError:  # the calendar's first or last week
        return mention
    return (
        before.start() if before is not None else start,
        after.end() if after is not None else end,
        week,
    )


# A mention and every range it means, as `joined_and_since` joins them.
_Group = tuple[int, int, list[DateRange]]


def _join(query: str, a: _Group, b: _Group, today: date) -> tuple[_Group, list[DateRange]] | None:
    """*a* and *b* as one span when a connector joins them, and what of *b*
    no span ended at."""
    gap = query[a[1] : b[0]]
    connector = _CONNECTOR.fullmatch(gap)
    if connector is None and not (gap.isspace() and _OWN_CONNECTOR.match(query, b[0])):
        return None
    opener = _before(_OPENER, query, a[0])
    if (
        connector is not None
        and connector.group("both") is not None
        and (opener is None or not (opener.group("between") or opener.group("mezhdu")))
    ):
        return None  # "yesterday and today" are two days, not a span
    pairs = _pairs(tuple(a[2]), tuple(b[2]), today)
    if not pairs:
        return None
    spans = list(dict.fromkeys(span for span, _ in pairs))
    used = {end for _, end in pairs}
    start = opener.start() if opener is not None else a[0]
    # what is left of a yearless end ("New Year" is two days of two years) stays
    return (start, b[1], spans), [days for days in b[2] if days not in used and days.any_year]


# The same two holidays named over and over are paired once.
@lru_cache(maxsize=256)
def _pairs(
    starts: tuple[DateRange, ...], ends: tuple[DateRange, ...], today: date
) -> tuple[tuple[DateRange, DateRange], ...]:
    """The spans from *starts* to *ends*, each with its end: the i-th with
    the i-th where both are as many (each year's Easter to its Thanksgiving;
    3/4 to 5/6 read alike), one yearless day with each year of a moving
    holiday (从元旦到春节), else each start to its nearest end."""
    if len(starts) == len(ends) > 1:
        pairs = zip(starts, ends, strict=True)
        return tuple((span, end) for start, end in pairs if (span := _span(start, end, today)))
    if len(starts) == 1 and starts[0].any_year and not any(end.any_year for end in ends):
        return tuple((span, end) for end in ends if (span := _span(starts[0], end, today)))
    nearest = [pair for start in starts if (pair := _shortest(start, ends, today)) is not None]
    if len(nearest) > 1 and not any(end.any_year for _, end in nearest):
        # "between Easter and Thanksgiving 2024": the year named once is both ends'
        in_year = [pair for pair in nearest if pair[0].start.year == pair[1].end.year]
        return tuple(in_year or [min(nearest, key=_length)])
    return tuple(nearest)


def _shortest(
    a: DateRange, ends: Sequence[DateRange], today: date
) -> tuple[DateRange, DateRange] | None:
    """The shortest span from *a* to one of *ends*, and that end (each
    year's Thanksgiving to the Christmas after it, not to a later one)."""
    spans = [(span, end) for end in ends if (span := _span(a, end, today)) is not None]
    return min(spans, key=_length, default=None)


def _length(pair: tuple[DateRange, DateRange]) -> timedelta:
    return pair[0].end - pair[0].start


def _span(a: DateRange, b: DateRange, today: date) -> DateRange | None:
    """From the start of *a* to the end of *b*; a side without a year takes
    the other's, and two without one that cross the new year are the last
    such span before *today*."""
    try:
        if a.any_year and not b.any_year:
            a = _in_year(a, b.end.year)
            if a.start > b.end:
                a = _in_year(a, b.end.year - 1)
        elif b.any_year and not a.any_year:
            b = _in_year(b, a.start.year)
            if b.end < a.start:
                b = _in_year(b, a.start.year + 1)
        elif a.any_year and b.any_year and a.start > b.end:
            b = _last_before(b, today)
            a = _in_year(a, b.end.year - 1)
    except ValueError:  # 29 February in a common year
        return None
    if a.start > b.end:
        return None
    return DateRange(a.start, b.end, any_year=a.any_year and b.any_year)


def _after_spaces(query: str, position: int) -> int:
    """Where the spaces before *position* begin."""
    while position > 0 and query[position - 1].isspace():
        position -= 1
    return position


def _in_year(days: DateRange, year: int) -> DateRange:
    return DateRange(days.start.replace(year=year), days.end.replace(year=year))


def _last_before(days: DateRange, today: date) -> DateRange:
    """A yearless *days* in the last year it began by *today*."""
    this_year = _in_year(days, today.year)
    return this_year if this_year.start <= today else _in_year(days, today.year - 1)


def since_cue(query: str, start: int, end: int) -> bool:
    """Whether "since" (since, after, с, после, 自从 before it; 以来, 起 after)
    goes with the mention at *start*:*end*: a holiday named without a year
    is then its last one, not every year's."""
    before = _before(_SINCE_BEFORE, query, start)
    return before is not None or _SINCE_AFTER.match(query, end) is not None


def _since(query: str, mention: Mention, ends: set[int], today: date) -> Mention:
    """*mention* from its day to *today* when "since" (…) goes with it; *ends*
    are where the query's mentions end."""
    start, end, days = mention
    before = _before(_SINCE_BEFORE, query, start)
    if before is not None and (
        _before(_DAY_BEFORE, query, before.start()) is not None
        or _after_spaces(query, before.start()) in ends
    ):
        before = None  # "the Saturday after October 28": counted from the date
    after = _SINCE_AFTER.match(query, end)
    if before is None and after is None and not _SINCE_OWN.match(query, start):
        return mention
    try:
        if days.any_year:
            days = _last_before(days, today)
    except ValueError:
        return mention
    if days.start > today:
        return mention
    return (
        before.start() if before is not None else start,
        after.end() if after is not None else end,
        DateRange(days.start, today),
    )
