"""Shared machinery of the remote embedders: batching, splitting, checks.

HTTP itself (retries, redirects, redacted errors) is `openmemoryd.http_session`,
shared with the chat models; its names are re-exported here for the providers.

Invariants:

- Every failure is an `EmbeddingError`; ``retryable`` says whether waiting
  might help (the session's retry policy has already been applied).
- `RemoteEmbedder` turns N texts into exactly N L2-normalised float32 rows, in
  input order. Each request holds at most the provider's count limit and at
  most the byte budget (a single larger piece goes alone); no piece exceeds
  `max_input_bytes` (longer texts are split and their pieces' vectors
  averaged); blank texts are sent as one space, which every API accepts.
- `dims` is None until the first good response fixes it; any other width
  afterwards, or a width other than the requested dimensions, is an error.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import ClassVar

from openmemoryd.embed.provider import EmbeddingError, Vectors
from openmemoryd.embed.vectors import sanitize, split_for_limit
from openmemoryd.http_session import (
    BACKOFF_CAP_S,
    BACKOFF_START_S,
    Backoff,
    HttpSession,
    Redactor,
    RemoteConfig,
    public_endpoint,
)

__all__ = [
    "BACKOFF_CAP_S",
    "BACKOFF_START_S",
    "Backoff",
    "HttpSession",
    "Redactor",
    "RemoteConfig",
    "RemoteEmbedder",
    "logger",
    "public_endpoint",
]

logger = logging.getLogger("openmemoryd.embed")


class RemoteEmbedder(ABC):
    """An `Embedder` behind an HTTP API; subclasses speak one wire format.

    A subclass sets the class constants and implements `_request` (one API
    call for at most `batch_count_limit` texts, answering one raw vector per
    text); splitting, batching, validation and normalisation live here.
    """

    provider: ClassVar[str]
    default_base_url: ClassVar[str]
    default_model: ClassVar[str]
    key_env_vars: ClassVar[tuple[str, ...]] = ()
    hosted_hosts: ClassVar[tuple[str, ...]] = ()
    input_limit_bytes: ClassVar[int] = 8000
    batch_count_limit: ClassVar[int] = 128
    batch_bytes_cap: ClassVar[int | None] = None
    supports_dimensions: ClassVar[bool] = False

    def __init__(self, config: RemoteConfig) -> None:
        self._model = config.model
        self._endpoint = public_endpoint(config.base_url)
        self._dimensions = config.dimensions if self.supports_dimensions else 0
        cap = self.batch_bytes_cap
        self._batch_bytes = min(config.batch_max_bytes, cap) if cap else config.batch_max_bytes
        self._label = f"{self.provider} ({self._model} at {self._endpoint})"
        self._dims: int | None = None
        self._lock = threading.Lock()
        self.has_api_key = bool(config.api_key)
        auth = self.auth_headers(config.api_key) if config.api_key else {}
        self._session = HttpSession(
            self.provider,
            self._label,
            config,
            auth,
            error=EmbeddingError,
            too_large_hint="request too large; lower embedding.batch_max_bytes",
            log=logger,
        )

    @classmethod
    def auth_headers(cls, api_key: str) -> dict[str, str]:
        """How this API wants its key; a bearer token unless overridden."""
        return {"Authorization": f"Bearer {api_key}"}

    @property
    def name(self) -> str:
        return self.provider

    @property
    def model(self) -> str:
        return self._model

    @property
    def dims(self) -> int | None:
        return self._dims

    @property
    def max_input_bytes(self) -> int:
        return self.input_limit_bytes

    @property
    def score_floor(self) -> float:
        """Raw cosine is the score (floor 0, ceiling 1).

        These models put unrelated texts at cosines of about 0 to 0.2 and
        relevant ones at about 0.4 to 0.7, so the default min_score (0.35)
        already separates them without rescaling.
        """
        return 0.0

    @property
    def score_ceiling(self) -> float:
        return 1.0

    def identity(self) -> str:
        suffix = f":d{self._dimensions}" if self._dimensions else ""
        return f"{self.provider}:{self._model}@{self._endpoint}{suffix}"

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, query=False)

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self._embed([text], query=True)[0]
        return row

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> RemoteEmbedder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @abstractmethod
    def _request(self, texts: list[str], *, query: bool) -> list[object]:
        """Embed one batch (within the limits); one raw vector per text, in order."""

    # ------------------------------------------------------------ helpers

    def _embed(self, texts: Sequence[str], *, query: bool) -> Vectors:
        import numpy as np

        pieces = self.split_texts(texts)
        sizes = [len(piece.encode("utf-8")) for piece, _ in pieces]
        parts: list[Vectors] = []
        for start, end in _batches(sizes, self._batch_bytes, self.batch_count_limit):
            batch = [piece for piece, _ in pieces[start:end]]
            parts.append(self._check(self._request(batch, query=query), len(batch)))
        if not parts:
            return np.zeros((0, self._dims or 0), dtype=np.float32)
        owners = [owner for _, owner in pieces]
        return self.merge_pieces(np.concatenate(parts), sizes, owners, len(texts))

    def split_texts(self, texts: Sequence[str]) -> list[tuple[str, int]]:
        """(piece, index of its text) for every piece sent to the API.

        Public for the batch path (`embed.remote.batch`), which sends the
        same pieces through another endpoint and must merge them alike.
        """
        return [(piece, index) for index, text in enumerate(texts) for piece in self._pieces(text)]

    def merge_pieces(
        self, vectors: Vectors, sizes: Sequence[int], owners: Sequence[int], count: int
    ) -> Vectors:
        """One normalised row per text: a split text's pieces averaged by
        their *sizes* (UTF-8 bytes); *owners* names each piece's text."""
        import numpy as np

        vectors = sanitize(vectors)
        if len(owners) == count:
            return vectors
        weights = np.asarray(sizes, dtype=np.float32)[:, None]
        merged = np.zeros((count, vectors.shape[1]), dtype=np.float32)
        np.add.at(merged, np.asarray(owners), vectors * weights)
        return sanitize(merged)

    def check_vectors(self, raw: list[object], expected: int) -> Vectors:
        """`_check` for the batch path: *expected* raw vectors of one width."""
        return self._check(raw, expected)

    def _pieces(self, text: str) -> list[str]:
        if not text.strip():
            return [" "]
        if len(text.encode("utf-8")) <= self.input_limit_bytes:
            return [text]
        return split_for_limit(text, self.input_limit_bytes)

    def _check(self, raw: list[object], expected: int) -> Vectors:
        """Turn one response's vectors into a matrix, or say what is wrong."""
        import numpy as np

        if len(raw) != expected:
            raise self._malformed(f"{len(raw)} vectors for {expected} inputs")
        try:
            matrix = np.asarray(raw)
        except (ValueError, TypeError):
            raise self._malformed("vectors of different lengths") from None
        if matrix.ndim != 2 or matrix.shape[1] == 0 or matrix.dtype.kind not in "fiu":
            raise self._malformed("vectors are not lists of numbers")
        self._fix_dims(matrix.shape[1])
        vectors: Vectors = matrix.astype(np.float32)
        return vectors

    def _fix_dims(self, width: int) -> None:
        with self._lock:
            if self._dimensions and width != self._dimensions:
                raise EmbeddingError(
                    f"{self._label}: asked for {self._dimensions} dimensions, got {width}; "
                    "set embedding.dimensions = 0 or use a model that supports it",
                    retryable=False,
                )
            if self._dims is None:
                self._dims = width
            elif width != self._dims:
                raise self._malformed(f"vector width changed from {self._dims} to {width}")

    def _malformed(self, what: str) -> EmbeddingError:
        return EmbeddingError(f"{self._label}: unexpected response: {what}", retryable=False)

    def _field(self, payload: object, key: str) -> object:
        if not isinstance(payload, dict) or key not in payload:
            raise self._malformed(f"no {key!r} field")
        value: object = payload[key]
        return value

    def _list_field(self, payload: object, key: str) -> list[object]:
        value = self._field(payload, key)
        if not isinstance(value, list):
            raise self._malformed(f"{key!r} is not a list")
        return value


def _batches(sizes: Sequence[int], max_bytes: int, max_count: int) -> Iterator[tuple[int, int]]:
    """Index ranges of consecutive items within both budgets (big items alone)."""
    start, total = 0, 0
    for index, size in enumerate(sizes):
        if index > start and (total + size > max_bytes or index - start >= max_count):
            yield start, index
            start, total = index, 0
        total += size
    if start < len(sizes):
        yield start, len(sizes)
