"""The keyword leg's best rows: the same as FTS5's own full sort, filters
and all, however it gets them.

`store.reads.lexical_candidates` takes the best rows with a bounded
``ORDER BY bm25(...) LIMIT`` and falls back to FTS5's full ``ORDER BY
rank`` sort only when a filter drops too many of them. These tests hold it
to a reference written the plain way, on a real index of generated English
and Chinese notes plus a handful of transcript chunks of two agents (a
filter on those drops almost every one of the best rows, so the fallback
runs).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
import trio

from bench.corpus import generate_workspace, sample_queries
from openmemoryd.config import SearchSettings
from openmemoryd.engine.keyword_parts import keyword_leg
from openmemoryd.index.chunker import chunk_markdown
from openmemoryd.index.indexer import sha256_hex
from openmemoryd.search.pipeline import SearchQuery
from openmemoryd.store import (
    ChunkRow,
    FileState,
    RowidRange,
    highest_chunk_id,
    lexical_candidates,
    open_index,
    reads,
    replace_file,
)
from openmemoryd.store.schema import KEYWORD_RANK_FUNCTION
from openmemoryd.text import fts_match_expression, query_terms

pytestmark = pytest.mark.unit

_TRANSCRIPT = [
    ("scout", "Deploy review: the release owner signed off the rollback plan."),
    ("scout", "部署 评审：发布 负责人 同意了 回滚 方案。"),
    ("quill", "Customer feedback on the search latency alert, owner Rosa."),
]


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[apsw.Connection]:
    """~1,200 memory chunks and three transcript chunks of two agents."""
    root = tmp_path_factory.mktemp("lexical")
    workspace = root / "ws"
    generate_workspace(workspace, 1200, seed=11, needles=0)
    connection = open_index(root / "index.sqlite", workspace=workspace).conn
    for path in sorted(workspace.rglob("*.md")):
        text = path.read_text("utf-8")
        rows = [
            ChunkRow(c.start_line, c.end_line, c.heading, c.text, sha256_hex(c.text.encode()))
            for c in chunk_markdown(text)
        ]
        key = str(path.relative_to(workspace))
        replace_file(connection, FileState(key, "memory", sha256_hex(text.encode()), 1, 1), rows)
    for n, (agent, line) in enumerate(_TRANSCRIPT):
        row = ChunkRow(1, 1, "", line, sha256_hex(line.encode()), agent=agent)
        state = FileState(f"sessions/{agent}-{n}.jsonl", "sessions", "h", 1, 1)
        replace_file(connection, state, [row])
    yield connection
    connection.close()


def _reference(
    conn: apsw.Connection,
    match: str,
    limit: int,
    sources: list[str] | None = None,
    agent: str | None = None,
) -> list[tuple[int, float]]:
    """The plain way: join every match, filter, let FTS5 sort by its rank."""
    sql = (
        "SELECT c.id, f.rank FROM chunks_fts AS f JOIN chunks AS c ON c.id = f.rowid "
        "WHERE chunks_fts MATCH ?"
    )
    args: list[object] = [match]
    if sources:
        sql += f" AND c.source IN ({', '.join('?' * len(sources))})"
        args.extend(sources)
    if agent is not None:
        sql += " AND c.agent = ?"
        args.append(agent)
    sql += " ORDER BY f.rank LIMIT ?"
    args.append(limit)
    return [(int(i), float(r)) for i, r in conn.execute(sql, args)]


def _assert_same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    """Same ranks in the same order; the same rows except among rows tied
    with the last one (either may be cut)."""
    assert [pytest.approx(r, rel=1e-12) for _, r in got] == [r for _, r in want]
    if want:
        last = want[-1][1]
        assert {i for i, r in got if r != last} == {i for i, r in want if r != last}


def _matches() -> list[str]:
    found = [fts_match_expression(query_terms(q)) for q in sample_queries(60, seed=5)]
    return [m for m in found if m is not None]


def test_the_configured_rank_is_the_explicit_bm25(conn: apsw.Connection) -> None:
    for match in _matches()[:10]:
        rows = list(
            conn.execute(
                f"SELECT rank, {KEYWORD_RANK_FUNCTION} FROM chunks_fts WHERE chunks_fts MATCH ?",
                (match,),
            )
        )
        assert rows
        assert all(configured == explicit for configured, explicit in rows)


@pytest.mark.parametrize("limit", [1, 6, 24, 200])
def test_unfiltered_best_rows_are_fts5s_own(conn: apsw.Connection, limit: int) -> None:
    for match in _matches():
        got = [(c.id, rank) for c, rank in lexical_candidates(conn, match, limit)]
        _assert_same(got, _reference(conn, match, limit))


def test_a_selective_filter_falls_back_to_the_full_sort_and_finds_every_row(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    sorted_calls: list[str] = []
    full_sort = reads._lexical_sorted

    def spy(*args: object, **kwargs: object) -> object:
        sorted_calls.append(str(args[1]))
        return full_sort(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(reads, "_lexical_sorted", spy)
    # Words every memory note uses too: the transcript rows are far down
    # the unfiltered ranking, below the first 4 x limit rows.
    for words, agent, expected in [
        ("release owner rollback", None, 2),
        ("release owner rollback", "scout", 1),
        ("发布 负责人", "scout", 1),
        ("search latency owner", "quill", 1),
    ]:
        match = fts_match_expression(query_terms(words))
        assert match is not None
        got = lexical_candidates(conn, match, 6, sources=["sessions"], agent=agent)
        assert len(got) == expected
        assert all(c.source == "sessions" for c, _ in got)
        assert all(agent is None or c.agent == agent for c, _ in got)
        _assert_same([(c.id, r) for c, r in got], _reference(conn, match, 6, ["sessions"], agent))
    assert sorted_calls, "no filter was selective enough to need the full sort"


@pytest.mark.parametrize("limit", [3, 24])
def test_a_broad_filter_keeps_fts5s_order_without_the_full_sort(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("the full sort ran for a filter that drops almost nothing")

    monkeypatch.setattr(reads, "_lexical_sorted", refuse)
    for match in _matches():
        got = [(c.id, r) for c, r in lexical_candidates(conn, match, limit, sources=["memory"])]
        _assert_same(got, _reference(conn, match, limit, ["memory"]))


def test_padding_rows_never_come_back(conn: apsw.Connection) -> None:
    """The keyword table's smoothing rows (negative rowids, no chunk) match
    their own filler word; they are not chunks and are never returned."""
    got = lexical_candidates(conn, '"omempadding"', 10)
    assert got == []


def test_no_match_is_an_empty_list(conn: apsw.Connection) -> None:
    assert lexical_candidates(conn, '"zzzqqqnothing"', 10) == []
    assert lexical_candidates(conn, '"zzzqqqnothing"', 10, sources=["sessions"]) == []


def test_rows_and_chunks_come_from_one_snapshot(tmp_path: Path) -> None:
    """A write that lands while the leg runs (an append re-indexes a file's
    tail: its chunks get new ids) never leaves matched rows without their
    chunks: here the writer replaces the file before each statement of the
    reader after its first."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    writer = open_index(tmp_path / "index.sqlite", workspace=workspace).conn
    reader = open_index(tmp_path / "index.sqlite", workspace=workspace).conn
    text = "# Birds\n\nThe falcons nest on the north tower.\n"

    def write(version: int) -> None:
        body = text + f"\nseen {version} times\n"
        rows = [
            ChunkRow(c.start_line, c.end_line, c.heading, c.text, sha256_hex(c.text.encode()))
            for c in chunk_markdown(body)
        ]
        state = FileState("memory/birds.md", "memory", sha256_hex(body.encode()), version, 1)
        replace_file(writer, state, rows)

    write(1)
    statements: list[str] = []

    def interleave(cursor: apsw.Cursor, sql: str, bindings: object) -> bool:
        statements.append(sql)
        if len(statements) > 1:
            write(len(statements))
        return True

    reader.exec_trace = interleave
    try:
        for limit in (1, 5):
            for sources in (None, ["memory"]):
                got = lexical_candidates(reader, '"falcons"', limit, sources=sources)
                assert [c.path for c, _ in got] == ["memory/birds.md"]
                assert "falcons" in got[0][0].text
    finally:
        reader.exec_trace = None
        reader.close()
        writer.close()


