"""Merging the keyword index in small steps: it finishes, it changes no
ranking, it lets writes in between its steps, and a crash in the middle of
one costs nothing but that step. On a real index: a generated corpus of
notes in English and Chinese, cut by the real chunker, stored by the real
store, one transaction per file (so FTS5 leaves it in many segments)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import apsw
import pytest
import trio

from bench.corpus import generate_workspace, sample_queries
from openmemoryd.engine.keyword_merge import KeywordMerger
from openmemoryd.index.chunker import chunk_markdown
from openmemoryd.index.indexer import sha256_hex
from openmemoryd.store import ChunkRow, FileState, lexical_candidates, open_index, replace_file
from openmemoryd.store.keyword_merge import (
    KeywordSegments,
    keyword_segments,
    merge_step,
    worth_merging,
)
from openmemoryd.text import fts_match_expression, query_terms

T = TypeVar("T")
Ranking = list[list[tuple[int, float]]]


def _index_file(conn: apsw.Connection, key: str, text: str) -> None:
    rows = [
        ChunkRow(c.start_line, c.end_line, c.heading, c.text, sha256_hex(c.text.encode()))
        for c in chunk_markdown(text)
    ]
    replace_file(conn, FileState(key, "memory", sha256_hex(text.encode()), 1, 1), rows)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of ~1,200 chunks in ~150 files, unmerged; tests copy it."""
    root = tmp_path_factory.mktemp("keyword-merge")
    workspace = root / "ws"
    generate_workspace(workspace, 1200, seed=7, needles=0)
    index = root / "index.sqlite"
    conn = open_index(index, workspace=workspace).conn
    for path in sorted(workspace.rglob("*.md")):
        _index_file(conn, str(path.relative_to(workspace)), path.read_text("utf-8"))
    conn.close()
    return index


