"""Appending to memory files without ever losing a byte.

The file is opened beneath its root without following symlinks, locked with
``flock`` (other openmemory processes and cooperating tools wait their turn),
written with one ``O_APPEND`` write and fsynced before the call returns; a
newly created file's directory is fsynced too. Existing content is only ever
read, never rewritten.

Layout: each append is its own block, separated from what came before by a
blank line; a new daily file starts with a ``# YYYY-MM-DD`` heading. The
returned line range is the appended text's, for citations. A file holding
NUL bytes is not text (`get` refuses it, the index skips it), so nothing is
appended to it; nor is text beyond ASCII to a file that is not UTF-8 (a GBK
or cp1251 note): it would be in two encodings at once. ASCII is the same
bytes in those encodings, so it is appended.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import time
from dataclasses import dataclass
from datetime import date
from typing import Final

from openmemoryd.errors import BadRequest, Conflict, Forbidden, TooLarge
from openmemoryd.memory.durable import fsync_dir, lock_exclusive, read_all, write_all
from openmemoryd.memory.known import FileSoFar, KnownFiles
from openmemoryd.workspace import (
    MEMORY_DIR,
    MemoryPath,
    PathPolicy,
    daily_date,
    daily_key,
    open_beneath,
)
from openmemoryd.workspace.decoding import is_utf8, legacy_encoding

LOCK_TIMEOUT_S: Final = 10.0
# Numbers the blocks this process writes, in the order they reach the file.
_WRITES: Final = itertools.count(1)
# Writes on disk whose journal record is not made yet: number -> (file, when).
# Files by absolute path: one process may serve several workspaces.
_UNJOURNALLED: dict[int, tuple[str, float]] = {}
_UNJOURNALLED_LOCK: Final = threading.Lock()
# Each retry follows a completed replace; only a file replaced without pause
# (a runaway loop) exhausts them.
_REOPEN_ATTEMPTS: Final = 100


@dataclass(frozen=True, slots=True)
class Appended:
    path: MemoryPath
    start_line: int
    end_line: int
    created: bool
    # For the append journal: what was written and the file around it.
    block: str = ""
    before_len: int = 0  # bytes of the file before what was written
    before_hash: str = ""
    after_hash: str = ""
    # A line inserted under a heading (`memory.edit.insert_line`) also has
    # bytes after it: their length and hash, the file's length after the
    # write, and the section it went to, so it can be put back there.
    tail_len: int = 0
    tail_hash: str = ""
    after_len: int = 0
    titles: tuple[str, ...] = ()
    # `next_write` taken once the block was on disk (0: not stamped): the
    # journal judges entries in the order their blocks were written.
    written: int = 0
    # A task change in TASKS.md (`memory.task_journal`): "add", "done",
    # "reopen" or "remove", with `block` the task's line and `before_*` the
    # whole file before the change; "" for a block or line written.
    task: str = ""


def next_write(file: str | None = None) -> int:
    """A number larger than any this process gave before.

    Taken by each write right after its block reached the file, inside the
    writer lane, so the numbers follow the order of the writes even when
    their journal records, made after the lane, land in another order.
    With *file* (the absolute path written), the write also counts as
    unjournalled until `journalled` is called with its number: the journal
    keeper must not judge that file meanwhile (`unjournalled`).
    """
    number = next(_WRITES)
    if file is not None:
        with _UNJOURNALLED_LOCK:
            _UNJOURNALLED[number] = (file, time.monotonic())
    return number


def journalled(number: int) -> None:
    """Write *number*'s journal record is made (or given up on)."""
    with _UNJOURNALLED_LOCK:
        _UNJOURNALLED.pop(number, None)


def unjournalled(file: str, within_s: float) -> bool:
    """True while a write to *file* (absolute path) made in the last
    *within_s* seconds waits for its journal record.

    Between a write and its record the journal does not know the block: a
    stale rewrite judged in that window would have the blocks before it put
    back, after which the unrecorded one no longer fits its file and stays
    lost. Older waits (a write whose caller failed before recording it) are
    forgotten, so one failure cannot stop the keeper for good.
    """
    now = time.monotonic()
    with _UNJOURNALLED_LOCK:
        for number, (_, since) in list(_UNJOURNALLED.items()):
            if now - since >= within_s:
                del _UNJOURNALLED[number]
        return any(written_to == file for written_to, _ in _UNJOURNALLED.values())


def target_path(policy: PathPolicy, raw_path: str | None, today: date) -> MemoryPath:
    """The file an append goes to: the given path, or today's daily file."""
    if raw_path is not None:
        return policy.resolve(raw_path)
    key = daily_key(today)
    return MemoryPath(key=key, root=policy.workspace, parts=(MEMORY_DIR, key.split("/", 1)[1]))


