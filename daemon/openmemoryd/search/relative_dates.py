"""Dates a query names relative to the day it is asked: "yesterday", "last
week", "3 days ago", "on Monday", "over the weekend"; 昨天, 上周五, 三个月前;
вчера, в прошлую пятницу, на выходных.

`relative_mentions` finds them in a query and says what range of days each
means on a given day; `dates.parse_query_dates` gathers them with the
absolute dates. A day of the week next to a full date ("the Sunday before
October 25, 2022", "2023年10月28日之后的周六") is counted from that date,
not from today.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import date, timedelta
from typing import Final

from openmemoryd.search.day_ranges import (
    DateRange,
    month_range,
    months_back,
    week_start,
    year_range,
)

__all__ = ["EN_COUNT", "RU_COUNT", "ZH_COUNT", "count_of", "relative_mentions", "unit_of"]

# Relative words, compiled once; what each means is worked out against the
# day of the search (`_relative_range`).
_RELATIVE: Final = tuple(
    (re.compile(pattern, re.IGNORECASE), meaning)
    for pattern, meaning in (
        (r"大前天", "three_days_ago"),
        (r"\bday before yesterday\b|позавчера|前天", "before_yesterday"),
        (r"\byesterday\b|\blast night\b|вчера|прошлой ночью|昨天|昨日|昨晚|昨夜", "yesterday"),
        (
            r"\btoday\b|\btonight\b|\bthis (?:morning|afternoon|evening)\b|сегодня"
            r"|今天|今日|今早|今晚",
            "today",
        ),
        # the one before last first: 上上周 holds 上周
        (
            r"\bthe\s+week\s+before\s+last\b"
            r"|(?<!\w)(?:на\s+|за\s+)?позапрошл(?:ой|ую)\s+недел[еиюя](?!\w)"
            r"|上上个?(?:周|星期|礼拜)",
            "week_before_last",
        ),
        (
            r"\blast week\b|\bprevious week\b"
            r"|(?<!\w)(?:на\s+|за\s+)?прошл(?:ой|ую)\s+недел[еиюя](?!\w)|(?<!\w)на\s+той\s+неделе(?!\w)"
            r"|上周|上个?星期|上个?礼拜",
            "last_week",
        ),
        (
            # "на неделе" alone is this week as people say it ("что было на
            # неделе"); "два раза на неделе" is a habit
            r"\bthis week\b|(?<!\w)(?:на\s+|за\s+)?эт(?:ой|у)\s+недел[еиюя](?!\w)"
            r"|(?<!\w)(?<!раз )(?<!раза )на\s+неделе(?!\w)"
            r"|这个?(?:周|星期|礼拜)|本(?:周|星期|礼拜)",
            "this_week",
        ),
        (
            r"\bthe\s+month\s+before\s+last\b"
            r"|(?<!\w)(?:в\s+|за\s+)?позапрошл(?:ом|ый|ого)\s+месяц[еа]?(?!\w)|上上个?月",
            "month_before_last",
        ),
        (
            r"\blast month\b|\bprevious month\b"
            r"|(?<!\w)(?:в\s+|за\s+)?прошл(?:ом|ый|ого)\s+месяц[еа]?(?!\w)|上个月|上月",
            "last_month",
        ),
        (
            r"\bthis month\b|(?<!\w)(?:в\s+|за\s+)?эт(?:ом|от|ого)\s+месяц[еа]?(?!\w)|这个月|本月",
            "this_month",
        ),
        (r"大前年", "three_years_back"),
        (
            r"\bthe\s+year\s+before\s+last\b"
            r"|(?<!\w)(?:в\s+|за\s+)?позапрошл(?:ом|ый|ого)\s+год[уа]?(?!\w)|前年",
            "year_before_last",
        ),
        (
            r"\blast year\b|\bprevious year\b"
            r"|(?<!\w)(?:в\s+|за\s+)?прошл(?:ом|ый|ого)\s+год[уа]?(?!\w)|去年",
            "last_year",
        ),
        (
            r"\bthis year\b|(?<!\w)(?:в\s+|за\s+)?эт(?:ом|от|ого)\s+год[уа]?(?!\w)|今年",
            "this_year",
        ),
        (
            r"\b(?:last|past) few days\b|\brecently\b|\blately\b|недавно"
            r"|(?<!\w)(?:в|за)\s+последн(?:ее\s+время|ие\s+дни)(?!\w)|最近|近期|这几天",
            "recent",
        ),
        (
            r"\b(?:a\s+few|few|some|several)\s+days\s+(?:ago|back)\b|\bthe other day\b"
            r"|несколько\s+дней\s+назад|(?<!\w)на\s+днях(?!\w)|几天前|前几天|前些天",
            "few_days_ago",
        ),
        (
            r"\b(?:a\s+few|few|some|several|a\s+couple\s+of)\s+weeks\s+(?:ago|back)\b"
            r"|несколько\s+недель\s+назад|几个?(?:周|星期|礼拜)以?前|前几(?:周|个星期)",
            "few_weeks_ago",
        ),
    )
)

# Days of the week, Monday first (`date.weekday`), and the weekend. A day
# named alone in a question about the past ("on Monday", "в понедельник",
# 周一) is the last such day before today; "this" is the one of the current
# calendar week, "last" (上周一) the one of the week before it. Only with
# such a word before it: "Monday standup" and "every Monday" are topics.
_EN_WEEKDAYS: Final = (
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
)
_RU_WEEKDAYS: Final = (  # stems of the accusative: в среду, в пятницу
    "понедельник",
    "вторник",
    "сред",
    "четверг",
    "пятниц",
    "суббот",
    "воскресень",
)
_ZH_WEEKDAYS: Final = "一二三四五六"  # 日 and 天 are Sunday
_EN_WEEKDAY_RE: Final = "|".join(_EN_WEEKDAYS) + "|weekend"
# "в среду" is also "into the environment" (в среду разработки, в среду Python);
# "на понедельник" is a plan, "на выходных" the weekend
_RU_NOT_ENVIRONMENT: Final = r"(?!\s+(?:[a-z]|разработ|выполнен|исполнен|окружен|тестирован))"
_RU_WEEKDAY_RE: Final = (
    rf"понедельник|вторник|среду{_RU_NOT_ENVIRONMENT}|четверг|пятницу|субботу|воскресенье"
)
# The nominative and genitive of the days whose accusative differs, and the
# genitive of the others: "прошлая пятница", "прошлого понедельника".
_RU_WEEKDAY_OTHER_RE: Final = (
    rf"понедельника|вторника|сред[аы]{_RU_NOT_ENVIRONMENT}|четверга|пятниц[аы]|суббот[аы]"
    r"|воскресенья"
)
_RU_WEEKEND_RE: Final = r"выходны[ех]"
_ZH_WEEK: Final = r"(?:周|星期|礼拜)"
# 一 before these is a word of its own (这周一直 is "this week, all along"),
# as is 日 before them (这周日程, "this week's schedule"); 周天 is rare
# beside 这周天气 ("this week's weather"), so Sunday is 周日, 星期天 or 礼拜天
_ZH_WEEKDAY_RE: Final = (
    r"(?:一(?![直起样定些切般共次下点会遍天周个])|[二三四五六末]"
    r"|日(?![程报常志记期子历])|(?<=星期|礼拜)天)"
)
# 每周一 is every Monday, 下周一 next week's, 三周一次 "once in three weeks"
_ZH_NOT_AFTER: Final = r"(?<![每上下这本个几\d一两二三四五六七八九十])"
# Since a day: from it to today ("since Monday", "с понедельника", 周一以来);
# "с понедельника по пятницу" is a schedule, "со среды разработки" is "from
# the development environment"
_RU_WEEKDAY_SINCE_RE: Final = (
    rf"понедельника|вторника|среды{_RU_NOT_ENVIRONMENT}|четверга|пятницы|субботы"
    r"|воскресенья|выходных"
)
_WEEKDAYS: Final = tuple(
    (re.compile(pattern, re.IGNORECASE), which)
    for pattern, which in (
        (rf"\bsince\s+(?:last\s+|the\s+)?(?P<wd>{_EN_WEEKDAY_RE})\b", "since"),
        (
            rf"(?<!\w)со?\s+(?:прошл(?:ого|ой|ых)\s+)?(?P<wd>{_RU_WEEKDAY_SINCE_RE})"
            r"(?!\w)(?!\s+по\s)",
            "since",
        ),
        (rf"(?<!上)上个?{_ZH_WEEK}(?P<wd>{_ZH_WEEKDAY_RE})以来", "since_week_before"),
        (rf"{_ZH_NOT_AFTER}{_ZH_WEEK}(?P<wd>{_ZH_WEEKDAY_RE})以来", "since"),
        (rf"\b(?:last|past|this\s+past)\s+(?P<wd>{_EN_WEEKDAY_RE})\b", "last"),
        (rf"\bthis\s+(?P<wd>{_EN_WEEKDAY_RE})\b", "this"),
        (rf"\b(?:on|over|at)\s+(?:the\s+)?(?P<wd>{_EN_WEEKDAY_RE})(?:'s)?\b", "before"),
        # "Monday's meeting", "the weekend's plans", not "every Monday's"
        (rf"(?<!\bevery\s)\b(?P<wd>{_EN_WEEKDAY_RE})'s\b", "before"),
        (rf"(?<!\w)(?:во?\s+)?прошл(?:ый|ую|ое)\s+(?P<wd>{_RU_WEEKDAY_RE})(?!\w)", "last"),
        # as a subject or of it: "прошлая пятница", "заметки прошлого четверга"
        (rf"(?<!\w)прошл(?:ая|ой|ого)\s+(?P<wd>{_RU_WEEKDAY_OTHER_RE})(?!\w)", "last"),
        (rf"(?<!\w)(?:(?:в|на)\s+)?прошл(?:ые|ых)\s+(?P<wd>{_RU_WEEKEND_RE})(?!\w)", "last"),
        (rf"(?<!\w)во?\s+эт(?:от|у|о)\s+(?P<wd>{_RU_WEEKDAY_RE})(?!\w)", "this"),
        (rf"(?<!\w)(?:в|на)\s+эт(?:и|их)\s+(?P<wd>{_RU_WEEKEND_RE})(?!\w)", "this"),
        (rf"(?<!\w)во?\s+(?P<wd>{_RU_WEEKDAY_RE})(?!\w)", "before"),
        (rf"(?<!\w)(?:в|на)\s+(?P<wd>{_RU_WEEKEND_RE})(?!\w)", "before"),
        (rf"(?<!上)上个?{_ZH_WEEK}(?P<wd>{_ZH_WEEKDAY_RE})", "week_before"),
        (rf"(?:这个?|本){_ZH_WEEK}(?P<wd>{_ZH_WEEKDAY_RE})", "this"),
        (rf"{_ZH_NOT_AFTER}{_ZH_WEEK}(?P<wd>{_ZH_WEEKDAY_RE})", "before"),
    )
)


def _weekday_of(word: str) -> tuple[int, bool]:
    """The `date.weekday` a weekday *word* names (Saturday for the weekend),
    and whether it is the weekend."""
    name = word.lower()
    if name in ("weekend", "末") or name.startswith("выходн"):
        return 5, True
    if name in "日天":
        return 6, False
    if name in _ZH_WEEKDAYS:
        return _ZH_WEEKDAYS.index(name), False
    if name in _EN_WEEKDAYS:
        return _EN_WEEKDAYS.index(name), False
    return next(i for i, stem in enumerate(_RU_WEEKDAYS) if name.startswith(stem)), False


_SINCE: Final = {"since": "before", "since_week_before": "week_before"}


def _weekday_range(match: re.Match[str], which: str, today: date) -> DateRange:
    """The day (or Saturday and Sunday) a weekday *match* names on *today*;
    from that day to *today* for "since"."""
    if which in _SINCE:
        return DateRange(_weekday_range(match, _SINCE[which], today).start, today)
    weekday, weekend = _weekday_of(match.group("wd"))
    week = week_start(today)
    if which == "this":
        day = week + timedelta(days=weekday)
    elif which == "week_before":
        day = week - timedelta(days=7 - weekday)
    else:  # the last one before today; "last weekend" ends before this week
        back = (today.weekday() - weekday - 1) % 7 + 1
        day = today - timedelta(days=back)
        if which == "last" and weekend and day >= week:
            day -= timedelta(days=7)
    return DateRange(day, day + timedelta(days=1 if weekend else 0))


# "3 days ago", "two weeks ago", "a month ago", "пару дней назад", "неделю
# назад", 三天前, 两个星期前, 三个月前: a day, or the calendar week or month
# that day falls in ("last week" is one week ago). Numbers up to ten may be
# words.
_ZH_DIGITS: Final = "一两二三四五六七八九"
_COUNTS: Final = {
    word: count
    for count, words in enumerate(
        (
            ("a", "an", "one", "один", "одну", "一"),
            ("two", "couple of", "a couple of", "два", "две", "пару", "两", "二"),
            ("three", "три", "三"),
            ("four", "четыре", "四"),
            ("five", "пять", "五"),
            ("six", "шесть", "六"),
            ("seven", "семь", "七"),
            ("eight", "восемь", "八"),
            ("nine", "девять", "九"),
            ("ten", "десять"),  # 十 is read with its tens and units (`_chinese_count`)
        ),
        start=1,
    )
    for word in words
}
# A count in each language, as a group `n` of a pattern (`count_of` reads it).
EN_COUNT: Final = (
    r"(?P<n>\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|(?:a\s+)?couple\s+of)"
)
RU_COUNT: Final = (
    r"(?P<n>\d{1,3}|один|одну|два|две|пару|три|четыре|пять|шесть|семь|восемь|девять|десять)"
)
ZH_COUNT: Final = (
    rf"(?<![\d{_ZH_DIGITS}十百千])(?P<n>\d{{1,3}}|[{_ZH_DIGITS}]?十[{_ZH_DIGITS}]?|[{_ZH_DIGITS}])"
)
_AGO: Final = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        rf"\b{EN_COUNT}\s+(?P<unit>days?|weeks?|months?|years?)\s+ago\b",
        rf"(?<!\w)(?:{RU_COUNT}\s+)?(?P<unit>дн(?:я|ей)|день|недел[июь]|месяц(?:а|ев)?|год(?:а)?|лет)"
        r"\s+назад(?!\w)",
        rf"{ZH_COUNT}\s*(?:个\s*)?(?P<unit>天|周|星期|礼拜)以?前",
        rf"{ZH_COUNT}\s*(?P<unit>年)以?前",
        # 三月前 is "before March": months are counted with 个 (三个月前)
        rf"{ZH_COUNT}\s*个\s*(?P<unit>月)以?前",
    )
)
# The same time a year back: the weeks around today's date last year ("this
# time last year", в это же время в прошлом году, 去年这个时候), or that very
# day (去年的今天, "a year ago today", ровно год назад). Read before "last
# year" and "a year ago", which would take all of last year.
_SAME_TIME: Final = tuple(
    (re.compile(pattern, re.IGNORECASE), days)
    for pattern, days in (
        (
            r"\b(?:a\s+year\s+ago\s+today|(?:on\s+)?this\s+day\s+last\s+year)\b"
            r"|(?<!\w)ровно\s+год\s+назад(?!\w)|去年的?今天|去年的?今日",
            0,
        ),
        (
            r"\b(?:(?:around|at|about)\s+)?(?:this|the\s+same)\s+time\s+(?:last\s+year|a\s+year\s+ago)\b"
            r"|(?<!\w)(?:в\s+)?(?:это\s+же|то\s+же|это)\s+время\s+(?:в\s+)?прошло(?:м|го)\s+год[ау]?(?!\w)"
            r"|(?<!\w)год\s+назад\s+в\s+это\s+(?:же\s+)?время(?!\w)"
            r"|去年(?:的)?(?:这个时候|这时候|此时|同期|这会儿)",
            14,
        ),
    )
)


def _same_time_last_year(today: date, around: int) -> DateRange | None:
    """*today*'s date a year back, give or take *around* days."""
    try:
        day = today.replace(year=today.year - 1)
    except ValueError:  # 29 February
        day = today.replace(year=today.year - 1, day=28)
    try:
        return DateRange(day - timedelta(days=around), day + timedelta(days=around))
    except OverflowError:
        return None


