"""Dates in a query, and the dates a memory is about.

A question such as "What did Nate do for Joanna on 25 May, 2022?" names the
day it is about; the words "25", "May" and "2022" are poor keywords (every
note of May matches "May", and the number 25 is everywhere), while the
daily file ``memory/2022-05-25.md`` or a heading ``## 25 May 2022`` says
exactly which memories are about that day. `parse_query_dates` finds such
mentions — absolute dates, months, thirds of months ("early August",
в конце мая, 8月下旬), the first or last weeks of a month, days from one
to another of a month ("3-5 March", с 3 по 5 марта, 3月3日到5日) and years
in English, Chinese and Russian; relative ones ("yesterday", "last week",
"on Monday", "3 days ago", 昨天, 上周五, 去年, вчера, на прошлой неделе, на
выходных: `relative_dates`) resolved against the current day; seasons
("last summer", летом 2023 года, 去年冬天: `seasons`); holidays ("over
Christmas", на майских, 国庆: `holidays`); parts of a week, month or year
counted from today ("at the end of last month", в начале года, 年底:
`relative_parts`); and spans
("in the last 3 days", "since 3 March", "from 3 March to 5 April", 最近三天,
за последнюю неделю: `date_spans`) — and returns the date ranges they mean
together with the query text left once they are removed, so the keyword leg
searches for what the question is about, not for the date.

`memory_date` reads the day a chunk is about from its file name (any
``YYYY-MM-DD`` in it, so ``memory/2022-05-25.md`` and
``notes/trip-2022-05-25.md`` both count) or else from its heading path
(``# 2022-05-25``, ``## Session 3 — 1:56 pm on 8 May, 2023``,
``## 2022年5月25日``). Only absolute dates count there: a heading saying
"yesterday" is about a day we cannot know. `memory_days` reads every day a
chunk is about: a journal kept in one file, a few lines under each day's
heading, puts several days in one chunk, and the ones after its first
line are as much what it is about.

Matching is by range with a little slack after the end (`SLACK_DAYS`, see
`day_ranges`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache
from typing import Final

from openmemoryd.search.date_spans import Mention, joined_and_since, rolling_mentions
from openmemoryd.search.day_ranges import (
    SLACK_DAYS,
    DateRange,
    month_range,
    month_third,
    which_third,
    year_range,
)
from openmemoryd.search.holidays import holiday_mentions
from openmemoryd.search.month_years import in_years
from openmemoryd.search.relative_dates import (
    EN_COUNT,
    RU_COUNT,
    ZH_COUNT,
    count_of,
    relative_mentions,
    unit_of,
)
from openmemoryd.search.relative_parts import part_mentions
from openmemoryd.search.seasons import season_mentions
from openmemoryd.store import InnerHeadings

__all__ = [
    "NAMED_DAYS",
    "SLACK_DAYS",
    "DateRange",
    "QueryDates",
    "memory_date",
    "memory_days",
    "named_by_day",
    "parse_query_dates",
]

# The longest range whose notes are evidence by their date alone (`QueryDates.names`).
NAMED_DAYS: Final = 11

_MONTHS_EN: Final = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
# Russian month names by stem: "мая", "маю", "май", "мае" all start "ма"+"й/я/ю/е";
# the stems are unambiguous among the twelve months once two letters are read.
_MONTHS_RU: Final = (
    ("январ", 1),
    ("феврал", 2),
    ("март", 3),
    ("апрел", 4),
    ("ма", 5),
    ("июн", 6),
    ("июл", 7),
    ("август", 8),
    ("сентябр", 9),
    ("октябр", 10),
    ("ноябр", 11),
    ("декабр", 12),
)

_EN_MONTH_RE: Final = "|".join(sorted(_MONTHS_EN, key=len, reverse=True))
# "May" is also a verb: without a year, "3 may break" and "may 3 people" are
# not dates, so a yearless day and "May" only count after "on" ("on 25 May").
_EN_MONTH_NOT_MAY: Final = "|".join(
    m for m in sorted(_MONTHS_EN, key=len, reverse=True) if m != "may"
)
_ON: Final = r"(?<=\bon\s)"
_RU_MONTH_RE: Final = (
    r"январ[ьяюе]|феврал[ьяюе]|март[аеу]?|апрел[ьяюе]|ма[йяюе]|июн[ьяюе]|июл[ьяюе]"
    r"|август[аеу]?|сентябр[ьяюе]|октябр[ьяюе]|ноябр[ьяюе]|декабр[ьяюе]"
)
_YEAR: Final = r"(?P<year>(?:19|20)\d\d)"
_DAY: Final = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
# A day before a Russian month, with the ordinal ending it is often written
# with: "3-го ноября", "3-е марта".
_RU_DAY: Final = r"(?P<day>[0-3]?\d)(?:-(?:го|е|ое|ого))?"

# A part of a month: its first, middle or last third ("early August",
# "в конце мая", 8月下旬), by the words for each in the three languages.
_EN_PART: Final = (
    r"(?P<part>early|mid|late|(?:the\s+)?(?:beginning|start|middle|end)\s+of)[-\s]+(?:the\s+)?"
)
_RU_PART: Final = r"(?P<part>начал[еоау]|середин[еауы]|конц[еау]|конец)\s+"
_ZH_PART: Final = r"\s*(?P<part>初|上旬|中旬|下旬|底|末)"
# The days from one to another of a month: "3-5 March", "from 3 to 5 March
# 2026", "between the 3rd and the 5th of March", "March 3-5"; "с 3 по 5
# марта", "3–5 марта", "между 3 и 5 марта"; 3月3日到5日, 2026年3月3日至5日.
# Dates on both sides ("from 3 March to 5 April") are joined by `date_spans`.
_SPAN_EN: Final = r"\s*(?P<conn>-|–|—|\bto\b|\btill\b|\buntil\b|\bthrough\b|\bthru\b|\band\b)\s*"
_OPEN_EN: Final = r"(?:(?P<open>from|between)\s+)?(?:the\s+)?"
_D1: Final = r"(?P<d1>[0-3]?\d)(?:st|nd|rd|th)?"
_RU_YEAR: Final = rf"{_YEAR}(?:\s*(?:г\.|года|год))?"
# The first or last days or weeks of a month: "the last two weeks of August
# 2023", "the first week of March"; "последние две недели августа", "в
# первую неделю марта"; 8月最后两周, 3月第二周 (the second: 第 counts).
_EDGE_UNIT_EN: Final = r"(?P<unit>days?|weeks?)"
_EDGE_UNIT_RU: Final = r"(?P<unit>дн(?:я|ей|и)|день|недел[июьи]|недель)"
_ZH_MONTH_START: Final = rf"(?:{_YEAR}\s*年\s*|(?<![\d年]))(?P<month>[01]?\d)\s*月"

# Order matters: the most specific form of each script first, so "25 May,
# 2022" is read as one day, not as "May 2022" plus a stray 25, and "early
# August 2026" as a third of a month, not as "August 2026".
_ABSOLUTE: Final = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\b{_YEAR}[-/.](?P<month>[01]?\d)[-/.](?P<day>[0-3]?\d)\b",
        # 03.03.2026 (day first, as Russian and most of Europe write it)
        rf"(?<![\d.])(?P<day>[0-3]?\d)\.(?P<month>[01]?\d)\.{_YEAR}(?!\d|\.\d)(?:\s*г\.)?",
        # 3/14/2026 or 14/3/2026: whichever a number above 12 makes it
        rf"(?<![\d/])(?P<sa>[0-3]?\d)/(?P<sb>[0-3]?\d)/{_YEAR}(?![\d/])",
        rf"\b{_OPEN_EN}{_D1}{_SPAN_EN}(?:the\s+)?{_DAY}\s+(?:of\s+)?(?P<mname>{_EN_MONTH_RE})\b"
        rf"(?:\.?,?\s+{_YEAR}\b)?",
        rf"\b{_OPEN_EN}(?P<mname>{_EN_MONTH_RE})\.?\s+{_D1}{_SPAN_EN}{_DAY}\b"
        rf"(?!\s*(?:am|pm|:|\d))(?:,?\s+{_YEAR}\b)?",
        rf"(?<!\w)(?:(?P<open>с|со|от|между)\s+)?(?P<d1>[0-3]?\d)\s*(?P<conn>-|–|—|по|до|и)\s*"
        rf"(?P<day>[0-3]?\d)\s+(?P<rname>{_RU_MONTH_RE})(?:\s+{_RU_YEAR})?(?!\w)",
        rf"{_ZH_MONTH_START}\s*(?P<d1>[0-3]?\d)\s*[日号]?\s*(?P<conn>到|至|-|–|—|~|～)\s*"
        r"(?P<day>[0-3]?\d)\s*[日号]",
        rf"\b(?:the\s+)?(?P<edge>first|last)\s+(?:{EN_COUNT}\s+)?{_EDGE_UNIT_EN}\s+(?:of|in)\s+"
        rf"(?:the\s+month\s+of\s+)?(?P<mname>{_EN_MONTH_RE})\b(?:\.?,?\s+{_YEAR}\b)?",
        rf"(?<!\w)(?:в\s+|за\s+)?(?P<edge>перв|последн)(?:ую|ые|ий|ие|ых|ой|ее|ый|юю)\s+"
        rf"(?:{RU_COUNT}\s+)?{_EDGE_UNIT_RU}\s+(?P<rname>{_RU_MONTH_RE})(?:\s+{_RU_YEAR})?(?!\w)",
        rf"{_ZH_MONTH_START}\s*的?\s*(?P<edge>最后|第|头)\s*(?:{ZH_COUNT})?\s*个?\s*"
        r"(?P<unit>天|周|星期|礼拜)",
        rf"\b{_EN_PART}(?P<mname>{_EN_MONTH_RE})\b(?:\.?,?\s+{_YEAR}\b)?",
        rf"(?<!\w)(?:в\s+)?{_RU_PART}(?P<rname>{_RU_MONTH_RE})"
        rf"(?:\s+{_YEAR}(?:\s*(?:г\.|года|год))?)?(?!\w)",
        rf"{_YEAR}\s*年\s*(?P<month>[01]?\d)\s*月{_ZH_PART}",
        rf"(?<![\d年])(?P<month>[01]?\d)\s*月{_ZH_PART}",
        rf"\b{_DAY}\s+(?:of\s+)?(?P<mname>{_EN_MONTH_RE})\.?,?\s+{_YEAR}\b",
        rf"\b(?P<mname>{_EN_MONTH_RE})\.?\s+{_DAY},?\s+{_YEAR}\b",
        rf"\b(?P<mname>{_EN_MONTH_RE})\.?,?\s+{_YEAR}\b",
        rf"\b{_DAY}\s+(?:of\s+)?(?P<mname>{_EN_MONTH_NOT_MAY})\b",
        rf"\b(?P<mname>{_EN_MONTH_NOT_MAY})\.?\s+{_DAY}\b(?!\s*(?:am|pm|:))",
        rf"{_ON}(?:the\s+)?{_DAY}\s+(?:of\s+)?(?P<mname>may)\b",
        rf"{_ON}(?P<mname>may)\.?\s+{_DAY}\b(?!\s*(?:am|pm|:))",
        rf"{_YEAR}\s*年\s*(?P<month>[01]?\d)\s*月\s*(?P<day>[0-3]?\d)\s*[日号]",
        rf"{_YEAR}\s*年\s*(?P<month>[01]?\d)\s*月",
        r"(?<![\d年])(?P<month>[01]?\d)\s*月\s*(?P<day>[0-3]?\d)\s*[日号]",
        rf"{_YEAR}\s*年",
        rf"(?<!\w){_RU_DAY}\s+(?P<rname>{_RU_MONTH_RE})\s+{_YEAR}(?:\s*(?:г\.|года|год))?",
        rf"(?<!\w)(?P<rname>{_RU_MONTH_RE})\s+{_YEAR}(?:\s*(?:г\.|года|год))?",
        rf"(?<!\w){_RU_DAY}\s+(?P<rname>{_RU_MONTH_RE})(?!\w)",
        rf"\b(?:in|during|of|since|from|until|till|through)\s+(?P<mname>{_EN_MONTH_RE})\b",
        rf"\b(?:in|during)\s+{_YEAR}\b",
        rf"(?<=\bsince\s){_YEAR}\b",
        rf"(?<!\w)(?:в|во)\s+(?P<rname>{_RU_MONTH_RE})(?!\w)",
        rf"(?<!\w)в\s+{_YEAR}\s*(?:году|г\.)",
        rf"(?<=\bс\s){_YEAR}\s*(?:года|г\.)",
    )
)

# The forms above that name one whole day with its year (ISO, English both
# ways, Chinese, Russian): what a heading must say to date its chunk.
_FULL_DATES: Final = tuple(
    p
    for p in _ABSOLUTE
    if {"year", "day"} <= set(p.groupindex) and len(p.groupindex) >= 3 and "d1" not in p.groupindex
)


@dataclass(frozen=True, slots=True)
class QueryDates:
    """What `parse_query_dates` found: the ranges, and the query without them
    (`rest` is the whole query when nothing else is left; `remainder` is
    then empty: "today" asks for a day and nothing more)."""

    ranges: tuple[DateRange, ...]
    rest: str
    remainder: str = ""

    def matches(self, day: date | None) -> bool:
        return day is not None and any(r.contains(day) for r in self.ranges)

    @property
    def names_days(self) -> bool:
        """Whether the query names days: a range of at most `NAMED_DAYS` days
        (a day, a week, a third of a month; not a month or a year)."""
        return any(_days_named(r) for r in self.ranges)

    def names(self, day: date | None) -> bool:
        """Whether *day* is one of the days the query names, without slack."""
        return day is not None and any(
            _days_named(r) and r.contains(day, slack_days=0) for r in self.ranges
        )

    def matches_any(self, days: Iterable[date]) -> bool:
        """Whether one of a chunk's *days* (`memory_days`) `matches`."""
        return any(self.matches(day) for day in days)

    def names_any(self, days: Iterable[date]) -> bool:
        """Whether one of a chunk's *days* (`memory_days`) is one the query `names`."""
        return any(self.names(day) for day in days)


