"""End to end with the real default embedder: journals kept in one file each,
a line or two under each day's heading (English, Russian and Chinese
dates), so each chunk holds several days. A day named in a question is
found in the middle of such a chunk, and a query for days lists each
day's own lines.

The days are counted back from the day the test runs, so the weekday a
query names is known.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, timedelta

import pytest

from conftest import Daemon, Env
from openmemoryd.config import IndexSettings
from openmemoryd.index.chunker import chunk_markdown
from test_e2e_semantic import serving_with_vectors
from test_e2e_weekdays import EN, RU, RU_MONTHS, ZH

pytestmark = pytest.mark.e2e

TODAY = date.today()
BOUGHT = TODAY - timedelta(days=2)  # the last such weekday before today
EN_DAYS = (
    "Rotated the staging TLS certificates.",
    "Paired with Anna on the billing migration.",
    "Fixed the flaky upload test: it raced the thumbnail worker.",
    "Dentist at nine, then reviewed Oleg's rate limiter.",
    "Released 2.4.1 with the upload fix.",
    "Wrote the postmortem for the outage.",
    "Planned December: search latency and the mobile login bug.",
    "Picked up a Keychron K3 keyboard at the mall.",
    "Called the landlord about the heating.",
)
RU_DAYS = (
    "Поменял масло в машине.",
    "Созвон с Олегом про ограничитель запросов.",
    "Починил отопление на даче.",
    "Разобрал старые счета за квартиру.",
    "Выпустили версию 2.4.1.",
    "Написал разбор инцидента.",
    "Планировал декабрь.",
    "Забрал зимнюю резину из шиномонтажа.",
    "Позвонил арендодателю про отопление.",
)
ZH_DAYS = (
    "换了车的机油。",
    "和奥列格讨论限流器。",
    "修好了打印机。",
    "整理了旧的水电账单。",
    "发布了 2.4.1 版本。",
    "写了故障复盘。",
    "规划了十二月的工作。",
    "在商场拿了一个新键盘。",
    "给房东打电话说暖气的事。",
)


def _days(lines: tuple[str, ...]) -> list[tuple[date, str]]:
    """The journal's days, oldest first (it is written by appending), the
    last one yesterday."""
    first = TODAY - timedelta(days=len(lines))
    return [(first + timedelta(days=n), line) for n, line in enumerate(lines)]


def _en(day: date) -> str:
    return day.isoformat()


def _ru(day: date) -> str:
    return f"{day.day} {RU_MONTHS[day.month - 1]} {day.year}"


def _zh(day: date) -> str:
    return f"{day.year}年{day.month}月{day.day}日"


JOURNALS = {
    "memory/journal.md": ("# Work journal", _en, EN_DAYS),
    "memory/дневник.md": ("# Дневник", _ru, RU_DAYS),
    "memory/日记.md": ("# 日记", _zh, ZH_DAYS),
}


def _journal(title: str, heading: object, lines: tuple[str, ...]) -> str:
    assert callable(heading)
    days = "".join(f"\n## {heading(day)}\n{line}\n" for day, line in _days(lines))
    return f"{title}\n{days}"


@pytest.fixture(scope="module")
def journals(module_env: Env) -> Iterator[Daemon]:
    env = module_env
    env.write_config("")  # the defaults, with the bundled local model
    (env.workspace / "memory").mkdir(parents=True)
    for path, (title, heading, lines) in JOURNALS.items():
        (env.workspace / path).write_text(_journal(title, heading, lines), "utf-8")
    with serving_with_vectors(env) as handle:
        yield handle


def _search(daemon: Daemon, query: str) -> dict[str, object]:
    result = daemon.cli("search", query, "--json", "--limit", "20")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _hits(reply: dict[str, object]) -> list[dict[str, object]]:
    return reply["results"]  # type: ignore[return-value]


def test_the_day_asked_about_is_inside_a_chunk_not_at_its_start() -> None:
    """What the rest rests on: with the daemon's chunk sizes, several days
    share a chunk and the day the questions name is not its first."""
    settings = IndexSettings()
    for title, heading, lines in JOURNALS.values():
        assert callable(heading)
        chunks = chunk_markdown(
            _journal(title, heading, lines),
            max_tokens=settings.chunk_tokens,
            overlap_tokens=settings.chunk_overlap,
        )
        holding = [c for c in chunks if f"## {heading(BOUGHT)}" in c.text]
        assert holding, title
        for chunk in holding:
            assert heading(BOUGHT) not in chunk.heading, (title, chunk)


def test_a_weekday_alone_lists_that_days_lines_in_each_journal(journals: Daemon) -> None:
    expected = {
        (path, f"## {heading(BOUGHT)}\n{dict(_days(lines))[BOUGHT]}")
        for path, (_, heading, lines) in JOURNALS.items()
        if callable(heading)
    }
    for query in (
        f"what did I do on {EN[BOUGHT.weekday()]}?",
        f"что я делал {RU[BOUGHT.weekday()]}?",
        f"{ZH[BOUGHT.weekday()]}做了什么",
    ):
        reply = _search(journals, query)
        assert reply["mode"] == "timeline", (query, reply)
        assert {(h["path"], h["snippet"]) for h in _hits(reply)} == expected, (query, reply)


def test_yesterday_comes_before_the_day_before_and_shows_only_its_own_lines(
    journals: Daemon,
) -> None:
    reply = _search(journals, "what happened in the last 3 days")
    assert reply["mode"] == "timeline", reply
    shown = [str(h["snippet"]).splitlines()[0] for h in _hits(reply)]
    assert shown[:3] == [f"## {heading(TODAY - timedelta(days=1))}" for heading in (_en, _ru, _zh)]
    assert len(shown) == 9, reply  # three days, three journals, one hit each
    for hit in _hits(reply):
        assert str(hit["snippet"]).count("## ") == 1, hit


@pytest.mark.parametrize(
    ("query", "path", "line"),
    [
        (f"What did I buy on {EN[BOUGHT.weekday()]}?", "memory/journal.md", EN_DAYS[7]),
        (f"Что я купил {RU[BOUGHT.weekday()]}?", "memory/дневник.md", RU_DAYS[7]),
        (f"{ZH[BOUGHT.weekday()]}买了什么", "memory/日记.md", ZH_DAYS[7]),
    ],
)
def test_a_question_naming_a_day_in_the_middle_of_a_chunk_is_answered(
    journals: Daemon, query: str, path: str, line: str
) -> None:
    """The note shares no word with the question ("picked up", not "buy"):
    the day of a heading inside the chunk is what answers it."""
    reply = _search(journals, query)
    assert reply["mode"] == "hybrid", (query, reply)
    found = [h for h in _hits(reply) if h["path"] == path and line in str(h["snippet"])]
    assert found, (query, reply)
