"""Vector hygiene and the on-disk format.

Invariants: stored vectors are little-endian float32 blobs (the layout
sqlite-vec reads); every vector is finite; non-zero vectors have unit length,
so cosine distance and dot product agree; a zero vector (a provider's answer
for empty input) stays zero and is never used for vector search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from openmemoryd.text import safe_boundary

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Vectors: TypeAlias = "npt.NDArray[np.float32]"

_TINY = 1e-10


def sanitize(vectors: npt.ArrayLike) -> Vectors:
    """Replace non-finite values by 0, then L2-normalise each non-zero row."""
    import numpy as np

    array = np.asarray(vectors, dtype=np.float32)
    single = array.ndim == 1
    rows = np.atleast_2d(array).copy()
    rows[~np.isfinite(rows)] = 0.0
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    np.divide(rows, norms, out=rows, where=norms > _TINY)
    return rows[0] if single else rows


def is_zero(vector: Vectors) -> bool:
    import numpy as np

    return float(np.linalg.norm(vector)) <= _TINY


def to_blob(vector: Vectors) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes) -> Vectors:
    import numpy as np

    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def split_for_limit(text: str, max_bytes: int) -> list[str]:
    """Cut *text* into pieces of at most *max_bytes* UTF-8 bytes.

    Pieces concatenate back to the text, are cut at whitespace when one is in
    the second half of a piece, and never split a visible character (an
    emoji sequence or a letter with its accents). Used to respect a
    provider's input limit; the pieces' vectors are then averaged.
    """
    if max_bytes < 8:
        raise ValueError("max_bytes must be at least 8")
    pieces: list[str] = []
    rest = text
    while len(rest.encode("utf-8")) > max_bytes:
        cut = _longest_prefix_within(rest, max_bytes)
        space = rest.rfind(" ", 0, cut)
        if space > cut // 2:
            cut = space + 1
        pieces.append(rest[:cut])
        rest = rest[cut:]
    if rest or not pieces:
        pieces.append(rest)
    return pieces


def _longest_prefix_within(text: str, max_bytes: int) -> int:
    """Largest safe cut position whose prefix fits in *max_bytes* bytes."""
    low, high = 1, min(len(text), max_bytes)
    while low < high:
        middle = (low + high + 1) // 2
        if len(text[:middle].encode("utf-8")) <= max_bytes:
            low = middle
        else:
            high = middle - 1
    cut = safe_boundary(text, low)
    return cut if cut > 0 else low  # one "character" longer than the limit
