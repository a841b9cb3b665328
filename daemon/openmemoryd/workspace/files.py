"""Find the memory files on disk.

The scan never follows symlinks (neither files nor directories), skips hidden
and tool directories, and reports each physical file once even when an extra
path overlaps the workspace (deduplicated by device and inode, first name
wins, workspace names first). Unreadable directories become issues in the
result, never exceptions: one bad directory must not hide the rest.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from openmemoryd.workspace.paths import (
    MARKDOWN_SUFFIX,
    MEMORY_DIR,
    ROOT_FILES,
    MemoryPath,
    PathPolicy,
    ignored_name,
)


@dataclass(frozen=True, slots=True)
class DiskFile:
    """A memory file found on disk and the stat the scan saw."""

    path: MemoryPath
    size: int
    mtime_ns: int
    source: str = "memory"


@dataclass(slots=True)
class Scan:
    """Files by key, plus the problems met while looking for them."""

    files: dict[str, DiskFile] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)
    _seen: set[tuple[int, int]] = field(default_factory=set)

    def add(self, mp: MemoryPath, st: os.stat_result) -> None:
        identity = (st.st_dev, st.st_ino)
        if identity in self._seen or mp.key in self.files:
            return
        self._seen.add(identity)
        self.files[mp.key] = DiskFile(path=mp, size=st.st_size, mtime_ns=st.st_mtime_ns)


def scan_memory_files(policy: PathPolicy) -> Scan:
    """List every memory file of the workspace and its extra paths."""
    scan = Scan()
    workspace = policy.workspace
    for name in ROOT_FILES:
        st = _lstat(workspace / name)
        if st is not None and stat.S_ISREG(st.st_mode):
            scan.add(MemoryPath(key=name, root=workspace, parts=(name,)), st)
    memory_dir = workspace / MEMORY_DIR
    st = _lstat(memory_dir)
    if st is not None and stat.S_ISDIR(st.st_mode):
        _walk(scan, policy, workspace, (MEMORY_DIR,))
    for extra in policy.extra_paths:
        st = _lstat(extra)
        if st is None or stat.S_ISLNK(st.st_mode):
            continue
        if stat.S_ISDIR(st.st_mode):
            _walk(scan, policy, extra, ())
        elif stat.S_ISREG(st.st_mode) and extra.name.endswith(MARKDOWN_SUFFIX):
            scan.add(
                MemoryPath(key=policy.key_for(extra), root=extra.parent, parts=(extra.name,)), st
            )
    return scan


def _walk(scan: Scan, policy: PathPolicy, root: Path, prefix: tuple[str, ...]) -> None:
    directory = root.joinpath(*prefix)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        scan.issues.append(f"cannot list {policy.key_for(directory)}: {exc.strerror}")
        return
    for entry in entries:
        if ignored_name(entry.name):
            continue
        try:
            if entry.is_symlink():
                continue
            parts = (*prefix, entry.name)
            if entry.is_dir(follow_symlinks=False):
                _walk(scan, policy, root, parts)
            elif entry.name.endswith(MARKDOWN_SUFFIX) and entry.is_file(follow_symlinks=False):
                mp = MemoryPath(key=policy.key_for(root.joinpath(*parts)), root=root, parts=parts)
                scan.add(mp, entry.stat(follow_symlinks=False))
        except OSError as exc:
            scan.issues.append(f"cannot stat {policy.key_for(Path(entry.path))}: {exc.strerror}")


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None
