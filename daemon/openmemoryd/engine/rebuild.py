"""Rebuilding the index in the background when its chunking changes.

Changing ``chunk_tokens`` or ``chunk_overlap`` (or a new chunker version)
changes every chunk, so every file must be re-chunked and its chunks
re-embedded. Doing that in place would leave searches seeing a mix of old and
new chunks, and chunks without vectors, for as long as the rebuild takes. So
the new index is built in a separate file next to the live one:

1. create ``<index>.rebuild``, seed its embedding cache from the live index
   (unchanged chunk texts are not embedded again);
2. index every file into it and fill its vectors, while searches, appends
   and syncs keep using the live index;
3. under the writer lane, catch up with files changed meanwhile, then swap
   the files (`Engine.replace_index`): searches switch from the complete old
   index to the complete new one, never seeing anything in between.

A crash mid-way leaves the live index untouched; the next start sees the
chunking still differs and starts over. ``meta.chunking`` records what the
index was built with.

The same steps repair an index found damaged while the daemon runs
(`engine.recovery`), except that nothing is taken from the damaged file
(not even the embedding cache) and the damaged file is kept, not
overwritten. One rebuild runs at a time (``engine.rebuild_lock``): both
build into the same ``<index>.rebuild`` file.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import apsw
import trio

from openmemoryd.config import Config, IndexSettings
from openmemoryd.engine.vectors import VectorIndexer
from openmemoryd.index.chunker import CHUNKER_VERSION
from openmemoryd.store import get_meta, open_index
from openmemoryd.store.db import move_aside, set_meta
from openmemoryd.workspace import PathPolicy, scan_memory_files

if TYPE_CHECKING:
    from openmemoryd.engine.indexing import FileSync

logger = logging.getLogger("openmemoryd.rebuild")


class RebuildHost(Protocol):
    """What a rebuild (new chunking, or repair from the Markdown) uses."""

    config: Config
    policy: PathPolicy
    vectors: VectorIndexer | None
    files: FileSync
    rebuild_lock: trio.Lock
    rebuild_progress: str | None  # what `status` shows while it runs

    async def replace_index(
        self, build: Path, build_conn: apsw.Connection, *, keep_old: bool = False
    ) -> None: ...


T = TypeVar("T")

CHUNKING_KEY: Final = "chunking"
BATCH: Final = 32


def chunking_signature(settings: IndexSettings) -> str:
    """What the chunks depend on; a change means a rebuild."""
    return f"tokens={settings.chunk_tokens};overlap={settings.chunk_overlap};{CHUNKER_VERSION}"


def needs_rebuild(conn: apsw.Connection, settings: IndexSettings) -> bool:
    """True if the index holds chunks made with other chunking; an empty
    index just records the current chunking."""
    signature = chunking_signature(settings)
    if get_meta(conn, CHUNKING_KEY) == signature:
        return False
    if not conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchall():
        set_meta(conn, CHUNKING_KEY, signature)
        return False
    return True


class _BuildLanes:
    """Writer and reader lanes over the index being built (one connection)."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn
        self._limiter = trio.CapacityLimiter(1)

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, self._conn, *args, limiter=self._limiter)

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, self._conn, *args, limiter=self._limiter)


async def rebuild_index(engine: RebuildHost, *, recovering: bool = False) -> None:
    """Build a fresh index with the current chunking and swap it in;
    *recovering* from damage, take nothing from the live index and keep it."""
    async with engine.rebuild_lock:
        await _rebuild(engine, recovering)


async def _rebuild(engine: RebuildHost, recovering: bool) -> None:
    live = engine.config.index_path
    build = live.with_name(live.name + ".rebuild")
    await trio.to_thread.run_sync(remove_index_files, build)
    opened = await trio.to_thread.run_sync(
        lambda: open_index(build, workspace=engine.config.workspace)
    )
    lanes = _BuildLanes(opened.conn)
    swapped = False
    try:
        if not recovering:
            await lanes.write(_copy_cache, live)
        engine.rebuild_progress = "re-chunking files"
        await _index_everything(engine, lanes)
        if engine.vectors is not None:
            engine.rebuild_progress = "embedding the new chunks"
            builder = VectorIndexer(
                lanes,
                engine.vectors.embedder,
                None,
                batch_size=engine.vectors.batch_size,
                cache_max_entries=engine.config.embedding.cache_max_entries,
            )
            await builder.fill()
        await lanes.write(set_meta, CHUNKING_KEY, chunking_signature(engine.config.index))
        engine.rebuild_progress = "switching to the new index"
        await engine.replace_index(build, opened.conn, keep_old=recovering)
        swapped = True
        logger.info("index rebuilt with %s", chunking_signature(engine.config.index))
    finally:
        engine.rebuild_progress = None
        if not swapped:
            await trio.to_thread.run_sync(_close_quietly, opened.conn)
            await trio.to_thread.run_sync(remove_index_files, build)


async def _index_everything(engine: RebuildHost, lanes: _BuildLanes) -> None:
    scan = await trio.to_thread.run_sync(scan_memory_files, engine.policy)
    keys = sorted(scan.files)
    for offset in range(0, len(keys), BATCH):
        batch = keys[offset : offset + BATCH]
        await lanes.write(engine.files.index_batch, batch, scan, False)
        engine.rebuild_progress = f"re-chunking files: {offset + len(batch)}/{len(keys)}"
    engine.rebuild_progress = "re-chunking session transcripts"
    await lanes.write(engine.files.catch_up)


def swap_files(
    writer: apsw.Connection,
    readers: list[apsw.Connection],
    build_conn: apsw.Connection,
    build: Path,
    config: Config,
    keep_old: bool,
) -> tuple[apsw.Connection, Path | None]:
    """Close both indexes, move the new file over the old, open it; return
    it and where the old file was kept (with *keep_old*)."""
    for reader in readers:
        reader.close()
    try:
        writer.close()  # the last connection: SQLite checkpoints and removes its WAL
    except apsw.Error as exc:  # a damaged index may fail its last checkpoint
        logger.warning("closing the old index failed: %s", exc)
        writer.close(True)  # force: release the file whatever state it is in
    build_conn.pragma("wal_checkpoint(TRUNCATE)")
    build_conn.close()
    live = config.index_path
    moved = move_aside(live) if keep_old else None
    # Any WAL or shared-memory file left belongs to the old content and must
    # never be applied to the new file.
    for path in (f"{live}-wal", f"{live}-shm", f"{build}-wal", f"{build}-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    os.replace(build, live)
    return open_index(live, workspace=config.workspace).conn, moved


def _copy_cache(conn: apsw.Connection, live: Path) -> None:
    conn.execute("ATTACH DATABASE ? AS live", (str(live),))
    try:
        with conn:
            conn.execute(
                "INSERT OR IGNORE INTO main.embedding_cache SELECT * FROM live.embedding_cache"
            )
    finally:
        conn.execute("DETACH DATABASE live")


def remove_index_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def _close_quietly(conn: apsw.Connection) -> None:
    try:
        conn.close()
    except apsw.Error as exc:
        logger.debug("closing the abandoned rebuild failed: %s", exc)
