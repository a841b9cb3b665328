"""Dates in queries and in memories, in English, Chinese and Russian."""

from __future__ import annotations

from datetime import date

import pytest

from openmemoryd.search.dates import DateRange, memory_date, parse_query_dates

TODAY = date(2026, 11, 25)  # a Wednesday


def ranges(query: str) -> list[tuple[str, str, bool]]:
    return [
        (r.start.isoformat(), r.end.isoformat(), r.any_year)
        for r in parse_query_dates(query, TODAY).ranges
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Nate do for Joanna on 25 May, 2022?", [("2022-05-25", "2022-05-25", False)]),
        ("What painting did she show on October 13, 2023?", [("2023-10-13", "2023-10-13", False)]),
        ("notes from 2022-05-25", [("2022-05-25", "2022-05-25", False)]),
        ("What setback did Melanie face in October 2023?", [("2023-10-01", "2023-10-31", False)]),
        ("When did Melanie go camping in June?", [("2000-06-01", "2000-06-30", True)]),
        (
            "How many times has she gone to the beach in 2023?",
            [("2023-01-01", "2023-12-31", False)],
        ),
        ("the deploy on 3rd March", [("2000-03-03", "2000-03-03", True)]),
    ],
)
def test_english_absolute_dates(query: str, expected: list[tuple[str, str, bool]]) -> None:
    assert ranges(query) == expected


@pytest.mark.parametrize(
    ("query", "expected", "rest"),
    [
        ("what broke in early August?", ("2000-08-01", "2000-08-10", True), "what broke in ?"),
        ("mid-June release", ("2000-06-11", "2000-06-20", True), "release"),
        ("late May 2023 trip", ("2023-05-21", "2023-05-31", False), "trip"),
        ("notes from the end of February", ("2000-02-21", "2000-02-29", True), "notes from"),
        ("at the beginning of March, 2024", ("2024-03-01", "2024-03-10", False), "at"),
        ("8月下旬去了哪里", ("2000-08-21", "2000-08-31", True), "去了哪里"),
        ("2026年3月初的会议", ("2026-03-01", "2026-03-10", False), "的会议"),
        ("6 月中旬上线", ("2000-06-11", "2000-06-20", True), "上线"),
        ("что сломалось в начале августа", ("2000-08-01", "2000-08-10", True), "что сломалось"),
        ("отпуск в середине июля", ("2000-07-11", "2000-07-20", True), "отпуск"),
        ("в конце мая 2025 года переезд", ("2025-05-21", "2025-05-31", False), "переезд"),
    ],
)
def test_a_third_of_a_month(query: str, expected: tuple[str, str, bool], rest: str) -> None:
    """ "Early", "mid", "late" (в начале, в середине, в конце; 初/上旬, 中旬,
    下旬/底) name days 1-10, 11-20 and 21 to the month's end."""
    assert ranges(query) == [expected]
    assert parse_query_dates(query, TODAY).rest == rest


