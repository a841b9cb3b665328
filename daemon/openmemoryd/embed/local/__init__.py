"""The local provider (multilingual-e5-small, or the English-only MiniLM) and its worker."""

from __future__ import annotations

from openmemoryd.embed.local.models import (
    DEFAULT_MODEL,
    E5_SCORE_CEILING,
    E5_SCORE_FLOOR,
    LOCAL_MODELS,
    LocalModel,
    local_model,
)
from openmemoryd.embed.local.provider import LocalEmbedder

__all__ = [
    "DEFAULT_MODEL",
    "E5_SCORE_CEILING",
    "E5_SCORE_FLOOR",
    "LOCAL_MODELS",
    "LocalEmbedder",
    "LocalModel",
    "local_model",
]
