"""End to end with the real default embedder: a day of the week, the weekend,
"a few days ago", the last N days, a span between two dates, "since" a
date, seasons and holidays in a query, in three languages, read against
the daemon's today.

The daily notes are dated relative to the day the test runs, so the day
each query names is known: every note records one decision of Wei's, and
only the date tells them apart.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, timedelta

import pytest

from conftest import Daemon, Env
from test_e2e_semantic import serving_with_vectors

pytestmark = pytest.mark.e2e

TODAY = date.today()
DECISIONS = (
    "moved the billing service to Postgres 16",
    "switched CI from Jenkins to GitHub Actions",
    "kept the old invoice format for one more quarter",
    "dropped the Redis cache in front of the courier tracks",
    "turned on nightly backups of the staging database",
    "put the mobile release off by a week",
    "hired a contractor for the accessibility audit",
    "moved the team standup to 10:30",
    "archived the legacy PHP admin panel",
)
# a note for each of the last nine days: today - 1 ... today - 9
NOTES = {
    f"memory/{TODAY - timedelta(days=back)}.md": f"- Wei decided: {what}"
    for back, what in enumerate(DECISIONS, start=1)
}
EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
RU = (
    "в понедельник",
    "во вторник",
    "в среду",
    "в четверг",
    "в пятницу",
    "в субботу",
    "в воскресенье",
)
ZH = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
RU_SINCE = (
    "с понедельника",
    "со вторника",
    "со среды",
    "с четверга",
    "с пятницы",
    "с субботы",
    "с воскресенья",
)

EN_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
RU_MONTHS = (  # genitive: 3 марта
    "января",
    "февраля",
    "марта",
    "апреля",
    "мая",
    "июня",
    "июля",
    "августа",
    "сентября",
    "октября",
    "ноября",
    "декабря",
)


# notes of fixed past seasons: summer 2025 and its winter's January
SEASONS = {
    "memory/2025-07-15.md": "- Hiked the Tatra ridge with Ola",
    "memory/2025-01-20.md": "- Went skiing in Zakopane",
}


# notes of past holidays, one a language or two, none of them naming it
HOLIDAYS = {
    "memory/2024-12-25.md": "- Opened presents with the kids, roast goose for dinner",
    "memory/2024-11-29.md": "- Cooked a turkey with Ola's parents",
    "memory/2024-12-31.md": "- Встречали у Лены, салют в полночь",
    "memory/2024-05-03.md": "- Ездили на дачу, посадили картошку",
    "memory/2024-10-03.md": "- 和家人去杭州西湖玩了三天",
    "memory/2024-02-11.md": "- 回老家给爷爷奶奶拜年",
    "memory/2024-01-05.md": "- Катались на коньках в Парке Горького",
    # 3/4/2025 read the way most of the world writes it
    "memory/2025-04-03.md": "- Signed the lease for the new office",
    # a note of the year before last, whatever year the tests run in
    f"memory/{TODAY.year - 2}-03-20.md": "- Moved into the flat on Rua Augusta",
}


# notes with a date in their text, not in their name or heading, and without
UNDATED = {
    "memory/notes/deadlines.md": "# Deadlines\n\n"
    "- The TLS certificate renewal for api.ledgerly.io is due before 14 March\n"
    "- Продлить домен ledgerly.ru до 14 марта\n",
    "memory/notes/chores.md": "# Chores\n\n"
    "- The car service is due\n- The gas bill is due\n- The library books are due\n"
    "- Продлить страховку на машину\n- Продлить абонемент в бассейн\n"
    "- Продлить подписку на журнал\n",
}


@pytest.fixture(scope="module")
def dated(module_env: Env) -> Iterator[Daemon]:
    env = module_env
    env.write_config("")  # the defaults, with the bundled local model
    (env.workspace / "memory").mkdir(parents=True)
    for path, text in (NOTES | SEASONS | HOLIDAYS).items():
        (env.workspace / path).write_text(text + "\n")
    (env.workspace / "memory" / "notes").mkdir()
    for path, text in UNDATED.items():
        (env.workspace / path).write_text(text)
    with serving_with_vectors(env) as handle:
        yield handle


def _search(daemon: Daemon, query: str) -> dict[str, object]:
    result = daemon.cli("search", query, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _note(day: date) -> str:
    return f"memory/{day}.md"


def _assert_timeline(daemon: Daemon, queries: tuple[str, ...], expected: list[str]) -> None:
    """Each of *queries* is a timeline request answered by *expected*, in order."""
    for query in queries:
        reply = _search(daemon, query)
        assert reply["mode"] == "timeline", (query, reply)
        assert [h["path"] for h in reply["results"]] == expected, (query, reply)  # type: ignore[attr-defined]


def test_a_day_of_the_week_alone_lists_that_days_notes(dated: Daemon) -> None:
    day = TODAY - timedelta(days=3)  # the last such weekday before today
    queries = (
        f"what did I do on {EN[day.weekday()]}?",
        f"что я делал {RU[day.weekday()]}?",
        f"{ZH[day.weekday()]}做了什么",
    )
    _assert_timeline(dated, queries, [_note(day)])


def test_since_a_day_of_the_week_lists_the_days_from_it(dated: Daemon) -> None:
    day = TODAY - timedelta(days=3)
    queries = (
        f"what happened since {EN[day.weekday()]}?",
        f"что было {RU_SINCE[day.weekday()]}?",
        f"{ZH[day.weekday()]}以来做了什么",
    )
    _assert_timeline(dated, queries, [_note(TODAY - timedelta(days=back)) for back in (1, 2, 3)])


def test_the_last_weekend_lists_its_two_days(dated: Daemon) -> None:
    saturday = TODAY - timedelta(days=TODAY.weekday() + 2)  # of the week before this one
    queries = ("what happened last weekend", "что было на прошлых выходных", "上周末做了什么")
    _assert_timeline(dated, queries, [_note(saturday + timedelta(days=1)), _note(saturday)])


def test_a_question_naming_a_weekday_finds_that_days_note_first(dated: Daemon) -> None:
    """Every note is a decision of Wei's: the named day is what picks one."""
    for back in range(1, 7):  # each day of the last week but today
        day = TODAY - timedelta(days=back)
        for query in (
            f"What did Wei decide on {EN[day.weekday()]}?",
            f"Что Вэй (Wei) решил {RU[day.weekday()]}?",
            f"Wei {ZH[day.weekday()]}决定了什么？",
        ):
            reply = _search(dated, query)
            assert reply["mode"] == "hybrid", (query, reply)
            first = reply["results"][0]  # type: ignore[index]
            assert first["path"] == _note(day), (query, reply)


