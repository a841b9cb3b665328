"""The timeline path: a query for days and nothing else returns those
days' notes, newest first, in English, Chinese and Russian."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path

import apsw
import pytest

from openmemoryd.config import IndexSettings, SearchSettings
from openmemoryd.index import index_file
from openmemoryd.search import SearchContext, SearchQuery, run_search
from openmemoryd.search.dates import parse_query_dates
from openmemoryd.search.timeline import is_timeline_request
from openmemoryd.store import open_index
from openmemoryd.workspace import PathPolicy, init_workspace

TODAY = date(2026, 11, 25)  # a Wednesday
NOW = datetime(2026, 11, 25, 12, 0).timestamp()
CONTEXT = SearchContext(provider="none", model=None, stale=False)


@pytest.mark.parametrize(
    "query",
    [
        "today",
        "what did I do yesterday?",
        "notes from last week",
        "What happened on 25 May 2022?",
        "show me my notes from the last few days",
        "最近",
        "最近做了什么",
        "昨天",
        "上周的笔记",
        "2026年11月24日",
        "недавно",
        "что было на прошлой неделе",
        "что было на неделе",
        "что я делал вчера",
        "2026-11-24",
        # "at work" asks for nothing more, in each language
        "What happened at work on 14 May?",
        "5月14日工作上发生了什么？",
        "Что случилось на работе 14 мая?",
        # nor does asking politely, or for a reminder or a summary
        "please remind me what I did yesterday",
        "请帮我总结一下昨天",
        "请问昨天做了什么",
        "提醒我上周做了什么",
        "Напомни, что было вчера",
        "пожалуйста, покажи заметки за вчера",
        "можешь рассказать, что я делал на прошлой неделе?",
        "сводка за вчера",
        "what did I do 3 days ago",
        "三天前做了什么",
        "что я делал 3 дня назад",
        # a day of the week, the weekend, a few days ago
        "what did I do on Monday?",
        "what happened last weekend",
        "上周五做了什么",
        "周末",
        "что я делал в понедельник",
        "что было на выходных",
        "what did I do a few days ago",
        "前几天",
        "что было на днях",
        "what did I do a few weeks ago",
        "几周前做了什么",
        # the last days, spans, since, and what changed
        "what have I been working on lately",
        "что нового за последние дни",
        "what changed since Monday",
        "что изменилось с понедельника",
        "上周以来有什么变化",
        "notes from the past two weeks",
        "最近三天做了什么",
    ],
)
def test_queries_for_days_alone_take_the_timeline(query: str) -> None:
    assert is_timeline_request(parse_query_dates(query, TODAY))


@pytest.mark.parametrize(
    "query",
    [
        "what did Wei say about tea yesterday",
        "what did we discuss last week about the migration",
        "今天吃了什么",
        "昨天我们讨论了什么",
        "что Вэй сказал вчера про чай",
        "tea",
        "what happened",  # no day named
        "最近的数据库迁移",
        "昨天请假了吗",  # 请假, "taking leave", is a topic
        "what did Wei say on Monday about tea",
        "周一开会讨论了什么",
        "что Вэй сказал в понедельник про чай",
        "what changed in the billing service since Monday",
    ],
)
def test_queries_with_a_topic_of_their_own_do_not(query: str) -> None:
    assert not is_timeline_request(parse_query_dates(query, TODAY))


NOTES = {
    "memory/2026-11-25.md": "# 2026-11-25\n\n- Paired with Priya on the billing rollout\n",
    "memory/2026-11-24.md": "# 2026-11-24\n\n- Wei prefers oolong tea\n",
    "memory/2026-11-10.md": "# 2026-11-10\n\n- Вэй предпочитает созвоны по утрам\n",
    # dated by its heading, not its name
    "memory/standup.md": "# Standup, 24 November 2026\n\n- Kept the old invoice format\n",
    "MEMORY.md": "# Memory\n\n## Preferences\n\n- Dark mode everywhere\n",
}


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    ws = tmp_path / "ws"
    init_workspace(ws)
    (ws / "memory").mkdir(exist_ok=True)
    connection = open_index(tmp_path / "i.sqlite", workspace=ws).conn
    policy = PathPolicy(ws)
    for key, text in NOTES.items():
        (ws / key).write_text(text, "utf-8")
        index_file(connection, key, policy.resolve(key), IndexSettings())
    yield connection
    connection.close()


def search(conn: apsw.Connection, text: str, **settings: object) -> tuple[str, list[str]]:
    result = run_search(
        conn,
        SearchQuery(text, limit=20),
        SearchSettings(**settings),
        CONTEXT,
        now=NOW,  # type: ignore[arg-type]
    )
    return result.mode, [f"{h.path}:{h.snippet.splitlines()[-1]}" for h in result.results]


def test_yesterday_is_that_days_notes_by_file_name_or_heading(conn: apsw.Connection) -> None:
    for query in ("what did I do yesterday?", "вчера", "昨天做了什么"):
        assert search(conn, query) == (
            "timeline",
            [
                "memory/2026-11-24.md:- Wei prefers oolong tea",
                "memory/standup.md:- Kept the old invoice format",
            ],
        )


def test_recent_days_come_newest_first(conn: apsw.Connection) -> None:
    mode, hits = search(conn, "最近")
    assert mode == "timeline"
    days = [h.split(":")[0] for h in hits]
    assert days[0] == "memory/2026-11-25.md"
    assert "memory/2026-11-10.md" not in days  # older than the last seven days
    assert days.index("memory/2026-11-24.md") > 0


def test_a_day_with_no_notes_says_so(conn: apsw.Connection) -> None:
    result = run_search(conn, SearchQuery("2026-11-20"), SearchSettings(), CONTEXT, now=NOW)
    assert (result.mode, result.results, result.empty_reason) == ("timeline", (), "nothing_dated")


def test_a_query_with_a_topic_is_ranked_as_usual(conn: apsw.Connection) -> None:
    mode, hits = search(conn, "oolong tea yesterday")
    assert mode == "lexical"
    assert hits[0].startswith("memory/2026-11-24.md")


def test_the_timeline_can_be_switched_off(conn: apsw.Connection) -> None:
    mode, _ = search(conn, "yesterday", timeline=False)
    assert mode == "lexical"


def test_the_daemons_own_look_ups_never_take_the_timeline(conn: apsw.Connection) -> None:
    """forget("yesterday") must match lines by their words, not delete a day."""
    own = SearchQuery("yesterday", for_reader=False)
    assert run_search(conn, own, SearchSettings(), CONTEXT, now=NOW).mode == "lexical"
