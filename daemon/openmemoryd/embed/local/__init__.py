"""The bundled local embedder (multilingual-e5-small) and its worker process."""

from __future__ import annotations

from openmemoryd.embed.local.provider import E5_SCORE_CEILING, E5_SCORE_FLOOR, LocalEmbedder

__all__ = ["E5_SCORE_CEILING", "E5_SCORE_FLOOR", "LocalEmbedder"]