def test_a_few_days_ago_lists_two_to_seven_days_back(dated: Daemon) -> None:
    queries = ("what did I do a few days ago", "что было несколько дней назад", "前几天做了什么")
    _assert_timeline(dated, queries, [_note(TODAY - timedelta(days=back)) for back in range(2, 8)])


def test_a_date_no_note_is_of_is_searched_as_words(dated: Daemon) -> None:
    """No note is dated 14 March: read as a date it would lift nothing, so
    "14 March" is searched as words, and the note that says it comes before
    the one that matches the rest of the question alone."""
    for query in ("What is due before 14 March?", "Что продлить до 14 марта?"):
        reply = _search(dated, query)
        assert reply["mode"] == "hybrid", (query, reply)
        paths = [h["path"] for h in reply["results"]]  # type: ignore[attr-defined]
        assert paths[:2] == ["memory/notes/deadlines.md", "memory/notes/chores.md"], (query, reply)


def test_the_last_n_days_list_the_notes_up_to_today(dated: Daemon) -> None:
    queries = (
        "what happened in the last 3 days",
        "что было за последние три дня",
        "最近三天做了什么",
    )
    _assert_timeline(dated, queries, [_note(TODAY - timedelta(days=back)) for back in (1, 2, 3)])


def test_from_one_date_to_another_lists_the_days_between(dated: Daemon) -> None:
    """The first date without its year takes the second's."""
    first, last = TODAY - timedelta(days=6), TODAY - timedelta(days=4)
    queries = (
        f"what happened from {first.day} {EN_MONTHS[first.month - 1]} to"
        f" {last.day} {EN_MONTHS[last.month - 1]} {last.year}",
        f"что было с {first.day} {RU_MONTHS[first.month - 1]} по"
        f" {last.day} {RU_MONTHS[last.month - 1]} {last.year} года",
        f"{first.month}月{first.day}日到{last.year}年{last.month}月{last.day}日做了什么",
    )
    _assert_timeline(dated, queries, [_note(TODAY - timedelta(days=back)) for back in (4, 5, 6)])


