"""Watching the files the append journal covers, and restoring lost appends.

Every ``_INTERVAL_S`` the keeper reads each file that has journal entries and
applies `append_journal.judge`: settled entries leave the journal, appends a
stale whole-file rewrite dropped are appended again (through the writer
lane, like any append, and journalled anew; a task change of TASKS.md is
made again, `memory.task_journal`), and others are left for `status` and
`restore`. Polling rather than riding the watcher keeps it
independent of how (or whether) file events arrive, and costs one read per
file with pending entries, which settle within ``sync.journal_settle_s``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import trio

from omem_protocol import RestoredBlock, RestoreParams, RestoreResult
from openmemoryd.engine.hosts import JournalHost
from openmemoryd.memory.append import Appended, append_block
from openmemoryd.memory.append_journal import SAVE_S, AppendJournal, Entry, judge, present
from openmemoryd.memory.edit import insert_line
from openmemoryd.memory.task_journal import describe, identities, put_back
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
_ABSENT_S: Final = SAVE_S


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

    The copy is judged as of the moment it was read, not as of the judging:
    on a busy machine the thread that read it can come back seconds later.
    Judged by the time then, a copy read while a save held the file empty
    made the append that found it so look as if it had begun the file for
    `append_journal.SAVE_S`, and the entries before it were dropped.
    """
    mp = engine.policy.resolve(key)
    mark = engine.journal.mark()
    now, clock = time.time(), time.monotonic()  # at most the moment of the read
    content = await trio.to_thread.run_sync(_read_if_there, mp)
    entries = engine.journal.entries_unless_writing(mp, _UNJOURNALLED_WAIT_S)
    if entries is None:
        return engine.journal.missing.get(key, [])
    entries = [e for e in entries if e.seq < mark]
    if content is None:
        return await _absent(engine, key, entries, clock)
    engine.journal.absent.pop(key, None)
    settings = engine.config.sync
    verdict = judge(content, entries, now, settings.journal_settle_s, settings.journal_max_age_s)
    engine.journal.missing[key] = verdict.missing
    if verdict.settled:
        await trio.to_thread.run_sync(engine.journal.drop, verdict.settled)
    if verdict.restore:
        cited = await restore_entries(engine, mp, verdict.restore)
        done = [e for e, where in zip(verdict.restore, cited, strict=True) if where]
        if done:
            logger.warning(
                "restored %s to %s: an external rewrite based on an older copy of the "
                "file had dropped them",
                _counted(done),
                key,
            )
    return verdict.missing


def _counted(entries: list[Entry]) -> str:
    """ "3 line(s)", "2 task change(s)", or both, for the log."""
    lines = sum(e.block.count("\n") + 1 for e in entries if not e.task)
    changes = sum(1 for e in entries if e.task)
    parts = [f"{lines} line(s)"] if lines else []
    return " and ".join([*parts, f"{changes} task change(s)"] if changes else parts)


async def _absent(
    engine: JournalHost, key: str, entries: list[Entry], looked: float
) -> list[Entry]:
    """A journalled file that is not there: its entries are neither missing
    nor to restore (nothing rewrote it); once it has stayed away `_ABSENT_S`,
    a person deleted or renamed it, and they leave the journal.

    *looked* is `time.monotonic()` taken just before this look; the first
    look that found the file gone counts from just after it."""
    since = engine.journal.absent.setdefault(key, time.monotonic())
    engine.journal.missing[key] = []
    if looked - since >= _ABSENT_S and entries:
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
        if isinstance(appended, _Rewritten):
            appended = appended.appended
        await trio.to_thread.run_sync(engine.journal.record, appended, time.time())
        await trio.to_thread.run_sync(engine.journal.drop, [entry])
        citations.append(citation(mp.key, appended.start_line, appended.end_line))
    return citations


@dataclass(frozen=True, slots=True)
class _Rewritten:
    """A put-back that rewrote the file (a task change) rather than add to
    its end. Not an `Appended` to the writer lane, which takes one as news
    of how the file grew (the index resumes from its old end) and would
    index a file changed in the middle wrongly."""

    appended: Appended


def _put_back(
    journal: AppendJournal, mp: MemoryPath, entry: Entry, max_file_bytes: int
) -> Appended | _Rewritten | None:
    """In the writer lane: append *entry*'s block again, insert its line
    under its heading again, or make its task change again, unless it no
    longer belongs there (see `restore_entries`)."""
    if not journal.holds_entry(entry) or present(_read(mp), entry):
        return None
    if entry.task:
        done = put_back(mp, entry.task, entry.block, max_file_bytes)
        return None if done is None else _Rewritten(done)
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
            blocks += [RestoredBlock(key, e.at, _text(e)) for e in missing]
            continue
        if missing:
            cited = await restore_entries(engine, engine.policy.resolve(key), missing)
            done = [(e, where) for e, where in zip(missing, cited, strict=True) if where]
            blocks += [RestoredBlock(key, e.at, _text(e), where) for e, where in done]
            if done:
                logger.warning("restored %s to %s on request", _counted([e for e, _ in done]), key)
    return RestoreResult(blocks=tuple(blocks), dry_run=params.dry_run)


async def missing_entries(engine: JournalHost) -> list[Entry]:
    """Entries whose lines are gone from their files and not auto-restorable."""
    missing: list[Entry] = []
    for key in sorted(engine.journal.keys()):
        missing += await check_file(engine, key)
    return missing


def missing_report(engine: JournalHost) -> list[str]:
    """One line per file with appended lines (and one with task changes)
    an external rewrite removed."""
    report = []
    for key, entries in sorted(engine.journal.missing.items()):
        lines = sum(e.block.count("\n") + 1 for e in entries if not e.task)
        if lines:
            noun = "line" if lines == 1 else "lines"
            report.append(
                f"{lines} appended {noun} missing from {key} after an external rewrite "
                "(omem-client restore re-adds them)"
            )
        changes = sum(1 for e in entries if e.task)
        if changes:
            noun = "change" if changes == 1 else "changes"
            report.append(
                f"{changes} task {noun} missing from {key} after an external rewrite "
                "(omem-client restore makes them again)"
            )
    return report


def _text(entry: Entry) -> str:
    """What `restore` lists for *entry*: its block, or its task change in words."""
    return describe(entry.task, entry.block) if entry.task else entry.block


def forget_absent(engine: JournalHost, mp: MemoryPath, removed: Sequence[str]) -> None:
    """After the daemon removed *removed* from *mp* on purpose (`forget`, or
    `log` counting a repeat on a line or replacing it): entries holding that
    text leave the journal (restoring them would undo the edit, and keeping
    them would keep forgotten text). Other entries stay, even if missing: a
    stale rewrite may have dropped them just before. A task change goes
    with any line of its task, whatever its state (`forget` of a done
    task's line ends the protection of its adding too)."""
    gone = {line for text in removed for line in text.split("\n") if line.strip()}
    entries = engine.journal.entries(mp.key)
    if not entries or not gone:
        return
    tasks = identities(gone)
    engine.journal.drop(
        e
        for e in entries
        if (identities([e.block]) & tasks if e.task else gone.intersection(e.block.split("\n")))
    )
