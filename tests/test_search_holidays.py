"""Holidays in a query, in English, Russian and Chinese."""

from __future__ import annotations

from datetime import date

import pytest

from openmemoryd.search import holidays
from openmemoryd.search.dates import parse_query_dates
from openmemoryd.search.holidays import ANY_YEAR_SPAN
from openmemoryd.search.timeline import is_timeline_request

TODAY = date(2026, 11, 27)


def ranges(query: str, today: date = TODAY) -> list[tuple[str, str, bool]]:
    return [
        (r.start.isoformat(), r.end.isoformat(), r.any_year)
        for r in parse_query_dates(query, today).ranges
    ]


@pytest.mark.parametrize(
    ("query", "expected", "rest"),
    [
        (
            "What did we do over Christmas?",
            [("2000-12-24", "2000-12-26", True)],
            "What did we do over ?",
        ),
        ("gifts for Xmas", [("2000-12-24", "2000-12-26", True)], "gifts for"),
        ("Christmas Eve dinner", [("2000-12-24", "2000-12-24", True)], "dinner"),
        ("on Christmas Day", [("2000-12-25", "2000-12-25", True)], "on"),
        ("over the Christmas holidays", [("2000-12-24", "2000-12-26", True)], "over the"),
        (
            "what did I say at New Year",
            [("2000-12-31", "2000-12-31", True), ("2000-01-01", "2000-01-01", True)],
            "what did I say at",
        ),
        ("New Year's Eve party", [("2000-12-31", "2000-12-31", True)], "party"),
        ("New Year’s Day hike", [("2000-01-01", "2000-01-01", True)], "hike"),
        ("on Valentine's Day", [("2000-02-14", "2000-02-14", True)], "on"),
        ("costume for Halloween", [("2000-10-31", "2000-10-31", True)], "costume for"),
        (
            "fireworks on the Fourth of July",
            [("2000-07-04", "2000-07-04", True)],
            "fireworks on the",
        ),
        ("Independence Day barbecue", [("2000-07-04", "2000-07-04", True)], "barbecue"),
        (
            "что дарили на Новый год",
            [("2000-12-31", "2000-12-31", True), ("2000-01-01", "2000-01-01", True)],
            "что дарили на",
        ),
        ("на Рождество", [("2000-01-07", "2000-01-07", True)], "на"),
        ("в новогодние каникулы", [("2000-01-01", "2000-01-08", True)], "в"),
        ("на майских ездили на дачу", [("2000-05-01", "2000-05-10", True)], "на ездили на дачу"),
        ("майские праздники", [("2000-05-01", "2000-05-10", True)], ""),
        ("парад в День Победы", [("2000-05-09", "2000-05-09", True)], "парад в"),
        ("国庆去哪了", [("2000-10-01", "2000-10-07", True)], "去哪了"),
        ("这个国庆去哪", [("2000-10-01", "2000-10-07", True)], "这个 去哪"),
        ("十一假期去哪了", [("2000-10-01", "2000-10-07", True)], "假期去哪了"),
        ("五一假期去哪了", [("2000-05-01", "2000-05-05", True)], "假期去哪了"),
        ("元旦做了什么", [("2000-01-01", "2000-01-01", True)], "做了什么"),
        ("清明节回老家", [("2000-04-04", "2000-04-06", True)], "回老家"),
        ("双十一买了什么", [("2000-11-11", "2000-11-11", True)], "买了什么"),
        ("圣诞节礼物", [("2000-12-24", "2000-12-26", True)], "礼物"),
    ],
)
def test_a_fixed_holiday_without_a_year_is_any_years(
    query: str, expected: list[tuple[str, str, bool]], rest: str
) -> None:
    """The days it is kept, in every year, as "on 25 May" is; its words leave
    the keyword query."""
    assert ranges(query) == expected
    assert parse_query_dates(query, TODAY).remainder == rest


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did we cook for Thanksgiving 2024?", ("2024-11-28", "2024-12-01")),
        ("Thanksgiving Day 2022", ("2022-11-24", "2022-11-27")),
        ("on Christmas Eve 2023", ("2023-12-24", "2023-12-24")),
        ("the Christmas of 2023", ("2023-12-24", "2023-12-26")),
        ("for New Year 2024", ("2023-12-31", "2024-01-01")),  # the night into 2024
        ("at Easter 2024", ("2024-03-29", "2024-04-01")),  # Good Friday to Easter Monday
        ("over Chinese New Year 2024", ("2024-02-09", "2024-02-16")),  # 除夕 to 初六
        ("на Новый 2024 год", ("2023-12-31", "2024-01-01")),
        ("в Рождество 2023", ("2023-01-07", "2023-01-07")),
        ("на Пасху 2024 года", ("2024-05-05", "2024-05-05")),  # the Orthodox Sunday
        ("2024年春节", ("2024-02-09", "2024-02-16")),
        ("2023年的中秋节", ("2023-09-29", "2023-09-29")),
        ("2024年除夕", ("2024-02-09", "2024-02-09")),
        ("2025年端午节", ("2025-05-31", "2025-05-31")),
        ("去年中秋节吃了什么", ("2025-10-06", "2025-10-06")),
        ("前年春节", ("2024-02-09", "2024-02-16")),
        ("今年国庆", ("2026-10-01", "2026-10-07")),
    ],
)
def test_a_holiday_of_a_year(query: str, expected: tuple[str, str]) -> None:
    """With a year, or 去年 / 今年 / 前年, that year's: moving ones by their
    rule (Thanksgiving, Easter West and East, the Chinese calendar)."""
    assert ranges(query) == [(*expected, False)]


