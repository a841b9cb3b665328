"""The models the ``local`` provider can run, and how ``embedding.model`` picks one.

``model = ""`` (the default) is multilingual-e5-small; ``"all-minilm-l6-v2"``
is the English-only option (2-3x faster, but most CJK text becomes
``[UNK]``). Names are matched case-insensitively. Each model's id is part of
the provider's identity, hence of the index fingerprint: switching models
makes the index build the other model's vectors in the background.

Invariant: a `LocalModel` names everything that depends on the model (id,
width, score scale, how its files are found, verified and loaded), so the
provider and its worker process never branch on which model it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from openmemoryd.embed import e5, minilm
from openmemoryd.embed.e5 import reference as e5_reference
from openmemoryd.embed.engine import EngineName

__all__ = [
    "DEFAULT_MODEL",
    "E5_SCORE_CEILING",
    "E5_SCORE_FLOOR",
    "LOCAL_MODELS",
    "MINILM_SCORE_CEILING",
    "MINILM_SCORE_FLOOR",
    "LocalModel",
    "TextEncoder",
    "local_model",
]

# e5 cosines sit in a narrow band: on a mixed English/Chinese note set,
# unrelated pairs scored 0.70-0.75 and relevant ones 0.83-0.94; on LoCoMo
# (one long conversation, so "unrelated" turns still share a topic)
# question->evidence pairs had median 0.837 and question->other-turn pairs
# median 0.789, 95th percentile 0.84. Vector scores map 0.75 -> 0 and
# 0.95 -> 1, so a cross-lingual match (0.83, e.g. "what drink does Wei like"
# vs 魏喜欢喝乌龙茶) clears the default min_score of 0.35 while unrelated
# notes in a varied workspace score 0.
E5_SCORE_FLOOR: Final = 0.75
E5_SCORE_CEILING: Final = 0.95
# See embed.reference: margin over the query's baseline that scores 1.0
# (the default min_score of 0.35 is then a margin of 0.025).
E5_EVIDENCE_WIDTH: Final = 0.072

# MiniLM spreads cosines much wider. On ten English notes and ten questions,
# unrelated pairs had median 0.035 (95th percentile 0.19) and relevant ones
# 0.22-0.72 (median 0.40); near-paraphrase pairs scored 0.67-0.97 (median
# 0.83, e5: 0.96); on LoCoMo, question->evidence median 0.48 and
# question->other-turn median 0.28. Mapping 0.15 -> 0 and 0.80 -> 1 puts
# those medians where e5's land (relevant note 0.38 vs e5's 0.35, other
# LoCoMo turn 0.20 vs 0.20), so min_score keeps its meaning.
MINILM_SCORE_FLOOR: Final = 0.15
MINILM_SCORE_CEILING: Final = 0.80

F32Array = npt.NDArray[np.float32]


class TextEncoder(Protocol):
    """A loaded model: texts in, unit float32 vectors out."""

    engine: str  # what runs it: "onnxruntime" or "numpy" (embed.engine)

    def encode(self, texts: Sequence[str], *, is_query: bool) -> F32Array: ...


@dataclass(frozen=True, slots=True)
class LocalModel:
    """One model the local provider runs (on ONNX Runtime or numpy, `embed.engine`)."""

    model_id: str
    dims: int
    score_floor: float
    score_ceiling: float
    locate: Callable[[], Path]  # its files; FileNotFoundError says how to install them
    verify: Callable[[Path], None]  # pinned sha256, once per process
    load: Callable[[Path, EngineName, int], TextEncoder]  # files, engine, threads
    # How far above its reference baseline a query's cosine must reach to
    # count as evidence (embed.reference); None: not calibrated for this model.
    evidence_width: float | None = None
    # The reference passages' vectors as shipped for these weights, or None
    # (then the provider embeds the passages itself).
    shipped_reference: Callable[[], F32Array | None] = lambda: None


def _load_e5(path: Path, engine: EngineName, threads: int) -> TextEncoder:
    return e5.E5Model.load(path, engine=engine, threads=threads)


def _load_minilm(path: Path, engine: EngineName, threads: int) -> TextEncoder:
    return minilm.MiniLMModel.load(path, engine=engine, threads=threads)


DEFAULT_MODEL: Final = LocalModel(
    model_id=e5.MODEL_ID,
    dims=e5.DIMS,
    score_floor=E5_SCORE_FLOOR,
    score_ceiling=E5_SCORE_CEILING,
    locate=e5.default_weights_path,
    verify=e5.verify_weights,
    load=_load_e5,
    evidence_width=E5_EVIDENCE_WIDTH,
    shipped_reference=e5_reference.load,
)
MINILM_MODEL: Final = LocalModel(
    model_id=minilm.MODEL_ID,
    dims=minilm.DIMS,
    score_floor=MINILM_SCORE_FLOOR,
    score_ceiling=MINILM_SCORE_CEILING,
    locate=minilm.default_model_dir,
    verify=minilm.verify_model_dir,
    load=_load_minilm,
)
LOCAL_MODELS: Final = {model.model_id: model for model in (DEFAULT_MODEL, MINILM_MODEL)}


def local_model(name: str) -> LocalModel:
    """The model ``embedding.model = name`` selects; ValueError names the choices."""
    if not name:
        return DEFAULT_MODEL
    found = LOCAL_MODELS.get(name.strip().lower())
    if found is None:
        choices = ", ".join(repr(model_id) for model_id in LOCAL_MODELS)
        raise ValueError(
            f"the local provider has no model {name!r}; choose {choices} "
            '(or "" for the default), or a remote provider'
        )
    return found
