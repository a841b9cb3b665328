"""Injected SQLite faults for the reliability tests (test code: not shipped).

A full disk and damaged pages cannot be produced on demand everywhere (CI
may not allow a small tmpfs), and damage written into a live file hides
behind SQLite's page cache. So a test sets ``OPENMEMORYD_FAULTS_DIR=<dir>``
and puts ``tests/fault_site`` on ``PYTHONPATH`` in the daemon's
environment: its ``sitecustomize`` registers the ``omem-faults`` VFS at
interpreter start and names it in ``OPENMEMORYD_SQLITE_VFS``, which the
daemon opens every index connection through (`openmemoryd.store.db`). The
VFS passes everything to the default VFS except:

* while ``<dir>/enospc`` exists, every write fails with SQLITE_FULL, exactly
  what SQLite reports when the disk is full;
* while ``<dir>/corrupt`` exists, every read of a file whose inode number it
  lists (one per line) fails with SQLITE_CORRUPT, as damaged pages do.
  Naming the inode, not the path, keeps the damage with the damaged file:
  a rebuilt index that replaces it under the same name reads fine.

A Python VFS costs a Python call per page read and write, which is why it
is a test hook and not a feature.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import apsw

__all__ = ["FAULTS_ENV", "SITE_DIR", "VFS_NAME", "register"]

FAULTS_ENV: Final = "OPENMEMORYD_FAULTS_DIR"
VFS_NAME: Final = "omem-faults"
# Put on PYTHONPATH for a daemon that must open its index through this VFS.
SITE_DIR: Final = Path(__file__).resolve().parent / "fault_site"

_registered: dict[str, _FaultVFS] = {}


def register(faults_dir: Path) -> str:
    """Register (once per process) the fault VFS reading switches from
    *faults_dir*; return its name for ``OPENMEMORYD_SQLITE_VFS``."""
    vfs = _registered.get(VFS_NAME)
    if vfs is None:
        _registered[VFS_NAME] = _FaultVFS(faults_dir)
    else:
        vfs.faults_dir = faults_dir
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
