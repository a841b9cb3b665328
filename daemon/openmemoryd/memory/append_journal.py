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
  version that held it: a later journalled append is still in the file and
  was made to a version that contained the block, which the journal knows
  when the daemon's own writes lead from the block to it, each made to
  exactly the file the one before left. It leaves the journal;
* any other missing block (the file was replaced by something that does not
  begin with the version the append was made to, or it does but was also
  changed after it, so that neither of the two readings holds) stays in the
  journal, reported as missing, until someone restores it or it is
  ``max_age_s`` old.

A line `log` inserted under a heading (MEMORY.md's sections) is journalled
the same way, with the bytes before it *and* after it: a rewrite is stale for
it when it holds exactly the bytes before the line, then exactly those that
followed it, then more; it is put back under its heading.

A file deleted or renamed away is a person's decision too, and so is a file
emptied: the keeper drops the entries of a file that stays absent
(`engine.journal_keeper`), and an append that finds its file empty starts
it anew, so the entries from before it leave the journal: putting those
lines back would undo the deletion. But an editor's save can empty the
file for a moment too (one that truncates the file, then writes its copy;
on a slow disk, or in a script, for hundreds of milliseconds), and appends
landing in that moment are overwritten by the copy, as are those made
since the editor read it. So the start is not taken at the append: the
earlier entries are *held* (neither judged nor reported) while the block
written to the empty file still begins the file, and dropped once it has
done so for ``SAVE_S``; if the save writes its copy over it first, the
start was a save's, and every entry is judged as above. A save is over in
far less time than ``SAVE_S``, as is a delete-and-recreate one.

Edits of ``memory/TASKS.md`` (`tasks add/done/reopen/remove`, and the
next steps and completed items of `session_end`) are journalled too, by
`memory.task_journal`: one entry per task changed, whose "before" is the
whole file before the change, whose presence is the task's state (added:
the task is there; done: it is there and done; reopened: there and open;
removed: not there) and whose restore brings it back to that state.

Within ``settle_s`` one case cannot be told apart: deleting the *last*
appended block and adding a line of one's own looks exactly like a stale
rewrite, and is undone. After ``settle_s`` the block has left the journal.

