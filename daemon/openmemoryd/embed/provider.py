"""What every embedding provider offers the rest of the daemon.

Providers are synchronous and called from worker threads (or the local
embedder's worker process), never on the trio loop. Each returns L2-normalised
float32 vectors (`vectors.sanitize` is applied to whatever a service returns),
and raises `EmbeddingError` for every failure, with `retryable` telling the
caller whether waiting might help (rate limits, 5xx, timeouts) or not (bad
key, unknown model, malformed responses).

`identity` names what produced a vector: provider, model, endpoint (never a
secret) and requested dimensions. Vectors from different identities are not
comparable, so the identity is part of the embedding cache key and of the
index fingerprint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from openmemoryd.errors import RemoteServiceError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Vectors: TypeAlias = "npt.NDArray[np.float32]"


class EmbeddingError(RemoteServiceError):
    """The provider could not embed; `retryable` says whether to try later."""


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model behind some API (or in-process)."""

    @property
    def name(self) -> str:
        """Provider name as configured: ``local``, ``openai``, ``ollama``, ..."""
        ...

    @property
    def model(self) -> str:
        """The model's name at the provider."""
        ...

    @property
    def dims(self) -> int | None:
        """Vector width, or None until the first response reveals it."""
        ...

    @property
    def max_input_bytes(self) -> int:
        """Longest input (UTF-8 bytes) sent in one piece; longer texts are split."""
        ...

    @property
    def score_floor(self) -> float:
        """Cosine similarity of unrelated texts for this model (maps to 0).

        Models differ in where texts land: e5 puts unrelated texts near 0.75
        and strong matches near 0.95, OpenAI's models near 0 and 0.7. Vector
        scores are rescaled between `score_floor` and `score_ceiling` so a
        fixed ``min_score`` means the same whichever model is configured.
        """
        ...

    @property
    def score_ceiling(self) -> float:
        """Cosine similarity of a near-paraphrase for this model (maps to 1)."""
        ...

    def identity(self) -> str:
        """Stable name of what produces the vectors (no secrets)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed passages for indexing: shape (len(texts), dims)."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """Embed a search query: shape (dims,)."""
        ...

    def close(self) -> None:
        """Release connections, processes or memory."""
        ...


@runtime_checkable
class EmbedsNow(Protocol):
    """A provider that can embed a few passages for a caller waiting on them
    without queueing them behind indexing.

    `log`, `capture` and `forget` compare a new memory with a few dozen
    remembered lines while an agent waits. The local model embeds passages
    in a worker process that indexing keeps busy while agents append, and
    those comparisons waited behind its batches: a `log` beside agents
    appending took many times as long as alone. A provider that has the
    model in the daemon's own process as well says so with this method.
    """

    def embed_documents_now(self, texts: Sequence[str]) -> Vectors:
        """`Embedder.embed_documents` for a few short *texts*, now."""
        ...
