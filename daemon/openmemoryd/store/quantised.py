"""The companions of each vector table: 1-bit vectors to scan, floats to rescore.

sqlite-vec 0.1.9 has no ANN index; every KNN is a scan. Measured on the
project's 2-core machine (docs/benchmarks.md, "Search at scale"), the float
``vec0`` cosine scan costs ~0.65 µs a vector: ~65 ms at 100k chunks. A large
index therefore searches in two steps:

1. the ``k × oversample`` nearest by hamming distance between sign bits
   (48 bytes a vector at 384 dimensions) in ``<table>_bits``, scanned in
   the process's in-memory copy of them (`store.signbits`, kept current
   through ``<table>_bits_log``);
2. their exact cosine distances from ``<table>_f32``, a plain table of the
   float vectors keyed by chunk id, and the best *k* of those.

The float companion exists because point lookups in a ``vec0`` table cost
~125 µs each (a vector is read from inside a 1.5 MB chunk blob, walking its
overflow pages) and ``rowid IN (...)`` scans the whole table; a primary-key
lookup in a plain table costs a few µs. `store.vectors.distances` (fusion
scores for keyword hits the vector leg did not return) reads it too, at
every size.

Both companions (and the log) are written, deleted, dropped and promoted
with their ``vec0`` table (`store.vectors`), and `ensure_companions`
creates and fills them for an index written before they existed. The price is disk: the float
vectors are stored twice (1.5 KB a chunk at 384 dimensions).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Final

import apsw

from openmemoryd.store.rows import as_bytes, as_float, as_int
from openmemoryd.store.signbits import (
    bits_name,
    cached_candidates,
    create_log,
    epoch_key,
    log_ids,
    log_name,
    log_path,
    new_epoch,
    sql_candidates,
)

__all__ = [
    "CENTRE_MIN",
    "DEFAULT_OVERSAMPLE",
    "bits_name",
    "companion_distances",
    "cosine_distances",
    "create_companions",
    "delete_companion_ids",
    "delete_companion_path",
    "drop_companions",
    "ensure_companions",
    "ensure_vector_companions",
    "floats_name",
    "quantised_knn",
    "size_hint",
    "warm_sign_bits",
    "write_companions",
]

# Candidates scanned by hamming distance per neighbour wanted: 8 gives
# recall@10 0.99 against exact search on the LoCoMo questions (4: 0.96).
DEFAULT_OVERSAMPLE: Final = 8
# Vectors needed before their mean is taken as the centre, and how many it
# is taken over at most (see `_centre`).
CENTRE_MIN: Final = 8
CENTRE_SAMPLE: Final = 10_000
_CENTRE_KEY: Final = "vec_centre:"


def floats_name(table: str) -> str:
    return f"{table}_f32"


def create_companions(conn: apsw.Connection, table: str) -> None:
    """Create the (empty) companions of *table* (inside the caller's transaction)."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {floats_name(table)}("
        "id INTEGER PRIMARY KEY, vector BLOB NOT NULL) STRICT"
    )
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {bits_name(table)}("
        "id INTEGER PRIMARY KEY, source TEXT NOT NULL, bits BLOB NOT NULL) STRICT"
    )
    create_log(conn, table)


def drop_companions(conn: apsw.Connection, table: str) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {bits_name(table)}")
    conn.execute(f"DROP TABLE IF EXISTS {log_name(table)}")
    conn.execute(f"DROP TABLE IF EXISTS {floats_name(table)}")
    conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (_CENTRE_KEY + table, epoch_key(table)))


def _exists(conn: apsw.Connection, name: str) -> bool:
    rows = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchall()
    return bool(rows)


def _centre(conn: apsw.Connection, table: str) -> bytes | None:
    """The vector subtracted before binarising, as a float32 blob; None: not yet.

    Embedding models put every text in a narrow cone (e5: cosine ~0.75
    between unrelated texts), so the signs of raw components are nearly the
    same for every vector and hamming distance ranks poorly (recall@10 0.28
    on LoCoMo). The signs of the offsets from the vectors' mean carry the
    differences (0.75 with no oversampling, 0.99 at 8x). The mean is taken
    over the first `CENTRE_SAMPLE` vectors as soon as `CENTRE_MIN` exist;
    later vectors are binarised around the same centre, and `ensure_companions`
    takes it again (re-binarising all) once four times as many exist, so a
    centre from a young index's first batch does not stay for good.
    """
    found = _centre_row(conn, table)
    return found[1] if found is not None and found[1] else None


