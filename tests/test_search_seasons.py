"""Seasons in a query, in English, Chinese and Russian."""

from __future__ import annotations

from datetime import date

import pytest

from openmemoryd.search.dates import parse_query_dates
from openmemoryd.search.timeline import is_timeline_request

TODAY = date(2026, 11, 25)


def ranges(query: str, today: date = TODAY) -> list[tuple[str, str, bool]]:
    return [
        (r.start.isoformat(), r.end.isoformat(), r.any_year)
        for r in parse_query_dates(query, today).ranges
    ]


SUMMER_2023 = [("2023-06-01", "2023-08-31", False)]
WINTER_2023 = [("2023-01-01", "2023-02-28", False), ("2023-12-01", "2024-02-29", False)]


@pytest.mark.parametrize(
    ("query", "expected", "rest"),
    [
        (
            "What state did Joanna visit in summer 2021?",
            [("2021-06-01", "2021-08-31", False)],
            "What state did Joanna visit ?",
        ),
        (
            "In what country was Jolene during summer 2022?",
            [("2022-06-01", "2022-08-31", False)],
            "In what country was Jolene ?",
        ),
        ("the summer of 2023", SUMMER_2023, ""),
        ("spring 2024 trip", [("2024-03-01", "2024-05-31", False)], "trip"),
        ("fall 2023", [("2023-09-01", "2023-11-30", False)], ""),
        ("winter 2023", WINTER_2023, ""),
        ("летом 2023 года", SUMMER_2023, ""),
        ("что было зимой 2023", WINTER_2023, "что было"),
        ("осень 2023", [("2023-09-01", "2023-11-30", False)], ""),
        ("2023年夏天去了哪里", SUMMER_2023, "去了哪里"),
        ("2023年的冬天", WINTER_2023, ""),
        ("去年夏天", [("2025-06-01", "2025-08-31", False)], ""),
        ("前年秋天的照片", [("2024-09-01", "2024-11-30", False)], "的照片"),
    ],
)
def test_a_season_of_a_year(query: str, expected: list[tuple[str, str, bool]], rest: str) -> None:
    """Its three months; winter both as the year's January and February and
    as the winter the year's December begins."""
    assert ranges(query) == expected
    assert parse_query_dates(query, TODAY).remainder == rest


@pytest.mark.parametrize(
    ("query", "today", "expected"),
    [
        ("what did we do last summer", date(2026, 11, 25), ("2026-06-01", "2026-08-31")),
        ("what did we do last summer", date(2026, 7, 10), ("2025-06-01", "2025-08-31")),
        ("this past winter", date(2026, 11, 25), ("2025-12-01", "2026-02-28")),
        ("прошлым летом", date(2026, 11, 25), ("2026-06-01", "2026-08-31")),
        ("прошлой зимой", date(2026, 1, 15), ("2024-12-01", "2025-02-28")),
        ("this summer", date(2026, 11, 25), ("2026-06-01", "2026-08-31")),
        ("this winter", date(2026, 1, 15), ("2025-12-01", "2026-02-28")),
        ("this winter", date(2026, 11, 25), ("2026-12-01", "2027-02-28")),
        ("этим летом", date(2026, 11, 25), ("2026-06-01", "2026-08-31")),
        ("这个夏天", date(2026, 11, 25), ("2026-06-01", "2026-08-31")),
    ],
)
def test_last_and_this_season(query: str, today: date, expected: tuple[str, str]) -> None:
    """ "Last" is the last one over before today; "this" the one under way or
    this year's."""
    assert ranges(query, today) == [(*expected, False)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "When did Caroline go to a pride parade during the summer?",
            [("2000-06-01", "2000-08-31", True)],
        ),
        (
            "what did I read over the winter",
            [("2000-01-01", "2000-02-29", True), ("2000-12-01", "2000-12-31", True)],
        ),
        ("in the fall", [("2000-09-01", "2000-11-30", True)]),
        ("что я делал летом", [("2000-06-01", "2000-08-31", True)]),
        ("весной", [("2000-03-01", "2000-05-31", True)]),
        ("在夏天", [("2000-06-01", "2000-08-31", True)]),
        ("秋天的时候去了哪里", [("2000-09-01", "2000-11-30", True)]),
    ],
)
def test_a_season_of_any_year(query: str, expected: list[tuple[str, str, bool]]) -> None:
    assert ranges(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "summer clothes",
        "winter tyres",
        "What aspect of autumn does Andrew find beautiful?",
        "What did James enjoy doing on cold winter days?",
        "the fall of Rome",
        "in the fall of Rome",
        "лето было жарким",
        "зимние шины",
        "夏天的衣服",
        "冬天穿什么",
        "next summer",
    ],
)
def test_a_season_as_a_thing_is_not_a_date(query: str) -> None:
    assert ranges(query) == []


def test_a_season_alone_is_a_timeline_request() -> None:
    for query in ("what did we do last summer", "что было прошлой зимой", "去年夏天做了什么"):
        assert is_timeline_request(parse_query_dates(query, TODAY)), query


def test_since_a_season() -> None:
    assert ranges("since last summer") == [("2026-06-01", "2026-11-25", False)]


@pytest.mark.parametrize("today", [date(1, 1, 1), date(1, 3, 1), date(9999, 12, 31)])
def test_seasons_at_the_calendars_ends(today: date) -> None:
    for query in ("last winter", "this winter", "去年冬天", "winter 2023", "in the summer"):
        parse_query_dates(query, today)  # no error


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("last summer", [("2025-12-01", "2026-02-28", False)]),
        ("last winter", [("2026-06-01", "2026-08-31", False)]),
        ("winter 2023", [("2023-06-01", "2023-08-31", False)]),
        ("summer 2023", [("2023-01-01", "2023-02-28", False), ("2023-12-01", "2024-02-29", False)]),
        ("прошлым летом", [("2025-12-01", "2026-02-28", False)]),
        ("去年冬天", [("2025-06-01", "2025-08-31", False)]),
        ("this summer", [("2026-12-01", "2027-02-28", False)]),  # the coming one, in November
        (
            "during the summer",
            [("2000-01-01", "2000-02-29", True), ("2000-12-01", "2000-12-31", True)],
        ),
        ("весной 2024 года", [("2024-09-01", "2024-11-30", False)]),
    ],
)
def test_the_southern_hemispheres_seasons(
    query: str, expected: list[tuple[str, str, bool]]
) -> None:
    """`search.seasons = "south"`: summer is December to February, and it is
    the season read both ways across the new year."""
    found = parse_query_dates(query, TODAY, south=True).ranges
    assert [(r.start.isoformat(), r.end.isoformat(), r.any_year) for r in found] == expected
