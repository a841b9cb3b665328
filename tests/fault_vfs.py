"""Injected SQLite faults for the reliability tests; inert unless asked for.

A full disk and damaged pages cannot be produced on demand everywhere (CI
may not allow a small tmpfs), and damage written into a live file hides
behind SQLite's page cache. So a test sets ``OPENMEMORYD_FAULTS_DIR=<dir>``
in the daemon's environment, and every index connection is then opened
through the ``omem-faults`` VFS, which passes everything to the default VFS
except:

* while ``<dir>/enospc`` exists, every write fails with SQLITE_FULL, exactly
  what SQLite reports when the disk is full;
* while ``<dir>/corrupt`` exists, every read of a file whose inode number it
  lists (one per line) fails with SQLITE_CORRUPT, as damaged pages do.
  Naming the inode, not the path, keeps the damage with the damaged file:
  a rebuilt index that replaces it under the same name reads fine.

Without the variable nothing here is registered or called. A Python VFS
costs a Python call per page read and write, which is why it is a test hook
and not a feature.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import apsw

__all__ = ["FAULTS_ENV", "VFS_NAME", "index_vfs"]

FAULTS_ENV: Final = "OPENMEMORYD_FAULTS_DIR"
VFS_NAME: Final = "omem-faults"

_registered: dict[str, _FaultVFS] = {}


def index_vfs(environ: Mapping[str, str] | None = None) -> str | None:
    """The VFS name index connections must use: None (SQLite's default)
    unless fault injection is switched on in *environ*."""
    env = os.environ if environ is None else environ
    faults_dir = env.get(FAULTS_ENV, "").strip()
    if not faults_dir:
        return None
    vfs = _registered.get(VFS_NAME)
    if vfs is None:
        _registered[VFS_NAME] = _FaultVFS(Path(faults_dir))
    elif vfs.faults_dir != Path(faults_dir):
        vfs.faults_dir = Path(faults_dir)
    return VFS_NAME


class _FaultVFS(apsw.VFS):
    def __init__(self, faults_dir: Path) -> None:
        self.faults_dir = faults_dir
        super().__init__(VFS_NAME, "")

    def xOpen(self, name: str | apsw.URIFilename | None, flags: list[int]) -> apsw.VFSFile:
        return _FaultFile(self, name, flags)


class _FaultFile(apsw.VFSFile):
    def __init__(
        self, vfs: _FaultVFS, name: str | apsw.URIFilename | None, flags: list[int]
    ) -> None:
        super().__init__("", name, flags)
        self._vfs = vfs
        path = name.filename() if isinstance(name, apsw.URIFilename) else name
        self._inode: int | None = None
        if path:
            try:
                self._inode = os.stat(path).st_ino
            except OSError:
                self._inode = None

    def xRead(self, amount: int, offset: int) -> bytes:
        damaged = self._vfs.faults_dir / "corrupt"
        if self._inode is not None and damaged.exists() and self._is_listed(damaged):
            raise apsw.CorruptError("injected fault: damaged page")
        return super().xRead(amount, offset)

    def xWrite(self, data: bytes, offset: int) -> None:
        if (self._vfs.faults_dir / "enospc").exists():
            raise apsw.FullError("injected fault: no space left on device")
        super().xWrite(data, offset)

    def _is_listed(self, damaged: Path) -> bool:
        try:
            listed = damaged.read_text().split()
        except OSError:
            return False
        return str(self._inode) in listed
