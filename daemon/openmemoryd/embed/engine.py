"""Which engine runs the local models: ONNX Runtime where it is installed, else numpy.

Both engines compute the same network from the same weights, and their
vectors agree to float rounding, so the choice is about speed, never about
the index: ``[embedding.local] engine`` is not part of the index's identity,
and switching it re-embeds nothing. ``"auto"`` (the default) takes ONNX
Runtime when `onnxruntime` and `onnx` import and the session builds, and
numpy otherwise (a platform without onnxruntime wheels, or an onnxruntime
too old for the operators the graph uses), saying why in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final, Literal, Protocol

import numpy as np
import numpy.typing as npt

from openmemoryd.embed.bert import BertEncoder, EncoderWeights, Window

__all__ = ["ENGINES", "Encoder", "EngineName", "make_encoder", "onnxruntime_missing"]

EngineName = Literal["auto", "onnxruntime", "numpy"]
ENGINES: Final[tuple[EngineName, ...]] = ("auto", "onnxruntime", "numpy")

F32Array = npt.NDArray[np.float32]

_log = logging.getLogger(__name__)


class Encoder(Protocol):
    """What `E5Model` and `MiniLMModel` need of an engine."""

    @property
    def engine(self) -> str: ...

    @property
    def hidden(self) -> int: ...

    @property
    def max_positions(self) -> int: ...

    def encode(self, windows: Sequence[Window], count: int, max_batch_tokens: int) -> F32Array: ...


def onnxruntime_missing() -> str | None:
    """None when ONNX Runtime can be used here, else why not (an import error)."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as exc:  # not installed, or a broken wheel
        return f"{type(exc).__name__}: {exc}"
    return None


def make_encoder(weights: EncoderWeights, engine: EngineName, threads: int) -> Encoder:
    """An encoder for *weights* on *engine* with *threads* threads.

    ``"onnxruntime"`` raises RuntimeError when ONNX Runtime cannot run here;
    ``"auto"`` falls back to numpy then. The numpy engine leaves thread
    settings to its caller (threadpoolctl), as it always has.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if engine == "numpy":
        return BertEncoder(weights)
    missing = onnxruntime_missing()
    if missing is None:
        from openmemoryd.embed.bert_onnx import OnnxEncoder

        try:
            return OnnxEncoder(weights, threads)
        except Exception as exc:  # e.g. an onnxruntime without the contrib operators
            missing = f"{type(exc).__name__}: {exc}"
    if engine == "onnxruntime":
        raise RuntimeError(f"the onnxruntime engine cannot run here ({missing})")
    _log.warning("embedding with numpy: onnxruntime is not usable (%s)", missing)
    return BertEncoder(weights)
