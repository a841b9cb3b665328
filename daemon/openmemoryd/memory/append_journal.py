"""The append journal: acknowledged appends kept until the file is settled.

An append is durable the moment it returns, but a tool that rewrites the
whole file (read it, change it, write a temporary file, rename it over the
original, as most editors and many scripts do) can replace it with a copy
read *before* the append, and the line is gone. So every acknowledged append
is recorded here, in the state dir: the file, the block written, the time,
the length and hash of the file before it and the hash after it.

`judge` decides what a file's current content means for its entries:

* a block present in the file is kept until it has been on disk for
  ``settle_s``; then it is settled and leaves the journal, and deleting it
  later is a person's decision, never undone;
* a missing block is **restored** (appended again) when the rewrite is
  evidently stale: the file still begins with exactly the bytes it had just
  before that append and holds more after them, i.e. it extends the version
  the append was made to, without the append. Every later missing block of
  the same file goes with it, since a rewrite based on that version cannot
  contain anything appended after it ("later" as written to the file: the
  entries' sequence numbers come from the writes, see `Entry.seq`);
* a missing block is **deleted on purpose** when the rewrite was based on a
  version that held it: a later journalled append is still in the file but
  was made to a version that contained the block. It leaves the journal;
* any other missing block (the file was replaced by something that does not
  begin with the version the append was made to) stays in the journal,
  reported as missing, until someone restores it or it is ``max_age_s`` old.

A line `log` inserted under a heading (MEMORY.md's sections) is journalled
the same way, with the bytes before it *and* after it: a rewrite is stale for
it when it holds exactly the bytes before the line, then exactly those that
followed it, then more; it is put back under its heading.

A file deleted or renamed away is a person's decision too: an append that
finds its file empty (or absent) starts it anew and the entries of the old
content leave the journal, and the keeper drops the entries of a file that
stays absent (`engine.journal_keeper`). Deleting a file to write it again,
as some editors save, is over in far less time than either takes to notice.

Within ``settle_s`` one case cannot be told apart: deleting the *last*
appended block and adding a line of one's own looks exactly like a stale
rewrite, and is undone. After ``settle_s`` the block has left the journal.

The journal is one JSON file per workspace, replaced atomically (temporary
file, fsync, rename, directory fsync) on every change, so a crash leaves the
old journal or the new one and a restarted daemon picks up where it left off.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgspec

from openmemoryd.memory.append import Appended, digest, journalled, next_write, unjournalled
from openmemoryd.memory.durable import replace_file
from openmemoryd.workspace import MemoryPath

__all__ = ["AppendJournal", "Entry", "Verdict", "holds", "judge"]

# The count `log` puts on a line it saw again (`memory.sections.with_count`),
# up to the end of that line or of the file.
_COUNTED: Final = rb"[ \t]+\(\xc3\x97\d+\)[ \t]*(?:\r?\n|\Z)"

_BOM: Final = b"\xef\xbb\xbf"

logger = logging.getLogger(__name__)


class Entry(msgspec.Struct, frozen=True):
    """One acknowledged append, as written."""

    # Grows with the order the blocks reached the file (`judge` depends on
    # it): the journal's base at load plus the write's `next_write` number.
    seq: int
    key: str  # the file, workspace-relative
    block: str  # the text written, without the separating blank line
    at: float  # wall-clock time of the append
    before_len: int  # the file's size just before the append
    before_hash: str  # sha256 of those bytes
    after_hash: str  # sha256 of the file right after the append
    # A line inserted under a heading (log): the bytes after the inserted
    # lines (length, sha256), the file's size after the write, and the
    # section's titles to put it back under. An append has no tail.
    tail_len: int = 0
    tail_hash: str = ""
    after_len: int = 0
    titles: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with one file's entries, given its current content."""

    restore: list[Entry]  # lost to a stale rewrite: append again, in this order
    missing: list[Entry]  # gone, cause unclear: keep and report
    settled: list[Entry]  # present long enough, deleted on purpose, or given up: drop


