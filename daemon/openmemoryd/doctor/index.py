"""Checks of the index database and of the SQLite features it needs.

The index is only ever read here, and always on a read-only connection
opened for the check (inside the daemon under one of its reader slots): a
long-lived reader that has run a keyword query gets a false "fts5:
corruption found" from ``PRAGMA quick_check`` after the writer writes. No
reader takes the writer's lock or the single-instance lock, so a doctor
beside a running daemon cannot get in its way (WAL readers never block the
writer).
"""

from __future__ import annotations

from pathlib import Path

import apsw

from omem_protocol import DoctorCheck
from openmemoryd.doctor.report import fail, ok, size, warn
from openmemoryd.store import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    load_vector_extension,
    open_reader,
    source_totals,
)

_MAX_PROBLEMS_SHOWN = 3


def open_index_check(path: Path) -> tuple[DoctorCheck, apsw.Connection | None]:
    """Open the index read-only and inspect it; the connection is returned
    (open) for the caller's further reads, or None when it is unusable."""
    if not path.exists():
        return warn(
            "index", f"{path} does not exist yet; the daemon creates it on start", _START
        ), None
    try:
        conn = open_reader(path)
    except apsw.Error as exc:
        return fail("index", f"cannot open {path}: {exc}", _rebuild_fix(path)), None
    check = inspect_index(conn, path)
    if check.status == "fail":
        conn.close()
        return check, None
    return check, conn


def inspect_index(conn: apsw.Connection, path: Path) -> DoctorCheck:
    """Identity, schema version, ``PRAGMA quick_check`` and what it holds.

    `quick_check` rather than `integrity_check`: it reads every page but
    skips the index-vs-table cross-checks, so it stays in seconds on a large
    index, and corruption of the kind that matters still shows. *conn* must
    be new (no keyword query run on it): FTS5's part of the check trusts
    the segment map its connection cached, which another connection's
    writes make stale, and then reports damage that is not there.
    """
    name = "index"
    try:
        app_id = conn.pragma("application_id")
        version = conn.pragma("user_version")
        if app_id not in (0, APPLICATION_ID):
            return fail(
                name,
                f"{path} is not an openmemory index (application_id {app_id:#x})",
                "point state_dir elsewhere, or move the file away",
            )
        if version > SCHEMA_VERSION:
            return fail(
                name,
                f"{path} has schema {version}; this openmemoryd knows {SCHEMA_VERSION}",
                "upgrade openmemoryd, or move the file away to rebuild it",
            )
        problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            shown = "; ".join(problems[:_MAX_PROBLEMS_SHOWN])
            return fail(name, f"{path} is damaged: {shown}", _rebuild_fix(path))
        if version < SCHEMA_VERSION:
            return warn(
                name,
                f"{path} has schema {version}; it is migrated to {SCHEMA_VERSION} on start",
                _START,
            )
        totals = source_totals(conn)
        stored = path.stat().st_size
    except (apsw.Error, OSError) as exc:
        return fail(name, f"cannot read {path}: {exc}", _rebuild_fix(path))
    files = sum(t.files for t in totals)
    skipped = sum(t.skipped for t in totals)
    # a skipped file has a row but no text: said apart, as `status` says it
    apart = f" ({skipped} skipped)" if skipped else ""
    chunks = sum(t.chunks for t in totals)
    return ok(
        name,
        f"{path} ({size(stored)}, schema {version}, {files} files{apart}, {chunks} chunks, "
        "quick_check ok)",
    )


def sqlite_checks() -> list[DoctorCheck]:
    """sqlite-vec loads and FTS5 works, each tried on a throwaway table."""
    conn = apsw.Connection(":memory:")
    try:
        return [_vec_check(conn), _fts5_check(conn)]
    finally:
        conn.close()


def _vec_check(conn: apsw.Connection) -> DoctorCheck:
    name = "sqlite_vec"
    fix = "pip install --force-reinstall sqlite-vec (until then searches use keywords only)"
    error = load_vector_extension(conn)
    if error is not None:
        return fail(name, error, fix)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.probe_vec USING vec0(embedding float[2])")
        conn.execute("INSERT INTO temp.probe_vec(rowid, embedding) VALUES (1, '[0.6, 0.8]')")
        rows = conn.execute(
            "SELECT rowid FROM temp.probe_vec WHERE embedding MATCH '[0.6, 0.8]' AND k = 1"
        ).fetchall()
        version = conn.execute("SELECT vec_version()").fetchall()[0][0]
    except apsw.Error as exc:
        return fail(name, f"sqlite-vec loaded but a vec0 table failed: {exc}", fix)
    if rows != [(1,)]:
        return fail(name, f"sqlite-vec returned {rows} for an exact-match query", fix)
    return ok(name, f"sqlite-vec {version} loads; a vec0 table answers a nearest-neighbour query")


def _fts5_check(conn: apsw.Connection) -> DoctorCheck:
    name = "fts5"
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.probe_fts USING fts5(body)")
        conn.execute("INSERT INTO temp.probe_fts(body) VALUES ('doctor probe')")
        rows = conn.execute("SELECT count(*) FROM temp.probe_fts WHERE probe_fts MATCH 'probe'")
        found = rows.fetchall()[0][0]
    except apsw.Error as exc:
        return fail(
            name,
            f"FTS5 is not available in SQLite {apsw.sqlite_lib_version()}: {exc}",
            "pip install --force-reinstall apsw (its wheels include FTS5)",
        )
    if found != 1:
        return fail(
            name, f"FTS5 found {found} rows instead of 1", "pip install --force-reinstall apsw"
        )
    return ok(name, f"FTS5 works (SQLite {apsw.sqlite_lib_version()})")


_START = "start openmemoryd (`openmemoryd start`, or `systemctl --user start openmemoryd`)"


def _rebuild_fix(path: Path) -> str:
    return (
        f"stop openmemoryd and move {path} away (mv {path} {path}.bad); the index is "
        "rebuilt from the Markdown on the next start"
    )
