"""Q4_0 matrices: the 4-bit block format the bundled e5 weights ship in.

A row of ``cols`` weights is ``cols // 32`` blocks of 18 bytes: an fp16 scale
``d``, then 16 bytes where byte ``j`` holds weight ``j`` in its low nibble and
weight ``j + 16`` in its high nibble; a nibble ``q`` means ``(q - 8) * d``.
Rows are PyTorch's ``[out, in]``.

Two engines read these matrices: the numpy encoder dequantises them to
float32 once (`Q4Matrix.float32`), and ONNX Runtime multiplies by them
directly (`Q4Matrix.paired_nibbles` and `Q4Matrix.scales` are its
``MatMulNBits`` layout, the same weights bit for bit), so a query streams
a seventh of the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["BLOCK", "BLOCK_BYTES", "Q4Matrix", "dequantize_q4"]

BLOCK: Final = 32
BLOCK_BYTES: Final = 2 + BLOCK // 2

F32Array = npt.NDArray[np.float32]
U8Array = npt.NDArray[np.uint8]


def dequantize_q4(blocks: U8Array, cols: int) -> F32Array:
    """Float32 ``(rows, cols)`` from Q4_0 blocks shaped ``(rows, cols // 32, 18)``."""
    rows = blocks.shape[0]
    nibbles = _nibbles(blocks)
    values = nibbles.astype(np.float32)
    values -= 8.0
    values *= _scales(blocks)[:, :, None]
    return values.reshape(rows, cols)


@dataclass(frozen=True, slots=True)
class Q4Matrix:
    """A ``[out, in]`` weight matrix left in its Q4_0 blocks (a view of the mapping)."""

    blocks: U8Array  # (rows, cols // 32, 18)

    @property
    def rows(self) -> int:
        return int(self.blocks.shape[0])

    @property
    def cols(self) -> int:
        return int(self.blocks.shape[1]) * BLOCK

    def float32(self) -> F32Array:
        """The matrix dequantised, ``(rows, cols)`` float32."""
        return dequantize_q4(self.blocks, self.cols)

    def scales(self) -> F32Array:
        """Each block's scale as float32, ``(rows * cols // 32,)`` in row order."""
        return np.ascontiguousarray(_scales(self.blocks).reshape(-1))

    def paired_nibbles(self) -> U8Array:
        """``(rows, cols // 32, 16)`` bytes, weight ``2i`` low and ``2i + 1`` high.

        ONNX Runtime's 4-bit blocks pair neighbouring weights in a byte
        (zero point 8, the default for 4 bits), where Q4_0 pairs ``j`` with
        ``j + 16``; the nibbles are only moved, never re-quantised.
        """
        nibbles = _nibbles(self.blocks)
        high = np.left_shift(nibbles[:, :, 1::2], np.uint8(4))
        paired: U8Array = np.bitwise_or(nibbles[:, :, 0::2], high)
        return np.ascontiguousarray(paired)

    @staticmethod
    def stack(parts: tuple[Q4Matrix, ...]) -> Q4Matrix:
        """One matrix whose rows are *parts*' rows in order (all as wide)."""
        return Q4Matrix(np.concatenate([part.blocks for part in parts]))


def _scales(blocks: U8Array) -> F32Array:
    scale: F32Array = (
        np.ascontiguousarray(blocks[:, :, :2]).view(np.float16)[:, :, 0].astype(np.float32)
    )
    return scale


def _nibbles(blocks: U8Array) -> U8Array:
    """``(rows, cols // 32, 32)`` unsigned nibbles in weight order."""
    packed = blocks[:, :, 2:]
    nibbles = np.empty((*blocks.shape[:2], BLOCK), dtype=np.uint8)
    np.bitwise_and(packed, 0x0F, out=nibbles[:, :, : BLOCK // 2])
    np.right_shift(packed, 4, out=nibbles[:, :, BLOCK // 2 :])
    return nibbles