# Without a number only the singular is one: "неделю назад" is a week ago,
# "дней назад" ("days ago") says not how many.
_ONE_UNIT: Final = ("день", "неделю", "месяц", "год")


def _ago_range(match: re.Match[str], today: date) -> DateRange | None:
    """What an "N days/weeks/months ago" *match* means on *today*: that day, or
    the calendar week or month it falls in; None past the calendar."""
    unit = match.group("unit").lower()
    if match.group("n") is None and unit not in _ONE_UNIT:
        return None
    count = count_of(match.group("n") or "1")
    try:
        if unit_of(unit) == "year":  # the calendar year, as "last year" is
            year = today.year - count
            return year_range(year)
        if unit_of(unit) == "month":
            return month_range(*months_back(today, count))
        if unit_of(unit) == "week":
            start = week_start(today - timedelta(weeks=count))
            return DateRange(start, start + timedelta(days=6))
        day = today - timedelta(days=count)
        return DateRange(day, day)
    except (OverflowError, ValueError):  # before year 1
        return None


def count_of(numeral: str) -> int:
    """The number a count of `EN_COUNT`, `RU_COUNT` or `ZH_COUNT` says."""
    raw = " ".join(numeral.lower().split())
    return int(raw) if raw.isdigit() else _chinese_count(raw) if "十" in raw else _COUNTS[raw]