@pytest.mark.parametrize("limit", [1, 6, 24])
def test_the_best_of_each_id_range_together_are_the_best_of_all(
    conn: apsw.Connection, limit: int
) -> None:
    """What the keyword leg in halves relies on: BM25 is the same in any
    range of ids, so the best of each range, merged, are the best of all,
    with a filter too (the transcripts sit at the end of the ids)."""
    highest = highest_chunk_id(conn)
    assert highest > 1000
    for cut in (highest // 3, highest // 2 + 1, highest - 2):
        parts = (RowidRange(None, cut), RowidRange(cut, None))
        for match in _matches()[:20]:
            for sources in (None, ["memory"], ["sessions"]):
                merged = sorted(
                    (
                        (c.id, r)
                        for part in parts
                        for c, r in lexical_candidates(
                            conn, match, limit, sources=sources, part=part
                        )
                    ),
                    key=lambda hit: hit[1],
                )[:limit]
                _assert_same(merged, _reference(conn, match, limit, sources))


def test_a_range_keeps_only_its_ids(conn: apsw.Connection) -> None:
    highest = highest_chunk_id(conn)
    match = _matches()[0]
    low = lexical_candidates(conn, match, 50, part=RowidRange(None, highest // 2))
    high = lexical_candidates(conn, match, 50, part=RowidRange(highest // 2, None))
    assert low
    assert high
    assert all(c.id < highest // 2 for c, _ in low)
    assert all(c.id >= highest // 2 for c, _ in high)


@pytest.mark.parametrize("sources", [None, ("sessions",)])
async def test_the_keyword_leg_in_halves_equals_the_whole(
    conn: apsw.Connection, sources: tuple[str, ...] | None
) -> None:
    """`engine.keyword_parts.keyword_leg` from `keyword_split_above` on runs
    the leg in two halves through the reader lane and merges them: the same
    candidates as the leg in one piece. The reads run in threads at once, on
    two connections of the same index, as the engine's readers do."""
    readers = [conn, apsw.Connection(conn.filename, flags=apsw.SQLITE_OPEN_READONLY)]
    used: list[int] = []

    async def read(fn: Any, *args: Any) -> Any:
        reader = readers.pop()
        used.append(len(readers))
        try:
            return await trio.to_thread.run_sync(fn, reader, *args)
        finally:
            readers.append(reader)

    whole = SearchSettings(hybrid=True, keyword_split_above=10**9)
    halves = SearchSettings(hybrid=True, keyword_split_above=0)
    for text in sample_queries(30, seed=8):
        query = SearchQuery(text=text, limit=6, sources=sources)
        one = await keyword_leg(read, query, whole, 0.0)
        two = await keyword_leg(read, query, halves, 0.0)
        assert one is not None
        assert two is not None
        assert two.terms == one.terms
        assert two.pool == one.pool
        _assert_same(
            [(c.id, -(c.text_score or 0.0)) for c in two.candidates],
            [(c.id, -(c.text_score or 0.0)) for c in one.candidates],
        )
    assert 0 in used  # both readers were out at once: the halves ran side by side
    readers[0 if readers[1] is conn else 1].close()
