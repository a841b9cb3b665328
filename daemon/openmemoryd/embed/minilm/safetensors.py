"""A minimal reader of the safetensors format: enough for fp32 BERT weights.

The format (https://github.com/huggingface/safetensors): a u64 little-endian
header length ``n``; ``n`` bytes of JSON mapping each tensor name to its
``dtype``, ``shape`` and ``data_offsets`` ``[begin, end)`` relative to the
byte after the header (plus an optional ``__metadata__`` of strings); then
the raw little-endian data. That is twenty lines with numpy, so we read it
ourselves instead of adding the `safetensors` package.

Invariants: tensors are read-only numpy views of one shared read-only
mapping, so nothing is copied until a caller asks (the 47 MB word table of
MiniLM stays in the page cache, shared by the daemon and its worker); every
tensor lies inside the data section and its byte length is exactly what its
dtype and shape imply, or the whole file is refused with `WeightsFormatError`.
"""

from __future__ import annotations

import json
import math
import mmap
import struct
from pathlib import Path
from typing import Final, TypeGuard

import numpy as np
import numpy.typing as npt

from openmemoryd.embed.packaged import WeightsFormatError

__all__ = ["read_safetensors"]

_DTYPES: Final = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}
_MAX_HEADER: Final = 100 * 1024 * 1024  # the format's own limit


def read_safetensors(path: Path) -> dict[str, npt.NDArray[np.generic]]:
    """Every tensor of *path* (BF16 and other exotic dtypes are refused), by name."""
    with path.open("rb") as handle:
        try:
            buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError as exc:  # an empty file cannot be mapped
            raise WeightsFormatError(f"{path} is not a safetensors file: {exc}") from None
    if len(buffer) < 8:
        raise WeightsFormatError(f"{path} is not a safetensors file (too short)")
    (header_len,) = struct.unpack_from("<Q", buffer, 0)
    if header_len > min(_MAX_HEADER, len(buffer) - 8):
        raise WeightsFormatError(f"{path}: header length {header_len} is impossible")
    try:
        header = json.loads(buffer[8 : 8 + header_len])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WeightsFormatError(f"{path}: the header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise WeightsFormatError(f"{path}: the header is not a JSON object")
    data_start = 8 + header_len
    return {
        name: _tensor(buffer, data_start, name, entry)
        for name, entry in header.items()
        if name != "__metadata__"
    }


def _tensor(
    buffer: mmap.mmap, data_start: int, name: str, entry: object
) -> npt.NDArray[np.generic]:
    if not isinstance(entry, dict):
        raise WeightsFormatError(f"tensor {name}: entry is not an object")
    dtype_name, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype_name not in _DTYPES:
        raise WeightsFormatError(f"tensor {name}: unsupported dtype {dtype_name!r}")
    if not _ints(shape) or not _ints(offsets) or len(offsets) != 2:
        raise WeightsFormatError(f"tensor {name}: bad shape or data_offsets")
    dtype = np.dtype(_DTYPES[dtype_name])
    count = math.prod(shape)
    begin, end = offsets
    if not 0 <= begin <= end <= len(buffer) - data_start or end - begin != count * dtype.itemsize:
        raise WeightsFormatError(f"tensor {name}: data_offsets {offsets} do not fit {shape}")
    flat = np.frombuffer(buffer, dtype=dtype, count=count, offset=data_start + begin)
    return flat.reshape(shape)


def _ints(value: object) -> TypeGuard[list[int]]:
    return isinstance(value, list) and all(
        isinstance(item, int) and not isinstance(item, bool) and item >= 0 for item in value
    )