def test_the_days_a_query_names_are_days_weeks_and_thirds_not_months() -> None:
    """A note of such a day is evidence by its date alone (search.pipeline)."""
    on_day = parse_query_dates("what did I buy on 23 March?", TODAY)
    assert on_day.names(date(2026, 3, 23))
    assert not on_day.names(date(2026, 3, 24))  # no slack: the day itself
    assert on_day.matches(date(2026, 3, 24))  # ranking keeps its slack
    late = parse_query_dates("что сломалось в конце мая", TODAY)
    assert late.names(date(2025, 5, 31))
    assert not late.names(date(2025, 5, 20))
    assert parse_query_dates("上周做了什么决定", TODAY).names(date(2026, 11, 18))
    in_month = parse_query_dates("what did I buy in March 2026?", TODAY)
    assert in_month.matches(date(2026, 3, 23))
    assert not in_month.names(date(2026, 3, 23))
    assert not parse_query_dates("what did I buy?", TODAY).names(date(2026, 3, 23))


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        # a third of a month, as 8月初 is; a week's three days; a year's four months
        ("what did we ship at the end of last month", "2026-10-21", "2026-10-31"),
        ("mid last month", "2026-10-11", "2026-10-20"),
        ("в середине прошлого месяца", "2026-10-11", "2026-10-20"),
        ("上个月底的账单", "2026-10-21", "2026-10-31"),
        ("本月初", "2026-11-01", "2026-11-10"),
        ("上上个月初", "2026-09-01", "2026-09-10"),
        ("at the beginning of this week", "2026-11-23", "2026-11-25"),
        ("в начале этой недели", "2026-11-23", "2026-11-25"),
        ("в конце прошлой недели", "2026-11-20", "2026-11-22"),
        ("early this year", "2026-01-01", "2026-04-30"),
        ("late last year", "2025-09-01", "2025-12-31"),
        ("в конце прошлого года", "2025-09-01", "2025-12-31"),
        ("去年年底的体检", "2025-09-01", "2025-12-31"),
        ("今年年初", "2026-01-01", "2026-04-30"),
        ("the end of 2023", "2023-09-01", "2023-12-31"),
        ("в начале 2024 года", "2024-01-01", "2024-04-30"),
        ("2023年底", "2023-09-01", "2023-12-31"),
    ],
)
def test_a_part_of_a_span_counted_from_today(query: str, start: str, end: str) -> None:
    """Not the whole span: "the end of last month" is its last ten days."""
    assert ranges(query) == [(start, end, False)]


def test_a_part_of_a_span_not_named_is_a_habit() -> None:
    """ "At the end of the month" with no "this" or "last" is every month's."""
    for query in (
        "pay rent at the end of the month",
        "в начале месяца платим аренду",
        "年底发奖金",
        "бегаю три раза на неделе",
        "созвоны два раза на неделе",
    ):
        assert ranges(query) == [], query
    # 这周末 is the weekend, not the end of the week
    assert ranges("这周末") == [("2026-11-28", "2026-11-29", False)]