# A unit of time by the first letter of its word in the three languages:
# hours, hours, 小时; days, дня, сутки, 天, 日; weeks, недели, 周, 星期, 礼拜;
# months, месяца, 月; years, года, лет, 年.
_UNITS: Final = {
    **dict.fromkeys(("h", "ч", "小"), "hour"),
    **dict.fromkeys(("d", "д", "с", "天", "日"), "day"),
    **dict.fromkeys(("w", "н", "周", "星", "礼"), "week"),
    **dict.fromkeys(("m", "м", "月"), "month"),
    **dict.fromkeys(("y", "г", "л", "年"), "year"),
}


def unit_of(word: str) -> str:
    """``hour``, ``day``, ``week``, ``month`` or ``year``: what a unit word
    of the date patterns counts (``days``, ``недели``, 个月)."""
    return _UNITS[word[:1].lower()]


def _chinese_count(numeral: str) -> int:
    """十 (10) to 九十九 (99): tens before 十, units after it."""
    tens, _, units = numeral.partition("十")
    return 10 * (_COUNTS[tens] if tens else 1) + (_COUNTS[units] if units else 0)


_DAYS_BACK: Final = {"today": 0, "yesterday": 1, "before_yesterday": 2, "three_days_ago": 3}
_YEARS_BACK: Final = {"last_year": 1, "year_before_last": 2, "three_years_back": 3}


