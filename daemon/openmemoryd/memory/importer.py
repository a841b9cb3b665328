"""Importing memory: an export archive, or another tool's Markdown folder.

The rule is the one every write here follows: nothing already in the
workspace is ever overwritten or lost.

* A file the workspace lacks is created.
* A file with the same bytes is left alone.
* A file that differs gets, appended under a provenance comment, the lines
  of the imported copy it does not already contain (daily logs and curated
  lists merge naturally; nothing is dropped on either side).

Where files go: ``MEMORY.md``, ``USER.md``, ``PROJECT.md`` and
``memory/**`` keep their place; any other Markdown of a folder (or an
archive's ``extra/`` files, which came from outside the exported workspace)
lands under ``memory/imported/<source>/``, so an import never writes outside
the workspace.

Archives are checked before anything is written: members must be plain
files with relative names and no ``..``, within the file size limit, and,
when the archive has our manifest, every file must match its SHA-256. A bad
archive is refused whole.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tarfile
from dataclasses import dataclass
from datetime import date
from pathlib import Path, PurePosixPath
from typing import Final, Literal

import msgspec

from openmemoryd.errors import BadRequest, NotFound
from openmemoryd.memory.append import append_block
from openmemoryd.memory.archive import (
    EXTRA_PREFIX,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    WORKSPACE_PREFIX,
    Manifest,
)
from openmemoryd.memory.durable import fsync_dir, write_all
from openmemoryd.workspace import (
    MEMORY_DIR,
    ROOT_FILES,
    MemoryPath,
    PathPolicy,
    ignored_name,
    open_beneath,
    read_memory_file,
)

MAX_MEMBERS: Final = 100_000
IMPORTED_DIR: Final = "imported"
_LABEL_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")

Action = Literal["create", "merge", "unchanged"]


@dataclass(frozen=True, slots=True)
class Incoming:
    origin: str  # where it came from, for the report
    target: str  # workspace key it goes to
    data: bytes


@dataclass(frozen=True, slots=True)
class Outcome:
    origin: str
    target: str
    action: Action
    lines_added: int


def read_source(source: Path, *, max_file_bytes: int) -> list[Incoming]:
    """The Markdown files *source* (an archive or a folder) offers, mapped to
    their workspace keys; raises `BadRequest` for an unsafe or damaged archive."""
    try:
        st = os.stat(source)
    except OSError as exc:
        raise NotFound(f"cannot read {source}: {exc.strerror}") from exc
    label = _LABEL_UNSAFE.sub("-", source.name.split(".")[0]).strip("-") or "import"
    if stat.S_ISDIR(st.st_mode):
        return _from_folder(source, label, max_file_bytes)
    if stat.S_ISREG(st.st_mode) and tarfile.is_tarfile(source):
        return _from_archive(source, label, max_file_bytes)
    raise BadRequest(f"{source} is neither a directory nor a tar archive")


def apply_import(
    policy: PathPolicy, incoming: list[Incoming], *, dry_run: bool, today: date, max_file_bytes: int
) -> list[Outcome]:
    """Bring *incoming* into the workspace (or only say what would happen)."""
    outcomes: list[Outcome] = []
    for item in incoming:
        mp = policy.resolve(item.target)
        outcomes.append(_bring_in(mp, item, dry_run, today, max_file_bytes))
    return outcomes


def _bring_in(
    mp: MemoryPath, item: Incoming, dry_run: bool, today: date, max_file_bytes: int
) -> Outcome:
    try:
        existing, _ = read_memory_file(mp, max_file_bytes)
    except NotFound:
        if dry_run:
            return Outcome(item.origin, mp.key, "create", item.data.count(b"\n"))
        try:
            _create(mp, item.data)
            return Outcome(item.origin, mp.key, "create", item.data.count(b"\n"))
        except FileExistsError:  # created meanwhile: merge into it instead
            existing, _ = read_memory_file(mp, max_file_bytes)
    if existing == item.data:
        return Outcome(item.origin, mp.key, "unchanged", 0)
    missing = _missing_lines(existing, item.data)
    if not missing:
        return Outcome(item.origin, mp.key, "unchanged", 0)
    if not dry_run:
        block = f"<!-- imported from {item.origin} on {today.isoformat()} -->\n" + "\n".join(
            missing
        )
        append_block(mp, block, max_file_bytes)
    return Outcome(item.origin, mp.key, "merge", len(missing))


def _missing_lines(existing: bytes, imported: bytes) -> list[str]:
    have = {line.strip() for line in _text(existing).splitlines()}
    out: list[str] = []
    for line in _text(imported).splitlines():
        if line.strip() and line.strip() not in have:
            out.append(line.rstrip())
            have.add(line.strip())
    return out


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


def _create(mp: MemoryPath, data: bytes) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    fd = open_beneath(mp, flags, mode=0o600, make_dirs=mp.parts[0] == MEMORY_DIR)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(mp.root.joinpath(*mp.parts[:-1]))


def _target(relative: str, label: str) -> str:
    """Where a file at *relative* in a foreign folder belongs."""
    parts = PurePosixPath(relative).parts
    if relative in ROOT_FILES or (len(parts) > 1 and parts[0] == MEMORY_DIR):
        return relative
    return "/".join((MEMORY_DIR, IMPORTED_DIR, label, *parts))


def _from_folder(root: Path, label: str, max_file_bytes: int) -> list[Incoming]:
    found: list[Incoming] = []
    for directory, dirs, files in os.walk(root):  # never follows symlinked dirs
        dirs[:] = sorted(d for d in dirs if not ignored_name(d))
        for name in sorted(files):
            path = Path(directory, name)
            if ignored_name(name) or not name.endswith(".md"):
                continue
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                continue  # symlinks, sockets, devices
            if st.st_size > max_file_bytes:
                raise BadRequest(f"{path} is over the {max_file_bytes}-byte file limit")
            relative = path.relative_to(root).as_posix()
            found.append(Incoming(relative, _target(relative, label), path.read_bytes()))
    return found


def _from_archive(source: Path, label: str, max_file_bytes: int) -> list[Incoming]:
    members: dict[str, bytes] = {}
    try:
        with tarfile.open(source, "r:*") as tar:
            for count, member in enumerate(tar, 1):
                if count > MAX_MEMBERS:
                    raise BadRequest(f"{source} has more than {MAX_MEMBERS} members")
                if member.isdir():
                    continue
                _check_member(member, max_file_bytes)
                extracted = tar.extractfile(member)
                assert extracted is not None  # a regular file, checked above
                members[member.name] = extracted.read()
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise BadRequest(f"{source} is not a readable archive: {exc}") from exc
    manifest = members.pop(MANIFEST, None)
    if manifest is None:
        return [
            Incoming(name, _target(name, label), data)
            for name, data in sorted(members.items())
            if name.endswith(".md")
        ]
    return _verified(source, _manifest(source, manifest), members, label)


def _check_member(member: tarfile.TarInfo, max_file_bytes: int) -> None:
    name = member.name
    if not member.isreg():
        raise BadRequest(f"archive member {name!r} is not a regular file; refusing the archive")
    pure = PurePosixPath(name)
    if "\x00" in name or pure.is_absolute() or ".." in pure.parts:
        raise BadRequest(f"archive member {name!r} points outside; refusing the archive")
    if member.size > max_file_bytes:
        raise BadRequest(f"archive member {name!r} is over the {max_file_bytes}-byte file limit")


def _manifest(source: Path, raw: bytes) -> Manifest:
    try:
        manifest = msgspec.json.decode(raw, type=Manifest)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # msgspec's error for non-UTF-8
        raise BadRequest(f"{source}: damaged manifest: {exc}") from exc
    if manifest.format != FORMAT or manifest.version > FORMAT_VERSION:
        raise BadRequest(
            f"{source}: {manifest.format} version {manifest.version} is not an export "
            f"this version reads (up to {FORMAT} {FORMAT_VERSION})"
        )
    return manifest


def _verified(
    source: Path, manifest: Manifest, members: dict[str, bytes], label: str
) -> list[Incoming]:
    found: list[Incoming] = []
    for entry in manifest.files:
        data = members.pop(entry.name, None)
        if data is None:
            raise BadRequest(f"{source}: {entry.name} is in the manifest but not the archive")
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise BadRequest(f"{source}: {entry.name} does not match its checksum")
        if entry.name.startswith(WORKSPACE_PREFIX):
            relative = entry.name.removeprefix(WORKSPACE_PREFIX)
            target = _target(relative, label)
        elif entry.name.startswith(EXTRA_PREFIX):
            relative = entry.name.removeprefix(EXTRA_PREFIX)
            target = "/".join((MEMORY_DIR, IMPORTED_DIR, "extra", relative))
        else:
            raise BadRequest(f"{source}: unexpected member {entry.name!r} in the manifest")
        found.append(Incoming(entry.name, target, data))
    if members:
        raise BadRequest(f"{source}: members not in the manifest: {', '.join(sorted(members))}")
    return found