def normalize_block(text: str) -> str:
    """The text as it will be written: LF line ends, no surrounding blank lines."""
    if "\x00" in text:
        raise BadRequest("text contains a NUL character")
    block = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    if not block.strip():
        raise BadRequest("nothing to append: text is empty")
    return block


def append_block(
    mp: MemoryPath, text: str, max_file_bytes: int, known: KnownFiles | None = None
) -> Appended:
    """Append *text* as a block to *mp*, creating the file if needed.

    With *known*, a file this process appended to last, unchanged since, is
    not read again: its hash state, line count and end are taken from there
    (`memory.known`), so the append costs what it writes.
    """
    block = normalize_block(text)
    fd = open_locked(mp)
    try:
        st = os.fstat(fd)
        so_far = known.lookup(mp.key, fd, st) if known is not None else None
        legacy = False  # the file is not UTF-8 (GBK, cp1251…)
        if so_far is None:
            existing = read_all(fd)
            if b"\x00" in existing:  # as `get` and the indexer judge it: text would be lost in it
                raise Forbidden(f"not a text file: {mp.key}")
            legacy = not is_utf8(existing)
            if legacy and not block.isascii():
                raise Forbidden(_mixed_encodings(mp.key, existing))
            so_far = FileSoFar.of(existing)
        created = so_far.size == 0
        crlf = _crlf(so_far.tail)
        prefix = _separator(so_far.tail.replace(b"\r\n", b"\n"), mp.key)
        lines = prefix + block + "\n"
        payload = (lines.replace("\n", "\r\n") if crlf else lines).encode("utf-8")
        if so_far.size + len(payload) > max_file_bytes:
            raise TooLarge(f"{mp.key} would exceed the {max_file_bytes}-byte file limit")
        write_all(fd, payload)
        os.fsync(fd)
        written = next_write(str(mp.absolute))
        after = so_far.extended(payload)
        if known is not None and not legacy:  # a legacy file is read (and checked) each time
            known.remember(mp.key, os.fstat(fd), after)
    finally:
        os.close(fd)
    if created:
        fsync_dir(mp.root.joinpath(*mp.parts[:-1]))
    # `prefix` leaves the file ending in a newline, so the block starts on
    # the line after the last one already there.
    start_line = so_far.newlines + prefix.count("\n") + 1
    end_line = start_line + block.count("\n")
    return Appended(
        mp,
        start_line,
        end_line,
        created,
        block,
        so_far.size,
        so_far.hexdigest(),
        after.hexdigest(),
        after_len=after.size,
        written=written,
    )


def _mixed_encodings(key: str, existing: bytes) -> str:
    """Why text that is not ASCII is not appended to a file that is not
    UTF-8: written as UTF-8 it would be mojibake in the file's encoding, and
    the file would be in two encodings at once (unreadable as either)."""
    encoding = legacy_encoding(existing)
    read_as = f"it is in {encoding}" if encoding else "its encoding is unclear"
    return (
        f"{key} is not UTF-8 ({read_as}): appending this text (UTF-8) would mix two "
        "encodings in one file; convert the file to UTF-8 first (the doctor's files "
        "check gives the command), or append to another file"
    )


def digest(data: bytes) -> str:
    """The content hash the append journal compares files by."""
    return hashlib.sha256(data).hexdigest()


def open_locked(mp: MemoryPath) -> int:
    """The file, opened for appending and locked.

    `forget` replaces a file by renaming a new one over it while holding the
    old one's lock; an appender that waited on that lock would write to the
    orphaned old file, so it checks the name still leads to what it locked.
    """
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
    for _ in range(_REOPEN_ATTEMPTS):
        fd = open_beneath(mp, flags, mode=0o600, make_dirs=mp.parts[0] == MEMORY_DIR)
        try:
            lock_exclusive(fd, mp.key, LOCK_TIMEOUT_S)
            locked = os.fstat(fd)
            current = os.stat(mp.absolute, follow_symlinks=False)
        except FileNotFoundError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        if (locked.st_dev, locked.st_ino) == (current.st_dev, current.st_ino):
            return fd
        os.close(fd)
    raise Conflict(f"{mp.key} kept being replaced while appending; try again")


def _crlf(tail: bytes) -> bool:
    """Whether a file ending in *tail* has CRLF line ends (every line break
    in it is one): a block appended there follows them, not LF, so a file a
    Windows editor keeps does not end up with two kinds of line end."""
    breaks = tail.count(b"\n")
    return breaks > 0 and tail.count(b"\r\n") == breaks


def _separator(existing: bytes, key: str) -> str:
    """What goes before a block appended to a file ending in *existing*."""
    if not existing:
        day = daily_date(key)
        return f"# {day.isoformat()}\n\n" if day is not None else ""
    if existing.endswith(b"\n\n"):
        return ""
    if existing.endswith(b"\n"):
        return "\n"
    return "\n\n"
