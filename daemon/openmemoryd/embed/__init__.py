"""Embeddings: the provider contract, vector hygiene, local and remote models."""

from __future__ import annotations

from openmemoryd.embed.provider import Embedder, EmbeddingError, EmbedsNow, Vectors
from openmemoryd.embed.vectors import from_blob, is_zero, sanitize, split_for_limit, to_blob

__all__ = [
    "Embedder",
    "EmbeddingError",
    "EmbedsNow",
    "Vectors",
    "from_blob",
    "is_zero",
    "sanitize",
    "split_for_limit",
    "to_blob",
]
