"""Checks of the places on disk: workspace, state directory, socket.

They only look (stat, access, statvfs): nothing is created, chmod'ed or
written, so running them beside a live daemon is harmless, and a directory
that does not exist yet is a warning when the daemon would create it on start
and a failure only when it could not.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from omem_protocol import DoctorCheck, socket_path_problem
from openmemoryd.doctor.report import fail, ok, size, warn
from openmemoryd.workspace import MEMORY_DIR


def workspace_check(workspace: Path, *, served: bool = False) -> DoctorCheck:
    """The Markdown memory: a writable directory with its memory/ folder.

    *served*: a running daemon serves it. A workspace missing then was
    deleted or moved under that daemon, which created it on start and
    creates nothing after (a deletion may be deliberate): a failure, since
    no write can succeed, not the "does not exist yet" of a first start.
    """
    name = "workspace"
    if served and not workspace.exists():
        return fail(
            name,
            f"{workspace} is missing (deleted or moved?) though the running daemon "
            "serves it: nothing can be written to memory",
            "restore the directory (the daemon watches and re-indexes it once it is back), "
            "or `openmemoryd init` creates an empty workspace there",
        )
    problem = _directory_problem(
        name, workspace, "workspace", "--workspace-dir", "`openmemoryd init` creates it now"
    )
    if problem is not None:
        return problem
    memory = workspace / MEMORY_DIR
    if not memory.exists():
        return warn(
            name,
            f"{workspace} has no {MEMORY_DIR}/ folder",
            "`openmemoryd init` creates it (and never overwrites anything)",
        )
    if not memory.is_dir():
        return fail(
            name,
            f"{memory} is not a directory: daily notes cannot be written",
            f"move {memory} away; `openmemoryd init` then creates the folder",
        )
    why = _unwritable(memory)
    if why is not None:
        return fail(name, f"{memory} {why}", f"chmod u+rwx {memory}")
    return ok(name, f"{workspace} (writable, {size(_free(workspace))} free)")


def state_dir_check(state_dir: Path) -> DoctorCheck:
    """The index, transcripts and locks live here."""
    problem = _directory_problem("state_dir", state_dir, "state_dir", "--state-dir", None)
    if problem is not None:
        return problem
    return ok("state_dir", f"{state_dir} (writable, {size(_free(state_dir))} free)")


def _directory_problem(
    name: str, path: Path, setting: str, flag: str, create_now: str | None
) -> DoctorCheck | None:
    """Why *path* cannot serve as a writable directory, or None if it can;
    *create_now* says how to create it before the daemon does, if one can."""
    elsewhere = f"set {setting} in the config (or {flag}) to a directory you can write"
    if path.exists():
        if not path.is_dir():
            return fail(
                name, f"{path} exists but is not a directory", f"move it away, or {elsewhere}"
            )
        why = _unwritable(path)
        if why is not None:
            return fail(name, f"{path} {why}", elsewhere)
        return None
    ancestor = _existing_ancestor(path)
    if not ancestor.is_dir():
        return fail(
            name,
            f"{path} cannot be created: {ancestor} is not a directory",
            f"move {ancestor} away, or {elsewhere}",
        )
    why = _unwritable(ancestor)
    if why is not None:
        return fail(name, f"{path} cannot be created: {ancestor} {why}", elsewhere)
    return warn(name, f"{path} does not exist yet; the daemon creates it on start", create_now)


def socket_check(path: Path) -> DoctorCheck:
    """The socket's directory is ours alone (0700) and the socket is 0600.

    A directory others can write lets them swap the socket for their own;
    the daemon refuses to start there, so that is a failure. One they can
    only read is a warning.
    """
    name = "socket"
    problem = socket_path_problem(path)
    if problem:
        return fail(name, problem, "set socket in the config (or --socket) to a shorter path")
    directory = path.parent
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return warn(name, f"{directory} does not exist yet; the daemon creates it (0700) on start")
    except OSError as exc:
        return fail(name, f"cannot inspect {directory}: {exc.strerror}", "check its permissions")
    elsewhere = "set socket in the config (or --socket) to a path in a directory of your own"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return fail(name, f"{directory} is not a directory (or is a symlink)", elsewhere)
    if st.st_uid != os.geteuid():
        return fail(name, f"{directory} belongs to uid {st.st_uid}, not to you", elsewhere)
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        return fail(
            name,
            f"{directory} is writable by group or others (mode {mode:o}); "
            "the daemon refuses to start there",
            f"chmod 700 {directory}",
        )
    if mode & 0o077:
        return warn(
            name,
            f"{directory} is readable by group or others (mode {mode:o})",
            f"chmod 700 {directory}",
        )
    return _socket_file_check(path, f"{directory} is 0700 and yours")


def _socket_file_check(path: Path, directory_ok: str) -> DoctorCheck:
    name = "socket"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ok(name, f"{directory_ok}; no socket yet (the daemon creates {path.name} 0600)")
    except OSError as exc:
        return fail(name, f"cannot inspect {path}: {exc.strerror}", "check its permissions")
    if not stat.S_ISSOCK(st.st_mode):
        return fail(
            name,
            f"{path} exists and is not a socket; the daemon refuses to replace it",
            f"move {path} away",
        )
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != os.geteuid() or mode & 0o077:
        return fail(
            name,
            f"{path} has mode {mode:o}, owner uid {st.st_uid}: not private to you",
            f"restart openmemoryd (it recreates the socket 0600), or chmod 600 {path}",
        )
    return ok(name, f"{directory_ok}; {path.name} is 0600")


def _unwritable(path: Path) -> str | None:
    """Why we may not create files in the directory *path*, or None.

    Only looks: a probe file would wake a running daemon's watcher.
    """
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "is on a read-only file system"
    except OSError as exc:
        return f"cannot be inspected ({exc.strerror})"
    if not os.access(path, os.W_OK | os.X_OK):
        return "is not writable by you"
    return None


def _existing_ancestor(path: Path) -> Path:
    """The nearest ancestor that exists (as a file or anything else)."""
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            return parent
    return Path(path.anchor or "/")


def _free(path: Path) -> int:
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return 0