def test_words_for_a_part_of_something_else_are_not_dates() -> None:
    assert ranges("at the end of the sprint") == []
    assert ranges("в начале проекта") == []
    assert ranges("月初发工资") == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("2022年5月25日的会议", [("2022-05-25", "2022-05-25", False)]),
        ("2023年10月做了什么", [("2023-10-01", "2023-10-31", False)]),
        ("5月3日吃饭", [("2000-05-03", "2000-05-03", True)]),
        ("2021年的计划", [("2021-01-01", "2021-12-31", False)]),
        # in Chinese numerals
        ("十一月三日做了什么", [("2000-11-03", "2000-11-03", True)]),
        ("三月五号开会", [("2000-03-05", "2000-03-05", True)]),
        ("二〇二六年十一月三日", [("2026-11-03", "2026-11-03", False)]),
        ("二零二五年十二月三十一日的总结", [("2025-12-31", "2025-12-31", False)]),
        ("2026年十一月三日", [("2026-11-03", "2026-11-03", False)]),
    ],
)
def test_chinese_absolute_dates(query: str, expected: list[tuple[str, str, bool]]) -> None:
    assert ranges(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("встреча 25 мая 2022 года", [("2022-05-25", "2022-05-25", False)]),
        ("что было в мае 2023", [("2023-05-01", "2023-05-31", False)]),
        ("созвон 3 марта", [("2000-03-03", "2000-03-03", True)]),
        ("что было 3-го ноября", [("2000-11-03", "2000-11-03", True)]),
        ("3-е марта 2026 года", [("2026-03-03", "2026-03-03", False)]),
        ("отпуск в августе", [("2000-08-01", "2000-08-31", True)]),
    ],
)
def test_russian_absolute_dates(query: str, expected: list[tuple[str, str, bool]]) -> None:
    assert ranges(query) == expected


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did I do yesterday", "2026-11-24", "2026-11-24"),
        ("昨天我们讨论了什么", "2026-11-24", "2026-11-24"),
        ("что мы обсуждали вчера", "2026-11-24", "2026-11-24"),
        ("what happened last week", "2026-11-16", "2026-11-22"),
        ("上周的会议", "2026-11-16", "2026-11-22"),
        ("что было на прошлой неделе", "2026-11-16", "2026-11-22"),
        ("decisions made last month", "2026-10-01", "2026-10-31"),
        ("上个月的决定", "2026-10-01", "2026-10-31"),
        ("today's plan", "2026-11-25", "2026-11-25"),
        ("前天的笔记", "2026-11-23", "2026-11-23"),
        ("最近在做什么", "2026-11-19", "2026-11-25"),
        ("что я делал недавно", "2026-11-19", "2026-11-25"),
        ("which bugs this year were about timezones", "2026-01-01", "2026-11-25"),
        ("books I read last year", "2025-01-01", "2025-12-31"),
        ("今年的目标", "2026-01-01", "2026-11-25"),
        ("去年的体检结果", "2025-01-01", "2025-12-31"),
        ("что я решил в этом году", "2026-01-01", "2026-11-25"),
        ("отпуск в прошлом году", "2025-01-01", "2025-12-31"),
        # so many days ago is that day; weeks ago, the calendar week of it
        ("what did we discuss 3 days ago", "2026-11-22", "2026-11-22"),
        ("a couple of days ago", "2026-11-23", "2026-11-23"),
        ("the bug from two weeks ago", "2026-11-09", "2026-11-15"),
        ("三天前的会议", "2026-11-22", "2026-11-22"),
        ("两周前的决定", "2026-11-09", "2026-11-15"),
        ("一个星期前", "2026-11-16", "2026-11-22"),
        ("二十天前", "2026-11-05", "2026-11-05"),
        ("十五天前", "2026-11-10", "2026-11-10"),
        ("что обсуждали 3 дня назад", "2026-11-22", "2026-11-22"),
        ("пару дней назад", "2026-11-23", "2026-11-23"),
        ("неделю назад", "2026-11-16", "2026-11-22"),
        ("две недели назад", "2026-11-09", "2026-11-15"),
        # months ago: the calendar month of it
        ("what did we decide a month ago", "2026-10-01", "2026-10-31"),
        ("12 months ago", "2025-11-01", "2025-11-30"),
        ("三个月前的体检", "2026-08-01", "2026-08-31"),
        ("месяц назад", "2026-10-01", "2026-10-31"),
        ("пару месяцев назад", "2026-09-01", "2026-09-30"),
        ("пять месяцев назад", "2026-06-01", "2026-06-30"),
        # spoken forms: 礼拜 for 周, "на той неделе" for last week
        ("上礼拜的会议", "2026-11-16", "2026-11-22"),
        ("上个礼拜", "2026-11-16", "2026-11-22"),
        ("这个礼拜", "2026-11-23", "2026-11-25"),
        ("本星期的计划", "2026-11-23", "2026-11-25"),
        ("что решили на той неделе", "2026-11-16", "2026-11-22"),
        ("что я делал на неделе", "2026-11-23", "2026-11-25"),  # "на неделе": this week
        # the one before last: 上上周 is not 上周
        ("what happened the week before last", "2026-11-09", "2026-11-15"),
        ("что было на позапрошлой неделе", "2026-11-09", "2026-11-15"),
        ("上上周的会议", "2026-11-09", "2026-11-15"),
        ("上上周五", "2026-11-09", "2026-11-15"),  # its week: not last week's Friday
        ("上上个星期", "2026-11-09", "2026-11-15"),
        ("上上礼拜", "2026-11-09", "2026-11-15"),
        ("the month before last", "2026-09-01", "2026-09-30"),
        ("в позапрошлом месяце", "2026-09-01", "2026-09-30"),
        ("上上个月的账单", "2026-09-01", "2026-09-30"),
        ("the year before last", "2024-01-01", "2024-12-31"),
        ("в позапрошлом году", "2024-01-01", "2024-12-31"),
        ("前年的体检结果", "2024-01-01", "2024-12-31"),
        ("大前年", "2023-01-01", "2023-12-31"),
        # the same time last year: the weeks around today's date then, or that day
        ("what was I doing this time last year", "2025-11-11", "2025-12-09"),
        ("around the same time last year", "2025-11-11", "2025-12-09"),
        ("в это же время в прошлом году", "2025-11-11", "2025-12-09"),
        ("год назад в это же время", "2025-11-11", "2025-12-09"),
        ("去年这个时候", "2025-11-11", "2025-12-09"),
        ("去年同期的数据", "2025-11-11", "2025-12-09"),
        ("a year ago today", "2025-11-25", "2025-11-25"),
        ("ровно год назад", "2025-11-25", "2025-11-25"),
        ("去年的今天", "2025-11-25", "2025-11-25"),
        # years ago: the calendar year of it, as "last year" is
        ("where did I live two years ago", "2024-01-01", "2024-12-31"),
        ("a year ago", "2025-01-01", "2025-12-31"),
        ("два года назад", "2024-01-01", "2024-12-31"),
        ("год назад", "2025-01-01", "2025-12-31"),
        ("5 лет назад", "2021-01-01", "2021-12-31"),
        ("两年前的照片", "2024-01-01", "2024-12-31"),
        ("十年前", "2016-01-01", "2016-12-31"),
        # parts of a day are the day
        ("what did I eat last night", "2026-11-24", "2026-11-24"),
        ("昨晚的讨论", "2026-11-24", "2026-11-24"),
        ("что решили прошлой ночью", "2026-11-24", "2026-11-24"),
        ("the call this morning", "2026-11-25", "2026-11-25"),
        ("今晚的计划", "2026-11-25", "2026-11-25"),
    ],
)
def test_relative_dates_resolve_against_today(query: str, start: str, end: str) -> None:
    assert ranges(query) == [(start, end, False)]


