"""Recall of the quantised vector path against exact search, on real e5 vectors.

The quantised path (`openmemoryd.store.quantised`) must return what exact
cosine search returns: recall@10 of its top 10 against the exact top 10,
over every LoCoMo question, is the figure (goal ≥ 0.98). The index is built
by a real daemon with the local e5 model over all ten LoCoMo conversations
(one workspace, ``memory/c<N>/`` per conversation, dated layout), so both
the stored vectors and the queries are the real model's; it is kept in the
``--cache`` directory like the synthetic indexes (`bench.scale_build`).

The same measure runs on the synthetic indexes with the corpus queries,
which is the harder case: a million vectors in 256 tight clusters.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

from bench.daemon import BenchDaemon, embedder_toml
from bench.locomo_data import DEFAULT_DATA, load_locomo, write_workspace
from bench.report import progress
from bench.scale_build import index_file
from openmemoryd.config import EmbeddingSettings
from openmemoryd.embed.local import LocalEmbedder
from openmemoryd.store.db import open_reader
from openmemoryd.store.quantised import quantised_knn
from openmemoryd.store.rows import as_int
from openmemoryd.store.vectors import active_table, knn

__all__ = ["Recall", "build_locomo", "locomo_questions", "recall_at"]

TOP: Final = 10
POOL: Final = 24  # what the vector leg asks for with the default limit (6 x 4)


@dataclass(frozen=True, slots=True)
class Recall:
    """Recall@10 of the quantised path against exact search over some queries."""

    queries: int
    chunks: int
    recall: float
    worst: float
    # Mean cosine of the exact top 10 minus that of the quantised top 10:
    # how much nearer the missed neighbours were (near-ties cost ~0).
    cosine_gap: float
    exact_ms: float  # median per query, in this process
    quantised_ms: float


_progress = progress("search-scale")


def build_locomo(cache: Path, data: Path = DEFAULT_DATA) -> Path:
    """A daemon-built index of all LoCoMo conversations with real e5 vectors; its root."""
    root = cache / "locomo"
    if (root / "built.json").exists():
        return root
    conversations = load_locomo(data)
    with BenchDaemon(root=root, config_toml=embedder_toml("local", nice=0)) as daemon:
        for conversation in conversations:
            with tempfile.TemporaryDirectory() as scratch:
                write_workspace(conversation, Path(scratch), "dated")
                target = daemon.workspace / "memory" / f"c{conversation.index}"
                shutil.copytree(Path(scratch) / "memory", target)
        started = time.perf_counter()
        daemon.start(timeout=120.0)
        daemon.wait_indexed()
        _progress("LoCoMo: embedding every chunk with the local model")
        status = daemon.wait_vectors()
        took = time.perf_counter() - started
        daemon.stop()
    built = {"chunks": status.chunks, "build_s": round(took, 1)}
    (root / "built.json").write_text(json.dumps(built) + "\n", encoding="utf-8")
    return root


def locomo_questions(data: Path = DEFAULT_DATA) -> list[str]:
    """Every usable LoCoMo question, in file order."""
    return [q.question for c in load_locomo(data) for q in c.questions]


def embed_queries(texts: Sequence[str]) -> list[bytes]:
    """*texts* embedded as queries by the real local model (float32 blobs)."""
    embedder = LocalEmbedder(EmbeddingSettings().local)
    try:
        return [np.asarray(embedder.embed_query(t), dtype=np.float32).tobytes() for t in texts]
    finally:
        embedder.close()


def recall_at(root: Path, queries: Sequence[bytes], oversample: int) -> Recall:
    """Quantised top 10 (of a `POOL` search, as the vector leg asks) against exact top 10."""
    conn = open_reader(index_file(root))
    try:
        table = active_table(conn)
        if table is None:
            raise RuntimeError(f"{root} has no vector table")
        chunks = as_int(conn.execute("SELECT count(*) FROM chunks").fetchall()[0][0])
        scores: list[float] = []
        gaps: list[float] = []
        exact_ms: list[float] = []
        quant_ms: list[float] = []
        for query in queries:
            started = time.perf_counter()
            nearest = knn(conn, table, query, TOP)
            exact = [i for i, _ in nearest]
            exact_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            found = quantised_knn(conn, table.table, query, POOL, oversample=oversample)
            quant_ms.append((time.perf_counter() - started) * 1000)
            if found is None:
                raise RuntimeError(f"{root}: the vector table has no centre yet")
            top = {i for i, _ in found[:TOP]}
            exact_cos = float(np.mean([1 - d for _, d in nearest])) if nearest else 0.0
            found_cos = float(np.mean([1 - d for _, d in found[:TOP]])) if found else 0.0
            gaps.append(exact_cos - found_cos)
            scores.append(len(top & set(exact)) / max(1, len(exact)))
    finally:
        conn.close()
    return Recall(
        queries=len(queries),
        chunks=int(chunks),
        recall=round(float(np.mean(scores)), 4),
        worst=round(min(scores), 2),
        cosine_gap=round(float(np.mean(gaps)), 5),
        exact_ms=round(float(np.median(exact_ms)), 2),
        quantised_ms=round(float(np.median(quant_ms)), 2),
    )