def judge(
    content: bytes, entries: Sequence[Entry], now: float, settle_s: float, max_age_s: float
) -> Verdict:
    """Apply the rule of the module docstring to one file's *entries*."""
    ordered = sorted(entries, key=lambda e: e.seq)
    present = [_present(content, e) for e in ordered]
    restore: list[Entry] = []
    missing: list[Entry] = []
    settled: list[Entry] = []
    stale = False
    for i, entry in enumerate(ordered):
        if present[i]:
            if now - entry.at >= settle_s:
                settled.append(entry)
            continue
        later = [e for e, here in zip(ordered[i + 1 :], present[i + 1 :], strict=True) if here]
        if not stale and _extends(content, entry):
            # Based on the version before *entry*, unless a later append that
            # is still there was made to a version that held *entry*.
            if all(_appended_to_prefix(content, e) for e in later):
                stale = True
            else:
                settled.append(entry)  # deleted on purpose
                continue
        if stale:
            restore.append(entry)
        elif now - entry.at >= max_age_s:
            settled.append(entry)
        else:
            missing.append(entry)
    return Verdict(restore, missing, settled)


def holds(content: bytes, block: str) -> bool:
    """True if *block* appears in *content* as whole lines (a short block
    inside a longer line does not count). A one-line block still holds when
    `log` has since counted a repeat on it (``- tea`` as ``- tea (×2)``).

    Line ends and a leading byte-order mark do not count: an editor that
    saves the file with CRLF line ends (or a BOM) keeps every line, and
    reading the blocks as missing would have them appended a second time.
    """
    encoded = block.encode("utf-8")
    if content.startswith(_BOM):
        content = content[len(_BOM) :]
    if b"\r" in content:
        content = content.replace(b"\r\n", b"\n")
    if (
        content == encoded
        or content.startswith(encoded + b"\n")
        or b"\n" + encoded + b"\n" in content
        or content.endswith(b"\n" + encoded)
    ):
        return True
    if b"\n" in encoded:
        return False
    counted = re.compile(rb"(?:\A|\n)" + re.escape(encoded) + _COUNTED)
    return counted.search(content) is not None


def _present(content: bytes, entry: Entry) -> bool:
    """`holds` for a journalled block, looked for first where it was written.

    A file that has only grown since holds every block at the offset it was
    written to, so the keeper's pass over a long file with many recent
    appends costs the blocks' length, not the file's for each of them; a
    block that moved (a line edited above it, a count added) is searched
    for in the whole file.
    """
    encoded = entry.block.encode("utf-8")
    end = entry.after_len - entry.tail_len  # where the written bytes ended
    start = end - len(encoded) - 1
    if (
        entry.after_len > 0
        and start >= 0
        and content[start:end] == encoded + b"\n"
        and (start == 0 or content[start - 1 : start] == b"\n")
    ):
        return True
    return holds(content, entry.block)


def _extends(content: bytes, entry: Entry) -> bool:
    """True if *content* is the file as it was before *entry*, plus more
    (for an inserted line: the bytes before it, then those after it)."""
    end = entry.before_len + entry.tail_len
    return (
        len(content) > end
        and digest(content[: entry.before_len]) == entry.before_hash
        and _tail_at(content, entry, entry.before_len)
    )


def _appended_to_prefix(content: bytes, entry: Entry) -> bool:
    """True if *content* begins with the file *entry* was written to (for
    an inserted line: the bytes before it, something in its place, then
    the bytes that followed it)."""
    if digest(content[: entry.before_len]) != entry.before_hash:
        return False
    return _tail_at(content, entry, entry.after_len - entry.tail_len)


def _tail_at(content: bytes, entry: Entry, start: int) -> bool:
    if not entry.tail_len:
        return True
    return digest(content[start : start + entry.tail_len]) == entry.tail_hash