def _centre_row(conn: apsw.Connection, table: str) -> tuple[int, bytes] | None:
    """(vectors the centre was taken over, the centre)."""
    rows = conn.execute("SELECT value FROM meta WHERE key = ?", (_CENTRE_KEY + table,)).fetchall()
    if not rows:
        return None
    count, _, centre = str(rows[0][0]).partition(":")
    return int(count), bytes.fromhex(centre)


def _set_centre(conn: apsw.Connection, table: str) -> bytes | None:
    """Take the centre and binarise every stored vector around it; None if
    there are fewer than `CENTRE_MIN` vectors (inside the caller's transaction)."""
    blobs = [
        as_bytes(v)
        for (v,) in conn.execute(
            f"SELECT vector FROM {floats_name(table)} ORDER BY id LIMIT ?", (CENTRE_SAMPLE,)
        )
    ]
    if len(blobs) < CENTRE_MIN:
        return None
    dims = len(blobs[0]) // 4
    if dims % 8:
        # sqlite-vec packs signs 8 to a byte; such a table is always searched
        # exactly. Recorded as a full-sample empty centre: never tried again.
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
            (_CENTRE_KEY + table, f"{CENTRE_SAMPLE}:"),
        )
        return None
    sums = [0.0] * dims
    for blob in blobs:
        for i, value in enumerate(struct.unpack(f"<{dims}f", blob)):
            sums[i] += value
    centre = struct.pack(f"<{dims}f", *(total / len(blobs) for total in sums))
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
        (_CENTRE_KEY + table, f"{len(blobs)}:{centre.hex()}"),
    )
    conn.execute(f"DELETE FROM {bits_name(table)}")
    new_epoch(conn, table)  # every cached copy of the bits reloads
    conn.execute(
        f"INSERT INTO {bits_name(table)}(id, source, bits) "
        f"SELECT f.id, c.source, vec_quantize_binary(vec_sub(f.vector, ?)) "
        f"FROM {floats_name(table)} AS f JOIN chunks AS c ON c.id = f.id",
        (centre,),
    )
    return centre


def ensure_companions(conn: apsw.Connection, table: str) -> bool:
    """Create and fill *table*'s companions if they are missing; whether it did.

    One transaction, so an existing float companion means a complete one.
    An index from before the sign bits' change log (`store.signbits`) gets
    an empty one, which voids every cached copy.
    """
    if not _exists(conn, table):
        return False
    missing = not _exists(conn, floats_name(table))
    if not missing and not _exists(conn, log_name(table)):
        with conn:
            create_log(conn, table)
    if not missing and not _stale_centre(conn, table):
        return False
    with conn:
        create_companions(conn, table)
        if missing:
            conn.execute(
                f"INSERT INTO {floats_name(table)}(id, vector) SELECT rowid, embedding FROM {table}"
            )
        centred = _set_centre(conn, table) is not None
    return missing or centred


def _stale_centre(conn: apsw.Connection, table: str) -> bool:
    """Whether the centre is missing (with `CENTRE_MIN` vectors there), or was
    taken over fewer than `CENTRE_SAMPLE` vectors and four times as many (or
    `CENTRE_SAMPLE`) are there now. Counts stop at that many: no full scan."""
    found = _centre_row(conn, table)
    wanted = CENTRE_MIN if found is None else min(4 * found[0], CENTRE_SAMPLE)
    if found is not None and found[0] >= CENTRE_SAMPLE:
        return False
    (row,) = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {floats_name(table)} LIMIT ?)", (wanted,)
    ).fetchall()
    return as_int(row[0]) >= wanted


def ensure_vector_companions(conn: apsw.Connection) -> list[str]:
    """`ensure_companions` for the active and the building vector table (named
    in ``meta``, `store.vectors`); the tables it filled. Run on the writer at open."""
    filled = []
    for (value,) in conn.execute(
        "SELECT value FROM meta WHERE key IN ('vec_active', 'vec_building')"
    ).fetchall():
        table = str(json.loads(str(value))["table"])
        if ensure_companions(conn, table):
            filled.append(table)
    return filled


def write_companions(
    conn: apsw.Connection, table: str, rows: Sequence[tuple[int, bytes, str]]
) -> None:
    """Store (chunk id, vector, source) rows in the companions (inside the
    caller's transaction); the first `CENTRE_MIN` vectors of a table also
    fix its centre."""
    floats = floats_name(table)
    conn.executemany(
        f"INSERT OR REPLACE INTO {floats}(id, vector) VALUES (?, ?)",
        [(chunk_id, blob) for chunk_id, blob, _ in rows],
    )
    found = _centre_row(conn, table)
    if found is None:
        _set_centre(conn, table)  # binarises these rows too, once there are enough
        return
    centre = found[1]
    if not centre:
        return  # dimensions not a multiple of 8: no sign bits
    conn.executemany(
        f"INSERT OR REPLACE INTO {bits_name(table)}(id, source, bits) "
        "VALUES (?, ?, vec_quantize_binary(vec_sub(?, ?)))",
        [(chunk_id, source, blob, centre) for chunk_id, blob, source in rows],
    )
    log_ids(conn, table, [chunk_id for chunk_id, _, _ in rows])