def _relative_range(meaning: str, today: date) -> DateRange:
    week = week_start(today)
    month_start = today.replace(day=1)
    if meaning in _DAYS_BACK:
        day = today - timedelta(days=_DAYS_BACK[meaning])
        return DateRange(day, day)
    if meaning == "last_week":
        return DateRange(week - timedelta(days=7), week - timedelta(days=1))
    if meaning == "this_week":
        return DateRange(week, today)
    if meaning == "last_month":
        last_month_end = month_start - timedelta(days=1)
        return DateRange(last_month_end.replace(day=1), last_month_end)
    if meaning == "this_month":
        return DateRange(month_start, today)
    if meaning == "week_before_last":
        return DateRange(week - timedelta(days=14), week - timedelta(days=8))
    if meaning == "month_before_last":
        return month_range(*months_back(today, 2))
    if meaning in _YEARS_BACK:
        year = today.year - _YEARS_BACK[meaning]
        return year_range(year)
    if meaning == "this_year":
        return DateRange(date(today.year, 1, 1), today)
    if meaning == "few_days_ago":
        return DateRange(today - timedelta(days=7), today - timedelta(days=2))
    if meaning == "few_weeks_ago":  # the calendar weeks two to four back
        return DateRange(week - timedelta(weeks=4), week - timedelta(days=8))
    return DateRange(today - timedelta(days=6), today)  # recent: the last seven days


