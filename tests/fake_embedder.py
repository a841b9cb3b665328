"""A small deterministic embedder for unit tests (never shipped).

Vectors are hashed bags of words, so texts sharing words are similar and the
vector leg ranks meaningfully without loading a model. Knobs let tests make
it fail, block, or return zero vectors.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from openmemoryd.embed import EmbeddingError, Vectors, sanitize
from openmemoryd.text import token_set

if TYPE_CHECKING:  # importing it loads the local provider, which some tests must not
    from openmemoryd.embed.local.models import LocalModel


class FakeEmbedder:
    def __init__(self, model: str = "bow", dims: int = 64) -> None:
        self._model = model
        self._dims = dims
        self.documents_embedded = 0
        self.document_calls = 0
        self.queries = 0
        self.fail_documents: EmbeddingError | None = None
        self.fail_queries: EmbeddingError | None = None
        self.failures_left = -1  # -1: fail every time while fail_* is set
        self.gate = threading.Event()
        self.gate.set()
        self.zero_queries: set[str] = set()
        self.closed = False

    @property
    def name(self) -> str:
        return "fake"

    @property
    def model(self) -> str:
        return self._model

    @property
    def dims(self) -> int:
        return self._dims

    @property
    def max_input_bytes(self) -> int:
        return 1 << 20

    @property
    def score_floor(self) -> float:
        return 0.0

    @property
    def score_ceiling(self) -> float:
        return 1.0

    def identity(self) -> str:
        return f"fake:{self._model}:d{self._dims}"

    def _bow(self, text: str) -> Vectors:
        vector = np.zeros(self._dims, dtype=np.float32)
        for token in token_set(text):
            vector[zlib.crc32(token.encode()) % self._dims] += 1.0
        return vector

    def _maybe_fail(self, error: EmbeddingError | None) -> None:
        if error is None or self.failures_left == 0:
            return
        if self.failures_left > 0:
            self.failures_left -= 1
        raise error

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.gate.wait(30)
        self._maybe_fail(self.fail_documents)
        self.document_calls += 1
        self.documents_embedded += len(texts)
        return sanitize(np.stack([self._bow(t) for t in texts]))

    def embed_query(self, text: str) -> Vectors:
        self._maybe_fail(self.fail_queries)
        self.queries += 1
        if text in self.zero_queries:
            return np.zeros(self._dims, dtype=np.float32)
        return sanitize(self._bow(text))

    def close(self) -> None:
        self.closed = True


def fake_local_model(model_id: str, dims: int, files: Path, load: Any) -> LocalModel:
    """A `LocalModel` whose files are *files* (never verified) and whose
    loader is *load* ``(path, engine, threads) -> TextEncoder``: the local
    provider's own code around a model a test controls."""
    from openmemoryd.embed.local.models import LocalModel

    return LocalModel(
        model_id=model_id,
        dims=dims,
        score_floor=0.0,
        score_ceiling=1.0,
        locate=lambda: files,
        verify=lambda _: None,
        load=load,
    )