def test_since_a_date_lists_the_days_from_it_to_today(dated: Daemon) -> None:
    """A date without its year is its last occurrence before today."""
    day = TODAY - timedelta(days=2)
    queries = (
        f"what happened since {day.day} {EN_MONTHS[day.month - 1]}",
        f"что было с {day.day} {RU_MONTHS[day.month - 1]}",
        f"{day.month}月{day.day}日以来做了什么",
    )
    _assert_timeline(dated, queries, [_note(TODAY - timedelta(days=back)) for back in (1, 2)])


def test_a_season_of_a_year_lists_its_notes(dated: Daemon) -> None:
    _assert_timeline(
        dated,
        ("what happened in summer 2025", "что было летом 2025 года", "2025年夏天做了什么"),
        ["memory/2025-07-15.md"],
    )
    _assert_timeline(
        dated,
        ("what did I do in the winter of 2025", "что было зимой 2025", "2025年冬天做了什么"),
        ["memory/2025-01-20.md"],
    )


def test_the_week_of_a_day_lists_that_weeks_notes(dated: Daemon) -> None:
    day = TODAY - timedelta(days=8)
    monday = day - timedelta(days=day.weekday())
    expected = [
        _note(TODAY - timedelta(days=back))
        for back in range(1, 10)
        if monday <= TODAY - timedelta(days=back) <= monday + timedelta(days=6)
    ]
    queries = (
        f"what happened the week of {EN_MONTHS[day.month - 1]} {day.day}, {day.year}",
        f"{day.year}年{day.month}月{day.day}日那周做了什么",
    )
    _assert_timeline(dated, queries, expected)


def _explained(daemon: Daemon, query: str) -> list[str]:
    """The header lines of `search --explain`."""
    result = daemon.cli("search", query, "--explain")
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line.startswith("# ")]


def test_explain_says_which_days_the_query_names(dated: Daemon) -> None:
    day = TODAY - timedelta(days=2)
    header = _explained(dated, f"What did Wei decide on {EN[day.weekday()]}?")
    assert f"# dates: {day} (notes of those days ranked higher)" in header, header
    header = _explained(dated, "what happened in the last 3 days")
    expected = f"# dates: {TODAY - timedelta(days=3)} to {TODAY} (their notes listed)"
    assert expected in header, header
    # no note is of 14 March: its words are searched instead
    header = _explained(dated, "What is due before 14 March?")
    assert "# dates: --03-14 (no note is of those days: searched as words)" in header, header
    reply = json.loads(
        dated.cli("search", "Что было летом 2025 года?", "--json", "--explain").stdout
    )
    assert reply["explain"]["dates"] == [
        {"type": "query_days", "start": "2025-06-01", "end": "2025-08-31"}
    ], reply["explain"]


def test_a_holiday_lists_the_notes_of_its_days(dated: Daemon) -> None:
    """Without a year, a fixed holiday is any year's and a moving one each of
    the last years'; with one, that year's."""
    for queries, expected in (
        (("what did we do over Christmas?", "圣诞节做了什么"), "memory/2024-12-25.md"),
        (("what happened at Thanksgiving 2024?",), "memory/2024-11-29.md"),
        (("что было на Новый год?",), "memory/2024-12-31.md"),
        (
            ("что делали на майских?", "что было в майские праздники 2024 года"),
            "memory/2024-05-03.md",
        ),
        (("国庆做了什么", "2024年国庆"), "memory/2024-10-03.md"),
        (("春节做了什么", "what happened over Chinese New Year 2024"), "memory/2024-02-11.md"),
    ):
        _assert_timeline(dated, queries, [expected])


