"""Opening the index database: all connection setup lives here.

Invariants:

* Every connection has a busy timeout, loads sqlite-vec when it can and then
  disables extension loading again.
* The writer connection uses WAL (readers never block it, it never blocks
  readers), ``synchronous=NORMAL`` (the index is derived data: a power cut
  may lose the last commits, never consistency) and BEGIN IMMEDIATE for
  ``with conn:`` so a write transaction never has to upgrade its lock.
* The index is derived from the Markdown, so a database that is corrupt or not
  a database at all is moved aside (never deleted) and rebuilt. A database
  from a newer schema, or some other application's file, is refused
  untouched: those are the user's to sort out, not ours to destroy.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import apsw

from openmemoryd.errors import StartupError
from openmemoryd.store.quantised import ensure_vector_companions
from openmemoryd.store.schema import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    add_smoothing_rows,
)
from openmemoryd.text import TERMS_VERSION, index_terms, terms_changed_since

logger = logging.getLogger("openmemoryd.store")

BUSY_TIMEOUT_MS: Final = 5000


@dataclass(frozen=True, slots=True)
class OpenedIndex:
    """The writer connection and what happened while opening it."""

    conn: apsw.Connection
    vector_error: str | None
    recovered_to: Path | None


def _vector_extension_path() -> str:
    """Where the sqlite-vec wheel keeps its loadable extension (``vec0``).

    Found without importing the package: its ``__init__`` imports numpy
    for a helper the daemon does not use, and a daemon without vectors
    need not pay ~45 ms of every start for that.
    """
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise OSError("the sqlite-vec package is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def load_vector_extension(conn: apsw.Connection) -> str | None:
    """Load sqlite-vec into *conn*; return why not, or None on success."""
    try:
        conn.enable_load_extension(True)
        try:
            conn.load_extension(_vector_extension_path())
        finally:
            conn.enable_load_extension(False)
    except (apsw.Error, OSError) as exc:
        return f"sqlite-vec could not be loaded: {exc}"
    return None


def open_index(path: Path, *, workspace: Path) -> OpenedIndex:
    """Open (creating or migrating) the writer connection of an index.

    Raises:
        StartupError: the file belongs to a newer openmemoryd or another
            application, or the directory cannot be created.
    """
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StartupError(f"cannot create index directory {path.parent}: {exc.strerror}") from None
    recovered_to: Path | None = None
    try:
        conn, vector_error = _open_writer(path, workspace)
    except (apsw.NotADBError, apsw.CorruptError) as exc:
        recovered_to = move_aside(path)
        logger.error(
            "index %s is unreadable (%s); moved it to %s and rebuilding", path, exc, recovered_to
        )
        conn, vector_error = _open_writer(path, workspace)
    return OpenedIndex(conn=conn, vector_error=vector_error, recovered_to=recovered_to)


VFS_ENV: Final = "OPENMEMORYD_SQLITE_VFS"


def index_vfs(environ: Mapping[str, str] | None = None) -> str | None:
    """The SQLite VFS index connections are opened through.

    SQLite's default, unless ``OPENMEMORYD_SQLITE_VFS`` names a VFS
    registered in this process: the reliability tests register one that
    injects full-disk and damaged-page faults (from a ``sitecustomize`` on
    the daemon's ``PYTHONPATH``), and nothing of it ships in the package.

    Raises:
        StartupError: the variable names a VFS this process does not have.
    """
    name = (os.environ if environ is None else environ).get(VFS_ENV, "").strip()
    if not name:
        return None
    if name not in apsw.vfs_names():
        raise StartupError(f"{VFS_ENV}={name!r}: no SQLite VFS of that name is registered")
    return name


def close_index(writer: apsw.Connection, readers: list[apsw.Connection]) -> None:
    """Close an index's connections at shutdown: readers first, then the
    writer after ``PRAGMA optimize``, forcing it closed if the file is
    damaged (a bad index must not stop the daemon from exiting)."""
    for reader in readers:
        reader.close()
    try:
        writer.pragma("optimize")
    except apsw.Error as exc:
        logger.debug("optimize on close failed: %s", exc)
    try:
        writer.close()  # checkpoints: reads the whole WAL
    except apsw.Error as exc:  # a damaged index must not stop the shutdown
        logger.warning("closing the index failed: %s", exc)
        writer.close(True)


def open_reader(path: Path) -> apsw.Connection:
    """A read-only connection for searches (used from worker threads)."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY, vfs=index_vfs())
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    load_vector_extension(conn)
    conn.pragma("query_only", True)
    return conn


def _open_writer(path: Path, workspace: Path) -> tuple[apsw.Connection, str | None]:
    conn = apsw.Connection(
        str(path), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE, vfs=index_vfs()
    )
    try:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        _check_identity(conn, path)
        conn.pragma("journal_mode", "wal")
        conn.pragma("synchronous", "normal")
        # Freed pages are zeroed, so text that `forget` removed (or that a
        # re-index replaced) does not linger in the file.
        conn.pragma("secure_delete", True)
        conn.transaction_mode = "IMMEDIATE"
        vector_error = load_vector_extension(conn)
        _migrate(conn, path)
        _ensure_terms(conn)
        if vector_error is None:
            for table in ensure_vector_companions(conn):
                logger.info("vector table %s: quantised companions created", table)
        set_meta(conn, "workspace", str(workspace))
    except BaseException:
        conn.close()
        raise
    return conn, vector_error


def _check_identity(conn: apsw.Connection, path: Path) -> None:
    app_id = conn.pragma("application_id")
    version = conn.pragma("user_version")
    if app_id not in (0, APPLICATION_ID):
        raise StartupError(
            f"{path} is not an openmemory index (application_id {app_id:#x}); "
            "refusing to modify it: point state_dir elsewhere or move the file"
        )
    if version > SCHEMA_VERSION:
        raise StartupError(
            f"{path} was written by a newer openmemoryd (schema {version}, this one knows "
            f"{SCHEMA_VERSION}); upgrade openmemoryd or move the file away to rebuild it"
        )
    if app_id == 0 and version == 0:
        has_tables = conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()[0][0]
        if has_tables:
            raise StartupError(
                f"{path} is an SQLite database that openmemory did not create; "
                "refusing to modify it"
            )


def _migrate(conn: apsw.Connection, path: Path) -> None:
    version = conn.pragma("user_version")
    for number in range(version, SCHEMA_VERSION):
        migration = MIGRATIONS[number]
        with conn:
            migration(conn)
            conn.pragma("application_id", APPLICATION_ID)
            conn.pragma("user_version", number + 1)
        logger.info("index %s migrated to schema %d (%s)", path, number + 1, migration.__name__)


def get_meta(conn: apsw.Connection, key: str) -> str | None:
    rows = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchall()
    return str(rows[0][0]) if rows else None


def set_meta(conn: apsw.Connection, key: str, value: str) -> None:
    with conn:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def _ensure_terms(conn: apsw.Connection) -> None:
    """Re-derive the FTS table from the stored chunks if segmentation changed.

    The chunk text is stored, so this needs no file reads and no embeddings.
    From a version whose terms differ only for some texts (Russian words
    since ``cjk-bigram-1``) only those chunks are re-derived: the daemon
    opens its index before it tells systemd it is ready, and a rebuild of a
    million chunks takes longer than a unit may take to start.
    """
    stored = get_meta(conn, "terms_version")
    if stored == TERMS_VERSION:
        return
    changed = terms_changed_since(stored)
    count = 0
    with conn:
        if changed is None:
            conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('delete-all')")
            add_smoothing_rows(conn)
        # Streamed, not fetched whole: a large index's text would all be in memory.
        for rowid, text, heading in conn.execute("SELECT id, text, heading FROM chunks"):
            body, title = str(text), str(heading)
            if changed is not None:
                if not (changed(body) or changed(title)):
                    continue
                conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (rowid,))
            conn.execute(
                "INSERT INTO chunks_fts(rowid, body, heading) VALUES (?, ?, ?)",
                (rowid, index_terms(body), index_terms(title)),
            )
            count += 1
        set_meta(conn, "terms_version", TERMS_VERSION)
    if count:
        logger.info("re-derived the keywords of %d chunks (terms %s)", count, TERMS_VERSION)


def move_aside(path: Path) -> Path:
    """Rename a broken database (and its WAL files) out of the way; return the new name."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    serial = 1
    while target.exists():  # damaged twice within a second: keep both
        serial += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{serial}")
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            os.replace(source, Path(f"{target}{suffix}"))
    return target