@pytest.mark.parametrize(
    ("query", "today", "expected"),
    [
        ("last Christmas", TODAY, ("2025-12-24", "2025-12-26")),
        ("this past Thanksgiving", TODAY, ("2025-11-27", "2025-11-30")),  # 2026's is under way
        ("last Thanksgiving", date(2026, 12, 1), ("2026-11-26", "2026-11-29")),
        ("this Easter", TODAY, ("2026-04-03", "2026-04-06")),
        ("в прошлый Новый год", TODAY, ("2025-12-31", "2026-01-01")),
        ("на прошлых майских", TODAY, ("2026-05-01", "2026-05-10")),
        ("на эту Пасху", TODAY, ("2026-04-12", "2026-04-12")),
    ],
)
def test_last_and_this_holiday(query: str, today: date, expected: tuple[str, str]) -> None:
    """ "Last" is the last one over before today; "this" is this year's."""
    assert ranges(query, today) == [(*expected, False)]


def test_a_moving_holiday_without_a_year_is_each_of_the_last_years() -> None:
    for query in ("what tradition do we keep during Thanksgiving?", "春节回老家了吗", "at Easter"):
        found = ranges(query)
        assert len(found) == ANY_YEAR_SPAN, query
        assert found[-1][0].startswith("2026"), query
        assert all(not any_year for _, _, any_year in found)
    assert ranges("春节回老家了吗")[-1] == ("2026-02-16", "2026-02-23", False)
    # one whose day this year is still ahead is listed up to last year's
    assert ranges("what did we do at Christmas", date(2026, 1, 5)) == [
        ("2000-12-24", "2000-12-26", True)
    ]
    assert ranges("during the Mid-Autumn Festival", date(2026, 9, 1))[-1][0].startswith("2025")


def test_since_a_holiday_is_since_its_last_one() -> None:
    assert ranges("since Chinese New Year") == [("2026-02-16", "2026-11-27", False)]
    assert ranges("what happened since Christmas") == [("2025-12-24", "2026-11-27", False)]
    assert ranges("after Thanksgiving") == [("2025-11-27", "2026-11-27", False)]
    assert ranges("что было после майских") == [("2026-05-01", "2026-11-27", False)]
    assert ranges("с Рождества") == [("2026-01-07", "2026-11-27", False)]
    # "the day after" counts from the holiday: its own days
    assert ranges("the day after Christmas") == [("2000-12-24", "2000-12-26", True)]
    assert ranges("国庆以来") == [("2026-10-01", "2026-11-27", False)]
    assert ranges("since Christmas Day") == [("2025-12-25", "2026-11-27", False)]