@pytest.mark.parametrize(
    "query",
    [
        "what may happen",
        "March of the penguins",
        "dinner at 7 pm",
        "Postgres 16 upgrade",
        "мама сказала привет",
        "version 3 may break things",
        "may 3 people come along",
        "a 3 days trip to Lisbon",
        "前三天的日程",  # "the first three days"
        "3 дня в Казани",
        "1234天前",  # not a count the reader takes part of
        "3日前提交报告",  # "before the 3rd", not "3 days ago"
        "三月前完成",  # "before March": months are counted with 个
        "месяцев назад",  # not how many
        "много лет назад",  # "many years ago"
        "年前回家",  # "before the (lunar) new year", no count
        "上上下下",
    ],
)
def test_words_that_only_look_like_dates_are_left_alone(query: str) -> None:
    parsed = parse_query_dates(query, TODAY)
    assert parsed.ranges == ()
    assert parsed.rest == query


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        # a day named alone is the last such day before today (a Wednesday)
        ("what did we decide on Monday", "2026-11-23", "2026-11-23"),
        ("the review on Wednesday", "2026-11-18", "2026-11-18"),
        ("last Friday", "2026-11-20", "2026-11-20"),
        ("this past Sunday", "2026-11-22", "2026-11-22"),
        ("this Friday", "2026-11-27", "2026-11-27"),  # the current week's
        ("what did I do over the weekend", "2026-11-21", "2026-11-22"),
        ("last weekend", "2026-11-21", "2026-11-22"),
        ("this weekend", "2026-11-28", "2026-11-29"),
        ("что мы решили в понедельник", "2026-11-23", "2026-11-23"),
        ("что было во вторник", "2026-11-24", "2026-11-24"),
        ("звонок в среду", "2026-11-18", "2026-11-18"),
        ("в прошлую пятницу", "2026-11-20", "2026-11-20"),
        ("в прошлое воскресенье", "2026-11-22", "2026-11-22"),
        ("в эту субботу", "2026-11-28", "2026-11-28"),
        ("что я делал на выходных", "2026-11-21", "2026-11-22"),
        ("на прошлых выходных", "2026-11-21", "2026-11-22"),
        ("周一的会议", "2026-11-23", "2026-11-23"),
        ("星期二做了什么", "2026-11-24", "2026-11-24"),
        ("礼拜天", "2026-11-22", "2026-11-22"),
        ("周日", "2026-11-22", "2026-11-22"),
        # 上周 + a day: that day of the calendar week before this one
        ("上周五的决定", "2026-11-20", "2026-11-20"),
        ("上个星期一", "2026-11-16", "2026-11-16"),
        ("上星期天", "2026-11-22", "2026-11-22"),
        ("这周五", "2026-11-27", "2026-11-27"),
        ("上周末去了哪里", "2026-11-21", "2026-11-22"),
        ("周末", "2026-11-21", "2026-11-22"),
        # a few days ago: two to seven days back
        ("what did we discuss a few days ago", "2026-11-18", "2026-11-23"),
        ("the other day", "2026-11-18", "2026-11-23"),
        ("несколько дней назад", "2026-11-18", "2026-11-23"),
        ("на днях", "2026-11-18", "2026-11-23"),
        ("几天前的讨论", "2026-11-18", "2026-11-23"),
        ("前几天", "2026-11-18", "2026-11-23"),
        ("这几天在忙什么", "2026-11-19", "2026-11-25"),
        # a few weeks ago: the calendar weeks two to four back
        ("what did we decide a few weeks ago", "2026-10-26", "2026-11-15"),
        ("несколько недель назад", "2026-10-26", "2026-11-15"),
        ("几周前的会议", "2026-10-26", "2026-11-15"),
        ("前几周", "2026-10-26", "2026-11-15"),
        # since a day: from it to today
        ("what changed since Monday", "2026-11-23", "2026-11-25"),
        ("since last Friday", "2026-11-20", "2026-11-25"),
        ("since the weekend", "2026-11-21", "2026-11-25"),
        ("что изменилось с понедельника", "2026-11-23", "2026-11-25"),
        ("со среды", "2026-11-18", "2026-11-25"),
        ("с прошлой пятницы", "2026-11-20", "2026-11-25"),
        # the last such day, named as a subject or of one
        ("прошлая пятница", "2026-11-20", "2026-11-20"),
        ("заметки прошлого четверга", "2026-11-19", "2026-11-19"),
        ("что решили в прошлую среду", "2026-11-18", "2026-11-18"),
        ("周一以来的改动", "2026-11-23", "2026-11-25"),
        ("上周五以来", "2026-11-20", "2026-11-25"),
        # a weekday's: the last such day
        ("What was decided at Monday's meeting?", "2026-11-23", "2026-11-23"),
        ("Friday's deploy", "2026-11-20", "2026-11-20"),
        ("the weekend's plans", "2026-11-21", "2026-11-22"),
    ],
)
def test_days_of_the_week_and_a_few_days_ago(query: str, start: str, end: str) -> None:
    assert ranges(query) == [(start, end, False)]


