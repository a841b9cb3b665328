"""Vector tables, the embedding cache, and background embedding bookkeeping.

Vectors live in sqlite-vec ``vec0`` tables keyed by chunk id, one table per
embedding *identity* (provider, model, endpoint, dimensions), because vectors
of different models are not comparable. ``meta`` records:

* ``vec_active``: the table searches use (its identity must match the query
  embedder's, or the vector leg is off);
* ``vec_building``: a table being filled for a new identity after the
  provider or model changed. Searches keep using the active table (or
  keyword search alone) until every chunk has a vector in the new one; then
  `promote_building` swaps them in one transaction, so no search ever sees a
  half-filled vector index.

``chunks.model`` holds the identity whose table has the chunk's vector, so
"what still needs embedding" is a query, and a crash mid-way resumes where it
stopped. The cache maps (identity, text hash) to a vector: re-chunking
unchanged text, or a full re-index, computes no new embeddings.

Each table has two companions kept in step here (`store.quantised`): its
float vectors in a plain table, for point lookups, and their centred sign
bits, which large indexes scan instead of the floats.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw

from openmemoryd.store.db import get_meta
from openmemoryd.store.quantised import (
    companion_distances,
    cosine_distances,
    create_companions,
    delete_companion_ids,
    delete_companion_path,
    drop_companions,
    warm_sign_bits,
    write_companions,
)
from openmemoryd.store.rows import as_bytes, as_float, as_int, as_str

_ACTIVE = "vec_active"
_BUILDING = "vec_building"


@dataclass(frozen=True, slots=True)
class VecTable:
    """A vec0 table and the identity whose vectors it holds."""

    table: str
    identity: str
    dims: int


@dataclass(frozen=True, slots=True)
class PendingChunk:
    id: int
    text: str
    hash: str


def table_name(identity: str, dims: int) -> str:
    digest = hashlib.sha256(f"{identity}|{dims}".encode()).hexdigest()[:12]
    return f"vec_{digest}"


def _read(conn: apsw.Connection, key: str) -> VecTable | None:
    raw = get_meta(conn, key)
    if raw is None:
        return None
    data = json.loads(raw)
    return VecTable(str(data["table"]), str(data["identity"]), int(data["dims"]))


def _write(conn: apsw.Connection, key: str, table: VecTable | None) -> None:
    if table is None:
        conn.execute("DELETE FROM meta WHERE key = ?", (key,))
        return
    value = json.dumps({"table": table.table, "identity": table.identity, "dims": table.dims})
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def active_table(conn: apsw.Connection) -> VecTable | None:
    return _read(conn, _ACTIVE)


def warm_active_sign_bits(conn: apsw.Connection, quantised_above: int) -> bool:
    """`quantised.warm_sign_bits` for the table searches use; False without one."""
    active = active_table(conn)
    return active is not None and warm_sign_bits(conn, active.table, quantised_above)


def building_table(conn: apsw.Connection) -> VecTable | None:
    return _read(conn, _BUILDING)


def vector_tables(conn: apsw.Connection) -> list[str]:
    """Names of every vec table in use (active and building)."""
    return [t.table for t in (active_table(conn), building_table(conn)) if t is not None]


def target_table(conn: apsw.Connection, identity: str, dims: int) -> VecTable:
    """The table that vectors of *identity* go to, creating it if needed.

    The active table when it matches; otherwise a building table for this
    identity (a stale building table of another identity is dropped). The
    very first table becomes active at once: there is nothing to replace.
    """
    active = active_table(conn)
    if active is not None and active.identity == identity and active.dims == dims:
        return active
    building = building_table(conn)
    if building is not None and building.identity == identity and building.dims == dims:
        return building
    table = VecTable(table_name(identity, dims), identity, dims)
    with conn:
        if building is not None:
            conn.execute(f"DROP TABLE IF EXISTS {building.table}")
            drop_companions(conn, building.table)
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table.table} USING vec0("
            f"embedding float[{dims}] distance_metric=cosine, source text)"
        )
        create_companions(conn, table.table)
        _write(conn, _ACTIVE if active is None else _BUILDING, table)
    return table


def promote_building(conn: apsw.Connection) -> VecTable | None:
    """Make the building table active and drop the old one, atomically."""
    building = building_table(conn)
    if building is None:
        return None
    with conn:
        old = active_table(conn)
        if old is not None and old.table != building.table:
            conn.execute(f"DROP TABLE IF EXISTS {old.table}")
            drop_companions(conn, old.table)
        _write(conn, _ACTIVE, building)
        _write(conn, _BUILDING, None)
    return building


def retire_active(conn: apsw.Connection) -> None:
    """Drop the active table (its identity is no longer the embedder's and
    there is nothing to re-embed, e.g. an empty index)."""
    with conn:
        active = active_table(conn)
        if active is not None:
            conn.execute(f"DROP TABLE IF EXISTS {active.table}")
            drop_companions(conn, active.table)
        _write(conn, _ACTIVE, None)


def pending_chunks(
    conn: apsw.Connection, identity: str, after_id: int, limit: int
) -> list[PendingChunk]:
    """Chunks after *after_id* whose vector for *identity* is missing, by id."""
    rows = conn.execute(
        "SELECT id, text, hash FROM chunks WHERE id > ? AND (model IS NULL OR model != ?) "
        "ORDER BY id LIMIT ?",
        (after_id, identity, limit),
    )
    return [PendingChunk(as_int(i), as_str(t), as_str(h)) for i, t, h in rows]


def vector_progress(conn: apsw.Connection, identity: str) -> tuple[int, int]:
    """(chunks with a vector for *identity*, all chunks)."""
    done = conn.execute("SELECT count(*) FROM chunks WHERE model = ?", (identity,)).fetchall()
    total = conn.execute("SELECT count(*) FROM chunks").fetchall()
    return as_int(done[0][0]), as_int(total[0][0])


def store_vectors(
    conn: apsw.Connection, table: VecTable, rows: Sequence[tuple[int, str, bytes]]
) -> int:
    """Store (chunk id, text hash, vector) rows; return how many were stored.

    A chunk deleted or re-chunked since it was read (its id gone, or its hash
    changed) is skipped: its vector would describe text that no longer exists.
    """
    stored = 0
    written: list[tuple[int, bytes, str]] = []
    with conn:
        for chunk_id, digest, blob in rows:
            found = conn.execute(
                "SELECT hash, source FROM chunks WHERE id = ?", (chunk_id,)
            ).fetchall()
            if not found or found[0][0] != digest:
                continue
            conn.execute(f"DELETE FROM {table.table} WHERE rowid = ?", (chunk_id,))
            conn.execute(
                f"INSERT INTO {table.table}(rowid, embedding, source) VALUES (?, ?, ?)",
                (chunk_id, blob, found[0][1]),
            )
            written.append((chunk_id, blob, as_str(found[0][1])))
            conn.execute("UPDATE chunks SET model = ? WHERE id = ?", (table.identity, chunk_id))
            stored += 1
        write_companions(conn, table.table, written)
    return stored


def delete_chunk_vectors(conn: apsw.Connection, path: str) -> None:
    """Remove the vectors of every chunk of *path* (call inside its transaction)."""
    for table in vector_tables(conn):
        delete_companion_path(conn, table, path)
        conn.execute(
            f"DELETE FROM {table} WHERE rowid IN (SELECT id FROM chunks WHERE path = ?)", (path,)
        )


def delete_vectors(conn: apsw.Connection, ids: Sequence[int]) -> None:
    """Remove the vectors of the chunks *ids* (call inside their transaction)."""
    for table in vector_tables(conn):
        delete_companion_ids(conn, table, ids)
        for chunk_id in ids:
            conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (chunk_id,))


def knn(
    conn: apsw.Connection,
    table: VecTable,
    query: bytes,
    k: int,
    sources: Sequence[str] | None = None,
) -> list[tuple[int, float]]:
    """The *k* nearest chunks to *query* as (chunk id, cosine distance)."""
    sql = f"SELECT rowid, distance FROM {table.table} WHERE embedding MATCH ? AND k = ?"
    args: list[object] = [query, k]
    if sources:
        sql += f" AND source IN ({', '.join('?' * len(sources))})"
        args.extend(sources)
    return [(as_int(rowid), as_float(distance)) for rowid, distance in conn.execute(sql, args)]


# ---------------------------------------------------------------- cache


def cache_get(conn: apsw.Connection, identity: str, hashes: Iterable[str]) -> dict[str, bytes]:
    """Cached vectors of these text hashes for *identity*."""
    found: dict[str, bytes] = {}
    wanted = list(dict.fromkeys(hashes))
    for start in range(0, len(wanted), 400):
        part = wanted[start : start + 400]
        rows = conn.execute(
            f"SELECT hash, vector FROM embedding_cache WHERE provider_key = ? "
            f"AND hash IN ({', '.join('?' * len(part))})",
            (identity, *part),
        )
        found.update((as_str(h), as_bytes(v)) for h, v in rows)
    return found


def cache_put(
    conn: apsw.Connection, identity: str, dims: int, items: Iterable[tuple[str, bytes]]
) -> None:
    now = time.time()
    with conn:
        conn.executemany(
            "INSERT INTO embedding_cache(provider_key, hash, dims, vector, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(provider_key, hash) DO UPDATE SET "
            "vector = excluded.vector, dims = excluded.dims, updated_at = excluded.updated_at",
            ((identity, digest, dims, blob, now) for digest, blob in items),
        )


def cache_touch(conn: apsw.Connection, identity: str, hashes: Iterable[str]) -> None:
    """Mark cache entries as used, so pruning drops the least recently used."""
    now = time.time()
    with conn:
        conn.executemany(
            "UPDATE embedding_cache SET updated_at = ? WHERE provider_key = ? AND hash = ?",
            ((now, identity, digest) for digest in hashes),
        )


def cache_prune(conn: apsw.Connection, max_entries: int) -> int:
    """Drop the least recently used entries beyond *max_entries*."""
    total = cache_size(conn)
    excess = total - max_entries
    if excess <= 0:
        return 0
    with conn:
        conn.execute(
            "DELETE FROM embedding_cache WHERE (provider_key, hash) IN ("
            "SELECT provider_key, hash FROM embedding_cache ORDER BY updated_at LIMIT ?)",
            (excess,),
        )
    return excess


def cache_size(conn: apsw.Connection) -> int:
    return as_int(conn.execute("SELECT count(*) FROM embedding_cache").fetchall()[0][0])


def distances(
    conn: apsw.Connection, table: VecTable, query: bytes, ids: Sequence[int]
) -> dict[int, float]:
    """Cosine distance from *query* to each of these chunks that has a vector.

    Fusion scores keyword hits the vector leg did not return by their own
    vectors. They are read from the float companion (`store.quantised`):
    primary-key lookups, where ``rowid IN (...)`` on the vec0 table scans it
    whole (~50 ms at 100k chunks). A read-only look at an index no writer has
    opened since the companions came has none: the vec0 table then serves.
    """
    try:
        return companion_distances(conn, table.table, query, ids)
    except apsw.SQLError:
        return cosine_distances(conn, table.table, "rowid", "embedding", query, ids)