def _days_named(span: DateRange) -> bool:
    return (span.end - span.start).days < NAMED_DAYS


def _ru_month(name: str) -> int:
    lowered = name.lower()
    for stem, number in _MONTHS_RU:
        if lowered.startswith(stem):
            return number
    raise ValueError(name)


def _reads_as_date(groups: dict[str, str | None]) -> bool:
    """Whether a span of days reads as one: "and" needs "between" ("3 and 5
    March" alone may be two things), and a yearless "May" needs "from" or
    "between" ("3 to 5 may be enough" is not a date)."""
    if groups.get("d1") is None:
        return True
    if (groups.get("conn") or "").lower() in ("and", "и") and (
        (groups.get("open") or "").lower() not in ("between", "между")
    ):
        return False
    return not (
        (groups.get("mname") or "").lower() == "may"
        and not groups.get("year")
        and not groups.get("open")
    )


def _month_and_day(groups: dict[str, str | None]) -> tuple[int | None, int | None]:
    mname, rname, month = groups.get("mname"), groups.get("rname"), groups.get("month")
    raw_day, raw_a, raw_b = groups.get("day"), groups.get("sa"), groups.get("sb")
    day = int(raw_day) if raw_day else None
    if raw_a and raw_b:
        first, second = int(raw_a), int(raw_b)
        if first > 12 or first == second:  # 14/3/2026, 3/3/2026
            return second, first
        if second > 12:  # 3/14/2026
            return first, second
        raise ValueError("3/4/2026 may be either day")
    if mname:
        return _MONTHS_EN[mname.lower().rstrip(".")], day
    if rname:
        return _ru_month(rname), day
    return (int(month) if month else None), day


