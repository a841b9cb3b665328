"""session_end and tasks as the daemon runs them (the Python MCP memory server's
``memory_session_end`` and ``memory_update_tasks``).

Invariants:

* Every change runs in the engine's writer lane, with ``memory/TASKS.md``
  locked (``flock``, as appends and `forget` lock) from the read to the
  atomic replace, so an append, a forget or another task change never
  interleaves with it and a crash leaves the old file or the new one.
* Nothing is written unless everything can be: the task file is read and
  checked (UTF-8 text, within ``index.max_file_bytes``) and every task
  reference resolved before the journal is appended or the file replaced.
  A file that is not UTF-8 text is refused and left exactly as it is.
* Both files are indexed before the reply, like `append`, so the next
  search finds the journal and the tasks.
* A listing only reads (a shared lock) and never creates the file.
* Every task added, marked done, reopened or removed is journalled like an
  append (`memory.task_journal`), before the reply: a person's editor
  saving a copy of TASKS.md read before the change does not undo it
  unnoticed (docs/durability.md).
* Secrets are masked before anything else, as `append` masks them
  (`log_gate.mask_secrets`): the journal block, the task lines, the task
  journal and the index only ever see the masked text, and a task's id is
  that of its masked text. The reply lists the masked forms. A task named
  by its text (done, reopen, remove, a completed item) is looked up by its
  masked text first, then as given, so a task written before masking can
  still be closed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Final, TypeVar

import trio

from omem_protocol import (
    SessionEndParams,
    SessionEndResult,
    TaskItem,
    TasksParams,
    TasksResult,
)
from openmemoryd.errors import BadRequest, NotFound
from openmemoryd.memory.append import Appended, append_block, open_locked, target_path
from openmemoryd.memory.durable import lock_shared, read_all
from openmemoryd.memory.forgotten import note_forgotten
from openmemoryd.memory.journal import SessionNotes, render_journal
from openmemoryd.memory.log_gate import mask_secrets
from openmemoryd.memory.task_journal import (
    decode_tasks,
    encode_tasks,
    journal_changes,
    replace_tasks,
)
from openmemoryd.memory.tasks_file import (
    TASKS_KEY,
    Task,
    TasksFile,
    clean_task_text,
    distinct_tasks,
    normalize_key,
)
from openmemoryd.search.hits import citation
from openmemoryd.workspace import MemoryPath, open_beneath

if TYPE_CHECKING:
    from openmemoryd.engine.engine import Engine


# ---------------------------------------------------------------- session_end


async def session_end(engine: Engine, params: SessionEndParams) -> SessionEndResult:
    started = time.perf_counter()
    parts = [params.request, *params.learned, *params.completed, *params.next_steps]
    notes, redactions = await _masked(_session_notes, params, _chars(parts))
    block = render_journal(notes, datetime.now())  # validates before anything is touched
    daily = target_path(engine.policy, None, date.today())
    tasks_mp = engine.policy.resolve(TASKS_KEY)
    done, indexed = await engine.edit_markdown(
        _end_session,
        engine,
        daily,
        tasks_mp,
        block,
        notes,
        params.completed,
        paths=[daily, tasks_mp],
        reason="session-end",
    )
    for appended in ([done.appended] if done.appended is not None else []) + done.changes:
        await engine.journal_append(appended)
    return SessionEndResult(
        path=daily.key,
        start_line=done.start_line,
        end_line=done.end_line,
        citation=citation(daily.key, done.start_line, done.end_line),
        tasks_path=tasks_mp.key,
        tasks_added=tuple(_item(t) for t in done.added),
        tasks_existing=tuple(_item(t) for t in done.existing),
        tasks_done=tuple(_item(t) for t in done.closed),
        indexed=indexed,
        took_ms=_since(started),
        redactions=redactions,
    )


def _session_notes(params: SessionEndParams, masker: _Masker) -> SessionNotes:
    """The notes to write: every part masked, each next step once."""
    request = params.request
    return SessionNotes(
        request=None if request is None else masker(request),
        learned=[masker(item) for item in params.learned],
        completed=[masker(item) for item in params.completed],
        # each next step once, in the journal as in the task list: a step
        # given twice (in other case or spacing, with a checkbox) is one task
        next_steps=distinct_tasks(clean_task_text(masker(step)) for step in params.next_steps),
        agent=None if params.agent is None else masker(params.agent),
        session=None if params.session is None else masker(params.session),
    )


@dataclass
class _Ended:
    start_line: int = 0
    end_line: int = 0
    appended: Appended | None = None  # the journal block, for the append journal
    added: list[Task] = field(default_factory=list)
    existing: list[Task] = field(default_factory=list)
    closed: list[Task] = field(default_factory=list)
    changes: list[Appended] = field(default_factory=list)  # the task changes, journalled


def _end_session(
    engine: Engine,
    daily: MemoryPath,
    tasks_mp: MemoryPath,
    block: str,
    notes: SessionNotes,
    completed_as_given: Sequence[str],
) -> _Ended:
    """In the writer lane: plan the task changes, append the journal, replace the tasks.

    *notes* are masked; *completed_as_given* are the completed items before
    masking, only to close a task written before secrets were masked.
    """
    limit = engine.config.index.max_file_bytes
    ended = _Ended()
    if not notes.next_steps and (not notes.completed or not _exists(tasks_mp)):
        ended.appended = append_block(daily, block, limit, engine.known)
        ended.start_line, ended.end_line = ended.appended.start_line, ended.appended.end_line
        return ended
    fd = open_locked(tasks_mp)
    try:
        raw = read_all(fd)
        tasks = TasksFile(decode_tasks(raw, tasks_mp.key, limit))
        today = date.today().isoformat()
        closed_ids: list[str] = []
        for item, given in zip(notes.completed, completed_as_given, strict=True):
            closing = _open_task_named(tasks, item)
            if closing is None and given != item:
                closing = _open_task_named(tasks, given)
            if closing is not None:
                closed_ids.append(tasks.complete(closing, today).id)
        added_ids: list[str] = []
        for step in notes.next_steps:
            task, new = tasks.add(step, today)
            if new:
                added_ids.append(task.id)
            elif task.id not in added_ids and all(t.id != task.id for t in ended.existing):
                ended.existing.append(task)
        after = encode_tasks(tasks.text(), tasks_mp.key, limit)
        appended = append_block(daily, block, limit, engine.known)
        final = {t.id: t for t in tasks.tasks()}
        if after != raw:
            replace_tasks(fd, tasks_mp, after)
            changed = [("done", i) for i in closed_ids] + [("add", i) for i in added_ids]
            ended.changes = journal_changes(
                tasks_mp,
                raw,
                after,
                [(what, tasks.line(final[i]), final[i].line) for what, i in changed if i in final],
            )
    finally:
        os.close(fd)
    ended.appended = appended
    ended.start_line, ended.end_line = appended.start_line, appended.end_line
    ended.added = [final[i] for i in added_ids if i in final]
    ended.closed = [final[i] for i in closed_ids if i in final]
    ended.existing = [final.get(t.id, t) for t in ended.existing]
    return ended


def _open_task_named(tasks: TasksFile, text: str) -> Task | None:
    """The open task whose text is exactly *text* (case and spacing aside), if any.

    Only an exact match closes a task: a completed item that merely mentions
    a task must not close it behind the user's back.
    """
    try:
        key = normalize_key(clean_task_text(text))
    except BadRequest:
        return None
    return next((t for t in tasks.tasks() if not t.done and normalize_key(t.text) == key), None)


# ---------------------------------------------------------------- tasks


async def tasks(engine: Engine, params: TasksParams) -> TasksResult:
    started = time.perf_counter()
    mp = engine.policy.resolve(TASKS_KEY)
    limit = engine.config.index.max_file_bytes
    if params.action == "list":
        if params.tasks:
            raise BadRequest("list takes no tasks; use add, done, reopen or remove")
        text = await trio.to_thread.run_sync(_read_tasks, mp, limit)
        redactions: tuple[str, ...] = ()
        changed: list[Task] = []
        unchanged: list[Task] = []
        indexed = True
    else:
        if not params.tasks:
            raise BadRequest(f"{params.action} needs at least one task (an id or its text)")
        masked, redactions = await _masked(_task_refs, params.tasks, _chars(params.tasks))
        if params.action == "add":
            for raw in masked:
                clean_task_text(raw)  # refuse an empty one before the file is touched
        else:
            redactions = ()  # a reference is only looked up, never written
        (text, changed, unchanged, records), indexed = await engine.edit_markdown(
            _change_tasks, engine, mp, params, masked, paths=[mp], reason="tasks"
        )
        for record in records:
            await engine.journal_append(record)
    listed = TasksFile(text).tasks()
    shown = [t for t in listed if params.status == "all" or (t.done == (params.status == "done"))]
    return TasksResult(
        path=mp.key,
        action=params.action,
        changed=tuple(_item(t) for t in changed),
        unchanged=tuple(_item(t) for t in unchanged),
        tasks=tuple(_item(t) for t in shown),
        open=sum(not t.done for t in listed),
        done=sum(t.done for t in listed),
        indexed=indexed,
        took_ms=_since(started),
        redactions=redactions,
    )


def _task_refs(refs: Sequence[str], masker: _Masker) -> tuple[str, ...]:
    """Task texts (or references) with their secrets masked."""
    return tuple(masker(ref) for ref in refs)


def _read_tasks(mp: MemoryPath, limit: int) -> str:
    try:
        fd = open_beneath(mp, os.O_RDONLY)
    except NotFound:
        return ""
    try:
        lock_shared(fd, mp.key)
        return decode_tasks(read_all(fd), mp.key, limit)
    finally:
        os.close(fd)


# What the error says there is nothing to do ("no tasks to mark done").
_VERBS: Final = {"done": "mark done", "reopen": "reopen", "remove": "remove"}


def _change_tasks(
    engine: Engine, mp: MemoryPath, params: TasksParams, masked: Sequence[str]
) -> tuple[str, list[Task], list[Task], list[Appended]]:
    """In the writer lane: apply the action to every task named, or to none.
    Also returns the journal records of the tasks changed.

    *masked* are `params.tasks` with their secrets masked: what is added, and
    what a task is looked up by first."""
    limit = engine.config.index.max_file_bytes
    if params.action != "add" and not _exists(mp):
        verb = _VERBS.get(params.action, params.action)
        raise NotFound(f"{mp.key} does not exist yet: there are no tasks to {verb}")
    fd = open_locked(mp)
    try:
        raw = read_all(fd)
        tasks = TasksFile(decode_tasks(raw, mp.key, limit))
        today = date.today().isoformat()
        changed: list[tuple[Task, str]] = []  # each with its line as changed
        unchanged: list[Task] = []
        for ref, given in zip(masked, params.tasks, strict=True):
            (task, line), did = _apply(tasks, params.action, ref, given, today)
            if did:
                changed.append((task, line))
            elif all(t.id != task.id for t in unchanged):
                unchanged.append(task)
        text = tasks.text()
        after = encode_tasks(text, mp.key, limit)
        # Later changes in the same call may have moved a task: report where it
        # ended up (a removed task is reported as it was).
        final = {t.id: t for t in tasks.tasks()}
        records: list[Appended] = []
        if after != raw:
            replace_tasks(fd, mp, after)
            where = [(params.action, line, final.get(t.id, t).line) for t, line in changed]
            records = journal_changes(mp, raw, after, where)
            if params.action == "remove":  # removed on purpose: not imported back either
                note_forgotten(engine.config.forgotten_path, mp.key, [ln for _, ln in changed])
    finally:
        os.close(fd)
    return (
        text,
        [final.get(t.id, t) for t, _ in changed],
        [final.get(t.id, t) for t in unchanged],
        records,
    )


def _apply(
    tasks: TasksFile, action: str, ref: str, given: str, today: str
) -> tuple[tuple[Task, str], bool]:
    """((the task, its line once changed), whether *action* changed it);
    a removed task's line is the one removed. *ref* is masked, *given* as
    the caller sent it."""
    if action == "add":
        added, new = tasks.add(ref, today)
        return (added, tasks.line(added)), new
    want_done = {"done": True, "reopen": False}.get(action)
    try:
        task = tasks.find(ref, want_done=want_done)
    except NotFound:
        if given == ref:
            raise
        # a task written before its secret was masked; the error, if none
        # matches either, names the masked reference
        try:
            task = tasks.find(given, want_done=want_done)
        except NotFound:
            raise NotFound(
                f"no task matches {ref!r} (see `omem-client tasks --all` for ids)"
            ) from None
    if action == "done":
        if task.done:
            return (task, tasks.line(task)), False
        done = tasks.complete(task, today)
        return (done, tasks.line(done)), True
    if action == "reopen":
        if not task.done:
            return (task, tasks.line(task)), False
        opened = tasks.reopen(task)
        return (opened, tasks.line(opened)), True
    line = tasks.line(task)
    tasks.remove(task)
    return (task, line), True


# ---------------------------------------------------------------- helpers

_Given = TypeVar("_Given")
_Masked = TypeVar("_Masked")

# Masking reads every character (about 1 s a megabyte): more text than this
# is masked in a worker thread, as `Engine.append` does.
_MASK_INLINE_CHARS: Final = 16_384


class _Masker:
    """Masks one text after another (`log_gate.mask_secrets`), gathering the
    masked forms of all of them, each once, in the order met."""

    def __init__(self) -> None:
        self._forms: dict[str, None] = {}

    def __call__(self, text: str) -> str:
        safe = mask_secrets(text)
        self._forms.update(dict.fromkeys(safe.redactions))
        return safe.text

    @property
    def redactions(self) -> tuple[str, ...]:
        return tuple(self._forms)


async def _masked(
    mask: Callable[[_Given, _Masker], _Masked], given: _Given, size: int
) -> tuple[_Masked, tuple[str, ...]]:
    """``mask(given, masker)`` and the masked forms; in a worker thread when
    *given* holds more than a few pages (*size* characters)."""
    masker = _Masker()
    if size > _MASK_INLINE_CHARS:
        result = await trio.to_thread.run_sync(mask, given, masker)
    else:
        result = mask(given, masker)
    return result, masker.redactions


def _chars(texts: Iterable[str | None]) -> int:
    return sum(len(text or "") for text in texts)


def _exists(mp: MemoryPath) -> bool:
    try:
        os.close(open_beneath(mp, os.O_RDONLY))
    except NotFound:
        return False
    return True


def _item(task: Task) -> TaskItem:
    return TaskItem(
        id=task.id,
        text=task.text,
        done=task.done,
        added=task.added,
        completed=task.completed,
        line=task.line,
        citation=citation(TASKS_KEY, task.line, task.line + task.size - 1),
    )


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
