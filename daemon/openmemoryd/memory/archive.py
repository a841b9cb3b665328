"""Exporting the memory: the Markdown plus a manifest, never the index.

The index is derived data and any daemon rebuilds it from the files, so an
export is the files alone: a gzipped tar with ``manifest.json`` first (what
was exported, from where, each file's SHA-256) and then each file under
``workspace/<key>`` (or ``extra/<absolute path>`` for `extra_paths`, which
live outside the workspace). `memory.importer` reads it back.

Each file is read under a shared ``flock``, so an append in progress is
either wholly in the export or wholly absent, and the hash is of exactly the
bytes archived. The archive is written to a temporary file beside the
output, fsynced and renamed, and is readable by its owner only: memory is
private.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import tarfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import msgspec

from omem_protocol import __version__
from openmemoryd.errors import BadRequest, Conflict, OmemdError
from openmemoryd.memory.durable import fsync_dir, lock_shared, read_all
from openmemoryd.workspace import (
    MemoryPath,
    PathPolicy,
    open_beneath,
    scan_memory_files,
    workspace_missing,
)

FORMAT: Final = "openmemory-export"
FORMAT_VERSION: Final = 1
MANIFEST: Final = "manifest.json"
WORKSPACE_PREFIX: Final = "workspace/"
EXTRA_PREFIX: Final = "extra/"
LOCK_TIMEOUT_S: Final = 10.0
ARCHIVE_SUFFIXES: Final = (".tar.gz", ".tgz")
# A manifest lists every file of a workspace; far more than any holds.
MAX_MANIFEST_BYTES: Final = 64 * 1024 * 1024


class ManifestFile(msgspec.Struct, frozen=True):
    name: str  # the member's name in the archive
    key: str  # the file's key where it came from
    sha256: str
    bytes: int
    mtime: float


class Manifest(msgspec.Struct, frozen=True):
    format: str
    version: int
    created: str
    daemon_version: str
    workspace: str
    files: tuple[ManifestFile, ...]


@dataclass(frozen=True, slots=True)
class Exported:
    path: Path
    files: int
    bytes: int
    skipped: tuple[str, ...]


def export_archive(policy: PathPolicy, output: Path, *, max_file_bytes: int) -> Exported:
    """Write every memory file of *policy* to the archive *output*.

    Raises:
        RootMissing: the workspace is gone (deleted or moved). An archive of
            nothing would replace an earlier export of the same name, the
            backup of what was lost.
    """
    check_output(output)
    if not policy.workspace.is_dir():
        raise workspace_missing(
            policy.workspace, "there is nothing to export (an earlier export is left as it is)"
        )
    scan = scan_memory_files(policy)
    entries: list[tuple[ManifestFile, bytes]] = []
    skipped = list(scan.issues)
    for key in sorted(scan.files):
        disk = scan.files[key]
        try:
            data, mtime = _read_shared(disk.path, max_file_bytes)
        except (OmemdError, OSError) as exc:
            skipped.append(f"{key}: {exc}")
            continue
        in_workspace = disk.path.root == policy.workspace
        name = WORKSPACE_PREFIX + key if in_workspace else EXTRA_PREFIX + key.lstrip("/")
        digest = hashlib.sha256(data).hexdigest()
        entries.append((ManifestFile(name, key, digest, len(data), mtime), data))
    manifest = Manifest(
        format=FORMAT,
        version=FORMAT_VERSION,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        daemon_version=__version__,
        workspace=str(policy.workspace),
        files=tuple(entry for entry, _ in entries),
    )
    _write_atomically(output, manifest, entries)
    return Exported(output, len(entries), sum(len(d) for _, d in entries), tuple(skipped))


def check_output(output: Path) -> None:
    """Refuse an *output* the export must not write.

    The daemon writes where it is told, with its user's rights, for any
    client of the socket or the HTTP API: ``{"output": "/etc/passwd"}`` once
    replaced that file with an archive. So an export is only ever a new
    ``.tar.gz`` (or ``.tgz``) file, never a Markdown file the watcher would
    take for memory, or an earlier export replaced (the same command run
    again).
    """
    if not output.is_absolute():
        raise BadRequest(f"the export path must be absolute: {output}")
    if not output.name.endswith(ARCHIVE_SUFFIXES):
        raise BadRequest(f"an export is a .tar.gz file: {output}")
    if not output.parent.is_dir():
        raise BadRequest(f"no such directory for the export: {output.parent}")
    if output.is_symlink():
        raise BadRequest(f"the export path is a symbolic link: {output}")
    if output.exists() and not output.is_file():
        raise BadRequest(f"the export path exists and is not a file: {output}")
    if output.exists() and not _is_export(output):
        raise Conflict(
            f"{output} exists and is not an earlier export: choose another name or move it"
        )


def _is_export(path: Path) -> bool:
    """Whether *path* is an archive this module wrote: a gzipped tar whose
    first member is a manifest of `FORMAT`."""
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            first = tar.next()
            if first is None or first.name != MANIFEST or first.size > MAX_MANIFEST_BYTES:
                return False
            raw = tar.extractfile(first)
            if raw is None:
                return False
            return msgspec.json.decode(raw.read(), type=Manifest).format == FORMAT
    except (OSError, tarfile.TarError, EOFError, msgspec.DecodeError, ValueError):
        return False


def _read_shared(mp: MemoryPath, max_file_bytes: int) -> tuple[bytes, float]:
    fd = open_beneath(mp, os.O_RDONLY)
    try:
        lock_shared(fd, mp.key, LOCK_TIMEOUT_S)
        st = os.fstat(fd)
        if st.st_size > max_file_bytes:
            raise BadRequest(f"{st.st_size} bytes, over the {max_file_bytes}-byte file limit")
        return read_all(fd), st.st_mtime
    finally:
        os.close(fd)


def _write_atomically(
    output: Path, manifest: Manifest, entries: list[tuple[ManifestFile, bytes]]
) -> None:
    temp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        with (
            os.fdopen(fd, "wb", closefd=False) as raw,
            tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar,
        ):
            body = msgspec.json.format(msgspec.json.encode(manifest))
            _add(tar, MANIFEST, body, time.time())
            for entry, data in entries:
                _add(tar, entry.name, data, entry.mtime)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    os.close(fd)
    os.replace(temp, output)
    fsync_dir(output.parent)


def _add(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(mtime)
    info.mode = 0o600
    tar.addfile(info, io.BytesIO(data))
