"""What was forgotten on purpose, so an import does not bring it back.

`forget` (and ``tasks remove``) take lines out of the Markdown; an export
made before still has them, and importing it appends what the workspace
lacks. A user who forgot something, often for privacy, expects it to stay
forgotten unless they ask, so every forget leaves a tombstone per line and
`memory.importer` holds back an imported line that has one.

The record is ``<state_dir>/forgotten/<workspace>.json``:

* only a SHA-256 digest of each forgotten line (normalised: see
  `line_digest`), the workspace file it left and when; never the text, which
  is what was meant to be gone. A digest still confirms a guessed line, so
  the file is private to its owner (0600, in a 0700 directory);
* not in the index, which is derived data that may be rebuilt at any time,
  while this cannot be derived from the Markdown;
* replaced atomically (`durable.replace_file`) under a ``flock`` of a lock
  file beside it, since both the daemon (forget) and ``openmemoryd import``
  (bringing lines back on request) change it, with or without the other;
* bounded (`MAX_ENTRIES`): past that, the oldest tombstones go first.

A tombstone is per file: a line forgotten from ``MEMORY.md`` is held back
from an import into ``MEMORY.md`` only, so a common line (a code fence, a
rule) forgotten as part of a block does not hold back that line everywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import time
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

import msgspec

from openmemoryd.errors import OmemdError
from openmemoryd.memory.durable import lock_exclusive, replace_file
from openmemoryd.memory.tasks_file import TasksFile, normalize_key

MAX_ENTRIES: Final = 20_000
_SPACES: Final = re.compile(r"\s+")

logger = logging.getLogger(__name__)


class Tombstone(msgspec.Struct, frozen=True):
    digest: str  # `line_digest` of the forgotten line
    path: str  # the workspace file it was forgotten from
    at: float  # when (Unix time)


class _File(msgspec.Struct):
    version: int = 1
    entries: list[Tombstone] = msgspec.field(default_factory=list)


class DamagedRecord(OmemdError):
    """The record cannot be read: an import refuses rather than bring back
    what it may list."""


def line_digest(line: str) -> str:
    """The digest a forgotten *line* is remembered by.

    Normalised the way the importer tells lines apart: surrounding and
    repeated whitespace aside, in NFC. A task line is its task (its text as
    `tasks_file` names it, and its added date) whatever its checkbox and done
    date: a task forgotten once done is not brought back open by an export
    made while it was.
    """
    text = unicodedata.normalize("NFC", _SPACES.sub(" ", line.strip()))
    found = TasksFile(text).tasks() if text[:1] in "-*+" else []
    if found:
        task = found[0]
        text = f"task\n{normalize_key(task.text)}\n{task.added or ''}"
    else:
        text = f"line\n{text}"
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def forgotten_lines(texts: Iterable[str]) -> list[str]:
    """The non-blank lines of removed *texts* (each may span lines)."""
    return [line for text in texts for line in text.split("\n") if line.strip()]


def load(path: Path) -> dict[tuple[str, str], Tombstone]:
    """The tombstones, keyed by (file, digest); none when there is no record.
    Raises `DamagedRecord` when the record cannot be read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise DamagedRecord(f"cannot read {path}: {exc.strerror}") from exc
    try:
        record = msgspec.json.decode(raw, type=_File)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise DamagedRecord(
            f"{path} (what was forgotten, for imports to hold back) is damaged: {exc}; "
            "move it aside to import anyway"
        ) from exc
    return {(t.path, t.digest): t for t in record.entries}


def remember(path: Path, key: str, texts: Iterable[str], *, now: float | None = None) -> int:
    """Leave a tombstone for every line of *texts* forgotten from the file
    *key*; durable when this returns. Returns how many lines it holds now.

    A damaged record is moved aside (kept for a person to look at) and a new
    one started: refusing would not bring the text back, and the forget has
    already happened."""
    lines = forgotten_lines(texts)
    if not lines:
        return 0
    at = time.time() if now is None else now
    with _locked(path):
        try:
            entries = load(path)
        except DamagedRecord as exc:
            broken = path.with_name(path.name + ".damaged")
            with contextlib.suppress(OSError):
                path.replace(broken)
            logger.error("%s; moved to %s, starting a new record", exc, broken)
            entries = {}
        for line in lines:
            digest = line_digest(line)
            entries.pop((key, digest), None)  # forgotten again: it is the newest now
            entries[(key, digest)] = Tombstone(digest, key, at)
        _save(path, entries.values())
    return len(lines)


def note_forgotten(path: Path, key: str, texts: Iterable[str]) -> None:
    """`remember`, for the daemon's writer lane after a forget: the lines are
    gone already, so a record that cannot be written is logged, not raised
    (the forget itself succeeded; only a later import could bring them back).
    So is a lock an import held past `durable.LOCK_TIMEOUT_S` (`Conflict`)."""
    try:
        remember(path, key, texts)
    except (OSError, OmemdError):
        logger.exception("could not record what was forgotten from %s in %s", key, path)


def clear(path: Path, key: str, lines: Iterable[str]) -> None:
    """Drop the tombstones of *lines* of the file *key*: brought back on purpose."""
    digests = {line_digest(line) for line in lines}
    if not digests or not path.exists():
        return
    with _locked(path):
        entries = load(path)
        kept = [t for t in entries.values() if not (t.path == key and t.digest in digests)]
        if len(kept) != len(entries):
            _save(path, kept)


def _save(path: Path, entries: Iterable[Tombstone]) -> None:
    ordered = sorted(entries, key=lambda t: t.at)[-MAX_ENTRIES:]  # the oldest go first
    data = msgspec.json.encode(_File(entries=ordered))
    replace_file(path, data, mode=0o600, tag="forgotten")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """The record's lock: a lock file beside it, never replaced, so every
    writer (the daemon, an import) locks the same inode."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock = path.with_name(path.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        lock_exclusive(fd, str(path))
        yield
    finally:
        os.close(fd)