def _either_way(match: re.Match[str]) -> tuple[DateRange, ...]:
    """Both days a date in figures may be when neither number is above 12
    (3/4/2026: 4 March as America writes it, 3 April as most of the world
    does); nothing for any other match `_absolute` did not read."""
    groups = match.groupdict()
    raw_a, raw_b, raw_year = groups.get("sa"), groups.get("sb"), groups.get("year")
    if not (raw_a and raw_b and raw_year):
        return ()
    first, second, year = int(raw_a), int(raw_b), int(raw_year)
    try:
        days = (date(year, first, second), date(year, second, first))
    except ValueError:  # 0/4/2026
        return ()
    return tuple(DateRange(day, day) for day in days)


def _edge(month: DateRange, groups: dict[str, str | None]) -> DateRange:
    """The first or last days or weeks of *month* an edge form names ("the
    last two weeks of", "первую неделю", 第二周 the second week)."""
    raw_count = groups.get("n")
    count = count_of(raw_count) if raw_count else 1
    unit = 7 if unit_of(groups.get("unit") or "d") == "week" else 1
    edge = (groups.get("edge") or "").lower()
    if edge == "第":  # the count is an ordinal: 第二周 is the second week
        start = month.start + timedelta(days=unit * (count - 1))
        end = start + timedelta(days=unit - 1)
    elif edge in ("last", "последн", "最后"):
        end = month.end
        start = end - timedelta(days=unit * count - 1)
    else:
        start = month.start
        end = start + timedelta(days=unit * count - 1)
    if start > month.end or (edge != "第" and unit * count > 31):
        raise ValueError("past the month's end")
    return DateRange(max(start, month.start), min(end, month.end))


