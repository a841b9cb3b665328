"""A journal kept in one file, a few lines under each day's heading: a chunk
holds several days, and each is one it is about. A query naming one of them
finds the chunk by that day, and a query for days lists each day's own lines,
newest first, in English, Chinese and Russian."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path

import apsw
import pytest

from openmemoryd.config import IndexSettings, SearchSettings
from openmemoryd.index import index_file
from openmemoryd.search import SearchContext, SearchQuery, run_search
from openmemoryd.search.dates import memory_days, parse_query_dates
from openmemoryd.search.timeline import day_sections
from openmemoryd.store import dated_chunks, open_index
from openmemoryd.workspace import PathPolicy
from test_hit_sections import candidate  # every day of a file in one chunk

TODAY = date(2026, 11, 25)  # a Wednesday
NOW = datetime(2026, 11, 25, 12, 0).timestamp()
CONTEXT = SearchContext(provider="none", model=None, stale=False)

JOURNAL = """# Work journal

## 2026-11-16
Rotated the staging TLS certificates.

## 2026-11-17
Paired with Anna on the billing migration.

### Afternoon
Split the invoices table.

## 2026-11-18
Fixed the flaky upload test.

## Ideas
Try a bloom filter for the dedup step.

## 2026-11-20
Released 2.4.1 with the upload fix.
"""
RU = """# Дневник

## 23 ноября 2026
Починил отопление на даче.

## 24 ноября 2026 г.
Купил зимнюю резину.
"""
ZH = """# 日记

## 2026年11月23日
修好了打印机。

## 2026年11月24日 星期二
买了一个新键盘。
"""


def test_a_chunk_is_about_every_day_whose_heading_is_inside_it() -> None:
    whole = candidate(JOURNAL, "memory/journal.md")
    assert memory_days(whole.path, whole.heading, whole.inner_headings) == (
        date(2026, 11, 16),
        date(2026, 11, 17),  # once, though "### Afternoon" is under it too
        date(2026, 11, 18),
        date(2026, 11, 20),
    )
    for text, path, days in (
        (RU, "memory/дневник.md", (date(2026, 11, 23), date(2026, 11, 24))),
        (ZH, "memory/日记.md", (date(2026, 11, 23), date(2026, 11, 24))),
    ):
        c = candidate(text, path)
        assert memory_days(c.path, c.heading, c.inner_headings) == days


def test_a_daily_notes_name_dates_it_whatever_its_headings_say() -> None:
    note = "# Standup\n\n## 2026-11-20 recap\nShipped it.\n"
    c = candidate(note, "memory/2026-11-21.md")
    assert memory_days(c.path, c.heading, c.inner_headings) == (date(2026, 11, 21),)
    plain = candidate("# Notes\n\n## Ideas\nA bloom filter.\n", "notes.md")
    assert memory_days(plain.path, plain.heading, plain.inner_headings) == ()


def test_a_query_day_matches_a_chunk_by_any_of_its_days() -> None:
    whole = candidate(JOURNAL, "memory/journal.md")
    days = memory_days(whole.path, whole.heading, whole.inner_headings)
    on_the_18th = parse_query_dates("what did I fix on 18 November 2026?", TODAY)
    assert on_the_18th.names_any(days)
    assert on_the_18th.matches_any(days)
    assert not parse_query_dates("what did I fix on 19 November 2026?", TODAY).names_any(days)
    assert not parse_query_dates("what did I fix in October 2026?", TODAY).matches_any(days)


def test_a_chunks_days_are_cut_to_their_own_lines() -> None:
    sections = day_sections(candidate(JOURNAL, "memory/journal.md"))
    assert [(day.day, s.start_line, s.end_line, s.heading) for day, s in sections] == [
        (16, 3, 4, "Work journal > 2026-11-16"),
        (17, 6, 10, "Work journal > 2026-11-17"),  # its sub-section with it
        (18, 12, 13, "Work journal > 2026-11-18"),  # not "## Ideas" after it
        (20, 18, 19, "Work journal > 2026-11-20"),
    ]
    seventeenth = sections[1][1]
    assert seventeenth.text == (
        "## 2026-11-17\nPaired with Anna on the billing migration.\n\n"
        "### Afternoon\nSplit the invoices table."
    )
    assert seventeenth.inner_headings == ((9, "Work journal > 2026-11-17 > Afternoon"),)


def test_a_chunk_of_one_day_is_its_own_section() -> None:
    daily = candidate("# 2026-11-21\n\n## Standup\nShipped it.\n", "memory/2026-11-21.md")
    assert day_sections(daily) == [(date(2026, 11, 21), daily)]
    undated = candidate("# Notes\n\n## Ideas\nA bloom filter.\n", "notes.md")
    assert day_sections(undated) == []


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    connection = open_index(tmp_path / "i.sqlite", workspace=ws).conn
    policy = PathPolicy(ws)
    for key, text in (
        ("memory/journal.md", JOURNAL),
        ("memory/дневник.md", RU),
        ("memory/日记.md", ZH),
        ("memory/ideas.md", "# Ideas\n\n## Later\nA bloom filter.\n\n## More\nA trie.\n"),
    ):
        (ws / key).write_text(text, "utf-8")
        index_file(connection, key, policy.resolve(key), IndexSettings())
    yield connection
    connection.close()


def timeline(conn: apsw.Connection, query: str) -> list[tuple[str, int, int]]:
    result = run_search(conn, SearchQuery(query, limit=20), SearchSettings(), CONTEXT, now=NOW)
    assert result.mode == "timeline", query
    return [(h.path, h.start_line, h.end_line) for h in result.results]


def test_the_store_reads_chunks_dated_only_by_a_heading_inside(conn: apsw.Connection) -> None:
    paths = {chunk.path for chunk in dated_chunks(conn)}
    assert "memory/journal.md" in paths  # its first line's heading, "Work journal", has no day
    assert "memory/ideas.md" not in paths  # headings inside, none with a year


def test_a_day_inside_a_journal_lists_only_that_days_lines(conn: apsw.Connection) -> None:
    assert timeline(conn, "what did I do on 18 November?") == [("memory/journal.md", 12, 13)]
    both = [("memory/дневник.md", 6, 7), ("memory/日记.md", 6, 7)]
    assert timeline(conn, "что я делал 24 ноября?") == both
    assert timeline(conn, "11月24日做了什么") == both


def test_the_days_of_a_span_come_newest_first_each_with_its_own_lines(
    conn: apsw.Connection,
) -> None:
    # last week: 16-22 November
    assert timeline(conn, "what did I do last week?") == [
        ("memory/journal.md", 18, 19),
        ("memory/journal.md", 12, 13),
        ("memory/journal.md", 6, 10),
        ("memory/journal.md", 3, 4),
    ]
    assert timeline(conn, "что было на этой неделе") == [
        ("memory/дневник.md", 6, 7),
        ("memory/日记.md", 6, 7),
        ("memory/дневник.md", 3, 4),
        ("memory/日记.md", 3, 4),
    ]
