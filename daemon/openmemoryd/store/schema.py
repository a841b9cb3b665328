"""The index schema as an ordered list of named migrations.

``PRAGMA user_version`` records how many migrations ran. Each migration runs
in one transaction together with the version bump, so a crash leaves the
database at a whole version. A database whose version is higher than
`SCHEMA_VERSION` was written by a newer openmemoryd and is refused, not
touched.

Tables:

* ``meta``: key/value facts about the index (workspace, term segmentation).
* ``files``: one row per indexed file: content hash, stat, chunk count and a
  note when the file was skipped (binary, too large).
* ``chunks``: the text units search returns, with 1-based inclusive lines,
  the heading path at their first line and the heading lines inside them.
* ``chunks_fts``: FTS5 over our pre-segmented terms (see `text.terms`);
  contentless, keyed by ``chunks.id``, BM25 weights body 1.0, heading 0.5.
  It also holds `SMOOTHING_ROWS` padding documents (negative rowids, no
  chunk): FTS5's BM25 idf, ``log((N - n + 0.5) / (n + 0.5))``, is clamped to
  ~0 whenever a term occurs in half the documents, so in a workspace of a few
  notes every exact match scored 0. The padding is collection smoothing: it
  gives small workspaces meaningful idf and vanishes against thousands of
  real chunks. Searches join on ``chunks``, so padding never shows up.
* ``embedding_cache``: vectors by provider key and text hash, so an unchanged
  chunk is never embedded twice.
* ``vec_<id>`` (created at run time, see `store.vectors`): one sqlite-vec
  table per embedding identity; ``meta`` names the active one and the one
  being built. ``chunks.model`` holds the identity whose table has the
  chunk's vector.
* ``vec_<id>_f32`` and ``vec_<id>_bits`` (run time, `store.quantised`): each
  vec table's float vectors keyed by chunk id and their centred sign bits,
  for the quantised KNN of large indexes and for fast point lookups;
  ``meta`` holds the centre (``vec_centre:<table>``). ``vec_<id>_bits_log``
  (`store.signbits`) lists the chunk ids whose sign bits changed, so the
  daemon's in-memory copy of them follows; ``meta`` holds its epoch
  (``vec_bits_epoch:<table>``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import apsw

APPLICATION_ID: Final = 0x4F4D454D  # "OMEM"


# How FTS5 ranks a keyword match: BM25 with the body weighted 1.0 and the
# heading 0.5. The table's configured ``rank`` and the explicit ``bm25()``
# of `store.reads.lexical_candidates` must agree, so both come from here.
_KEYWORD_WEIGHTS: Final = "1.0, 0.5"
KEYWORD_RANK: Final = f"bm25({_KEYWORD_WEIGHTS})"
KEYWORD_RANK_FUNCTION: Final = f"bm25(chunks_fts, {_KEYWORD_WEIGHTS})"


def _m001_initial(conn: apsw.Connection) -> None:
    conn.execute(
        f"""
        CREATE TABLE meta(
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) STRICT;

        CREATE TABLE files(
            path TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            hash TEXT NOT NULL,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            chunks INTEGER NOT NULL,
            indexed_at REAL NOT NULL,
            note TEXT
        ) STRICT;

        CREATE TABLE chunks(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,
            source TEXT NOT NULL,
            agent TEXT,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            heading TEXT NOT NULL,
            text TEXT NOT NULL,
            hash TEXT NOT NULL,
            model TEXT,
            created_at REAL NOT NULL
        ) STRICT;
        CREATE INDEX chunks_by_path ON chunks(path);
        CREATE INDEX chunks_by_hash ON chunks(hash);

        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            body, heading,
            content='', contentless_delete=1,
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO chunks_fts(chunks_fts, rank) VALUES('rank', '{KEYWORD_RANK}');

        CREATE TABLE embedding_cache(
            provider_key TEXT NOT NULL,
            hash TEXT NOT NULL,
            dims INTEGER NOT NULL,
            vector BLOB NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY(provider_key, hash)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX embedding_cache_by_age ON embedding_cache(updated_at);
        """
    )


def _m002_vector_progress(conn: apsw.Connection) -> None:
    # Background embedding walks chunks by id looking for ones whose vector
    # is missing for the target identity; this keeps that walk an index scan.
    conn.execute("CREATE INDEX chunks_by_model ON chunks(model, id)")


SMOOTHING_ROWS: Final = 50
_SMOOTHING_LENGTH: Final = 200  # tokens, about a real chunk's, to keep avgdl sane


def add_smoothing_rows(conn: apsw.Connection) -> None:
    """Insert the BM25 padding documents (idempotent)."""
    body = " ".join(["omempadding"] * _SMOOTHING_LENGTH)
    conn.execute("DELETE FROM chunks_fts WHERE rowid < 0")
    conn.executemany(
        "INSERT INTO chunks_fts(rowid, body, heading) VALUES (?, ?, '')",
        ((-row, body) for row in range(1, SMOOTHING_ROWS + 1)),
    )


def _m003_bm25_smoothing(conn: apsw.Connection) -> None:
    add_smoothing_rows(conn)


def _m004_sessions(conn: apsw.Connection) -> None:
    # Session transcripts are indexed incrementally: how far each file has
    # been read (bytes and lines) and which inode that was, so a rotated or
    # truncated file is re-read from the start. Chunks of transcripts carry
    # the time their messages were written, for decay.
    conn.execute(
        """
        ALTER TABLE chunks ADD COLUMN msg_time REAL;
        CREATE INDEX chunks_by_agent ON chunks(agent) WHERE agent IS NOT NULL;
        CREATE TABLE session_files(
            path TEXT PRIMARY KEY,
            agent TEXT NOT NULL,
            inode INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            lines INTEGER NOT NULL
        ) STRICT;
        """
    )


def _m005_chunks_by_line(conn: apsw.Connection) -> None:
    # A file that grew is re-indexed from a line on (`replace_file`'s
    # from_line): finding its chunks from that line, and counting those
    # before it, must not walk every chunk of a long file.
    conn.execute(
        """
        CREATE INDEX chunks_by_path_line ON chunks(path, start_line);
        DROP INDEX chunks_by_path;
        """
    )


def _m006_access_counts(conn: apsw.Connection) -> None:
    # How often each chunk was among the hits a reader saw, for salience
    # ranking (`search.salience`); it lives and dies with its row, and a
    # chunk re-indexed unchanged keeps its row (`replace_file`).
    conn.execute("ALTER TABLE chunks ADD COLUMN access_count INTEGER NOT NULL DEFAULT 0")


def _m007_inner_headings(conn: apsw.Connection) -> None:
    # The heading lines inside a chunk with the heading path from each on
    # (JSON, '' for none), so a hit showing part of a chunk names its
    # section. Chunks stored before have none until the chunker's new
    # version rebuilds them (`engine.rebuild`).
    conn.execute("ALTER TABLE chunks ADD COLUMN inner_headings TEXT NOT NULL DEFAULT ''")


MIGRATIONS: Final[tuple[Callable[[apsw.Connection], None], ...]] = (
    _m001_initial,
    _m002_vector_progress,
    _m003_bm25_smoothing,
    _m004_sessions,
    _m005_chunks_by_line,
    _m006_access_counts,
    _m007_inner_headings,
)
SCHEMA_VERSION: Final = len(MIGRATIONS)
