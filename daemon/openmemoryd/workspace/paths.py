"""Which paths are memory, and how to open them without being tricked.

Memory files are ``MEMORY.md``, ``USER.md``, ``PROJECT.md`` and
``memory/**/*.md`` in the workspace, plus configured extra paths (a directory,
searched recursively, or a single ``.md`` file). Everything else is refused:
``..`` anywhere, absolute paths outside those places, non-``.md`` names,
hidden or tool directories, NUL bytes.

Symlinks are refused in every component below the trusted root (the
workspace, or an extra path). Rather than checking with ``lstat`` and then
opening (a race an attacker can win, OpenClaw PRs #68597 and #80331), files
are opened one component at a time with ``O_NOFOLLOW`` relative to the parent
directory's descriptor, so what is checked is what is opened. Non-regular
files (FIFOs, devices, directories) are refused after ``fstat``; they are
opened with ``O_NONBLOCK`` so a FIFO cannot hang the daemon.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from openmemoryd.errors import BadRequest, Forbidden, NotFound, OmemdError, TooLarge, Unavailable

ROOT_FILES: Final = ("MEMORY.md", "USER.md", "PROJECT.md")
MEMORY_DIR: Final = "memory"
MARKDOWN_SUFFIX: Final = ".md"

# Directories never treated as memory even inside memory/ or an extra path
# (OpenClaw's watcher list; dot-directories such as .git, .venv and .tox are
# excluded by `ignored_name` already).
IGNORED_DIRS: Final = frozenset({"node_modules", "__pycache__", "venv"})

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class RootMissing(Unavailable):
    """A memory file cannot be opened because its root directory (the
    workspace, or an extra path's) is gone: not that file's fault, and not
    a state the daemon repairs by itself (see `_root_missing`). Indexing
    treats the file as gone, like a missing one."""


@dataclass(frozen=True, slots=True)
class MemoryPath:
    """A memory file: its index key and where it is opened from.

    `key` is how users and the index name the file: workspace-relative with
    ``/`` separators, or absolute for extra paths outside the workspace.
    """

    key: str
    root: Path
    parts: tuple[str, ...]

    @property
    def absolute(self) -> Path:
        return self.root.joinpath(*self.parts)


def ignored_name(name: str) -> bool:
    """Hidden entries and tool directories are never memory."""
    return name.startswith(".") or name in IGNORED_DIRS


class PathPolicy:
    """Decides which paths are memory files of one workspace."""

    def __init__(self, workspace: Path, extra_paths: Sequence[Path] = ()) -> None:
        self.workspace = workspace
        self.extra_paths = tuple(extra_paths)

    def key_for(self, path: Path) -> str:
        """Index key of an absolute *path* (workspace-relative when inside it)."""
        try:
            return path.relative_to(self.workspace).as_posix()
        except ValueError:
            return path.as_posix()

    def resolve(self, raw: str) -> MemoryPath:
        """Map a user-supplied path to a memory file, or raise why not.

        Raises:
            BadRequest: empty or NUL-containing path.
            Forbidden: any other path that is not a memory file.
        """
        text = raw.strip()
        if not text:
            raise BadRequest("path required")
        if "\x00" in text:
            raise BadRequest("path contains a NUL character")
        pure = PurePosixPath(text)
        if ".." in pure.parts:
            raise Forbidden(f"'..' is not allowed in memory paths: {text}")
        absolute = Path(os.path.normpath(pure if pure.is_absolute() else self.workspace / pure))
        if absolute.suffix != MARKDOWN_SUFFIX:
            raise Forbidden(f"only Markdown (.md) files are memory: {text}")

        inside = _relative_parts(absolute, self.workspace)
        if inside is not None and _is_workspace_memory(inside):
            return MemoryPath(key="/".join(inside), root=self.workspace, parts=inside)
        for extra in self.extra_paths:
            found = self._within_extra(absolute, extra)
            if found is not None:
                return found
        raise Forbidden(
            f"not a memory file: {text} (memory is MEMORY.md, USER.md, PROJECT.md, "
            "memory/**/*.md and configured extra paths)"
        )

    def _within_extra(self, absolute: Path, extra: Path) -> MemoryPath | None:
        try:
            st = os.lstat(extra)
        except OSError:
            return None
        if stat.S_ISDIR(st.st_mode):
            parts = _relative_parts(absolute, extra)
            if parts is None or any(ignored_name(p) for p in parts):
                return None
            return MemoryPath(key=self.key_for(absolute), root=extra, parts=parts)
        if stat.S_ISREG(st.st_mode) and absolute == extra:
            return MemoryPath(key=self.key_for(absolute), root=extra.parent, parts=(extra.name,))
        return None


def _relative_parts(path: Path, root: Path) -> tuple[str, ...] | None:
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return None
    return parts or None


def _is_workspace_memory(parts: tuple[str, ...]) -> bool:
    if len(parts) == 1:
        return parts[0] in ROOT_FILES
    return parts[0] == MEMORY_DIR and not any(ignored_name(p) for p in parts[1:])


# ---------------------------------------------------------------- safe opening


def open_beneath(mp: MemoryPath, flags: int, *, mode: int = 0o644, make_dirs: bool = False) -> int:
    """Open *mp* without following a symlink in any component below its root.

    Returns a descriptor of a regular file. With ``make_dirs``, missing
    intermediate directories are created (never through a symlink).

    Raises:
        NotFound, Forbidden: mapped from the OS error, naming the path.
        Unavailable: the root itself is missing (`_root_missing`).
    """
    try:
        dir_fd = os.open(mp.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise _root_missing(mp) from None
    except OSError as exc:
        raise _map_os_error(exc, mp.key) from None
    try:
        for name in mp.parts[:-1]:
            child = _open_child_dir(dir_fd, name, mp.key, make_dirs)
            os.close(dir_fd)
            dir_fd = child
        try:
            fd = os.open(
                mp.parts[-1],
                flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                mode,
                dir_fd=dir_fd,
            )
        except OSError as exc:
            raise _map_os_error(exc, mp.key) from None
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Forbidden(f"not a regular file: {mp.key}")
    return fd


def _root_missing(mp: MemoryPath) -> RootMissing:
    """The error for a file whose root directory (the workspace, or an extra
    path's) is gone: it names the directory, since the file is not the
    problem. "no such memory file: memory/<today>.md" sent a user whose
    workspace had been deleted looking for a daily note. Nothing recreates
    the root here: a deleted workspace may be deliberate; restoring it (the
    watcher picks it up again) or `openmemoryd init` is the user's call.
    """
    # A workspace file's key is its path below the workspace; an extra
    # path's file is keyed by its path (absolute, or below the workspace).
    if mp.key == "/".join(mp.parts):
        return workspace_missing(mp.root, f"{mp.key} cannot be opened")
    return RootMissing(
        f"memory folder missing: {mp.root} (deleted or moved?): cannot open {mp.key}"
    )


def workspace_missing(workspace: Path, consequence: str) -> RootMissing:
    """The error of a workspace gone under the daemon: what it stops
    (*consequence*) and the two ways out, one wording for every request."""
    return RootMissing(
        f"workspace missing: {workspace} (deleted or moved?), so {consequence}; restore "
        "the directory (the daemon watches it again once it is back), or `openmemoryd "
        "init` creates an empty workspace there"
    )


def _open_child_dir(dir_fd: int, name: str, key: str, make_dirs: bool) -> int:
    """Open the child directory *name* of *dir_fd* (never through a symlink)."""
    try:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not make_dirs:
                raise
            # Created concurrently is fine: the open below checks what it is.
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o755, dir_fd=dir_fd)
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        # Linux reports a symlink opened with O_DIRECTORY|O_NOFOLLOW as
        # ENOTDIR, the same as a plain file: look before naming the problem.
        if exc.errno == errno.ENOTDIR and _is_symlink(dir_fd, name):
            raise Forbidden(f"symlinks are not followed in memory paths: {key}") from None
        raise _map_os_error(exc, key) from None


def _is_symlink(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _map_os_error(exc: OSError, key: str) -> OmemdError:
    if exc.errno == errno.ELOOP:
        return Forbidden(f"symlinks are not followed in memory paths: {key}")
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return NotFound(f"no such memory file: {key}")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return Forbidden(f"permission denied: {key}")
    if exc.errno in (errno.EISDIR, errno.ENXIO):
        return Forbidden(f"not a regular file: {key}")
    if exc.errno == errno.ENAMETOOLONG:  # the caller's path, not the daemon's fault
        return BadRequest(f"a name in the path is longer than the file system allows: {key}")
    return OmemdError(f"cannot open {key}: {exc.strerror}")


def read_memory_file(
    mp: MemoryPath, max_bytes: int, offset: int = 0
) -> tuple[bytes, os.stat_result]:
    """Read the file (from byte *offset* on) and the stat of exactly what was read.

    Raises:
        TooLarge: the file is over *max_bytes* (checked before and while reading,
            so a file growing under us cannot exhaust memory).
    """
    fd = open_beneath(mp, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if st.st_size > max_bytes:
            raise TooLarge(f"{mp.key} is {st.st_size} bytes, over the {max_bytes}-byte limit")
        chunks: list[bytes] = []
        total = offset
        while True:
            block = os.pread(fd, 1 << 20, total)
            if not block:
                break
            total += len(block)
            if total > max_bytes:
                raise TooLarge(f"{mp.key} grew past the {max_bytes}-byte limit while reading")
            chunks.append(block)
        return b"".join(chunks), st
    finally:
        os.close(fd)
