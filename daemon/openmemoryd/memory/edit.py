"""Rewriting a memory file in place: locked, checked, atomic.

`log` inserts a bullet into a section, counts a repeat on its line, or
swaps a line; each is a whole-file rewrite of a file people also edit. The
file is opened and ``flock``ed the way appends do it (`memory.append.
open_locked`, which also notices a file replaced while it waited), read,
edited by a pure function, and replaced by a fsynced temporary file renamed
over it (`memory.durable.replace_file`) before the lock is released. A
crash leaves the old file or the new one; a concurrent append waits and
then lands in the new one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from openmemoryd.errors import Forbidden, TooLarge
from openmemoryd.memory.append import Appended, digest, next_write, open_locked
from openmemoryd.memory.durable import fsync_dir, read_all, replace_file
from openmemoryd.memory.sections import insert_bullet
from openmemoryd.workspace import MemoryPath
from openmemoryd.workspace.decoding import is_utf8, legacy_encoding

__all__ = ["edit_file", "insert_line"]

T = TypeVar("T")


def edit_file(
    mp: MemoryPath,
    edit: Callable[[str], tuple[str, T]],
    *,
    max_file_bytes: int,
    template: str = "",
) -> T:
    """Give *mp* the text ``edit(current)[0]`` and return ``edit(current)[1]``.

    A missing or empty file is edited as *template* (the workspace's
    bootstrap text for MEMORY.md and the like). Bytes that are not UTF-8
    pass through untouched (surrogate escapes). Raises `Forbidden` for a
    file holding NUL bytes (not text) and `TooLarge` past *max_file_bytes*;
    whatever *edit* raises leaves the file as it was.
    """
    fd = open_locked(mp)
    try:
        existing = read_all(fd)
        if b"\x00" in existing:
            raise Forbidden(f"not a text file: {mp.key}")
        created = not existing
        current = existing.decode("utf-8", errors="surrogateescape") if existing else template
        text, result = edit(current)
        if existing and not is_utf8(existing) and not _keeps_encoding(current, text):
            raise Forbidden(_mixed_encodings(mp.key, existing))
        data = text.encode("utf-8", errors="surrogateescape")
        if len(data) > max_file_bytes:
            raise TooLarge(f"{mp.key} would exceed the {max_file_bytes}-byte file limit")
        mode = os.fstat(fd).st_mode & 0o777
        replace_file(mp.absolute, data, mode=mode, tag="log")
    finally:
        os.close(fd)
    if created:
        fsync_dir(mp.root.joinpath(*mp.parts[:-1]))
    return result


def insert_line(
    mp: MemoryPath, titles: tuple[str, ...], line: str, *, max_file_bytes: int, template: str = ""
) -> Appended:
    """Insert *line* into the section ``titles[0]`` (or one of the other
    *titles*; the section is created when none exists) and describe the
    write for the append journal: the bytes before and after the inserted
    lines, so a whole-file rewrite based on the file as it was without them
    can be recognised, and the section, so the line can be put back there.
    """

    def edit(current: str) -> tuple[str, tuple[str, str, int]]:
        inserted = insert_bullet(current, titles, line)
        return inserted.text, (current, inserted.text, inserted.line)

    # Judged on the texts the edit saw and wrote, not on a second read: an
    # append may land as soon as the lock is released.
    before, written, number = edit_file(mp, edit, max_file_bytes=max_file_bytes, template=template)
    order = next_write(str(mp.absolute))
    old = before.encode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    new = written.encode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    head = _common_prefix(old, new)
    tail = _common_prefix(old[head:][::-1], new[head:][::-1])
    prefix = b"".join(new[:head])
    suffix = b"".join(new[len(new) - tail :]) if tail else b""
    after = b"".join(new)
    return Appended(
        mp,
        number,
        number,
        created=False,
        block=line,
        before_len=len(prefix),
        before_hash=digest(prefix),
        after_hash=digest(after),
        tail_len=len(suffix),
        tail_hash=digest(suffix),
        after_len=len(after),
        titles=titles,
        written=order,
    )


def _keeps_encoding(current: str, text: str) -> bool:
    """Whether every line the edit wrote anew is ASCII, apart from the bytes
    of the file it kept (surrogate escapes): only then is a file in GBK or
    cp1251 still in one encoding afterwards. A count ``(×2)`` added to a
    line is not: ``×`` would go in as UTF-8."""
    kept = set(current.splitlines())
    return all(
        all(ord(c) < 0x80 or 0xDC80 <= ord(c) <= 0xDCFF for c in line)
        for line in text.splitlines()
        if line not in kept
    )


def _mixed_encodings(key: str, existing: bytes) -> str:
    """Why a file that is not UTF-8 is not rewritten with text that is not
    ASCII: written as UTF-8 it would be mojibake in the file's encoding, and
    the file would be in two encodings at once (unreadable as either), as
    `append` refuses it too."""
    encoding = legacy_encoding(existing)
    read_as = f"it is in {encoding}" if encoding else "its encoding is unclear"
    return (
        f"{key} is not UTF-8 ({read_as}): writing this text (UTF-8) into it would mix two "
        "encodings in one file; nothing was changed. Convert the file to UTF-8 first (the "
        "doctor's files check gives the command)"
    )


def _common_prefix(a: list[bytes], b: list[bytes]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