@pytest.mark.parametrize(
    "query",
    [
        "Monday standup notes",  # a topic, not a day
        "every Monday we sync",
        "what happens on Mondays",
        "every Monday's standup",
        "с понедельника по пятницу в офисе",  # a schedule
        "выкатить со среды разработки",  # "from the development environment"
        "по понедельникам",
        "план на понедельник",  # a plan for the coming one
        "перенос в среду разработки",  # "into the environment"
        "в среду Python",
        "每周一开会",  # every Monday
        "一周一次",  # once a week
        "下周一",  # next week's: notes are not written ahead
        "in a few days",
    ],
)
def test_weekday_words_that_are_not_a_past_day(query: str) -> None:
    parsed = parse_query_dates(query, TODAY)
    assert parsed.ranges == ()
    assert parsed.rest == query


def test_chinese_words_that_start_with_a_weekday_numeral_stay_words() -> None:
    # 这周 is this week; 一直 ("all along"), 日程 ("schedule"), 天气 ("weather") stay
    this_week = [("2026-11-23", "2026-11-25", False)]
    for query, rest in (("这周一直很忙", "一直很忙"), ("这周日程", "日程"), ("这周天气", "天气")):
        assert ranges(query) == this_week
        assert parse_query_dates(query, TODAY).rest == rest


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # a day of the week next to a full date is counted from that date
        (
            "What did Joanna finish last Friday on 23 January, 2022?",
            [("2022-01-23", "2022-01-23", False), ("2022-01-21", "2022-01-21", False)],
        ),
        (
            "shown on the big screen on the Sunday before October 25, 2022",
            [("2022-10-25", "2022-10-25", False), ("2022-10-23", "2022-10-23", False)],
        ),
        (
            "over the weekend before 4th October, 2023",
            [("2023-10-04", "2023-10-04", False), ("2023-09-30", "2023-10-01", False)],
        ),
        (
            "plans on the Saturday after October 28, 2023",
            [("2023-10-28", "2023-10-28", False), ("2023-11-04", "2023-11-04", False)],
        ),
        (
            "что мы делали в субботу после 28 октября 2023",
            [("2023-10-28", "2023-10-28", False), ("2023-11-04", "2023-11-04", False)],
        ),
        (
            "в пятницу перед 23 января 2022 года",
            [("2022-01-23", "2022-01-23", False), ("2022-01-21", "2022-01-21", False)],
        ),
        (
            "2023年10月28日之后的周六",
            [("2023-10-28", "2023-10-28", False), ("2023-11-04", "2023-11-04", False)],
        ),
        (
            "2022年10月25日前的周日",
            [("2022-10-25", "2022-10-25", False), ("2022-10-23", "2022-10-23", False)],
        ),
        # a date apart from it is no anchor
        (
            "on Monday, and the launch on 3 March 2026",
            [("2026-03-03", "2026-03-03", False), ("2026-11-23", "2026-11-23", False)],
        ),
    ],
)
def test_a_weekday_next_to_a_full_date_counts_from_it(
    query: str, expected: list[tuple[str, str, bool]]
) -> None:
    assert ranges(query) == expected