def test_from_one_holiday_to_another_is_each_years_days_between(dated: Daemon) -> None:
    """A moving holiday without a year is each of the last years': from each
    year's Thanksgiving to that year's Christmas."""

    def thanksgiving(year: int) -> date:
        first = date(year, 11, 1)
        return first + timedelta(days=(3 - first.weekday()) % 7 + 21)

    spans = [(thanksgiving(y), date(y, 12, 26)) for y in range(TODAY.year - 9, TODAY.year + 1)]
    written = sorted(NOTES | SEASONS | HOLIDAYS, reverse=True)
    expected = [
        path
        for path in written
        if any(start <= date.fromisoformat(path[7:17]) <= end for start, end in spans)
    ]
    assert {"memory/2024-12-25.md", "memory/2024-11-29.md"} <= set(expected)
    _assert_timeline(dated, ("what did we do from Thanksgiving to Christmas?",), expected)


def test_between_two_holidays_in_russian_and_chinese(dated: Daemon) -> None:
    """между Новым годом и Рождеством is 1-7 January (and the night before);
    从元旦到春节 each year's 1 January to that year's Spring Festival."""

    def listed(query: str) -> list[str]:
        reply = _search(dated, query)
        assert reply["mode"] == "timeline", (query, reply)
        return [h["path"] for h in reply["results"]]  # type: ignore[attr-defined]

    for query in (
        "что делали между Новым годом и Рождеством?",
        "что было с Нового года до Рождества",
    ):
        paths = listed(query)
        assert "memory/2024-01-05.md" in paths, (query, paths)
        days = [date.fromisoformat(path[7:17]) for path in paths]
        assert all((d.month, d.day) == (12, 31) or (d.month == 1 and d.day <= 7) for d in days)
    paths = listed("从元旦到春节做了什么")
    assert {"memory/2024-01-05.md", "memory/2024-02-11.md", "memory/2025-01-20.md"} <= set(paths)
    assert all(path[12:14] in ("01", "02") for path in paths), paths


def test_a_question_naming_a_holiday_finds_its_note_first(dated: Daemon) -> None:
    """No word of the question is in the note: its date is what finds it."""
    for query, expected in (
        ("What did we eat for Christmas?", "memory/2024-12-25.md"),
        ("Где были на Новый год?", "memory/2024-12-31.md"),
        ("Что сажали на майских?", "memory/2024-05-03.md"),
        ("国庆假期怎么过的？", "memory/2024-10-03.md"),
        ("春节去看谁了？", "memory/2024-02-11.md"),
    ):
        reply = _search(dated, query)
        assert reply["mode"] == "hybrid", (query, reply)
        first = reply["results"][0]  # type: ignore[index]
        assert first["path"] == expected, (query, reply)
    header = _explained(dated, "What did we eat for Christmas?")
    assert "# dates: --12-24 to --12-26 (notes of those days ranked higher)" in header, header
    # a holiday as a thing is not its day
    assert not [h for h in _explained(dated, "Christmas tree ideas") if h.startswith("# dates")]


def test_a_date_in_figures_that_reads_either_way_lists_both_days(dated: Daemon) -> None:
    """3/4/2025 is 4 March in America and 3 April elsewhere: only the second
    has a note here, and both are the days asked about."""
    _assert_timeline(
        dated,
        ("what happened on 3/4/2025", "что было 3/4/2025", "3/4/2025做了什么"),
        ["memory/2025-04-03.md"],
    )
    header = _explained(dated, "what happened on 3/4/2025")
    assert "# dates: 2025-03-04, 2025-04-03 (their notes listed)" in header, header


