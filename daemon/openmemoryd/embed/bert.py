"""A post-LN BERT encoder in numpy: float32 weights, BLAS GEMMs, mean pooling.

Both local models are this network with different weights and tokenizers:
multilingual-e5-small (12 layers, XLM-R vocabulary, see `e5`) and
all-MiniLM-L6-v2 (6 layers, BERT uncased WordPiece, see `minilm`). Each model
turns texts into `Window` s (token ids already wrapped in their start/end
tokens); this module does the rest: token + position (row ``t`` for the
``t``-th token) + token-type row 0 embeddings, LayerNorm, the encoder layers
with exact (erf) GELU, the mean of every token's last hidden state, then per
text the mean of its windows' means weighted by `Window.weight`, L2
normalised. The ONNX Runtime engine (`bert_onnx`, the default where it is
installed) runs the same layers and shares the rest: `TokenEmbedding` and
`pool_windows`.

Invariants:

* `BertEncoder.encode` returns float32 ``(count, hidden)``, one row per text
  index, each finite with unit L2 norm (only a text with no window at all
  would get a zero row; both models give every text at least one window).
* Windows never attend to each other: windows are packed back to back into
  one ``(tokens, hidden)`` matrix so the big GEMMs stream each weight once per
  batch, and attention runs on each window's own rows. No padding exists,
  so a batch costs exactly its token count and ``max_batch_tokens`` bounds
  the activation memory (one window longer than the budget runs alone).
* Same windows, same batch budget and same BLAS thread count give identical
  bytes. Batch composition only changes BLAS blocking (cosine > 0.9999).
* Nothing here changes BLAS or OpenMP thread settings; callers choose them
  (e.g. with threadpoolctl). Elementwise work is single-threaded numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from openmemoryd.embed.q4 import Q4Matrix

__all__ = [
    "BertEncoder",
    "DenseRows",
    "EncoderWeights",
    "LayerWeights",
    "Matrix",
    "RowLookup",
    "TokenEmbedding",
    "Window",
    "dense",
    "pool_windows",
]

F32Array = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.intp]
# A weight matrix as a model ships it: float32, or e5's 4-bit blocks.
Matrix = F32Array | Q4Matrix

_GELU_ROWS: Final = 64  # rows per GELU block: keeps its ~20 passes inside L2
_SCORES_BYTES: Final = 1 << 20  # attention scores per head group: about one core's L2
_FEW_ROWS: Final = 128  # token rows up to which `_product` multiplies long side first
_SUM_MIN: Final = 1e-20
_SUM_MAX: Final = 1e20
_NORM_FLOOR: Final = 1e-12

# Abramowitz & Stegun 7.1.26: erfc(z) ~ t*P(t)*exp(-z*z), t = 1/(1 + p*z), z >= 0,
# |error| <= 1.5e-7. Written for Phi(-|x|) = erfc(|x|/sqrt2)/2, so p absorbs the
# 1/sqrt2 and the coefficients the 1/2.
_ERFC_P: Final = 0.3275911 / math.sqrt(2.0)
_ERFC_A: Final = tuple(
    0.5 * a for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
)  # a1..a5


class RowLookup(Protocol):
    """The token-embedding table: only the rows a batch uses are materialised."""

    def rows(self, ids: IntArray) -> F32Array:
        """Float32 rows for `ids`, shape ``(len(ids), hidden)``."""
        ...


class DenseRows:
    """A float32 table (e.g. a read-only mapping of the weights file) as a `RowLookup`."""

    def __init__(self, table: F32Array) -> None:
        self._table = table

    def rows(self, ids: IntArray) -> F32Array:
        rows: F32Array = self._table[ids]
        return rows


def dense(matrix: Matrix) -> F32Array:
    """*matrix* as float32 ``[out, in]`` (4-bit blocks dequantised)."""
    return matrix.float32() if isinstance(matrix, Q4Matrix) else matrix


@dataclass(frozen=True, slots=True)
class LayerWeights:
    """One post-LN encoder layer; matrices are ``[out, in]`` (PyTorch's layout)."""

    q_w: Matrix
    q_b: F32Array
    k_w: Matrix
    k_b: F32Array
    v_w: Matrix
    v_b: F32Array
    attn_out_w: Matrix
    attn_out_b: F32Array
    attn_ln_w: F32Array
    attn_ln_b: F32Array
    ffn_in_w: Matrix
    ffn_in_b: F32Array
    ffn_out_w: Matrix
    ffn_out_b: F32Array
    ffn_ln_w: F32Array
    ffn_ln_b: F32Array


@dataclass(frozen=True, slots=True)
class EncoderWeights:
    """Everything the forward pass needs, whichever file it came from."""

    heads: int
    eps: float
    word: RowLookup
    position: F32Array  # (max positions, hidden)
    token_type: F32Array  # (type rows, hidden); row 0 is used
    emb_ln_w: F32Array
    emb_ln_b: F32Array
    layers: tuple[LayerWeights, ...]


@dataclass(frozen=True, slots=True)
class Window:
    """One model input: start token, content ids, end token, for text number `text`.

    `weight` is the window's share of its text's vector (its content-token
    count for e5's windows; any positive number when a text has one window).
    """

    text: int
    ids: IntArray
    weight: int


@dataclass(frozen=True, slots=True)
class _Layer:
    """GEMM-ready layer: contiguous matrices ``[out, in]``, Q pre-scaled by 1/sqrt(head_dim)."""

    qkv_w: F32Array
    qkv_b: F32Array
    attn_out_w: F32Array
    attn_out_b: F32Array
    attn_ln_w: F32Array
    attn_ln_b: F32Array
    ffn_in_w: F32Array
    ffn_in_b: F32Array
    ffn_out_w: F32Array
    ffn_out_b: F32Array
    ffn_ln_w: F32Array
    ffn_ln_b: F32Array

    @classmethod
    def prepare(cls, raw: LayerWeights, head_dim: int) -> _Layer:
        scale = np.float32(1.0 / math.sqrt(head_dim))
        qkv_w = np.concatenate([dense(raw.q_w) * scale, dense(raw.k_w), dense(raw.v_w)], axis=0)
        return cls(
            qkv_w=_output_major(qkv_w),
            qkv_b=np.concatenate([raw.q_b * scale, raw.k_b, raw.v_b]),
            attn_out_w=_output_major(dense(raw.attn_out_w)),
            attn_out_b=raw.attn_out_b,
            attn_ln_w=raw.attn_ln_w,
            attn_ln_b=raw.attn_ln_b,
            ffn_in_w=_output_major(dense(raw.ffn_in_w)),
            ffn_in_b=raw.ffn_in_b,
            ffn_out_w=_output_major(dense(raw.ffn_out_w)),
            ffn_out_b=raw.ffn_out_b,
            ffn_ln_w=raw.ffn_ln_w,
            ffn_ln_b=raw.ffn_ln_b,
        )


def _output_major(matrix: F32Array) -> F32Array:
    """``[out, in]`` kept as it comes, contiguous float32 (see `_product`)."""
    return np.ascontiguousarray(matrix, dtype=np.float32)


def _product(x: F32Array, w: F32Array, out: F32Array, columns: F32Array | None) -> None:
    """``out = x @ w.T`` for a weight matrix stored ``[out, in]``.

    A query is a few dozen token rows, and OpenBLAS is slow at a short, wide
    ``x @ w``: it repacks the whole weight matrix for a handful of rows.
    ``w @ x.T`` (long side first, into *columns*, then copied back to rows)
    is the same product, faster up to about 200 rows and much slower at 512,
    so batches of many rows keep ``x @ w.T`` (*columns* None). Query p50 and
    passage throughput: docs/benchmarks.md ("Few rows, long side first").
    """
    if columns is None:
        np.matmul(x, w.T, out=out)
        return
    np.matmul(w, x.T, out=columns)
    out[...] = columns.T


class _Workspace:
    """Activation buffers for one packed batch, reused by every layer."""

    def __init__(self, tokens: int, hidden: int, ffn: int, longest: int) -> None:
        self.qkv = np.empty((tokens, 3 * hidden), dtype=np.float32)
        self.context = np.empty((tokens, hidden), dtype=np.float32)
        self.projected = np.empty((tokens, hidden), dtype=np.float32)
        self.ffn = np.empty((tokens, ffn), dtype=np.float32)
        # Column-major scratch for `_product`, only for a batch of few rows.
        few = tokens <= _FEW_ROWS
        self.qkv_cols = np.empty((3 * hidden, tokens), dtype=np.float32) if few else None
        self.hidden_cols = np.empty((hidden, tokens), dtype=np.float32) if few else None
        self.ffn_cols = np.empty((ffn, tokens), dtype=np.float32) if few else None
        self.scores = np.empty(max(_SCORES_BYTES // 4, longest * longest), dtype=np.float32)
        rows = min(_GELU_ROWS, tokens)
        self.gelu = tuple(np.empty((rows, ffn), dtype=np.float32) for _ in range(3))


class TokenEmbedding:
    """Token + position + token-type row 0 embeddings, then LayerNorm: every engine's input."""

    def __init__(self, weights: EncoderWeights) -> None:
        self.hidden: int = int(weights.position.shape[1])
        self.max_positions: int = int(weights.position.shape[0])
        self._word = weights.word
        self._position = weights.position
        self._token_type = weights.token_type[0]
        self._ln = (weights.emb_ln_w, weights.emb_ln_b)
        self._eps = np.float32(weights.eps)

    def __call__(self, ids: IntArray, lengths: IntArray) -> F32Array:
        """``(len(ids), hidden)`` rows for windows of `lengths` tokens packed back to back."""
        unique, inverse = np.unique(ids, return_inverse=True)
        x = self._word.rows(unique)[inverse]
        positions = np.concatenate([np.arange(n) for n in lengths])
        x += self._position[positions]
        x += self._token_type
        _layer_norm(x, *self._ln, self._eps)
        return x


def pool_windows(
    windows: Sequence[Window],
    count: int,
    hidden: int,
    max_positions: int,
    batches: Iterator[list[Window]] | None,
    forward: Callable[[Sequence[Window]], F32Array],
) -> F32Array:
    """Texts' vectors from their windows' mean states: `encode` for every engine.

    *forward* returns one mean row per window of the batch it is given;
    *batches* groups the windows (None: one window at a time). Row ``i`` of
    the result is text ``i``'s windows' means weighted by `Window.weight`,
    L2-normalised.
    """
    longest = max((len(window.ids) for window in windows), default=0)
    if longest > max_positions:
        raise ValueError(f"a window has {longest} tokens; the model takes {max_positions}")
    sums = np.zeros((count, hidden), dtype=np.float64)
    totals = np.zeros(count, dtype=np.float64)
    for batch in batches if batches is not None else ([window] for window in windows):
        means = forward(batch)
        for window, mean in zip(batch, means, strict=True):
            sums[window.text] += window.weight * mean.astype(np.float64)
            totals[window.text] += window.weight
    return _normalize(sums, totals)


class BertEncoder:
    """The encoder stack plus pooling in numpy; weights are prepared for GEMMs once, here."""

    engine: Final = "numpy"

    def __init__(self, weights: EncoderWeights) -> None:
        if not weights.layers:
            raise ValueError("an encoder needs at least one layer")
        self._embed = TokenEmbedding(weights)
        self.hidden: int = self._embed.hidden
        self.max_positions: int = self._embed.max_positions
        self._heads = weights.heads
        self._eps = np.float32(weights.eps)
        head_dim = self.hidden // weights.heads
        self._layers = tuple(_Layer.prepare(raw, head_dim) for raw in weights.layers)
        self._ffn = int(self._layers[0].ffn_in_w.shape[0])  # [out, in]

    def encode(self, windows: Sequence[Window], count: int, max_batch_tokens: int) -> F32Array:
        """L2-normalised float32 vectors, shape ``(count, hidden)``, row i for text i."""
        if max_batch_tokens < 1:
            raise ValueError("max_batch_tokens must be positive")
        batches = _batches(windows, max_batch_tokens)
        return pool_windows(windows, count, self.hidden, self.max_positions, batches, self._forward)

    def _forward(self, batch: Sequence[Window]) -> F32Array:
        """Mean of the last hidden states of each window, shape ``(len(batch), hidden)``."""
        lengths = np.array([len(window.ids) for window in batch], dtype=np.intp)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        x = self._embed(np.concatenate([window.ids for window in batch]), lengths)
        work = _Workspace(len(x), self.hidden, self._ffn, int(lengths.max()))
        spans = [(int(a), int(a + n)) for a, n in zip(starts, lengths, strict=True)]
        for layer in self._layers:
            self._attention_block(x, layer, spans, work)
            self._ffn_block(x, layer, work)
        sums: F32Array = np.add.reduceat(x, starts, axis=0)
        sums /= lengths[:, None].astype(np.float32)
        return sums

    def _attention_block(
        self, x: F32Array, layer: _Layer, spans: list[tuple[int, int]], work: _Workspace
    ) -> None:
        _product(x, layer.qkv_w, work.qkv, work.qkv_cols)
        work.qkv += layer.qkv_b
        for start, end in spans:
            _attend(work.qkv[start:end], work.context[start:end], self._heads, work.scores)
        _product(work.context, layer.attn_out_w, work.projected, work.hidden_cols)
        work.projected += layer.attn_out_b
        x += work.projected
        _layer_norm(x, layer.attn_ln_w, layer.attn_ln_b, self._eps)

    def _ffn_block(self, x: F32Array, layer: _Layer, work: _Workspace) -> None:
        _product(x, layer.ffn_in_w, work.ffn, work.ffn_cols)
        for start in range(0, len(x), _GELU_ROWS):
            _bias_gelu(work.ffn[start : start + _GELU_ROWS], layer.ffn_in_b, work.gelu)
        _product(work.ffn, layer.ffn_out_w, work.projected, work.hidden_cols)
        work.projected += layer.ffn_out_b
        x += work.projected
        _layer_norm(x, layer.ffn_ln_w, layer.ffn_ln_b, self._eps)


def _batches(windows: Sequence[Window], budget: int) -> Iterator[list[Window]]:
    """Windows by decreasing length (stable), greedily packed under `budget` tokens."""
    batch: list[Window] = []
    used = 0
    for window in sorted(windows, key=lambda w: -len(w.ids)):
        if batch and used + len(window.ids) > budget:
            yield batch
            batch, used = [], 0
        batch.append(window)
        used += len(window.ids)
    if batch:
        yield batch


def _normalize(sums: npt.NDArray[np.float64], totals: npt.NDArray[np.float64]) -> F32Array:
    means: npt.NDArray[np.float64] = sums / np.maximum(totals, 1.0)[:, None]
    norms: npt.NDArray[np.float64] = np.sqrt(np.maximum(np.square(means).sum(axis=1), _NORM_FLOOR))
    return (means / norms[:, None]).astype(np.float32)


def _attend(qkv: F32Array, out: F32Array, heads: int, scratch: F32Array) -> None:
    """Softmax attention of one window; `qkv` is ``(L, 3*hidden)``, `out` ``(L, hidden)``.

    Heads go in groups whose score matrices fit `_SCORES_BYTES`, so the
    elementwise softmax passes stay in cache instead of streaming L*L*heads
    floats from memory.
    """
    length, width = len(qkv), out.shape[1]
    head_dim = width // heads
    split = (length, heads, head_dim)
    queries = qkv[:, :width].reshape(split).transpose(1, 0, 2)
    keys_t = np.ascontiguousarray(qkv[:, width : 2 * width].reshape(split).transpose(1, 2, 0))
    values = qkv[:, 2 * width :].reshape(split).transpose(1, 0, 2)
    heads_out = out.reshape(split)
    group = max(1, min(heads, _SCORES_BYTES // (4 * length * length)))
    for first in range(0, heads, group):
        chosen = slice(first, min(first + group, heads))
        scores = scratch[: (chosen.stop - first) * length * length]
        scores = scores.reshape(-1, length, length)
        weights, totals = _softmax_numerators(queries[chosen], keys_t[chosen], scores)
        context = np.matmul(weights, values[chosen])
        context /= totals
        heads_out[:, chosen] = context.transpose(1, 0, 2)


def _softmax_numerators(
    queries: F32Array, keys_t: F32Array, scores: F32Array
) -> tuple[F32Array, F32Array]:
    """``exp(q k^T - c)`` in `scores` and its row sums, for some per-row constant c.

    Usually c = 0: the row-max subtraction costs two passes over L*L floats
    per head, and logits of a trained encoder stay far inside float32's exp
    range. When any row sum leaves ``[_SUM_MIN, _SUM_MAX]`` (a logit beyond
    about +-46, where exp could overflow, or the context product could), the
    group is recomputed the textbook way with c = row max. The softmax
    is the same function either way; only rounding differs.
    """
    np.matmul(queries, keys_t, out=scores)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        np.exp(scores, out=scores)
        totals = scores.sum(axis=2, keepdims=True)
    if np.all((totals > _SUM_MIN) & (totals < _SUM_MAX)):
        return scores, totals
    np.matmul(queries, keys_t, out=scores)
    scores -= scores.max(axis=2, keepdims=True)
    np.exp(scores, out=scores)
    exact_totals: F32Array = scores.sum(axis=2, keepdims=True)
    return scores, exact_totals


def _layer_norm(x: F32Array, weight: F32Array, bias: F32Array, eps: np.float32) -> None:
    """In-place LayerNorm over the last axis."""
    x -= x.mean(axis=1, keepdims=True)
    variance = np.einsum("ij,ij->i", x, x)
    variance /= np.float32(x.shape[1])
    variance += eps
    x *= (1.0 / np.sqrt(variance))[:, None]
    x *= weight
    x += bias


def _bias_gelu(block: F32Array, bias: F32Array, scratch: tuple[F32Array, ...]) -> None:
    """In place: ``block = gelu(block + bias)``, erf form, to ~3e-7 absolute.

    gelu(x) = x*Phi(x) = relu(x) - |x|*Phi(-|x|), and Phi(-|x|) is A&S 7.1.26.
    """
    rows = len(block)
    magnitude, t, poly = (buffer[:rows] for buffer in scratch)
    block += bias
    np.abs(block, out=magnitude)
    np.multiply(magnitude, _ERFC_P, out=t)
    t += 1.0
    np.reciprocal(t, out=t)
    np.multiply(t, _ERFC_A[4], out=poly)
    for coefficient in reversed(_ERFC_A[:4]):
        poly += coefficient
        poly *= t
    np.square(magnitude, out=t)
    t *= -0.5
    np.exp(t, out=t)
    poly *= t
    poly *= magnitude
    np.maximum(block, 0.0, out=block)
    block -= poly