def _absolute(match: re.Match[str]) -> DateRange | None:
    groups = match.groupdict()
    if not _reads_as_date(groups):
        return None
    year = int(groups["year"]) if groups.get("year") else None
    try:
        month, day = _month_and_day(groups)
        if month is None:
            if year is None:
                return None
            return year_range(year)
        if day is None:
            # 2000 when no year is named: a leap year, so February has its 29th
            whole = month_range(year if year is not None else 2000, month)
            if groups.get("part"):
                whole = month_third(whole, which_third(groups["part"]))
            elif groups.get("edge"):
                whole = _edge(whole, groups)
            return DateRange(whole.start, whole.end, any_year=year is None)
        when = date(year if year is not None else 2000, month, day)
        first = when.replace(day=int(groups["d1"])) if groups.get("d1") else when
    except ValueError:
        return None  # "31 February", month 13, "5-3 March": not a date
    if first > when:
        return None
    return DateRange(first, when, any_year=year is None)


def _strip(text: str, spans: Iterable[tuple[int, int]]) -> str:
    out, last = [], 0
    for start, end in sorted(spans):
        if start < last:
            continue
        out.append(text[last:start])
        out.append(" ")
        last = end
    out.append(text[last:])
    return " ".join("".join(out).split())


# A Chinese date written in Chinese numerals: 十一月三日, 二〇二六年三月五号.
_ZH_DIGITS: Final = "〇零一二三四五六七八九"
_ZH_NUMBER: Final = r"[一二三四五六七八九十]{1,3}"
_ZH_WRITTEN_DATE: Final = re.compile(
    rf"(?:(?P<year>[{_ZH_DIGITS}]{{4}})\s*年\s*)?(?P<month>{_ZH_NUMBER})\s*月\s*"
    rf"(?P<day>{_ZH_NUMBER})\s*(?P<end>[日号])"
)