def test_the_year_before_last_lists_its_notes(dated: Daemon) -> None:
    """前年 is two years back (上上周, 上上个月 likewise), not 上周 or 去年."""
    year = TODAY.year - 2
    every = NOTES | SEASONS | HOLIDAYS
    expected = sorted((path for path in every if path.startswith(f"memory/{year}-")), reverse=True)
    assert f"memory/{year}-03-20.md" in expected
    queries = (
        "what happened the year before last",
        "what happened two years ago",
        "что было в позапрошлом году",
        "前年做了什么",
        "两年前做了什么",
    )
    _assert_timeline(dated, queries, expected[:6])  # the newest six: the default limit


def test_a_part_of_a_year_lists_its_notes(dated: Daemon) -> None:
    """The end of 2024 is its last four months, not all of it."""
    expected = [
        "memory/2024-12-31.md",
        "memory/2024-12-25.md",
        "memory/2024-11-29.md",
        "memory/2024-10-03.md",
    ]
    queries = ("what happened at the end of 2024", "что было в конце 2024 года", "2024年底做了什么")
    _assert_timeline(dated, queries, expected)


def test_this_time_last_year_is_the_weeks_around_todays_date_then(dated: Daemon) -> None:
    try:
        then = TODAY.replace(year=TODAY.year - 1)
    except ValueError:  # 29 February
        then = TODAY.replace(year=TODAY.year - 1, day=28)
    weeks = f"{then - timedelta(days=14)} to {then + timedelta(days=14)}"
    for query in (
        "What was Wei deciding this time last year?",
        "Что Вэй (Wei) решал в это же время в прошлом году?",
        "Wei去年这个时候在决定什么？",
    ):
        header = _explained(dated, query)
        assert any(line.startswith(f"# dates: {weeks} (") for line in header), (query, header)
    header = _explained(dated, "What did Wei decide a year ago today?")
    assert any(line.startswith(f"# dates: {then} (") for line in header), header


def _zh_numeral(n: int) -> str:
    """3 → 三, 11 → 十一, 25 → 二十五 (up to 39: a month or a day)."""
    digits = "一二三四五六七八九"
    tens, units = divmod(n, 10)
    head = ("" if tens == 1 else digits[tens - 1]) + "十" if tens else ""
    return head + (digits[units - 1] if units else "")


def test_dates_written_as_people_write_them_name_their_day(dated: Daemon) -> None:
    """十一月三日 in Chinese numerals, 3-го ноября with its ordinal ending and
    прошлая пятница as a subject were searched as words."""
    day = TODAY - timedelta(days=3)
    queries = (
        f"{_zh_numeral(day.month)}月{_zh_numeral(day.day)}日做了什么",
        f"что было {day.day}-го {RU_MONTHS[day.month - 1]}?",
    )
    _assert_timeline(dated, queries, [_note(day)])
    for nominative, accusative in (
        ("прошлая среда", "в прошлую среду"),
        ("прошлая пятница", "в прошлую пятницу"),
        ("прошлая суббота", "в прошлую субботу"),
    ):
        reply = _search(dated, f"что было {accusative}")
        expected = [h["path"] for h in reply["results"]]  # type: ignore[attr-defined]
        assert len(expected) == 1, reply
        _assert_timeline(dated, (nominative,), expected)


def test_a_month_named_by_its_year_relative_to_today_finds_its_note(dated: Daemon) -> None:
    """前年3月 and "в марте позапрошлого года" were read as the whole year
    before last, or as any March of any year and that year both: the note
    of that March is now what they read, and it comes first."""
    year = TODAY.year - 2
    for query in (
        "前年3月 Rua Augusta",
        "Rua Augusta в марте позапрошлого года",
        "Rua Augusta in March the year before last",
    ):
        result = json.loads(dated.cli("search", "--explain", "--json", query).stdout)
        assert result["explain"]["dates"] == [
            {"type": "query_days", "start": f"{year}-03-01", "end": f"{year}-03-31"}
        ], (query, result)
        paths = [h["path"] for h in result["results"]]
        assert paths[:1] == [f"memory/{year}-03-20.md"], (query, result)