@pytest.mark.parametrize(
    ("query", "expected", "rest"),
    [
        # the weekday names the date beside it; a note may say "Friday"
        (
            "What did I break on Friday 13 Feb?",
            ("2000-02-13", "2000-02-13", True),
            "What did I break on Friday ?",
        ),
        ("on Friday, 13 February 2026", ("2026-02-13", "2026-02-13", False), "on Friday,"),
        ("в пятницу, 13 февраля", ("2000-02-13", "2000-02-13", True), "в пятницу,"),
        ("2月13日（周五）做了什么", ("2000-02-13", "2000-02-13", True), "（周五）做了什么"),
        # a date without its year cannot be counted from
        ("on Monday before 3 March", ("2000-03-03", "2000-03-03", True), "on Monday before"),
    ],
)
def test_a_weekday_beside_a_date_it_names_stays_a_word(
    query: str, expected: tuple[str, str, bool], rest: str
) -> None:
    assert ranges(query) == [expected]
    assert parse_query_dates(query, TODAY).rest == rest


def test_the_weekend_ends_before_this_week_when_it_is_the_last_one() -> None:
    sunday = date(2026, 11, 29)
    assert [(r.start, r.end) for r in parse_query_dates("last weekend", sunday).ranges] == [
        (date(2026, 11, 21), date(2026, 11, 22))
    ]
    assert [(r.start, r.end) for r in parse_query_dates("over the weekend", sunday).ranges] == [
        (date(2026, 11, 28), date(2026, 11, 29))
    ]
    monday = date(2026, 11, 30)
    assert [(r.start, r.end) for r in parse_query_dates("on Monday", monday).ranges] == [
        (date(2026, 11, 23), date(2026, 11, 23))
    ]


