"""The `bert` encoder run by ONNX Runtime: the same network and weights, faster.

A query is a dozen to a few dozen tokens, and numpy's BLAS spends most of
such a product repacking the weight matrix for a handful of rows; ONNX
Runtime's kernels are built for exactly that shape, and multiply by e5's
4-bit blocks as they ship (``MatMulNBits`` with float32 arithmetic: the
weights are dequantised inside the kernel, never re-quantised, and
activations stay float32), so a query streams a seventh of the bytes. On
the 2-core machine a query takes about 0.4 x the numpy time and 400-token
passages embed 1.2 x as fast on one thread, 1.5 x on two
(docs/benchmarks.md, "ONNX Runtime").

The graph is built here, in memory, from the weights the numpy encoder
would use: per layer a fused QKV product, ``MultiHeadAttention``, the output
product and ``SkipLayerNormalization``, the feed-forward products around
``BiasGelu`` (exact erf GELU) and a second ``SkipLayerNormalization``; mean
pooling at the end. Token embeddings and their LayerNorm stay numpy
(`TokenEmbedding`: a 250k-row 4-bit table of which a window touches a few
rows). Each window runs alone: no padding and no mask, and padded batches
measured no faster for short windows and slower for long ones. The vectors
agree with the numpy engine's to float rounding (cosine > 0.99999,
tests/test_bert_onnx.py), so an index built by one engine is searched by
the other without re-embedding.

Invariants:

* `OnnxEncoder.encode` has `BertEncoder.encode`'s contract: float32
  ``(count, hidden)``, unit rows, row ``i`` for text ``i``.
* A session uses `threads` intra-op threads that never spin, and no
  inter-op parallelism: an idle daemon costs no CPU, and with one thread a
  query runs on its caller's thread, so concurrent queries (one session,
  `run` is thread-safe) run side by side as they do with numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from openmemoryd.embed.bert import (
    EncoderWeights,
    LayerWeights,
    Matrix,
    TokenEmbedding,
    Window,
    dense,
    pool_windows,
)
from openmemoryd.embed.q4 import BLOCK, Q4Matrix

if TYPE_CHECKING:
    import onnx

__all__ = ["OnnxEncoder", "build_graph"]

F32Array = npt.NDArray[np.float32]

_OPSET: Final = 17
_CONTRIB: Final = "com.microsoft"
_IR_VERSION: Final = 8  # understood by every onnxruntime this package accepts


class OnnxEncoder:
    """`BertEncoder`'s contract on an ONNX Runtime session with `threads` threads."""

    engine: Final = "onnxruntime"

    def __init__(self, weights: EncoderWeights, threads: int) -> None:
        import onnxruntime as ort

        if not weights.layers:
            raise ValueError("an encoder needs at least one layer")
        if threads < 1:
            raise ValueError("threads must be positive")
        self._embed = TokenEmbedding(weights)
        self.hidden: int = self._embed.hidden
        self.max_positions: int = self._embed.max_positions
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: the daemon's log is for people
        model = build_graph(weights).SerializeToString()
        self._session: Any = ort.InferenceSession(
            model, options, providers=["CPUExecutionProvider"]
        )

    def encode(self, windows: Sequence[Window], count: int, max_batch_tokens: int) -> F32Array:
        """L2-normalised float32 vectors, shape ``(count, hidden)``, row i for text i.

        *max_batch_tokens* is checked for the shared contract; windows run one
        at a time here, so it bounds nothing.
        """
        if max_batch_tokens < 1:
            raise ValueError("max_batch_tokens must be positive")
        return pool_windows(windows, count, self.hidden, self.max_positions, None, self._forward)

    def _forward(self, batch: Sequence[Window]) -> F32Array:
        (window,) = batch
        ids = window.ids
        x = self._embed(ids, np.array([len(ids)], dtype=np.intp))
        (mean,) = self._session.run(None, {"x": x[None]})
        result: F32Array = mean
        return result


def build_graph(weights: EncoderWeights) -> onnx.ModelProto:
    """The encoder layers and mean pooling as an ONNX model: ``x (1, L, hidden)`` to
    ``mean (1, hidden)``, weights inside it as initializers."""
    return _GraphBuilder(weights).build()