# What may stand between a day of the week and the date next to it: "the
# Sunday before October 25, 2022", "the Saturday after …", "last Friday on
# 23 January, 2022", "on Friday 13 Feb", "в субботу после 28 октября 2023";
# in Chinese the date comes first: "2023年10月28日之后的周六", "2月13日（周五）".
_LINK_TO_DATE: Final = re.compile(
    r"\s*,?\s*(?:(?P<after>after|после)|(?P<before>before|prior\s+to|перед|до)|on|of)?\s*",
    re.IGNORECASE,
)
_LINK_FROM_DATE: Final = re.compile(
    r"\s*(?:(?P<after>之后|以后|后)|(?P<before>之前|以前|前))?\s*[的（(,，]?\s*"
)


def _anchored(
    query: str, match: re.Match[str], which: str, days: Sequence[tuple[int, int, DateRange]]
) -> tuple[bool, DateRange | None]:
    """Whether a date of *days* (span, one day) is next to a weekday
    *match*, and the days the weekday then names, counted from that date.

    "the Sunday before October 25, 2022" is the 23rd, "the Saturday after
    October 28, 2023" 4 November, "last Friday on 23 January, 2022" the
    21st. In "on Friday 13 Feb" the weekday names the date beside it, and
    a date without its year cannot be counted from: None, the weekday is
    left to the words of the query (a note may say "Friday")."""
    for start, end, anchor in days:
        if start >= match.end():
            link = _LINK_TO_DATE.fullmatch(query, match.end(), start)
        elif end <= match.start():
            link = _LINK_FROM_DATE.fullmatch(query, end, match.start())
        else:
            continue
        if link is None:
            continue
        if anchor.any_year:
            return True, None
        if link.group("after") is not None:
            return True, _weekday_after(match, anchor.start)
        if link.group("before") is not None or which in ("last", "week_before"):
            return True, _weekday_range(match, "before" if which == "this" else which, anchor.start)
        return True, None
    return False, None