def test_the_date_leaves_the_keyword_query() -> None:
    parsed = parse_query_dates("What did Nate do for Joanna on 25 May, 2022?", TODAY)
    assert "25" not in parsed.rest
    assert "May" not in parsed.rest
    assert "2022" not in parsed.rest
    assert "Nate" in parsed.rest
    assert "Joanna" in parsed.rest
    assert parse_query_dates("2022年5月25日的会议", TODAY).rest == "的会议"
    assert parse_query_dates("встреча 25 мая 2022 года", TODAY).rest == "встреча"
    assert parse_query_dates("what did we discuss 3 days ago", TODAY).rest == (
        "what did we discuss"
    )


def test_a_query_of_only_a_date_keeps_its_text_for_the_keyword_leg() -> None:
    parsed = parse_query_dates("2022-05-25", TODAY)
    assert parsed.ranges
    assert parsed.rest == "2022-05-25"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # neither number above 12: 4 March (American) and 3 April (elsewhere)
        ("the invoice of 3/4/2022", ["2022-03-04", "2022-04-03"]),
        ("счёт от 3/4/2022", ["2022-03-04", "2022-04-03"]),
        ("3/4/2022的发票", ["2022-03-04", "2022-04-03"]),
        ("the invoice of 31/2/2022", []),
        ("the invoice of 13/13/2022", []),
        ("the invoice of 0/4/2022", []),
    ],
)
def test_a_date_in_figures_either_way_is_both_days(query: str, expected: list[str]) -> None:
    found = ranges(query)
    assert [start for start, _, _ in found] == expected
    assert all(start == end and not any_year for start, end, any_year in found)
    if expected:
        assert "2022" not in parse_query_dates(query, TODAY).remainder


@pytest.mark.parametrize(
    "query", ["from 3/4/2022 to 5/6/2022", "с 3/4/2022 по 5/6/2022", "3/4/2022到5/6/2022"]
)
def test_a_span_between_dates_read_either_way_reads_both_ends_alike(query: str) -> None:
    # the American 4 March to 6 May, and elsewhere's 3 April to 5 June: not
    # one reading's start with the other's end
    assert ranges(query) == [
        ("2022-03-04", "2022-05-06", False),
        ("2022-04-03", "2022-06-05", False),
    ]


def test_impossible_dates_are_not_dates() -> None:
    assert ranges("2023-13-01") == []
    assert ranges("2023年13月") == [("2023-01-01", "2023-12-31", False)]  # the year stands
    # no 31st in February: what is left is the month the writer meant
    assert ranges("31 February 2023") == [("2023-02-01", "2023-02-28", False)]


def test_ranges_match_with_slack_after_the_end() -> None:
    day = DateRange(date(2022, 5, 25), date(2022, 5, 25))
    assert day.contains(date(2022, 5, 25))
    assert day.contains(date(2022, 5, 27))  # "yesterday I..." written two days later
    assert not day.contains(date(2022, 5, 24))
    assert not day.contains(date(2022, 6, 25))
    june = DateRange(date(2000, 6, 1), date(2000, 6, 30), any_year=True)
    assert june.contains(date(2023, 6, 14))
    assert june.contains(date(1999, 7, 2))
    assert not june.contains(date(2023, 8, 1))
    leap = DateRange(date(2000, 2, 29), date(2000, 2, 29), any_year=True)
    assert not leap.contains(date(2023, 3, 1))


