"""Spans of days in a query: the last N days, from one date to another,
since a date, the first or last weeks of a month, and dates written with
numbers, in English, Chinese and Russian."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openmemoryd.search.dates import memory_date, parse_query_dates
from openmemoryd.search.timeline import is_timeline_request

TODAY = date(2026, 11, 25)  # a Wednesday


def ranges(query: str, today: date = TODAY) -> list[tuple[str, str, bool]]:
    return [
        (r.start.isoformat(), r.end.isoformat(), r.any_year)
        for r in parse_query_dates(query, today).ranges
    ]


@pytest.mark.parametrize(
    ("query", "start"),
    [
        ("what did we decide in the last 3 days", "2026-11-22"),
        ("what happened over the past two weeks", "2026-11-11"),
        ("notes from the past week", "2026-11-18"),
        ("in the last month", "2026-10-25"),
        ("errors in the past 24 hours", "2026-11-24"),
        ("the past 36 hours", "2026-11-23"),
        ("the last couple of days", "2026-11-23"),
        ("the past few weeks", "2026-11-04"),
        ("over the last 2 years", "2024-11-25"),
        ("что было за последние три дня", "2026-11-22"),
        ("за последнюю неделю", "2026-11-18"),
        ("последние 2 месяца", "2026-09-25"),
        ("за последние сутки", "2026-11-24"),
        ("за последний день", "2026-11-24"),
        ("за прошедшую неделю", "2026-11-18"),
        ("最近三天做了什么", "2026-11-22"),
        ("过去一周", "2026-11-18"),
        ("近三个月的账单", "2026-08-25"),
        ("过去24小时", "2026-11-24"),
        ("这两天在忙什么", "2026-11-23"),
    ],
)
def test_the_last_n_days_run_up_to_today(query: str, start: str) -> None:
    assert ranges(query) == [(start, "2026-11-25", False)]


@pytest.mark.parametrize(
    "query",
    ["what have I been working on lately", "что нового за последние дни", "в последнее время"],
)
def test_lately_is_recently(query: str) -> None:
    """How many days is not said: the last seven, as "recently"."""
    assert ranges(query) == [("2026-11-19", "2026-11-25", False)]


def test_a_month_back_from_a_longer_month_ends_on_the_shorter_ones_last_day() -> None:
    assert ranges("in the last month", date(2026, 3, 31)) == [("2026-02-28", "2026-03-31", False)]
    assert ranges("the last 2 years", date(2028, 2, 29)) == [("2026-02-28", "2028-02-29", False)]


@pytest.mark.parametrize(
    "query",
    [
        "the last day before half-term",  # a day of its own
        "последний день отпуска",
        "последнюю неделю перед отпуском",
        "将近三个月",  # nearly three months
        "这一天",  # this very day
        "the last two weeks of the sprint",
    ],
)
def test_a_last_that_is_not_up_to_today(query: str) -> None:
    assert all(end != "2026-11-25" or start == end for start, end, _ in ranges(query))


@pytest.mark.parametrize(
    ("query", "expected", "rest"),
    [
        ("what broke 3-5 March", ("2000-03-03", "2000-03-05", True), "what broke"),
        ("from 3 to 5 March 2026", ("2026-03-03", "2026-03-05", False), ""),
        ("between the 3rd and the 5th of March", ("2000-03-03", "2000-03-05", True), ""),
        ("trip March 3-5", ("2000-03-03", "2000-03-05", True), "trip"),
        ("from March 3 to 5, 2025", ("2025-03-03", "2025-03-05", False), ""),
        ("from 3 to 5 May", ("2000-05-03", "2000-05-05", True), ""),
        ("что сломалось с 3 по 5 марта", ("2000-03-03", "2000-03-05", True), "что сломалось"),
        ("отпуск 3–5 мая 2025 года", ("2025-05-03", "2025-05-05", False), "отпуск"),
        ("между 3 и 5 марта", ("2000-03-03", "2000-03-05", True), ""),
        ("3月3日到5日做了什么", ("2000-03-03", "2000-03-05", True), "做了什么"),
        ("2026年3月3日至5日的会议", ("2026-03-03", "2026-03-05", False), "的会议"),
    ],
)
def test_days_of_one_month(query: str, expected: tuple[str, str, bool], rest: str) -> None:
    """Both ends in one month: the days from the first to the last."""
    assert ranges(query) == [expected]
    assert parse_query_dates(query, TODAY).remainder == rest


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("3-5 may be enough", []),  # "may" the verb
        ("3 and 5 March", [("2000-03-05", "2000-03-05", True)]),  # "and" needs "between"
        ("от 3 и 5 марта", [("2000-03-05", "2000-03-05", True)]),  # "и" needs "между"
        ("5-3 March", [("2000-03-03", "2000-03-03", True)]),  # backwards: not a span
    ],
)
def test_what_is_not_a_span_of_one_month(query: str, expected: list[tuple[str, str, bool]]) -> None:
    assert ranges(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did I do from 3 March to 5 April?", ("2000-03-03", "2000-04-05", True)),
        ("с 3 марта по 5 апреля", ("2000-03-03", "2000-04-05", True)),
        ("3月3日到4月5日", ("2000-03-03", "2000-04-05", True)),
        ("from 2026-03-03 to 2026-03-09", ("2026-03-03", "2026-03-09", False)),
        # the side without a year takes the other's
        (
            "Where was John between August 11 and August 15 2023?",
            ("2023-08-11", "2023-08-15", False),
        ),
        ("from 20 December 2025 to 3 January", ("2025-12-20", "2026-01-03", False)),
        ("from 20 December to 3 January 2026", ("2025-12-20", "2026-01-03", False)),
        # two without: the last such span before today
        ("from 28 December to 3 January", ("2025-12-28", "2026-01-03", False)),
        ("from March until June", ("2000-03-01", "2000-06-30", True)),
        ("from last Monday to yesterday", ("2026-11-23", "2026-11-24", False)),
        ("between yesterday and today", ("2026-11-24", "2026-11-25", False)),
    ],
)
def test_two_dates_joined_are_one_span(query: str, expected: tuple[str, str, bool]) -> None:
    assert ranges(query) == [expected]


def test_two_dates_side_by_side_stay_two_days() -> None:
    assert ranges("yesterday and today") == [
        ("2026-11-24", "2026-11-24", False),
        ("2026-11-25", "2026-11-25", False),
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what did we ship the week of March 4, 2026?", ("2026-03-02", "2026-03-08", False)),
        ("week of 2026-11-23", ("2026-11-23", "2026-11-29", False)),
        ("2026年3月4日那周做了什么", ("2026-03-02", "2026-03-08", False)),
        ("2026年3月4日所在的那个星期", ("2026-03-02", "2026-03-08", False)),
        # without a year its weekday is not known: the days around it
        ("the week of 4 March", ("2000-03-01", "2000-03-07", True)),
        ("the week of 2 January", ("2000-01-01", "2000-01-05", True)),
        ("since the week of March 4, 2026", ("2026-03-02", "2026-11-25", False)),
    ],
)
def test_the_week_of_a_day(query: str, expected: tuple[str, str, bool]) -> None:
    assert ranges(query) == [expected]


def test_the_week_of_a_day_runs_across_the_years_end() -> None:
    assert ranges("the week of 2 January 1970") == [("1969-12-29", "1970-01-04", False)]


def test_the_week_of_a_day_past_the_calendars_end_is_that_day() -> None:
    last = date(9999, 12, 31)
    assert ranges("the week of today", last) == [("9999-12-31", "9999-12-31", False)]


@pytest.mark.parametrize(
    ("query", "start", "rest"),
    [
        ("what changed since 3 March", "2026-03-03", "what changed"),
        ("what happened after 3 March 2025", "2025-03-03", "what happened"),
        ("since 1 December", "2025-12-01", ""),  # its last 1 December before today
        ("what did we do since March", "2026-03-01", "what did we do"),
        ("since 2024", "2024-01-01", ""),
        ("since yesterday", "2026-11-24", ""),
        ("since last week", "2026-11-16", ""),
        ("что изменилось с 3 марта", "2026-03-03", "что изменилось"),
        ("начиная с 3 марта", "2026-03-03", ""),
        ("после 3 марта", "2026-03-03", ""),
        ("с 2024 года", "2024-01-01", ""),
        ("с прошлой недели", "2026-11-16", ""),
        ("3月3日以来做了什么", "2026-03-03", "做了什么"),
        ("3月3日起", "2026-03-03", ""),
        ("自从3月3日", "2026-03-03", ""),
        ("从3月3日开始", "2026-03-03", "从"),
        ("上周以来", "2026-11-16", ""),
        ("去年以来", "2025-01-01", ""),
    ],
)
def test_since_a_date_runs_to_today(query: str, start: str, rest: str) -> None:
    assert ranges(query) == [(start, "2026-11-25", False)]
    assert parse_query_dates(query, TODAY).remainder == rest


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # a day of the week counted from the date, as before
        (
            "What did they plan to do on the Saturday after October 28, 2023?",
            [("2023-10-28", "2023-10-28", False), ("2023-11-04", "2023-11-04", False)],
        ),
        (
            "в субботу после 28 октября 2023",
            [("2023-10-28", "2023-10-28", False), ("2023-11-04", "2023-11-04", False)],
        ),
        (
            "2023年10月28日之后的周六",
            [("2023-10-28", "2023-10-28", False), ("2023-11-04", "2023-11-04", False)],
        ),
        ("plans for the Saturday after 28 October", [("2000-10-28", "2000-10-28", True)]),
        ("the day after 3 March", [("2000-03-03", "2000-03-03", True)]),
        ("на следующий день после 3 марта", [("2000-03-03", "2000-03-03", True)]),
        ("3月3日起床后", [("2000-03-03", "2000-03-03", True)]),  # 起床: got up
        ("после обеда", []),
        ("сравнить с прошлой неделей", []),  # "with last week"
        ("since 3 December 2026", [("2026-12-03", "2026-12-03", False)]),  # ahead of today
    ],
)
def test_what_is_not_since(query: str, expected: list[tuple[str, str, bool]]) -> None:
    assert ranges(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "Where was Dave in the last two weeks of August 2023?",
            ("2023-08-18", "2023-08-31", False),
        ),
        ("the first week of March", ("2000-03-01", "2000-03-07", True)),
        ("the last day of February", ("2000-02-29", "2000-02-29", True)),
        ("the first 3 days of May 2025", ("2025-05-01", "2025-05-03", False)),
        ("последние две недели августа", ("2000-08-18", "2000-08-31", True)),
        ("в первую неделю марта 2026 года", ("2026-03-01", "2026-03-07", False)),
        ("8月最后两周", ("2000-08-18", "2000-08-31", True)),
        ("3月第二周", ("2000-03-08", "2000-03-14", True)),
        ("2026年3月头三天", ("2026-03-01", "2026-03-03", False)),
    ],
)
def test_the_first_or_last_days_of_a_month(query: str, expected: tuple[str, str, bool]) -> None:
    assert ranges(query) == [expected]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("3月第五周", [("2000-03-29", "2000-03-31", True)]),  # what is left of it
        ("3月第六周", []),  # past the month's end
        ("the first 40 days of March", [("2000-03-01", "2000-03-31", True)]),  # March, then
        ("3月前两周", []),  # "two weeks before March" as much as its first two
    ],
)
def test_edges_past_a_month_or_before_it(query: str, expected: list[tuple[str, str, bool]]) -> None:
    assert ranges(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("дедлайн 14.03.2026", [("2026-03-14", "2026-03-14", False)]),
        ("встреча 03.03.2026 г.", [("2026-03-03", "2026-03-03", False)]),
        ("on 14/3/2026", [("2026-03-14", "2026-03-14", False)]),
        ("on 3/14/2026", [("2026-03-14", "2026-03-14", False)]),
        ("on 3/3/2026", [("2026-03-03", "2026-03-03", False)]),
        # the 3rd of April or March the 4th: both
        ("on 3/4/2026", [("2026-03-04", "2026-03-04", False), ("2026-04-03", "2026-04-03", False)]),
        ("ip 10.0.0.1", []),
    ],
)
def test_dates_written_in_numbers(query: str, expected: list[tuple[str, str, bool]]) -> None:
    assert ranges(query) == expected


def test_a_heading_with_a_dotted_date_dates_its_chunk() -> None:
    assert memory_date("MEMORY.md", "Встречи > 03.03.2026") == date(2026, 3, 3)
    assert memory_date("MEMORY.md", "Встречи > 3/4/2026") is None


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("大前天", "2026-11-22", "2026-11-22"),  # three days back, not 前天 with 大 left
        ("за прошлый месяц", "2026-10-01", "2026-10-31"),
        ("с прошлого месяца", "2026-10-01", "2026-11-25"),
        ("за эту неделю", "2026-11-23", "2026-11-25"),
        ("за прошлый год", "2025-01-01", "2025-12-31"),
    ],
)
def test_more_relative_forms(query: str, start: str, end: str) -> None:
    assert ranges(query) == [(start, end, False)]


@pytest.mark.parametrize(
    "query",
    [
        "what happened in the last 3 days",
        "что было за последние три дня",
        "最近三天做了什么",
        "what happened since 3 March",
        "что было с 3 по 5 марта",
        "3月3日到5日做了什么",
    ],
)
def test_a_span_alone_is_a_timeline_request(query: str) -> None:
    assert is_timeline_request(parse_query_dates(query, TODAY))


_WORDS = (
    "from", "to", "between", "and", "since", "after", "the", "last", "past", "first", "of",
    "3", "5", "14", "2026", "March", "May", "week", "weeks", "days", "hours", "two", "few",
    "yesterday", "Monday", "с", "по", "до", "после", "последние", "три", "дня", "марта",
    "недели", "за", "最近", "过去", "三天", "3月", "3日", "到", "5日", "以来", "起", "第", "周",
    "最后", "-", "–", "3.03.2026", "3/14/2026", "14/3/2026", "summer", "winter", "this",
    "летом", "зимой", "прошлой", "夏天", "冬天", "去年", "在", "2023年",
    "on", "over", "Christmas", "Eve", "New", "Year's", "Thanksgiving", "Easter", "Chinese",
    "на", "Новый", "год", "майских", "Пасху", "Рождества", "春节", "国庆", "中秋", "除夕",
    "before", "year", "years", "ago", "time", "end", "early", "назад", "года", "позапрошлой",
    "неделе", "конце", "прошлого", "месяца", "上上周", "上上个月", "前年", "两年前", "年底",
    "本月", "初", "同期", "今天", "3/4/2026",
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    words=st.lists(st.sampled_from(_WORDS), max_size=10),
    today=st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31)),
)
def test_any_mix_of_date_words_parses_on_any_day(words: list[str], today: date) -> None:
    """Never raises, even at the calendar's ends (and the Chinese calendar's,
    1900-2099), and every range runs forward."""
    parsed = parse_query_dates(" ".join(words), today)
    assert all(r.start <= r.end for r in parsed.ranges)
