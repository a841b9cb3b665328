"""The sign-bit companion held in memory: the hamming scan in numpy.

The quantised KNN (`store.quantised`) first picks the ``k × oversample``
vectors nearest by hamming distance between centred sign bits. As SQL
(``ORDER BY vec_distance_hamming(...) LIMIT``) that scan costs ~110 ns a
vector, ~110 ms at 1M chunks: SQLite visits every row, calls the function
through its value API and feeds a sorter. The same bits as one packed
``uint64`` array (48 bytes a vector at 384 dimensions, 48 MB at 1M) scanned
with ``np.bitwise_count`` and ``np.argpartition`` cost a few ns a vector.

The table ``<table>_bits`` stays the source of truth; this is a cache of
it, per database file and table, in the process that reads it:

* every write or delete of sign bits also appends the chunk ids it touched
  to ``<table>_bits_log`` (``seq`` increasing), in the same transaction; a
  reader that cached the bits up to ``seq`` S applies the rows after S
  (re-reading those ids' bits, absent = deleted) and is current again. The
  log keeps the last `LOG_KEEP` entries; a cache older than that reloads;
* a new centre re-binarises every vector and a dropped and re-created table
  starts its log again, so either writes a new *epoch* token in ``meta``;
  a cache of another epoch, or another centre, reloads in full.

Candidates are chosen by (hamming distance, chunk id), exactly as the SQL
scan `sql_candidates` orders them, so both give the same candidates for the
same data (tests/test_signbits.py compares them).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeAlias

import apsw

from openmemoryd.store.rows import as_bytes, as_int, as_str

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "LOG_KEEP",
    "bits_name",
    "cached_candidates",
    "create_log",
    "epoch_key",
    "forget",
    "log_ids",
    "log_name",
    "log_path",
    "new_epoch",
    "sql_candidates",
]

# Log entries kept: enough for any reader that searched since the last few
# thousand files were indexed; one older than that reloads (~1 s at 1M).
LOG_KEEP: Final = 100_000
# Databases and tables cached per process; a daemon reads one index.
_CACHED: Final = 4
# Ids are below 2**40, so (distance << 40) | id orders as (distance, id).
_ID_BITS: Final = 40
_EPOCH_KEY: Final = "vec_bits_epoch:"
# Vectors per block of the scan: its temporaries (9 bytes a vector) fit in L2.
_BLOCK: Final = 1 << 15

U64Array: TypeAlias = "npt.NDArray[np.uint64]"
I64Array: TypeAlias = "npt.NDArray[np.int64]"
U8Array: TypeAlias = "npt.NDArray[np.uint8]"


def bits_name(table: str) -> str:
    return f"{table}_bits"


def log_name(table: str) -> str:
    return f"{table}_bits_log"


def epoch_key(table: str) -> str:
    return _EPOCH_KEY + table


def create_log(conn: apsw.Connection, table: str) -> None:
    """Create *table*'s change log if missing, starting a new epoch when it
    was (inside the caller's transaction)."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = ?", (log_name(table),)
    ).fetchall()
    if found:
        return
    conn.execute(
        f"CREATE TABLE {log_name(table)}(seq INTEGER PRIMARY KEY, id INTEGER NOT NULL) STRICT"
    )
    new_epoch(conn, table)


def new_epoch(conn: apsw.Connection, table: str) -> None:
    """Every cached copy of *table*'s sign bits is void: reload in full."""
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
        (epoch_key(table), os.urandom(8).hex()),
    )


def log_ids(conn: apsw.Connection, table: str, ids: Sequence[int]) -> None:
    """Note that the sign bits of *ids* changed (inside the caller's transaction)."""
    if not ids:
        return
    log = log_name(table)
    conn.executemany(f"INSERT INTO {log}(id) VALUES (?)", [(i,) for i in ids])
    conn.execute(f"DELETE FROM {log} WHERE seq < (SELECT max(seq) FROM {log}) - ?", (LOG_KEEP,))


def log_path(conn: apsw.Connection, table: str, path: str) -> None:
    """`log_ids` for every chunk of *path* (before the chunks go)."""
    log = log_name(table)
    conn.execute(f"INSERT INTO {log}(id) SELECT id FROM chunks WHERE path = ?", (path,))
    conn.execute(f"DELETE FROM {log} WHERE seq < (SELECT max(seq) FROM {log}) - ?", (LOG_KEEP,))


