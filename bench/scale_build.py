"""Large synthetic indexes for `bench.search_scale`, built once and kept.

Embedding a million chunks with the local model would take days on the
project's machine, so the stored vectors are synthetic while everything
else is real:

1. **text**: `bench.corpus` writes N chunk-sized sections (English, Chinese
   and mixed, from its word pools) and a real daemon with ``provider =
   "none"`` indexes them: its own chunker, ``files``, ``chunks`` and FTS5
   rows, so every later start finds the files unchanged (same sha256) and
   keeps the index as it is.
2. **vectors**: `CENTRES` chunks of the corpus are embedded with the real
   local e5 model; every chunk then gets a vector drawn around one of those
   (a Gaussian cluster mixture, unit-normalised, within-cluster cosine
   about 0.85), stored with the product's own `store_vectors` under the
   local e5 identity. A query the daemon embeds with the real model thus
   lands among stored vectors at cosines like those of real text, not at
   ~0 as against uniform random vectors.

Each stage writes a marker (``text.json``, ``vectors.json``) in the root
and is skipped when it is there, so a size is built once per ``--cache``
directory; times are recorded in the markers and reported.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from bench.corpus import generate_workspace
from bench.daemon import BenchDaemon, BenchDaemonError
from bench.report import progress
from omem_protocol import LastSync
from openmemoryd.config import EmbeddingSettings
from openmemoryd.embed.local import LocalEmbedder
from openmemoryd.embed.local.models import DEFAULT_MODEL
from openmemoryd.store.db import open_index
from openmemoryd.store.quantised import ensure_vector_companions
from openmemoryd.store.rows import as_int
from openmemoryd.store.vectors import store_vectors, target_table

__all__ = ["CENTRES", "Built", "build", "index_file", "local_identity"]

CENTRES: Final = 256
NOISE: Final = 0.4  # cluster spread: cosine to the centre ~ 1/sqrt(1 + NOISE**2)
BATCH: Final = 5000
INDEX_TIMEOUT_S: Final = 4 * 3600.0
STATUS_TIMEOUT_S: Final = 300.0
STATUS_POLL_S: Final = 5.0


@dataclass(frozen=True, slots=True)
class Built:
    """One built size: where it is and what building it took."""

    root: Path
    sections: int
    files: int
    corpus_bytes: int
    chunks: int
    write_s: float
    index_s: float
    vectors_s: float
    index_bytes: int


# The chunk shape the indexes are built with, pinned rather than the
# daemon's default: a later default would make every start rebuild a cached
# million-chunk index. What the benchmark varies is the number of chunks;
# the corpus's sections are each about one chunk at this size as well.
INDEX_CONFIG: Final = "[index]\nchunk_tokens = 200\nchunk_overlap = 40\n"


def local_identity() -> tuple[str, int]:
    """The identity and dimensions of the default local model, as the daemon names them."""
    return f"local:{DEFAULT_MODEL.model_id}", DEFAULT_MODEL.dims


def index_file(root: Path) -> Path:
    """The index of a `BenchDaemon` rooted at *root* (default index name)."""
    found = sorted((root / "state" / "index").glob("*.sqlite"))
    if len(found) != 1:
        raise RuntimeError(f"expected one index under {root}/state/index, found {found}")
    return found[0]


_progress = progress("search-scale")


def _write_corpus(root: Path, workspace: Path, sections: int, seed: int) -> dict[str, Any]:
    """Write the workspace unless ``corpus.json`` says it was written."""
    marker = root / "corpus.json"
    if marker.exists():
        loaded: dict[str, Any] = json.loads(marker.read_text("utf-8"))
        return loaded
    _progress(f"{sections:,} sections: writing the workspace in {workspace}")
    started = time.perf_counter()
    corpus = generate_workspace(workspace, sections, seed=seed)
    took = time.perf_counter() - started
    _progress(f"{sections:,} sections: written in {took:.0f} s")
    stats = {
        "sections": sections,
        "files": corpus.files,
        "corpus_bytes": corpus.bytes,
        "write_s": round(took, 1),
    }
    marker.write_text(json.dumps(stats) + "\n", encoding="utf-8")
    return stats


def _startup_seconds(daemon: BenchDaemon, last: LastSync) -> float:
    """The startup sync's own time; from the log when an interval sync ran
    after it before the (sparse) poll saw it finish."""
    if last.reason == "startup":
        return last.took_ms / 1000
    found = re.search(r"sync \(startup\):.* in (\d+) ms", daemon.log())
    if found is None:
        raise BenchDaemonError("the startup sync is neither in status nor in the log")
    return int(found.group(1)) / 1000


def _wait_startup_sync(daemon: BenchDaemon) -> float:
    """The daemon's startup sync, once done. Polled every few seconds, not as
    `BenchDaemon.wait_indexed` does: each status scans the whole workspace."""
    deadline = time.monotonic() + INDEX_TIMEOUT_S
    while True:
        status = daemon.status()
        last = status.last_sync
        if last is not None and not status.syncing:
            if last.error is not None:
                raise BenchDaemonError(f"the startup sync failed: {last.error}")
            return _startup_seconds(daemon, last)
        if time.monotonic() > deadline:
            raise BenchDaemonError(f"indexing did not finish within {INDEX_TIMEOUT_S:g} s")
        time.sleep(STATUS_POLL_S)


def _build_text(root: Path, sections: int, seed: int) -> dict[str, Any]:
    marker = root / "text.json"
    if marker.exists():
        loaded: dict[str, Any] = json.loads(marker.read_text("utf-8"))
        return loaded
    config = '[embedding]\nprovider = "none"\n\n' + INDEX_CONFIG
    with BenchDaemon(root=root, config_toml=config) as daemon:
        corpus = _write_corpus(root, daemon.workspace, sections, seed)
        _progress(f"{sections:,} sections: indexing (keyword only)")
        daemon.start(timeout=600.0, status_timeout=STATUS_TIMEOUT_S)
        last = _wait_startup_sync(daemon)
        status = daemon.status()
        if daemon.stop() != 0:
            raise BenchDaemonError(f"openmemoryd did not stop cleanly:\n{daemon.log()}")
    text = {
        **corpus,
        "chunks": status.chunks,
        "index_s": round(last, 1),
    }
    marker.write_text(json.dumps(text, indent=2) + "\n", encoding="utf-8")
    _progress(f"{sections:,} sections: {status.chunks:,} chunks indexed in {text['index_s']} s")
    return text


def _centres(root: Path, texts: list[str]) -> npt.NDArray[np.float32]:
    """Real e5 passage vectors of *texts*, kept in the cache for every size
    (embedding them takes minutes on a busy machine)."""
    path = root.parent / f"centres-{len(texts)}.npy"
    if path.exists():
        loaded: npt.NDArray[np.float32] = np.load(path)
        return loaded
    embedder = LocalEmbedder(EmbeddingSettings().local)
    try:
        vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    finally:
        embedder.close()
    np.save(path, vectors)
    return vectors


def synthetic_vectors(
    centres: npt.NDArray[np.float32], count: int, rng: np.random.Generator
) -> npt.NDArray[np.float32]:
    """*count* unit vectors, each a random centre plus Gaussian noise of norm ~`NOISE`."""
    dims = centres.shape[1]
    picked = centres[rng.integers(0, len(centres), count)]
    noise = rng.standard_normal((count, dims)).astype(np.float32) * (NOISE / np.sqrt(dims))
    vectors = picked + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    result: npt.NDArray[np.float32] = vectors.astype(np.float32)
    return result


def _build_vectors(root: Path, seed: int, centres: int) -> float:
    marker = root / "vectors.json"
    if marker.exists():
        return float(json.loads(marker.read_text("utf-8"))["vectors_s"])
    identity, dims = local_identity()
    opened = open_index(index_file(root), workspace=root / "ws")
    conn = opened.conn
    try:
        if opened.vector_error:
            raise RuntimeError(opened.vector_error)
        rng = np.random.default_rng(seed)
        count = as_int(conn.execute("SELECT count(*) FROM chunks").fetchall()[0][0])
        sample = sorted(rng.choice(count, size=min(centres, count), replace=False))
        texts = []
        for offset in sample:
            found = conn.execute(
                "SELECT text FROM chunks ORDER BY id LIMIT 1 OFFSET ?", (int(offset),)
            ).fetchall()
            texts.append(str(found[0][0]))
        _progress(f"embedding {len(texts)} cluster centres with the local model")
        points = _centres(root, texts)
        table = target_table(conn, identity, dims)
        started = time.perf_counter()
        last = 0
        done = 0
        while True:
            rows = conn.execute(
                "SELECT id, hash FROM chunks WHERE id > ? ORDER BY id LIMIT ?", (last, BATCH)
            ).fetchall()
            if not rows:
                break
            vectors = synthetic_vectors(points, len(rows), rng)
            done += store_vectors(
                conn,
                table,
                [(as_int(i), str(h), v.tobytes()) for (i, h), v in zip(rows, vectors, strict=True)],
            )
            last = as_int(rows[-1][0])
            if done % 100_000 < BATCH:
                _progress(f"{done:,} vectors stored")
        # What the daemon's next open would do (take the centre again over
        # more vectors and re-binarise, `store.quantised`), done here so
        # that it counts as building, not as the daemon's start.
        ensure_vector_companions(conn)
        took = time.perf_counter() - started
    finally:
        conn.close()
    marker.write_text(json.dumps({"vectors_s": round(took, 1), "vectors": done}) + "\n", "utf-8")
    _progress(f"{done:,} synthetic vectors stored in {took:.0f} s")
    return took


def build(
    cache: Path, sections: int, seed: int, *, vectors: bool = True, centres: int = CENTRES
) -> Built:
    """The index of *sections* sections in *cache*, built unless already there
    (without *vectors*: text only, for keyword search)."""
    root = cache / f"{sections}-s{seed}"
    text = _build_text(root, sections, seed)
    vectors_s = _build_vectors(root, seed, centres) if vectors else 0.0
    return Built(
        root=root,
        sections=sections,
        files=int(text["files"]),
        corpus_bytes=int(text["corpus_bytes"]),
        chunks=int(text["chunks"]),
        write_s=float(text["write_s"]),
        index_s=float(text["index_s"]),
        vectors_s=round(vectors_s, 1),
        index_bytes=sum(p.stat().st_size for p in (root / "state" / "index").iterdir()),
    )
