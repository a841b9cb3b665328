"""Merging the keyword index's b-trees, a small step at a time.

FTS5 keeps its index as a set of b-trees ("segments"): every write
transaction adds one and its ``automerge`` folds a few together now and then,
so bulk indexing leaves a large index as a dozen segments of every size
(13 at 100k chunks, 25 at 1M). A MATCH looks each term up in every segment;
one segment answered the benchmark's keyword queries in 0.95 of the time,
with the same rows and the same BM25 ranks (merging moves postings, never
changes them).

FTS5's ``optimize`` merges everything in one transaction, which at 1M chunks
rewrites ~400 MB while holding the writer. ``('merge', -N)`` does the same
work incrementally: each call writes about N pages in its own transaction
(so a crash loses at most that step) and, because N is negative, it treats
every segment as one level and merges them all, as ``optimize`` would. A
call that changed fewer than two rows found nothing to merge (the FTS5
documentation's test, on `apsw.Connection.total_changes`).

Merging everything rewrites the whole index, so it is only worth it when
the segments other than the largest hold a real share of the postings:
a few small segments left by single appends cost ~2% at 100k chunks
(measured), far less than rewriting 400 MB after every note.
`worth_merging` says when.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import apsw

__all__ = [
    "MERGE_SHARE",
    "KeywordSegments",
    "keyword_segments",
    "merge_step",
    "worth_merging",
]

MERGE_SHARE: Final = 0.1
"""Merge once the segments besides the largest hold this share of the pages."""

_STRUCTURE_ID: Final = 10  # the row of ``chunks_fts_data`` holding the structure record
_STRUCTURE_V2: Final = b"\xff\x00\x00\x01"


@dataclass(frozen=True, slots=True)
class KeywordSegments:
    """The shape of the keyword index: how many b-trees, how many leaf pages
    in all, and how many in the largest one."""

    segments: int
    pages: int
    largest: int


def worth_merging(shape: KeywordSegments) -> bool:
    """True when a full merge would fold a real share of the index into one
    b-tree (see the module docstring), not just a few appends' worth."""
    if shape.segments < 2:
        return False
    return shape.pages - shape.largest >= MERGE_SHARE * shape.pages


def merge_step(conn: apsw.Connection, pages: int) -> bool:
    """Merge about *pages* leaf pages of the keyword index in one write
    transaction; False when there was nothing left to merge."""
    before = conn.total_changes()
    with conn:
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('merge', ?)", (-abs(pages),))
    return conn.total_changes() - before >= 2


def keyword_segments(conn: apsw.Connection) -> KeywordSegments | None:
    """The keyword index's segments, read from FTS5's structure record; None
    when the record is absent or in a format this reader does not know.

    The record (``fts5StructureDecode`` in SQLite's fts5_index.c): a 4-byte
    cookie, an optional V2 marker, then varints: levels, segments, a write
    counter, and per level its merge state and its segments, each with its
    id and first and last leaf page (V2 adds five more varints per segment).
    """
    rows = conn.execute(
        "SELECT block FROM chunks_fts_data WHERE id = ?", (_STRUCTURE_ID,)
    ).fetchall()
    if not rows or not isinstance(rows[0][0], bytes):
        return None
    try:
        return _decode(rows[0][0])
    except IndexError:
        return None


def _decode(record: bytes) -> KeywordSegments | None:
    at = 4
    v2 = record[at : at + 4] == _STRUCTURE_V2
    if v2:
        at += 4
    levels, at = _varint(record, at)
    total, at = _varint(record, at)
    _, at = _varint(record, at)  # the write counter
    sizes: list[int] = []
    for _level in range(levels):
        _, at = _varint(record, at)  # segments of this level being merged
        count, at = _varint(record, at)
        for _segment in range(count):
            _, at = _varint(record, at)  # segment id
            first, at = _varint(record, at)
            last, at = _varint(record, at)
            for _extra in range(5 if v2 else 0):  # origins, tombstone pages and entries, entries
                _, at = _varint(record, at)
            sizes.append(max(0, last - first + 1))
    if len(sizes) != total:
        return None
    return KeywordSegments(segments=total, pages=sum(sizes), largest=max(sizes, default=0))


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint at *at*: its value and the offset after it."""
    value = 0
    for offset in range(8):
        byte = data[at + offset]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + offset + 1
    return (value << 8) | data[at + 8], at + 9