def _weekday_after(match: re.Match[str], anchor: date) -> DateRange:
    """The first such day (or weekend) after *anchor*."""
    weekday, weekend = _weekday_of(match.group("wd"))
    day = anchor + timedelta(days=(weekday - anchor.weekday() - 1) % 7 + 1)
    return DateRange(day, day + timedelta(days=1 if weekend else 0))


def relative_mentions(
    query: str, today: date, days: Sequence[tuple[int, int, DateRange]] = ()
) -> Iterator[tuple[int, int, DateRange]]:
    """Each relative mention in *query*: its span and the days it means on
    *today*, the most specific forms first (they may overlap: the caller
    keeps the first of overlapping spans). *days* are the single days the
    query names, with their spans, for a weekday next to one."""
    for pattern, around in _SAME_TIME:
        for match in pattern.finditer(query):
            try:
                same = _same_time_last_year(today, around)
            except ValueError:  # year 1
                continue
            if same is not None:
                yield match.start(), match.end(), same
    for pattern in _AGO:
        for match in pattern.finditer(query):
            ago = _ago_range(match, today)
            if ago is not None:
                yield match.start(), match.end(), ago
    for pattern, which in _WEEKDAYS:
        for match in pattern.finditer(query):
            try:
                anchored, found = _anchored(query, match, which, days)
                if not anchored:
                    found = _weekday_range(match, which, today)
            except OverflowError:  # a week past the calendar's ends
                continue
            if found is not None:
                yield match.start(), match.end(), found
    for pattern, meaning in _RELATIVE:
        for match in pattern.finditer(query):
            try:
                found = _relative_range(meaning, today)
            except (OverflowError, ValueError):  # "last year" in year 1
                continue
            yield match.start(), match.end(), found
