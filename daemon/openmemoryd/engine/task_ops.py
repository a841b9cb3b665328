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
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Final

import trio

from omem_protocol import (
    SessionEndParams,
    SessionEndResult,
    TaskItem,
    TasksParams,
    TasksResult,
)
from openmemoryd.errors import BadRequest, Forbidden, NotFound, TooLarge
from openmemoryd.memory.append import Appended, append_block, open_locked, target_path
from openmemoryd.memory.durable import lock_shared, read_all, replace_file
from openmemoryd.memory.journal import SessionNotes, render_journal
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
    # each next step once, in the journal as in the task list: a step given
    # twice (in other case or spacing, with a checkbox) is one task
    next_steps = distinct_tasks(clean_task_text(step) for step in params.next_steps)
    notes = SessionNotes(
        request=params.request,
        learned=params.learned,
        completed=params.completed,
        next_steps=next_steps,
        agent=params.agent,
        session=params.session,
    )
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
        paths=[daily, tasks_mp],
        reason="session-end",
    )
    if done.appended is not None:
        await engine.journal_append(done.appended)
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
    )


@dataclass
class _Ended:
    start_line: int = 0
    end_line: int = 0
    appended: Appended | None = None  # the journal block, for the append journal
    added: list[Task] = field(default_factory=list)
    existing: list[Task] = field(default_factory=list)
    closed: list[Task] = field(default_factory=list)


def _end_session(
    engine: Engine,
    daily: MemoryPath,
    tasks_mp: MemoryPath,
    block: str,
    notes: SessionNotes,
) -> _Ended:
    """In the writer lane: plan the task changes, append the journal, replace the tasks."""
    limit = engine.config.index.max_file_bytes
    ended = _Ended()
    if not notes.next_steps and (not notes.completed or not _exists(tasks_mp)):
        ended.appended = append_block(daily, block, limit, engine.known)
        ended.start_line, ended.end_line = ended.appended.start_line, ended.appended.end_line
        return ended
    fd = open_locked(tasks_mp)
    try:
        before = _decode(read_all(fd), tasks_mp.key, limit)
        tasks = TasksFile(before)
        today = date.today().isoformat()
        closed_ids: list[str] = []
        for item in notes.completed:
            closing = _open_task_named(tasks, item)
            if closing is not None:
                closed_ids.append(tasks.complete(closing, today).id)
        added_ids: list[str] = []
        for step in notes.next_steps:
            task, new = tasks.add(step, today)
            if new:
                added_ids.append(task.id)
            elif task.id not in added_ids and all(t.id != task.id for t in ended.existing):
                ended.existing.append(task)
        after = _encode(tasks.text(), tasks_mp.key, limit)
        appended = append_block(daily, block, limit, engine.known)
        if after != before.encode("utf-8"):
            _replace(fd, tasks_mp, after)
    finally:
        os.close(fd)
    final = {t.id: t for t in TasksFile(after.decode("utf-8")).tasks()}
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
        changed: list[Task] = []
        unchanged: list[Task] = []
        indexed = True
    else:
        if not params.tasks:
            raise BadRequest(f"{params.action} needs at least one task (an id or its text)")
        if params.action == "add":
            for raw in params.tasks:
                clean_task_text(raw)  # refuse an empty one before the file is touched
        (text, changed, unchanged), indexed = await engine.edit_markdown(
            _change_tasks, engine, mp, params, paths=[mp], reason="tasks"
        )
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
    )


def _read_tasks(mp: MemoryPath, limit: int) -> str:
    try:
        fd = open_beneath(mp, os.O_RDONLY)
    except NotFound:
        return ""
    try:
        lock_shared(fd, mp.key)
        return _decode(read_all(fd), mp.key, limit)
    finally:
        os.close(fd)


# What the error says there is nothing to do ("no tasks to mark done").
_VERBS: Final = {"done": "mark done", "reopen": "reopen", "remove": "remove"}


def _change_tasks(
    engine: Engine, mp: MemoryPath, params: TasksParams
) -> tuple[str, list[Task], list[Task]]:
    """In the writer lane: apply the action to every task named, or to none."""
    limit = engine.config.index.max_file_bytes
    if params.action != "add" and not _exists(mp):
        verb = _VERBS.get(params.action, params.action)
        raise NotFound(f"{mp.key} does not exist yet: there are no tasks to {verb}")
    fd = open_locked(mp)
    try:
        before = _decode(read_all(fd), mp.key, limit)
        tasks = TasksFile(before)
        today = date.today().isoformat()
        changed: list[Task] = []
        unchanged: list[Task] = []
        for ref in params.tasks:
            task, did = _apply(tasks, params.action, ref, today)
            if did:
                changed.append(task)
            elif all(t.id != task.id for t in unchanged):
                unchanged.append(task)
        text = tasks.text()
        after = _encode(text, mp.key, limit)
        if after != before.encode("utf-8"):
            _replace(fd, mp, after)
    finally:
        os.close(fd)
    # Later changes in the same call may have moved a task: report where it ended up
    # (a removed task is reported as it was).
    final = {t.id: t for t in tasks.tasks()}
    return text, [final.get(t.id, t) for t in changed], [final.get(t.id, t) for t in unchanged]


def _apply(tasks: TasksFile, action: str, ref: str, today: str) -> tuple[Task, bool]:
    """(the task, whether *action* changed it)."""
    if action == "add":
        return tasks.add(ref, today)
    want_done = {"done": True, "reopen": False}.get(action)
    task = tasks.find(ref, want_done=want_done)
    if action == "done":
        return (tasks.complete(task, today), True) if not task.done else (task, False)
    if action == "reopen":
        return (tasks.reopen(task), True) if task.done else (task, False)
    tasks.remove(task)
    return task, True


# ---------------------------------------------------------------- helpers


def _decode(data: bytes, key: str, limit: int) -> str:
    """The file's text, or why the daemon will not edit it (the file is left alone)."""
    if len(data) > limit:
        raise TooLarge(f"{key} is larger than the {limit}-byte file limit; nothing was changed")
    if b"\x00" in data:
        raise Forbidden(f"{key} is not a text file (it holds NUL bytes); nothing was changed")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Forbidden(
            f"{key} is not valid UTF-8 (byte {exc.start}); fix or move it, nothing was changed"
        ) from None


def _encode(text: str, key: str, limit: int) -> bytes:
    data = text.encode("utf-8")
    if len(data) > limit:
        raise TooLarge(f"{key} would exceed the {limit}-byte file limit; nothing was changed")
    return data


def _exists(mp: MemoryPath) -> bool:
    try:
        os.close(open_beneath(mp, os.O_RDONLY))
    except NotFound:
        return False
    return True


def _replace(fd: int, mp: MemoryPath, data: bytes) -> None:
    """Atomically give the locked file *mp* the content *data* (its mode kept)."""
    mode = os.fstat(fd).st_mode & 0o777
    replace_file(mp.absolute, data, mode=mode, tag="tasks")


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