class _GraphBuilder:
    """Nodes and initializers, named per layer so that no two collide."""

    def __init__(self, weights: EncoderWeights) -> None:
        from onnx import TensorProto, helper, numpy_helper

        self._helper = helper
        self._numpy_helper = numpy_helper
        self._float = TensorProto.FLOAT
        self._weights = weights
        self._hidden = int(weights.position.shape[1])
        self._nodes: list[onnx.NodeProto] = []
        self._initializers: list[onnx.TensorProto] = []
        self._serial = 0

    def build(self) -> onnx.ModelProto:
        helper = self._helper
        x = "x"
        for index, layer in enumerate(self._weights.layers):
            x = self._layer(x, layer, f"l{index}.")
        self._node("ReduceMean", [x], ["mean"], axes=[1], keepdims=0)
        hidden = self._hidden
        graph = helper.make_graph(
            self._nodes,
            "bert",
            [helper.make_tensor_value_info("x", self._float, [1, "tokens", hidden])],
            [helper.make_tensor_value_info("mean", self._float, [1, hidden])],
            initializer=self._initializers,
        )
        opsets = [helper.make_opsetid("", _OPSET), helper.make_opsetid(_CONTRIB, 1)]
        model: onnx.ModelProto = helper.make_model(graph, opset_imports=opsets)
        model.ir_version = _IR_VERSION
        return model

    def _layer(self, x: str, layer: LayerWeights, prefix: str) -> str:
        hidden, heads = self._hidden, self._weights.heads
        eps = float(self._weights.eps)
        qkv = self._product(x, _stacked((layer.q_w, layer.k_w, layer.v_w)), prefix + "qkv")
        qkv_b = np.concatenate([layer.q_b, layer.k_b, layer.v_b])
        qkv = self._node("Add", [qkv, self._const(prefix + "qkv.b", qkv_b)])
        q, k, v = (f"{prefix}{name}" for name in "qkv")
        sizes = self._const(prefix + "split", np.array([hidden] * 3, np.int64))
        self._node("Split", [qkv, sizes], [q, k, v], axis=2)
        attended = self._node(
            "MultiHeadAttention",
            [q, k, v],
            domain=_CONTRIB,
            num_heads=heads,
            scale=1.0 / math.sqrt(hidden // heads),
        )
        projected = self._product(attended, layer.attn_out_w, prefix + "attn_out")
        x = self._skip_norm(
            projected, x, layer.attn_out_b, layer.attn_ln_w, layer.attn_ln_b, prefix + "ln1", eps
        )
        inner = self._product(x, layer.ffn_in_w, prefix + "ffn_in")
        gelu = self._node(
            "BiasGelu", [inner, self._const(prefix + "ffn_in.b", layer.ffn_in_b)], domain=_CONTRIB
        )
        out = self._product(gelu, layer.ffn_out_w, prefix + "ffn_out")
        return self._skip_norm(
            out, x, layer.ffn_out_b, layer.ffn_ln_w, layer.ffn_ln_b, prefix + "ln2", eps
        )

    def _skip_norm(
        self,
        x: str,
        skip: str,
        bias: F32Array,
        weight: F32Array,
        shift: F32Array,
        name: str,
        eps: float,
    ) -> str:
        """``LayerNorm(x + bias + skip)``: a sublayer's bias, residual and norm in one node."""
        inputs = [
            x,
            skip,
            self._const(name + ".w", weight),
            self._const(name + ".b", shift),
            self._const(name + ".bias", bias),
        ]
        return self._node("SkipLayerNormalization", inputs, domain=_CONTRIB, epsilon=eps)

    def _product(self, x: str, matrix: Matrix, name: str) -> str:
        """``x @ matrix.T`` for a ``[out, in]`` matrix: 4-bit blocks kept, float32 transposed."""
        if isinstance(matrix, Q4Matrix):
            inputs = [
                x,
                self._const(name + ".q4", matrix.paired_nibbles()),
                self._const(name + ".scales", matrix.scales()),
            ]
            return self._node(
                "MatMulNBits",
                inputs,
                domain=_CONTRIB,
                K=matrix.cols,
                N=matrix.rows,
                bits=4,
                block_size=BLOCK,
            )
        transposed = np.ascontiguousarray(matrix.T, dtype=np.float32)
        return self._node("MatMul", [x, self._const(name + ".w", transposed)])

    def _const(self, name: str, value: npt.NDArray[Any]) -> str:
        tensor = self._numpy_helper.from_array(np.ascontiguousarray(value), name)
        self._initializers.append(tensor)
        return name

    def _node(
        self,
        op: str,
        inputs: list[str],
        outputs: list[str] | None = None,
        *,
        domain: str = "",
        **attributes: Any,
    ) -> str:
        self._serial += 1
        names = outputs or [f"t{self._serial}"]
        self._nodes.append(
            self._helper.make_node(op, inputs, names, domain=domain or None, **attributes)
        )
        return names[0]


def _stacked(parts: tuple[Matrix, Matrix, Matrix]) -> Matrix:
    """Q, K and V as one ``[3 * hidden, in]`` matrix, in the form they came in."""
    if all(isinstance(part, Q4Matrix) for part in parts):
        return Q4Matrix.stack(tuple(part for part in parts if isinstance(part, Q4Matrix)))
    return np.concatenate([dense(part) for part in parts])
