"""The engine in-process: append, search, get, sync and status under trio."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.lowlevel

from openmemoryd.engine import Engine, workspace_status
from openmemoryd.errors import BadRequest, Forbidden, NotFound
from openmemoryd.search import SearchQuery
from openmemoryd.store import source_totals


async def test_append_is_searchable_before_it_returns(engine: Engine) -> None:
    appended = await engine.append("Wei prefers oolong tea", None)
    assert appended.indexed
    result = await engine.search(SearchQuery("oolong"))
    assert [h.path for h in result.results] == [appended.path]
    assert result.took_ms > 0


async def test_sync_reports_what_changed(engine: Engine) -> None:
    ws = engine.config.workspace
    first = await engine.sync()  # the start-up reconcile indexed the templates already
    assert (first.added, first.unchanged, first.scanned) == (0, 3, 3)
    (ws / "memory" / "a.md").write_text("alpha\n")
    (ws / "memory" / "b.md").write_text("bravo\n")
    second = await engine.sync()
    assert (second.added, second.unchanged, second.removed) == (2, 3, 0)
    (ws / "memory" / "a.md").write_text("alpha changed\n")
    (ws / "memory" / "b.md").unlink()
    third = await engine.sync()
    assert (third.updated, third.removed, third.unchanged) == (1, 1, 3)
    full = await engine.sync(full=True)
    assert full.updated == 4


async def test_sync_progress_reaches_the_total(engine: Engine) -> None:
    for i in range(70):
        (engine.config.workspace / "memory" / f"n{i}.md").write_text(f"note {i}\n")
    seen: list[tuple[int, int]] = []

    async def progress(done: int, total: int, phase: str) -> None:
        seen.append((done, total))

    await engine.sync(progress=progress)
    assert seen[0] == (0, 73)
    assert seen[-1] == (73, 73)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


async def test_skipped_files_appear_in_sync_and_status(engine: Engine) -> None:
    (engine.config.workspace / "memory" / "bin.md").write_bytes(b"\x00\x01")
    result = await engine.sync()
    assert result.skipped == 1
    assert any("binary" in issue for issue in result.issues)
    status = await workspace_status(engine)
    assert any("memory/bin.md" in issue and "binary" in issue for issue in status.issues)


async def test_status_counts_a_skipped_file_apart_and_a_lossy_one_as_indexed(
    engine: Engine,
) -> None:
    """A binary file has its row (so it is not read again) but no text: it
    counts as indexed, for the index is in step with the disk, and again as
    skipped; a file that is not UTF-8 (read as Latin-1) is searchable, so
    it is indexed and not skipped."""
    memory = engine.config.workspace / "memory"
    (memory / "bin.md").write_bytes(b"\x00\x01")
    (memory / "latin1.md").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    await engine.sync()
    status = await workspace_status(engine)
    assert (status.files_on_disk, status.files_indexed, status.files_skipped) == (5, 5, 1)
    (source,) = status.sources
    assert (source.files_indexed, source.files_skipped) == (5, 1)
    totals = await engine.read(source_totals)
    assert [(t.files, t.skipped) for t in totals] == [(5, 1)]
    (memory / "bin.md").write_text("now a note\n")  # fixed: no longer skipped
    await engine.sync()
    assert (await workspace_status(engine)).files_skipped == 0


async def test_status_counts_disk_and_index(engine: Engine) -> None:
    await engine.sync()
    (engine.config.workspace / "memory" / "new.md").write_text("not yet indexed\n")
    status = await workspace_status(engine)
    assert (status.files_on_disk, status.files_indexed) == (4, 3)
    assert status.chunks == 0  # the three untouched templates hold no memory
    assert status.last_sync is not None
    assert status.last_sync.reason == "explicit"
    assert status.index_bytes > 0


async def test_status_never_names_a_sync_newer_than_its_counts(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass that finishes while status reads the index is not reported
    beside counts from before it (a script waiting for "not syncing, last
    sync done" would otherwise read a chunk count short of the workspace)."""
    await engine.sync()
    before = engine.files.last_sync
    (engine.config.workspace / "memory" / "late.md").write_text("a late memory line\n")
    real_read = engine.read
    finished: list[bool] = []

    async def read_then_finish_a_sync(fn: Any, *args: Any) -> Any:
        result = await real_read(fn, *args)
        if fn is source_totals and not finished:
            finished.append(True)
            await engine.sync()  # completes between the counts and the rest of status
        return result

    monkeypatch.setattr(engine, "read", read_then_finish_a_sync)
    status = await workspace_status(engine)
    assert finished
    assert status.chunks == 0  # read before the late file was indexed...
    assert status.last_sync == before  # ...so the pass that indexed it is not named
    after = await workspace_status(engine)
    assert after.chunks == 1
    assert after.last_sync == engine.files.last_sync != before