def delete_companion_ids(conn: apsw.Connection, table: str, ids: Sequence[int]) -> None:
    log_ids(conn, table, ids)
    for chunk_id in ids:
        conn.execute(f"DELETE FROM {bits_name(table)} WHERE id = ?", (chunk_id,))
        conn.execute(f"DELETE FROM {floats_name(table)} WHERE id = ?", (chunk_id,))


def delete_companion_path(conn: apsw.Connection, table: str, path: str) -> None:
    """Remove the companions' rows of every chunk of *path* (before the chunks go)."""
    log_path(conn, table, path)
    for name in (bits_name(table), floats_name(table)):
        conn.execute(
            f"DELETE FROM {name} WHERE id IN (SELECT id FROM chunks WHERE path = ?)", (path,)
        )


def size_hint(conn: apsw.Connection, table: str) -> int:
    """The highest chunk id with a vector: an upper bound of the vector count,
    read from the primary key in O(log n) where ``count(*)`` walks every row."""
    try:
        rows = conn.execute(f"SELECT max(id) FROM {floats_name(table)}").fetchall()
    except apsw.SQLError:  # no companions yet (`store.vectors.distances`): search exactly
        return 0
    return 0 if not rows or rows[0][0] is None else as_int(rows[0][0])


def companion_distances(
    conn: apsw.Connection, table: str, query: bytes, ids: Sequence[int]
) -> dict[int, float]:
    """Exact cosine distance from *query* to each of these chunks that has a vector."""
    return cosine_distances(conn, floats_name(table), "id", "vector", query, ids)


def cosine_distances(
    conn: apsw.Connection, table: str, key: str, column: str, query: bytes, ids: Sequence[int]
) -> dict[int, float]:
    """Cosine distance from *query* to the vector in *column* of each row of
    *table* whose *key* is one of *ids* (rows without one are absent)."""
    found: dict[int, float] = {}
    for start in range(0, len(ids), 400):
        part = list(ids[start : start + 400])
        sql = (
            f"SELECT {key}, vec_distance_cosine({column}, ?) FROM {table} "
            f"WHERE {key} IN ({', '.join('?' * len(part))})"
        )
        for rowid, distance in conn.execute(sql, [query, *part]):
            found[as_int(rowid)] = as_float(distance)
    return found


def warm_sign_bits(conn: apsw.Connection, table: str, quantised_above: int) -> bool:
    """Load the in-memory copy of *table*'s sign bits if its searches will be
    quantised (~57 bytes a vector; seconds at 1M vectors, which the first
    search would otherwise wait for); whether it did."""
    centre = _centre(conn, table)
    if centre is None or size_hint(conn, table) < quantised_above:
        return False
    return cached_candidates(conn, table, centre, b"\0" * (len(centre) // 32), 1, None) is not None


def quantised_knn(
    conn: apsw.Connection,
    table: str,
    query: bytes,
    k: int,
    sources: Sequence[str] | None = None,
    *,
    oversample: int = DEFAULT_OVERSAMPLE,
) -> list[tuple[int, float]] | None:
    """The *k* nearest chunks as (chunk id, exact cosine distance), nearest
    first: ``k × oversample`` candidates by hamming distance of the centred
    signs, rescored exactly. None when the table has no centre yet (fewer
    than `CENTRE_MIN` vectors): search it exactly.

    The hamming scan runs on the process's in-memory copy of the sign bits
    (`store.signbits`; ~10x faster than SQL at 1M vectors), or in SQL for a
    table without a change log yet; both pick the same candidates.
    """
    centre = _centre(conn, table)
    if centre is None:
        return None
    (probe,) = conn.execute("SELECT vec_quantize_binary(vec_sub(?, ?))", (query, centre)).fetchall()
    bits, wanted = as_bytes(probe[0]), k * max(1, oversample)
    candidates = cached_candidates(conn, table, centre, bits, wanted, sources)
    if candidates is None:
        candidates = sql_candidates(conn, table, bits, wanted, sources)
    scored = companion_distances(conn, table, query, candidates)
    return sorted(scored.items(), key=lambda item: (item[1], item[0]))[:k]