The journal is one JSON file per workspace, replaced atomically (temporary
file, fsync, rename, directory fsync) on every change, so a crash leaves the
old journal or the new one and a restarted daemon picks up where it left off.
"""

from __future__ import annotations

import hashlib
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
from openmemoryd.memory.task_journal import TaskStates, supersedes
from openmemoryd.workspace import MemoryPath

__all__ = ["SAVE_S", "AppendJournal", "Entry", "Verdict", "holds", "judge", "present"]

# The count `log` puts on a line it saw again (`memory.sections.with_count`),
# up to the end of that line or of the file.
_COUNTED: Final = rb"[ \t]+\(\xc3\x97\d+\)[ \t]*(?:\r?\n|\Z)"

_BOM: Final = b"\xef\xbb\xbf"

# An editor's save that empties its file (deletes it, or truncates it) has
# written it again well within this; a file absent, or written anew, for
# longer was emptied by a person (`judge`, `engine.journal_keeper`).
SAVE_S: Final = 2.0

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
    # A change of a task in TASKS.md ("add", "done", "reopen", "remove";
    # "" for an append): `block` is the task's line, `before_*` the whole
    # file before the change (`memory.task_journal`).
    task: str = ""


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
    here = _Presence(content)
    present = [here(e) for e in ordered]
    file = _Prefixes(content)
    settled: list[Entry] = []
    cut = _standing_start(file, ordered)
    if cut:
        # The file was written anew: what came before is deleted on purpose
        # once the new start has stood for SAVE_S; until then it is held.
        decided = now - ordered[cut].at >= SAVE_S
        for entry, is_here in zip(ordered[:cut], present[:cut], strict=True):
            if (is_here and now - entry.at >= settle_s) or (not is_here and decided):
                settled.append(entry)
        ordered, present = ordered[cut:], present[cut:]
    restore: list[Entry] = []
    missing: list[Entry] = []
    stale = False
    for i, entry in enumerate(ordered):
        if present[i]:
            if now - entry.at >= settle_s:
                settled.append(entry)
            continue
        if not stale and _extends(file, entry):
            # Based on the version before *entry*, unless a later append that
            # is still there was made to a version that held *entry*.
            verdict = _why_missing(file, entry, ordered[i + 1 :], present[i + 1 :])
            if verdict == "on purpose":
                settled.append(entry)
                continue
            stale = verdict == "stale"
        if stale:
            restore.append(entry)
        elif now - entry.at >= max_age_s:
            settled.append(entry)
        else:
            missing.append(entry)
    return Verdict(restore, missing, settled)


def _why_missing(
    file: _Prefixes, entry: Entry, after: Sequence[Entry], present: Sequence[bool]
) -> str:
    """For *entry*, missing from the *file* that extends the file it was
    written to: "on purpose", "stale" or "unclear", from the entries after
    it (*after*, with whether each is *present*).

    On purpose: a later block still in the file was written to a version
    that held *entry*, known when a chain of the daemon's own writes leads
    from *entry*'s result to that block's base (each written to exactly the
    file the one before left). Stale: every later block still in the file
    was written to a version that the file begins with, and so lacked
    *entry*. Unclear otherwise: the file was also changed after the version
    *entry* was written to (a `forget`, a person's edit), and the entry is
    reported, not dropped. A line inserted under a heading has no base of
    the whole file on record, so for it the old reading stands: a later
    line still there whose surroundings are not in the file was written to
    a version that held *entry*.
    """
    reached = {(entry.after_len, entry.after_hash)}
    lacked = True
    for later, here in zip(after, present, strict=True):
        chained = not later.tail_len and (later.before_len, later.before_hash) in reached
        if chained:
            reached.add((later.after_len, later.after_hash))
        if not here:
            continue
        if chained or (later.tail_len and not _appended_to_prefix(file, later)):
            return "on purpose"
        lacked = lacked and _appended_to_prefix(file, later)
    return "stale" if lacked else "unclear"


def _standing_start(file: _Prefixes, ordered: Sequence[Entry]) -> int:
    """The index of the last entry written to an empty file from which
    *file* still descends, or 0 if there is none.

    Such an entry is where a person's emptying (or deletion) of the file
    shows: the file has grown from it since (it begins with the bytes that
    write left), or been changed from it by the daemon's own task changes
    only (each made to exactly the file the one before left). A save that
    truncated the file and wrote its copy over it leaves neither. Compared
    byte for byte, not by `holds`: a block that merely appears in the copy
    too (the same line appended twice) must not make the save's truncation
    look like a person's, which would drop the appends the save overwrote.
    """
    for i in range(len(ordered) - 1, 0, -1):
        start = ordered[i]
        if start.before_len or start.tail_len or not start.after_len:
            continue
        reached = [start]
        for entry in ordered[i + 1 :]:
            last = reached[-1]
            if entry.task and (entry.before_len, entry.before_hash) == (
                last.after_len,
                last.after_hash,
            ):
                reached.append(entry)
        if any(file.begins_with(e.after_len, e.after_hash) for e in reached):
            return i
    return 0


def present(content: bytes, entry: Entry) -> bool:
    """Whether *content* holds what *entry* wrote: its block (`holds`), or
    for a task change, the task in the state the change left it in."""
    return _Presence(content)(entry)


class _Presence:
    """`present` for many entries of one file: the tasks parsed once."""

    def __init__(self, content: bytes) -> None:
        self._content = content
        self._tasks: TaskStates | None = None

    def __call__(self, entry: Entry) -> bool:
        if not entry.task:
            return _present(self._content, entry)
        if self._tasks is None:
            self._tasks = TaskStates(self._content)
        return self._tasks.holds(entry.task, entry.block)


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


def _extends(file: _Prefixes, entry: Entry) -> bool:
    """True if the file is the file as it was before *entry*, plus more
    (for an inserted line: the bytes before it, then those after it)."""
    end = entry.before_len + entry.tail_len
    return (
        len(file.content) > end
        and file.begins_with(entry.before_len, entry.before_hash)
        and _tail_at(file.content, entry, entry.before_len)
    )


def _appended_to_prefix(file: _Prefixes, entry: Entry) -> bool:
    """True if the file begins with the file *entry* was written to (for
    an inserted line: the bytes before it, something in its place, then
    the bytes that followed it)."""
    if not file.begins_with(entry.before_len, entry.before_hash):
        return False
    return _tail_at(file.content, entry, entry.after_len - entry.tail_len)


def _tail_at(content: bytes, entry: Entry, start: int) -> bool:
    if not entry.tail_len:
        return True
    return digest(content[start : start + entry.tail_len]) == entry.tail_hash


class _Prefixes:
    """One file's content and the SHA-256 of its beginnings, each computed
    once and from the last one computed below it: a judgement asks for the
    hash of the file's first n bytes for every entry (and, while a stale
    save is told from a deliberate edit, for every later one), which hashed
    afresh each time cost the file's length over and over on a busy file."""

    def __init__(self, content: bytes) -> None:
        self.content = content
        self._known: dict[int, str] = {}
        self._at = 0
        self._running = hashlib.sha256()

    def begins_with(self, length: int, sha256: str) -> bool:
        """Whether the first *length* bytes hash to *sha256* (the file has that many)."""
        return length <= len(self.content) and self._digest(length) == sha256

    def _digest(self, length: int) -> str:
        found = self._known.get(length)
        if found is None:
            if length < self._at:  # asked out of order: hashed on its own
                found = digest(self.content[:length])
            else:
                self._running.update(self.content[self._at : length])
                self._at = length
                found = self._running.copy().hexdigest()
            self._known[length] = found
        return found


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
            a.task,
        )
        if a.task:
            # The daemon's own later change of a task replaces what the
            # journal said of that task before and it contradicts.
            for old in [e for e in self._entries.values() if e.key == entry.key]:
                if old.seq < entry.seq and supersedes(a.task, a.block, old.task, old.block):
                    del self._entries[old.seq]
        # An append to an empty file drops nothing here: whether the file was
        # emptied on purpose or by a save under way shows later (`judge`).
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