async def test_get_reads_line_ranges(engine: Engine) -> None:
    (engine.config.workspace / "memory" / "g.md").write_text("one\ntwo\nthree\n")
    whole = await engine.get("memory/g.md", None, None)
    assert (whole.text, whole.total_lines) == ("one\ntwo\nthree\n", 3)
    part = await engine.get("memory/g.md", 2, 1)
    assert (part.text, part.from_line, part.to_line) == ("two", 2, 2)
    tail = await engine.get("memory/g.md", 2, None)
    assert tail.text == "two\nthree"
    past = await engine.get("memory/g.md", 10, 5)
    assert (past.text, past.to_line) == ("", 0)
    # to a last line instead of a count; from the first when no start is given
    to = await engine.get("memory/g.md", 2, None, 3)
    assert (to.text, to.from_line, to.to_line) == ("two\nthree", 2, 3)
    assert (await engine.get("memory/g.md", None, None, 2)).text == "one\ntwo"
    assert (await engine.get("memory/g.md", 3, None, 3)).text == "three"
    with pytest.raises(BadRequest, match="is before from_line 3"):
        await engine.get("memory/g.md", 3, None, 2)
    with pytest.raises(BadRequest, match="lines or to_line, not both"):
        await engine.get("memory/g.md", 1, 2, 2)
    with pytest.raises(NotFound):
        await engine.get("memory/none.md", None, None)
    with pytest.raises(Forbidden):
        await engine.get("../x.md", None, None)


async def test_get_reads_the_lines_a_citation_names(engine: Engine) -> None:
    (engine.config.workspace / "memory" / "g.md").write_text("one\ntwo\nthree\n")
    cited = await engine.get("memory/g.md#L2-L3", None, None)
    assert (cited.path, cited.text, cited.from_line, cited.to_line) == (
        "memory/g.md",
        "two\nthree",
        2,
        3,
    )
    assert (await engine.get("memory/g.md#L2", None, None)).text == "two"
    assert (await engine.get("memory/g.md:1-2", None, None)).text == "one\ntwo"
    assert (await engine.get(" memory/g.md#L3-4 ", None, None)).text == "three"
    past = await engine.get("memory/g.md#L3-L9", None, None)  # what there is, as with lines
    assert (past.text, past.to_line) == ("three", 3)
    for bad, said in (
        ("memory/g.md#L3-L2", "ends before it starts"),
        ("memory/g.md#L0", "numbered from 1"),
        ("memory/g.md#L1-L" + "9" * 30, "no line past"),
        ("memory/g.md:" + "9" * 30, "no line past"),
    ):
        with pytest.raises(BadRequest, match=said):
            await engine.get(bad, None, None)
    with pytest.raises(BadRequest, match="names its lines: give from_line with"):
        await engine.get("memory/g.md#L2", 1, None)
    with pytest.raises(BadRequest, match="give lines and to_line with"):
        await engine.get("memory/g.md#L2", None, 1, 3)
    with pytest.raises(NotFound):
        await engine.get("memory/none.md#L1", None, None)
    with pytest.raises(Forbidden):
        await engine.get("../x.md#L1-L2", None, None)
    # a name that only looks like one is read as a path
    (engine.config.workspace / "memory" / "notes#L2.md").write_text("hash\n")
    assert (await engine.get("memory/notes#L2.md", None, None)).text == "hash\n"


async def test_searches_run_while_a_sync_holds_the_writer(engine: Engine) -> None:
    for i in range(200):
        (engine.config.workspace / "memory" / f"n{i}.md").write_text(f"entry {i} oolong\n" * 40)
    await engine.append("jasmine tea is nice", None)
    answers: list[int] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(engine.sync)
        await trio.lowlevel.checkpoint()
        for _ in range(5):
            result = await engine.search(SearchQuery("jasmine"))
            answers.append(len(result.results))
    assert answers == [1] * 5


async def test_concurrent_appends_are_all_indexed(engine: Engine) -> None:
    async def add(n: int) -> None:
        await engine.append(f"concurrent entry number{n}", None)

    async with trio.open_nursery() as nursery:
        for n in range(20):
            nursery.start_soon(add, n)
    for n in range(20):
        result = await engine.search(SearchQuery(f"number{n}"))
        assert result.results, n
