"""The reference passages' vectors, computed once and shipped beside this module.

A daemon with the default model needs the vectors of the reference passages
(`openmemoryd.embed.reference`) before it can tell whether a match by meaning
counts. Embedding them took 0.9 CPU-seconds at every start, more than
loading the model (`python -m bench.model_start`), and on a machine that
starts daemons often (socket activation, a test suite) that adds up. The
vectors depend on nothing but the pinned weights, the recipe and the
passages, so they are computed here once and shipped in a file named by a
digest of all three: a daemon loads the file whose name matches and embeds
the passages itself only when none does (the passages were edited and the
file not written again; tests/test_e5_reference.py fails then, and checks
the shipped vectors against the live model).

Write the file again after editing the passages:

    python -m openmemoryd.embed.e5.reference
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from openmemoryd.embed.e5.model import DIMS, MODEL_ID
from openmemoryd.embed.e5.weights import PINNED_SHA256
from openmemoryd.embed.reference import REFERENCE_PASSAGES

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["digest", "load", "shipped_path", "write"]

_DIR: Final = Path(__file__).resolve().parent
_PREFIX: Final = "reference-"


def digest() -> str:
    """What the vectors depend on: the recipe, the weights and every passage."""
    h = hashlib.sha256()
    for part in (MODEL_ID, PINNED_SHA256, *REFERENCE_PASSAGES):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def shipped_path() -> Path:
    """Where the vectors for today's passages and weights are (or would be)."""
    return _DIR / f"{_PREFIX}{digest()[:16]}.npy"


def load() -> npt.NDArray[np.float32] | None:
    """The shipped vectors, one unit row a passage; None when no file matches
    (the caller embeds the passages itself) or the file is not what it should be."""
    import numpy as np

    path = shipped_path()
    try:
        vectors: npt.NDArray[np.float32] = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if (
        vectors.dtype != np.float32
        or vectors.shape != (len(REFERENCE_PASSAGES), DIMS)
        or not np.isfinite(vectors).all()
    ):
        return None
    return vectors


def write(vectors: npt.NDArray[np.float32]) -> Path:
    """Ship *vectors* (the passages embedded by the pinned model) under
    today's digest, removing the files of earlier digests."""
    import numpy as np

    array = np.ascontiguousarray(vectors, dtype="<f4")
    if array.shape != (len(REFERENCE_PASSAGES), DIMS):
        raise ValueError(f"expected {len(REFERENCE_PASSAGES)}x{DIMS} vectors, got {array.shape}")
    path = shipped_path()
    for old in _DIR.glob(f"{_PREFIX}*.npy"):
        if old != path:
            old.unlink()
    np.save(path, array, allow_pickle=False)
    return path


def main() -> int:
    """Embed the passages with the pinned model and write the shipped file."""
    from openmemoryd.embed.e5.model import E5Model
    from openmemoryd.embed.e5.weights import default_weights_path
    from openmemoryd.embed.vectors import sanitize

    model = E5Model.load(default_weights_path(), engine="numpy")
    path = write(sanitize(model.encode(REFERENCE_PASSAGES, is_query=False)))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