@pytest.fixture
def index(corpus: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "index.sqlite"
    shutil.copyfile(corpus, copy)
    return copy


def _writer(path: Path) -> apsw.Connection:
    return open_index(path, workspace=path.parent).conn


def _rankings(conn: apsw.Connection) -> Ranking:
    """Every sample query's 30 best chunks with their BM25 ranks."""
    found: Ranking = []
    for query in sample_queries(80, seed=3):
        match = fts_match_expression(query_terms(query))
        if match is not None:
            found.append([(c.id, rank) for c, rank in lexical_candidates(conn, match, 30)])
    return found


def _shape(conn: apsw.Connection) -> KeywordSegments:
    shape = keyword_segments(conn)
    assert shape is not None
    return shape


def _merge_all(conn: apsw.Connection, pages: int) -> int:
    steps = 0
    while merge_step(conn, pages):
        steps += 1
        assert steps < 10_000
    return steps


def _integrity_check(conn: apsw.Connection) -> None:
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')")


def test_the_built_index_is_in_many_segments_and_worth_merging(index: Path) -> None:
    conn = _writer(index)
    shape = _shape(conn)
    assert shape.segments > 3
    assert worth_merging(shape)


def test_merging_in_steps_ends_in_one_segment_and_then_does_nothing(index: Path) -> None:
    conn = _writer(index)
    before = _shape(conn)
    steps = _merge_all(conn, 16)
    after = _shape(conn)
    assert steps > 2  # it really went in steps
    assert after.segments == 1
    assert not worth_merging(after)
    assert not merge_step(conn, 16)  # done stays done
    assert after.pages <= before.pages
    _integrity_check(conn)


def test_merging_changes_no_ranking(index: Path) -> None:
    conn = _writer(index)
    before = _rankings(conn)
    assert sum(map(len, before)) > 500  # the queries find plenty
    _merge_all(conn, 64)
    assert _shape(conn).segments == 1
    assert _rankings(conn) == before  # same chunks, same order, same BM25 ranks


def test_writes_between_steps_are_merged_too(index: Path, tmp_path: Path) -> None:
    unmerged = tmp_path / "unmerged.sqlite"
    shutil.copyfile(index, unmerged)
    conn, plain = _writer(index), _writer(unmerged)
    notes = [f"# Note {n}\n\nmerge window {n} reached the lake, 湖边散步 {n}\n" for n in range(12)]
    for n, note in enumerate(notes):
        merge_step(conn, 8)
        for target in (conn, plain):
            _index_file(target, f"memory/late-{n}.md", note)
    _merge_all(conn, 8)
    assert _shape(conn).segments == 1
    _integrity_check(conn)
    assert _rankings(conn) == _rankings(plain)


def test_a_crash_in_the_middle_of_merging_loses_nothing(index: Path) -> None:
    expected = _rankings(_writer(index))
    # three steps committed, then killed inside the fourth's transaction
    child = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from openmemoryd.store import open_index
        from openmemoryd.store.keyword_merge import merge_step
        conn = open_index(Path({str(index)!r}), workspace=Path({str(index.parent)!r})).conn
        for _ in range(3):
            assert merge_step(conn, 4)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('merge', -4)")
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", child], check=False, timeout=60)
    assert done.returncode == -signal.SIGKILL
    conn = _writer(index)
    _integrity_check(conn)
    assert _shape(conn).segments > 1  # killed mid-merge
    assert _rankings(conn) == expected
    _merge_all(conn, 64)  # and it carries on from there
    assert _shape(conn).segments == 1
    _integrity_check(conn)
    assert _rankings(conn) == expected


class _Host:
    """The merger's view of an engine: one writer lane (first come, first
    served, like the engine's), reads on the same connection, a busy flag."""

    def __init__(self, path: Path) -> None:
        self.conn = _writer(path)
        self.lane = trio.CapacityLimiter(1)
        self.busy = False
        self.done: list[str] = []
        self.on_write: Callable[[], None] = lambda: None

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        async with self.lane:
            result = fn(self.conn, *args)
            self.done.append(getattr(fn, "__name__", "write"))
            self.on_write()
            return result

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        await trio.lowlevel.checkpoint()
        return fn(self.conn, *args)

    def indexing_busy(self) -> bool:
        return self.busy


async def test_the_merger_merges_an_idle_index_and_says_so(index: Path) -> None:
    host, merger = _Host(index), KeywordMerger(step_pages=16)
    assert merger.status().state == "unknown"
    assert await merger.check(host) == "merged"
    assert merger.status().segments == 1
    assert host.done.count("merge_step") > 2
    host.done.clear()
    assert await merger.check(host) == "merged"  # nothing worth merging: no write at all
    assert host.done == []


async def test_the_merger_stops_for_indexing_and_resumes_after(index: Path) -> None:
    host, merger = _Host(index), KeywordMerger(step_pages=8)

    def busy_after_two() -> None:
        host.busy = host.done.count("merge_step") >= 2

    host.on_write = busy_after_two
    assert await merger.check(host) == "waiting"
    assert host.done == ["merge_step", "merge_step"]
    assert merger.status().state == "waiting"
    assert await merger.check(host) == "waiting"  # still busy: not even a look
    host.on_write = lambda: None
    host.busy = False
    assert await merger.check(host) == "merged"
    assert merger.status().segments == 1


async def test_a_write_waits_for_one_step_not_for_the_whole_merge(index: Path) -> None:
    host, merger = _Host(index), KeywordMerger(step_pages=4)

    def note(conn: apsw.Connection) -> None:
        _index_file(conn, "memory/urgent.md", "# Urgent\n\nthe append that must not wait\n")

    third_step = trio.Event()

    def after_write() -> None:
        if host.done.count("merge_step") >= 3:
            third_step.set()

    asked_after: list[int] = []

    async def append_soon() -> None:
        await third_step.wait()
        asked_after.append(host.done.count("merge_step"))
        await host.write(note)

    host.on_write = after_write

    async with trio.open_nursery() as nursery:
        nursery.start_soon(append_soon)
        await merger.check(host)
    at = host.done.index("note")
    assert host.done[:at] == ["merge_step"] * at
    # in after at most the one step already under way, and the merge went on
    assert at <= asked_after[0] + 1 < host.done.count("merge_step")
    assert merger.status().segments == 1


def test_a_run_of_small_appends_is_not_worth_a_full_rewrite() -> None:
    assert not worth_merging(KeywordSegments(segments=16, pages=10_219, largest=10_204))
    assert worth_merging(KeywordSegments(segments=13, pages=10_282, largest=2_853))
    assert not worth_merging(KeywordSegments(segments=1, pages=10_204, largest=10_204))
