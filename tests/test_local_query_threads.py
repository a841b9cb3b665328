"""The local provider's query embeddings: one at a time when each asks for several BLAS threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from fake_embedder import fake_local_model
from openmemoryd.config import LocalSettings
from openmemoryd.embed.engine import EngineName
from openmemoryd.embed.local import LocalEmbedder
from openmemoryd.embed.local.models import TextEncoder

DIMS = 4


class _CountingEncoder:
    """Records how many encodes overlap; each takes long enough to overlap."""

    engine = "counting"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.inside = 0
        self.most = 0

    def encode(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        time.sleep(0.05)
        with self._lock:
            self.inside -= 1
        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        out[:, 0] = 1.0
        return out


def _embedder(threads: int, encoder: _CountingEncoder, tmp_path: Path) -> LocalEmbedder:
    def load(_: Path, engine: EngineName, threads: int) -> TextEncoder:
        return encoder

    model = fake_local_model("counting", DIMS, tmp_path, load)
    return LocalEmbedder(LocalSettings(query_threads=threads), model=model, weights=tmp_path)


def _most_at_once(threads: int, tmp_path: Path) -> int:
    encoder = _CountingEncoder()
    embedder = _embedder(threads, encoder, tmp_path)
    with threadpool_limits(1):  # restores this process's BLAS threads afterwards
        embedder.embed_query("warm up")  # loads the model once
        workers = [
            threading.Thread(target=embedder.embed_query, args=(f"query {i}",)) for i in range(4)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    embedder.close()
    return encoder.most


@pytest.mark.parametrize(("threads", "serial"), [(2, True), (1, False)])
def test_queries_on_several_threads_take_turns(threads: int, serial: bool, tmp_path: Path) -> None:
    """Several threads each: one query at a time (they would contend in
    OpenBLAS); one thread each: queries run side by side on the cores."""
    most = _most_at_once(threads, tmp_path)
    assert (most == 1) is serial