class AppendJournal:
    """The persistent set of entries; thread-safe, every change durable."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._entries: dict[int, Entry] = {}
        self._base = 0  # every loaded entry's seq is at most this
        # Kept by the keeper: per file, the entries last judged missing, and
        # since when (monotonic) a file with entries has been absent.
        self.missing: dict[str, list[Entry]] = {}
        self.absent: dict[str, float] = {}
        self._load()

    def _load(self) -> None:
        try:
            raw = self._path.read_bytes()
        except FileNotFoundError:
            return
        try:
            entries = msgspec.json.decode(raw, type=list[Entry])
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # msgspec's error for non-UTF-8
            # Keep the damaged file for a person to look at; start afresh.
            broken = self._path.with_name(self._path.name + ".damaged")
            self._path.replace(broken)
            logger.error(
                "append journal %s is unreadable (%s); moved to %s", self._path, exc, broken
            )
            return
        self._entries = {e.seq: e for e in entries}
        self._base = max(self._entries, default=0)

    def record(self, appended: Appended, at: float) -> Entry:
        """Add an acknowledged append; durable when this returns.

        Records are made after the writer lane, so two can land in the other
        order than their writes did (an append and a restore of the keeper);
        the sequence number comes from the write (`Appended.written`), not
        from this call, so `judge` still sees them in file order.
        """
        with self._lock:
            try:
                return self._record(appended, at)
            finally:
                # Recorded, or given up on: no longer waited for. Under the
                # lock, with the entry: see `entries_unless_writing`.
                journalled(appended.written)

    def mark(self) -> int:
        """A sequence number above every entry whose write was done (and
        numbered, `next_write`) before this call, and below every later one's;
        a write still under way now counts as later."""
        return self._base + next_write()

    def entries_unless_writing(self, mp: MemoryPath, wait_s: float) -> list[Entry] | None:
        """*mp*'s entries, or None while a write to it (made in the last
        *wait_s* seconds) waits for its record. Taken under the lock `record`
        adds entries under, so every write made before this call is either
        among the entries or makes it None."""
        with self._lock:
            if unjournalled(str(mp.absolute), wait_s):
                return None
            return [e for e in self._entries.values() if e.key == mp.key]

    def _record(self, appended: Appended, at: float) -> Entry:
        """`record`'s work; the caller holds the lock."""
        a = appended
        entry = Entry(
            self._base + (a.written or next_write()),
            a.path.key,
            a.block,
            at,
            a.before_len,
            a.before_hash,
            a.after_hash,
            a.tail_len,
            a.tail_hash,
            a.after_len,
            a.titles,
        )
        if not a.before_len:
            # Written to an empty file: whatever was appended to it before
            # went with the content a person deleted, renamed or emptied, and
            # putting it back would undo that (the file starts anew).
            for earlier in [e for e in self._entries.values() if e.key == entry.key]:
                if earlier.seq < entry.seq:
                    del self._entries[earlier.seq]
            self.missing.pop(entry.key, None)
        self._entries[entry.seq] = entry
        self._save()
        return entry

    def drop(self, entries: Iterable[Entry]) -> None:
        with self._lock:
            changed = [self._entries.pop(e.seq, None) for e in entries]
            for key, listed in list(self.missing.items()):
                self.missing[key] = [e for e in listed if e.seq in self._entries]
            if any(changed):
                self._save()

    def holds_entry(self, entry: Entry) -> bool:
        """Whether *entry* is still journalled (not settled, dropped or forgotten)."""
        with self._lock:
            return entry.seq in self._entries

    def entries(self, key: str | None = None) -> list[Entry]:
        with self._lock:
            return [e for e in self._entries.values() if key is None or e.key == key]

    def keys(self) -> set[str]:
        with self._lock:
            return {e.key for e in self._entries.values()}

    def _save(self) -> None:
        self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        data = msgspec.json.encode(sorted(self._entries.values(), key=lambda e: e.seq))
        replace_file(self._path, data, mode=0o600, tag="journal")