def test_from_one_holiday_to_another_is_the_days_between() -> None:
    assert ranges("what did we do between Christmas and New Year") == [
        ("2000-12-24", "2000-12-31", True),
        ("2000-01-01", "2000-01-01", True),
    ]
    assert ranges("from Halloween to Christmas") == [("2000-10-31", "2000-12-26", True)]
    assert ranges("from Christmas until New Year 2025") == [("2024-12-24", "2025-01-01", False)]
    # a moving holiday without a year is each year's: to that year's other end
    thanksgivings = [("2022-11-24", "2022-12-26"), ("2023-11-23", "2023-12-26")]
    thanksgivings += [("2024-11-28", "2024-12-26"), ("2025-11-27", "2025-12-26")]
    found = ranges("what did we do from Thanksgiving to Christmas")
    assert len(found) == 10
    assert [(start, end) for start, end, _ in found[-5:-1]] == thanksgivings
    assert ranges("between Easter and Thanksgiving 2024") == [("2024-03-29", "2024-12-01", False)]
    easter_to_thanksgiving = ranges("between Easter and Thanksgiving")
    assert easter_to_thanksgiving[-2:] == [
        ("2025-04-18", "2025-11-30", False),
        ("2026-04-03", "2026-11-29", False),
    ]
    assert ranges("from last Thanksgiving to Christmas") == [("2025-11-27", "2025-12-26", False)]
    # a year named at one end only: what is left of the other end is not kept
    assert ranges("from Thanksgiving 2024 to Easter") == [("2024-11-28", "2025-04-21", False)]
    # Russian: "между … и", "с … до / по"; one yearless day to each year of a moving holiday
    new_year_to_christmas = [
        ("2025-12-31", "2026-01-07", False),
        ("2000-01-01", "2000-01-07", True),
    ]
    assert ranges("что делали между Новым годом и Рождеством") == new_year_to_christmas
    assert ranges("с Нового года до Рождества") == new_year_to_christmas
    assert ranges("с Рождества по майские") == [("2000-01-07", "2000-05-10", True)]
    # two holidays named together are two, not a span; "до" alone is "before"
    assert [start for start, _, _ in ranges("на Новый год и Рождество ездили в Сочи")] == [
        "2000-12-31",
        "2000-01-01",
        "2000-01-07",
    ]
    assert ranges("до Рождества") == []
    spring = ranges("从元旦到春节")
    assert len(spring) == 10
    assert spring[-3:-1] == [
        ("2024-01-01", "2024-02-16", False),
        ("2025-01-01", "2025-02-04", False),
    ]
    # "and" or "to" before a bare name makes a date only after another holiday
    assert ranges("salt and Easter eggs") == []
    assert ranges("go to Easter mass") == []


@pytest.mark.parametrize(
    "query",
    [
        "Christmas tree ideas",
        "New Year resolutions",
        "Thanksgiving dinner recipes",
        "Easter eggs",
        "Halloween costumes",
        "с Новым годом",  # "с" and the instrumental wish it
        "с Пасхой",
        "с Рождеством",
        "поздравить с Днём Победы",
        "Пасха",  # a name alone: about the holiday, not its day
        "новый год начался",
        "清明上河图",
        "五一班的同学",
        "十一个人",
        "二十五一",
        "王国庆的电话是多少",  # a given name
        "张国庆",
    ],
)
def test_a_holiday_as_a_thing_is_not_a_date(query: str) -> None:
    assert ranges(query) == []


def test_a_holidays_name_is_not_read_as_its_month() -> None:
    """ "The Fourth of July" is one day, not July; 2023年春节 its festival, not the year."""
    assert ranges("on the Fourth of July") == [("2000-07-04", "2000-07-04", True)]
    assert ranges("2023年春节") == [("2023-01-21", "2023-01-28", False)]


def test_a_holiday_alone_is_a_timeline_request() -> None:
    for query in ("what did we do over Christmas", "что было на майских", "国庆做了什么"):
        assert is_timeline_request(parse_query_dates(query, TODAY)), query


@pytest.mark.parametrize("today", [date(1, 1, 1), date(1900, 2, 1), date(9999, 12, 31)])
def test_holidays_at_the_calendars_ends(today: date) -> None:
    """Before and past the Chinese calendar's table (1900-2099) and the
    proleptic calendar's ends: no error, only what can be known."""
    for query in (
        "last Christmas",
        "this Easter",
        "春节回老家了吗",
        "去年中秋节",
        "since Chinese New Year",
        "Lunar New Year 2099",
        "at Thanksgiving",
        "на Новый год",
        "for New Year 1900",
    ):
        parse_query_dates(query, today)


def test_every_holiday_has_the_words_that_let_its_patterns_run() -> None:
    """A query is matched against a holiday's patterns only if it holds one
    of its words: a holiday without any would never be read."""
    assert set(holidays._STEMS) == set(holidays._HOLIDAYS)
    assert {key for _, key, _ in holidays._PATTERNS} == set(holidays._HOLIDAYS)
    assert all(stem == stem.lower() for stems in holidays._STEMS.values() for stem in stems)