def sql_candidates(
    conn: apsw.Connection, table: str, probe: bytes, count: int, sources: Sequence[str] | None
) -> list[int]:
    """The *count* chunks nearest to *probe* by hamming distance, then id: the
    scan in SQL (the reference `cached_candidates` must agree with)."""
    sql = f"SELECT id FROM {bits_name(table)}"
    args: list[object] = []
    if sources:
        sql += f" WHERE source IN ({', '.join('?' * len(sources))})"
        args.extend(sources)
    sql += " ORDER BY vec_distance_hamming(vec_bit(bits), vec_bit(?)), id LIMIT ?"
    args.extend([probe, count])
    return [as_int(rowid) for (rowid,) in conn.execute(sql, args)]


@dataclass(frozen=True, slots=True)
class _Bits:
    """One immutable copy of a table's sign bits; replaced, never changed,
    so a scan on another thread never sees a half-applied update."""

    epoch: str
    centre: bytes
    seq: int  # log entries up to this one are applied
    ids: I64Array
    # (words, vectors): word w of every vector contiguous, so each pass of
    # the scan reads memory in order; a vector's bits are zero-padded to 8 bytes.
    words: U64Array
    sources: U8Array  # index into `names`
    names: tuple[str, ...]


_lock = threading.Lock()
_cache: OrderedDict[tuple[str, str], _Bits] = OrderedDict()


def forget() -> None:
    """Drop every cached copy (tests; a closed index)."""
    with _lock:
        _cache.clear()


def cached_candidates(
    conn: apsw.Connection,
    table: str,
    centre: bytes,
    probe: bytes,
    count: int,
    sources: Sequence[str] | None,
) -> list[int] | None:
    """`sql_candidates` from the in-memory copy, brought up to date first;
    None when *table* has no change log (an index opened only by readers
    since the log came): scan in SQL."""
    try:
        bits = _current(conn, table, centre)
    except apsw.SQLError:
        return None
    return _nearest(bits, probe, count, sources)


def _current(conn: apsw.Connection, table: str, centre: bytes) -> _Bits:
    key = (conn.filename, table)
    with _lock:
        cached = _cache.get(key)
        fresh = _refresh(conn, table, centre, cached)
        _cache[key] = fresh
        _cache.move_to_end(key)
        while len(_cache) > _CACHED:
            _cache.popitem(last=False)
        return fresh


def _refresh(conn: apsw.Connection, table: str, centre: bytes, cached: _Bits | None) -> _Bits:
    """*cached* as of the log now: itself, with the logged changes, or reloaded."""
    import numpy as np

    log = log_name(table)
    ((low, high),) = conn.execute(f"SELECT min(seq), max(seq) FROM {log}").fetchall()
    rows = conn.execute("SELECT value FROM meta WHERE key = ?", (epoch_key(table),)).fetchall()
    epoch = as_str(rows[0][0]) if rows else ""
    seq = 0 if high is None else as_int(high)
    if cached is None or cached.epoch != epoch or cached.centre != centre or seq < cached.seq:
        return _load(conn, table, epoch, centre, seq)
    if seq == cached.seq:
        return cached
    if low is None or as_int(low) > cached.seq + 1:
        return _load(conn, table, epoch, centre, seq)  # entries we need were pruned
    changed = conn.execute(
        f"SELECT l.id, b.source, b.bits FROM (SELECT DISTINCT id FROM {log} "
        f"WHERE seq > ? AND seq <= ?) AS l LEFT JOIN {bits_name(table)} AS b ON b.id = l.id",
        (cached.seq, seq),
    ).fetchall()
    ids = np.array([as_int(r[0]) for r in changed], dtype=np.int64)
    present = [r for r in changed if r[2] is not None]
    names = list(cached.names)
    keep = ~np.isin(cached.ids, ids)
    added_ids = np.array([as_int(r[0]) for r in present], dtype=np.int64)
    added_sources = _codes([as_str(r[1]) for r in present], names)
    added_words = _pack([as_bytes(r[2]) for r in present], cached.words.shape[0])
    return _Bits(
        epoch=epoch,
        centre=centre,
        seq=seq,
        ids=np.concatenate([cached.ids[keep], added_ids]),
        words=np.concatenate([cached.words[:, keep], added_words], axis=1),
        sources=np.concatenate([cached.sources[keep], added_sources]),
        names=tuple(names),
    )