def _zh_number(text: str) -> int | None:
    """十一 → 11, 三十一 → 31, 五 → 5; None for what is no number up to 99."""
    value = {c: i for i, c in enumerate("一二三四五六七八九", start=1)}
    tens, ten, units = text.partition("十")
    if not ten:
        return value.get(text) if len(text) == 1 else None
    if len(tens) > 1 or len(units) > 1 or not all(c in value for c in tens + units):
        return None
    return (value[tens] if tens else 1) * 10 + (value[units] if units else 0)


def _arabic_dates(query: str) -> str:
    """*query* with its dates in Chinese numerals written in digits, the form
    the patterns read: 十一月三日 → 11月3日. Only whole dates (a month and its
    day) are rewritten, which are then taken out of the query as dates: a
    number elsewhere (三日游, 三个月) is a word of the question and stays."""

    def digits(match: re.Match[str]) -> str:
        month, day = _zh_number(match.group("month")), _zh_number(match.group("day"))
        if month is None or day is None:
            return match.group(0)
        year = match.group("year")
        written = "".join(str(max(0, _ZH_DIGITS.index(c) - 1)) for c in year) + "年" if year else ""
        return f"{written}{month}月{day}{match.group('end')}"

    return _ZH_WRITTEN_DATE.sub(digits, query)


