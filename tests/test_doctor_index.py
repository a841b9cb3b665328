"""The doctor's ``index`` check says "damaged" only when the index is.

A user's `omem-client doctor` failed on every run with "fts5: corruption
found reading blob ... from table chunks_fts" and advised moving the index
away, while searches worked and a copy passed FTS5's own integrity check:
the check ran ``PRAGMA quick_check`` on a pooled reader that had already run
a keyword query, and FTS5 checks against the segment map such a connection
cached then, stale after any write by the writer. The check now runs on a
connection opened for it; real damage must still be reported.
"""

from __future__ import annotations

import threading
from pathlib import Path

import apsw
import trio

from openmemoryd.doctor.index import inspect_index, open_index_check
from openmemoryd.doctor.inside import _index_check
from openmemoryd.engine import Engine
from openmemoryd.engine.engine import READERS
from openmemoryd.search import SearchQuery
from openmemoryd.store.keyword_merge import merge_step


async def _search_then_write(engine: Engine) -> None:
    """What the user did: keyword searches, so every pooled reader caches
    FTS5's segment map, then appends and a keyword merge by the writer."""
    await engine.append("- the first note about oolong tea", None)
    await engine.syncer.queue.wait_applied()
    assert (await engine.search(SearchQuery("oolong"))).results
    # the pool holds as many readers as ran at once: a keyword query on each
    everyone = threading.Barrier(READERS)

    def keyword_query(conn: apsw.Connection) -> None:
        conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'oolong'").fetchall()
        everyone.wait(timeout=30)

    async with trio.open_nursery() as nursery:
        for _ in range(READERS):
            nursery.start_soon(engine.read, keyword_query)
    for n in range(3):
        await engine.append(f"- note {n} about jasmine tea", None)
    await engine.syncer.queue.wait_applied()
    while await engine.write(merge_step, 256):
        pass


def _damage_the_keyword_index(index: Path) -> None:
    """Zero every FTS5 leaf page (rows past the structure record and the
    averages): what a bad disk could do, and what the check must catch."""
    conn = apsw.Connection(str(index))
    try:
        conn.set_busy_timeout(5000)
        conn.execute("UPDATE chunks_fts_data SET block = zeroblob(length(block)) WHERE id > 10")
    finally:
        conn.close()


async def test_a_pooled_reader_misreports_fts5_damage_after_a_write(engine: Engine) -> None:
    """The premise (SQLite 3.54): the old check, on the pool, failed a
    healthy index. Should a later SQLite stop doing so, this test fails and
    can go; checking on a fresh connection stays right either way."""
    await _search_then_write(engine)
    stale = await engine.read(inspect_index, engine.config.index_path)
    assert stale.status == "fail", stale
    assert "fts5" in stale.detail


async def test_the_check_passes_a_healthy_index_the_pool_has_searched(engine: Engine) -> None:
    await _search_then_write(engine)
    for _ in range(2):  # and again: the check leaves nothing stale behind
        check = await _index_check(engine)
        assert (check.status, check.fix) == ("ok", None), check
        assert check.detail.endswith("quick_check ok)")
    # the searches the pool serves are untouched by it
    assert (await engine.search(SearchQuery("jasmine"))).results


async def test_real_damage_is_still_reported_from_inside(engine: Engine) -> None:
    await _search_then_write(engine)
    _damage_the_keyword_index(engine.config.index_path)
    check = await _index_check(engine)
    assert check.status == "fail"
    assert check.detail.startswith(f"{engine.config.index_path} is damaged: fts5: corruption")
    assert check.fix is not None
    assert "move" in check.fix


async def test_a_damaged_copy_fails_the_outside_check_and_a_healthy_one_passes(
    engine: Engine, tmp_path: Path
) -> None:
    await _search_then_write(engine)
    copies = {name: tmp_path / f"{name}.sqlite" for name in ("healthy", "damaged")}
    for copy in copies.values():
        target = apsw.Connection(str(copy))
        source = apsw.Connection(str(engine.config.index_path), flags=apsw.SQLITE_OPEN_READONLY)
        with target.backup("main", source, "main") as backup:
            backup.step()
        source.close()
        target.close()
    _damage_the_keyword_index(copies["damaged"])
    healthy, conn = open_index_check(copies["healthy"])
    assert healthy.status == "ok", healthy
    assert conn is not None
    conn.close()
    damaged, conn = open_index_check(copies["damaged"])
    assert damaged.status == "fail"
    assert conn is None
    assert "is damaged: fts5: corruption" in damaged.detail
