"""Watching the files the append journal covers, and restoring lost appends.

Every ``_INTERVAL_S`` the keeper reads each file that has journal entries and
applies `append_journal.judge`: settled entries leave the journal, appends a
stale whole-file rewrite dropped are appended again (through the writer
lane, like any append, and journalled anew), and others are left for
`status` and `restore`. Polling rather than riding the watcher keeps it
independent of how (or whether) file events arrive, and costs one read per
file with pending entries, which settle within ``sync.journal_settle_s``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import trio

from omem_protocol import RestoredBlock, RestoreParams, RestoreResult
from openmemoryd.engine.hosts import JournalHost
from openmemoryd.memory.append import Appended, append_block
from openmemoryd.memory.append_journal import AppendJournal, Entry, holds, judge
from openmemoryd.memory.edit import insert_line
from openmemoryd.search import citation

if TYPE_CHECKING:
    from openmemoryd.workspace import MemoryPath

__all__ = [
    "forget_absent",
    "keep_journal",
    "missing_entries",
    "missing_report",
    "restore",
    "restore_entries",
]

logger = logging.getLogger(__name__)

_INTERVAL_S: Final = 0.5
# How long a write may wait for its journal record before the keeper stops
# waiting for it (its caller failed between the write and the record).
_UNJOURNALLED_WAIT_S: Final = 10.0


# A file absent this long was deleted or renamed by a person, not replaced
# by an editor's save (which recreates it within milliseconds).
_ABSENT_S: Final = 2.0


def _read(mp: MemoryPath) -> bytes:
    content = _read_if_there(mp)
    return b"" if content is None else content


def _read_if_there(mp: MemoryPath) -> bytes | None:
    try:
        return mp.absolute.read_bytes()
    except FileNotFoundError:
        return None


async def keep_journal(engine: JournalHost) -> None:
    """Run until cancelled; a failure on one pass is logged, not fatal."""
    while True:
        await trio.sleep(_INTERVAL_S)
        for key in sorted(engine.journal.keys()):
            try:
                await check_file(engine, key)
            except Exception:
                logger.exception("append journal: checking %s failed; will retry", key)


async def check_file(engine: JournalHost, key: str) -> list[Entry]:
    """Judge *key*'s entries against the file now; return those still missing.

    Not while a write to the file waits for its journal record (see
    `memory.append.unjournalled`): the next pass judges it with that entry.
    The file is read before the entries are taken, and only the entries
    written before the read are judged; the others wait for the next pass.
    Judged against a copy read before it, an append made meanwhile would
    look dropped: put on the restore list with the lines a stale rewrite
    did drop, it was appended again if a second rewrite dropped it before
    its turn, and its new entry no longer vouched for the lines appended
    after it, which that rewrite had dropped too (they stayed missing).
    """
    mp = engine.policy.resolve(key)
    mark = engine.journal.mark()
    content = await trio.to_thread.run_sync(_read_if_there, mp)
    entries = engine.journal.entries_unless_writing(mp, _UNJOURNALLED_WAIT_S)
    if entries is None:
        return engine.journal.missing.get(key, [])
    entries = [e for e in entries if e.seq < mark]
    if content is None:
        return await _absent(engine, key, entries)
    engine.journal.absent.pop(key, None)
    settings = engine.config.sync
    verdict = judge(
        content,
        entries,
        time.time(),
        settings.journal_settle_s,
        settings.journal_max_age_s,
    )
    engine.journal.missing[key] = verdict.missing
    if verdict.settled:
        await trio.to_thread.run_sync(engine.journal.drop, verdict.settled)
    if verdict.restore:
        cited = await restore_entries(engine, mp, verdict.restore)
        done = [e for e, where in zip(verdict.restore, cited, strict=True) if where]
        if done:
            logger.warning(
                "restored %d line(s) to %s: an external rewrite based on an older "
                "copy of the file had dropped them",
                sum(e.block.count("\n") + 1 for e in done),
                key,
            )
    return verdict.missing


async def _absent(engine: JournalHost, key: str, entries: list[Entry]) -> list[Entry]:
    """A journalled file that is not there: its entries are neither missing
    nor to restore (nothing rewrote it); once it has stayed away `_ABSENT_S`,
    a person deleted or renamed it, and they leave the journal."""
    now = time.monotonic()
    since = engine.journal.absent.setdefault(key, now)
    engine.journal.missing[key] = []
    if now - since >= _ABSENT_S and entries:
        await trio.to_thread.run_sync(engine.journal.drop, entries)
        engine.journal.absent.pop(key, None)
        logger.info(
            "%s was deleted or renamed: its %d recent append(s) are no longer watched",
            key,
            len(entries),
        )
    return []


async def restore_entries(
    engine: JournalHost, mp: MemoryPath, entries: list[Entry]
) -> list[str | None]:
    """Append *entries* again, in order; each is journalled anew as it lands.
    Returns where each now is, as a citation, or None for an entry that no
    longer needs it.

    *entries* were judged on a copy of the file read outside the writer
    lane, so the decision is checked again inside it: an entry that has left
    the journal meanwhile (a `forget` removed its text on purpose, between
    that read and now) or whose block is back in the file is not appended.
    """
    citations: list[str | None] = []
    for entry in entries:
        appended, _ = await engine.edit_markdown(
            _put_back,
            engine.journal,
            mp,
            entry,
            engine.config.index.max_file_bytes,
            paths=[mp],
            reason="restore",
        )
        if appended is None:
            citations.append(None)
            continue
        await trio.to_thread.run_sync(engine.journal.record, appended, time.time())
        await trio.to_thread.run_sync(engine.journal.drop, [entry])
        citations.append(citation(mp.key, appended.start_line, appended.end_line))
    return citations


def _put_back(
    journal: AppendJournal, mp: MemoryPath, entry: Entry, max_file_bytes: int
) -> Appended | None:
    """In the writer lane: append *entry*'s block again, or insert its line
    under its heading again, unless it no longer belongs there (see
    `restore_entries`)."""
    if not journal.holds_entry(entry) or holds(_read(mp), entry.block):
        return None
    if entry.titles:
        return insert_line(mp, entry.titles, entry.block, max_file_bytes=max_file_bytes)
    return append_block(mp, entry.block, max_file_bytes)


async def restore(engine: JournalHost, params: RestoreParams) -> RestoreResult:
    """The ``restore`` call: put back (or list) the missing appends of one
    file or of every journalled file. Stale rewrites found on the way are
    repaired as the keeper would, and are not listed."""
    if params.path is not None:
        keys = [engine.policy.resolve(params.path).key]
    else:
        keys = sorted(engine.journal.keys())
    blocks: list[RestoredBlock] = []
    for key in keys:
        missing = await check_file(engine, key)
        if params.dry_run:
            blocks += [RestoredBlock(key, e.at, e.block) for e in missing]
            continue
        if missing:
            cited = await restore_entries(engine, engine.policy.resolve(key), missing)
            restored = [
                RestoredBlock(key, e.at, e.block, where)
                for e, where in zip(missing, cited, strict=True)
                if where is not None
            ]
            blocks += restored
            if restored:
                logger.warning("restored %d missing append(s) to %s on request", len(restored), key)
    return RestoreResult(blocks=tuple(blocks), dry_run=params.dry_run)


async def missing_entries(engine: JournalHost) -> list[Entry]:
    """Entries whose lines are gone from their files and not auto-restorable."""
    missing: list[Entry] = []
    for key in sorted(engine.journal.keys()):
        missing += await check_file(engine, key)
    return missing


def missing_report(engine: JournalHost) -> list[str]:
    """One line per file with appended lines an external rewrite removed."""
    report = []
    for key, entries in sorted(engine.journal.missing.items()):
        lines = sum(e.block.count("\n") + 1 for e in entries)
        if lines:
            noun = "line" if lines == 1 else "lines"
            report.append(
                f"{lines} appended {noun} missing from {key} after an external rewrite "
                "(omem-client restore re-adds them)"
            )
    return report


def forget_absent(engine: JournalHost, mp: MemoryPath, removed: Sequence[str]) -> None:
    """After the daemon removed *removed* from *mp* on purpose (`forget`, or
    `log` counting a repeat on a line or replacing it): entries holding that
    text leave the journal (restoring them would undo the edit, and keeping
    them would keep forgotten text). Other entries stay, even if missing: a
    stale rewrite may have dropped them just before."""
    gone = {line for text in removed for line in text.split("\n") if line.strip()}
    entries = engine.journal.entries(mp.key)
    if entries and gone:
        engine.journal.drop(e for e in entries if gone.intersection(e.block.split("\n")))