def parse_query_dates(query: str, today: date, *, south: bool = False) -> QueryDates:
    """The date ranges *query* mentions, and the query with those mentions removed.

    Relative words resolve against *today* (the caller's local day); *south*
    reads seasons as the southern hemisphere's. A query with no date
    mention comes back with no ranges and its text unchanged.
    """
    # months named by their year relative to today, dates in Chinese numerals:
    # written as the patterns below read them
    written = _arabic_dates(in_years(query, today))
    if written != query:
        read = parse_query_dates(written, today, south=south)
        if not read.ranges:
            return QueryDates((), query, query)
        # a query of the date alone is searched as the person wrote it
        return QueryDates(read.ranges, read.remainder or query, read.remainder)
    found: list[Mention] = []
    # the characters a mention holds: the first of overlapping mentions wins
    # (a mask, not a comparison with each mention: 4,000 of them in a query
    # of "最近" repeated made that quadratic)
    claimed = bytearray(len(query))

    def add(start: int, end: int, *days: DateRange) -> None:
        """The mention of *days* at *start*:*end*, unless an earlier one holds
        any of its characters."""
        if not any(claimed[start:end]):
            claimed[start:end] = b"\x01" * (end - start)
            found.extend((start, end, span) for span in days)

    # seasons and holidays first: 2023年 is a year, 2023年夏天 its summer,
    # 2023年春节 its Spring Festival ("the Fourth of July" is not all July)
    for start, end, seasons in season_mentions(query, today, south=south):
        add(start, end, *seasons)
    for start, end, holidays in holiday_mentions(query, today):
        add(start, end, *holidays)
    # a part of a span before the span: "the end of last month", 2023年底
    for start, end, part in part_mentions(query, today):
        add(start, end, part)
    for pattern in _ABSOLUTE:
        for match in pattern.finditer(query):
            days = _absolute(match)
            both = _either_way(match) if days is None else ()
            if days is not None or both:
                add(match.start(), match.end(), *((days,) if days is not None else both))
    single_days = [mention for mention in found if mention[2].start == mention[2].end]
    for start, end, days in (
        *rolling_mentions(query, today),
        *relative_mentions(query, today, single_days),
    ):
        add(start, end, days)
    if not found:
        return QueryDates((), query, query)
    found = joined_and_since(query, found, today)
    rest = _strip(query, [(start, end) for start, end, _ in found])
    # Dangling prepositions left by the removal ("on", "in", "в") are
    # stopwords anyway; the rest keeps the question's own words.
    return QueryDates(tuple(dict.fromkeys(days for _, _, days in found)), rest or query, rest)


_ISO_IN_NAME: Final = re.compile(r"(?<!\d)((?:19|20)\d\d)-([01]\d)-([0-3]\d)(?!\d)")


# A search dates the same candidates several times (whether any is of the
# query's days, the date feature, the best chunk of a named day, the
# threshold), and the same few thousand chunks search after search.
@lru_cache(maxsize=16384)
def memory_date(path: str, heading: str) -> date | None:
    """The day a chunk is about: the date in its file's name, else in its heading path."""
    name = path.rsplit("/", 1)[-1]
    for match in _ISO_IN_NAME.finditer(name):
        try:
            return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        except ValueError:
            continue
    if not heading:
        return None
    for pattern in _FULL_DATES:
        found_at = pattern.search(heading)
        if found_at is not None:
            found = _absolute(found_at)
            if found is not None and not found.any_year:
                return found.start
    return None


@lru_cache(maxsize=16384)
def memory_days(path: str, heading: str, inner: InnerHeadings) -> tuple[date, ...]:
    """The days a chunk is about: its file name's (a daily note is of one
    day throughout), else its heading path's at its first line and at each
    heading line inside it (*inner*), each day once, in the order met."""
    first = memory_date(path, heading)
    if not inner or named_by_day(path):
        return () if first is None else (first,)
    days = [] if first is None else [first]
    for _, path_there in inner:
        day = memory_date(path, path_there)
        if day is not None and day not in days:
            days.append(day)
    return tuple(days)


def named_by_day(path: str) -> bool:
    """Whether *path*'s file name holds a day (`memory_date` reads it first):
    a daily note is of that day throughout, whatever its headings say."""
    return memory_date(path, "") is not None