def _load(conn: apsw.Connection, table: str, epoch: str, centre: bytes, seq: int) -> _Bits:
    """Every stored sign-bit vector; the log position *seq* was read first,
    so changes made meanwhile are applied again later (harmless)."""
    import numpy as np

    ids: list[int] = []
    labels: list[str] = []
    blobs: list[bytes] = []
    for rowid, source, blob in conn.execute(f"SELECT id, source, bits FROM {bits_name(table)}"):
        ids.append(as_int(rowid))
        labels.append(as_str(source))
        blobs.append(as_bytes(blob))
    names: list[str] = []
    width = -(-(len(centre) // 32) // 8)  # 64-bit words per vector: 4-byte floats, 8 bits a byte
    return _Bits(
        epoch=epoch,
        centre=centre,
        seq=seq,
        ids=np.array(ids, dtype=np.int64),
        words=_pack(blobs, width),
        sources=_codes(labels, names),
        names=tuple(names),
    )


def _pack(blobs: Sequence[bytes], width: int) -> U64Array:
    """Sign-bit blobs as *width* rows of little-endian 64-bit words, one column
    a blob, zero-padded (the probe's padding is zero too: distances are
    unchanged)."""
    import numpy as np

    size = width * 8
    if not blobs:
        return np.zeros((width, 0), dtype=np.uint64)
    if all(len(b) == size for b in blobs):
        joined = b"".join(blobs)
    else:
        joined = b"".join(b.ljust(size, b"\0")[:size] for b in blobs)
    rows = np.frombuffer(joined, dtype="<u8").astype(np.uint64, copy=False).reshape(-1, width)
    return np.ascontiguousarray(rows.T)


def _codes(labels: Sequence[str], names: list[str]) -> U8Array:
    """Each label's index in *names*, extending it with labels not yet there."""
    import numpy as np

    index = {name: i for i, name in enumerate(names)}
    for label in labels:
        if label not in index:
            index[label] = len(names)
            names.append(label)
    if len(names) > 255:
        raise ValueError("more than 255 sources")
    return np.array([index[label] for label in labels], dtype=np.uint8)


def _nearest(bits: _Bits, probe: bytes, count: int, sources: Sequence[str] | None) -> list[int]:
    """The *count* ids nearest to *probe* by (hamming distance, id).

    Distances are summed word by word over blocks of `_BLOCK` vectors, so the
    temporaries stay in cache; the cut-off distance comes from their
    histogram, so only the few vectors at or under it are sorted (an
    ``argpartition`` of a million keys cost more than the scan).
    """
    import numpy as np

    words, ids = bits.words, bits.ids
    total = len(ids)
    if count <= 0 or total == 0:
        return []
    width = words.shape[0]
    excluded = width * 64 + 1  # farther than any vector can be
    query = _pack([probe], width)[:, 0]
    distance = np.zeros(total, dtype=np.uint16)
    xor = np.empty(min(total, _BLOCK), dtype=np.uint64)
    ones = np.empty(len(xor), dtype=np.uint8)
    for start in range(0, total, _BLOCK):
        end = min(total, start + _BLOCK)
        part, n = distance[start:end], end - start
        for column in range(width):
            np.bitwise_xor(words[column, start:end], query[column], out=xor[:n])
            np.bitwise_count(xor[:n], out=ones[:n])
            np.add(part, ones[:n], out=part, casting="unsafe")
    if sources:
        wanted = [bits.names.index(s) for s in sources if s in bits.names]
        mask = np.isin(bits.sources, np.array(wanted, dtype=np.uint8))
        distance[~mask] = excluded
        count = min(count, int(np.count_nonzero(mask)))
        if count == 0:
            return []
    count = min(count, total)
    histogram = np.bincount(distance, minlength=excluded + 1)
    cut = int(np.searchsorted(np.cumsum(histogram), count))
    near = np.flatnonzero(distance <= cut)
    keys = (distance[near].astype(np.int64) << _ID_BITS) | ids[near]
    if count < len(keys):
        keys = keys[np.argpartition(keys, count - 1)[:count]]
    keys.sort()
    return [int(i) for i in keys & ((1 << _ID_BITS) - 1)]