@pytest.mark.parametrize(
    ("path", "heading", "expected"),
    [
        ("memory/2022-05-25.md", "", date(2022, 5, 25)),
        ("memory/locomo-2023-05-08.md", "anything", date(2023, 5, 8)),
        ("notes/trip.md", "Trip > Session 3 — 1:56 pm on 8 May, 2023", date(2023, 5, 8)),
        ("notes/trip.md", "# 2023-05-08", date(2023, 5, 8)),
        ("笔记.md", "会议 > 2022年5月25日", date(2022, 5, 25)),
        ("заметки.md", "Встреча 25 мая 2022", date(2022, 5, 25)),
        ("notes/trip.md", "Plans for June", None),
        ("notes/trip.md", "", None),
        ("memory/2022-13-45.md", "", None),
    ],
)
def test_memory_dates_come_from_the_name_or_the_heading(
    path: str, heading: str, expected: date | None
) -> None:
    assert memory_date(path, heading) == expected


def test_may_without_a_year_is_a_date_only_after_on() -> None:
    assert ranges("the talk on 25 May") == [("2000-05-25", "2000-05-25", True)]
    assert ranges("we met on May 5") == [("2000-05-05", "2000-05-05", True)]
    assert ranges("3 June") == [("2000-06-03", "2000-06-03", True)]


def test_relative_days_past_the_calendars_ends_are_no_dates() -> None:
    query = "last year, this weekend, on Sunday, 上周日, 3 months ago, last week"

    def spans(today: date) -> list[tuple[str, str]]:
        parsed = parse_query_dates(query, today)
        return [(r.start.isoformat(), r.end.isoformat()) for r in parsed.ranges]

    # 1 January of year 1 is a Monday: only this weekend is on the calendar
    assert spans(date.min) == [("0001-01-06", "0001-01-07")]
    # 31 December 9999 is a Friday: this weekend is not
    assert spans(date.max) == [
        ("9999-09-01", "9999-09-30"),
        ("9999-12-26", "9999-12-26"),
        ("9999-12-20", "9999-12-26"),
        ("9998-01-01", "9998-12-31"),
    ]


def test_numbers_in_chinese_numerals_that_are_no_whole_date_stay_words() -> None:
    for query in ("三日游去哪里", "三个月的计划", "二月三十日", "十一月的第三周之外"):
        found = parse_query_dates(query, TODAY)
        assert found.rest == query, query
    # a date alone keeps the words the person wrote for the keyword leg
    alone = parse_query_dates("十二月三十一日", TODAY)
    assert (alone.rest, alone.remainder) == ("十二月三十一日", "")
    assert parse_query_dates("十一月三日做了什么", TODAY).rest == "做了什么"


def test_a_weekday_as_the_subject_is_not_an_environment() -> None:
    assert ranges("прошлая среда разработки") == []


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        # TODAY is 25 November 2026
        ("what happened last March", "2026-03-01", "2026-03-31"),
        ("last December", "2025-12-01", "2025-12-31"),  # the last before this month
        ("last November", "2025-11-01", "2025-11-30"),
        ("this March", "2026-03-01", "2026-03-31"),
        ("what did we decide in March last year", "2025-03-01", "2025-03-31"),
        ("in March of this year", "2026-03-01", "2026-03-31"),
        ("in March the year before last", "2024-03-01", "2024-03-31"),
        ("去年3月的决定", "2025-03-01", "2025-03-31"),
        ("去年三月", "2025-03-01", "2025-03-31"),
        ("前年十二月", "2024-12-01", "2024-12-31"),
        ("今年的五月份", "2026-05-01", "2026-05-31"),
        ("что было в марте прошлого года", "2025-03-01", "2025-03-31"),
        ("в декабре позапрошлого года", "2024-12-01", "2024-12-31"),
    ],
)
def test_a_month_named_by_its_year_relative_to_today(query: str, start: str, end: str) -> None:
    """ "last March" was searched as words, "in March last year" read as any
    March or any day of last year, 去年3月 as all of last year (found by
    dogfooding)."""
    assert ranges(query) == [(start, end, False)]


def test_words_beside_a_month_name_that_are_no_date_stay_words() -> None:
    assert ranges("the last march of the band") == []
    assert ranges("this may break the build") == []
    assert ranges("last week") == [("2026-11-16", "2026-11-22", False)]
