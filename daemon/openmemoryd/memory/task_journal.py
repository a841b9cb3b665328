"""Task changes in the append journal, so a stale save of TASKS.md loses none.

The daemon changes ``memory/TASKS.md`` by rewriting it whole (`engine.task_ops`),
and a person's editor saves it whole too. A save of a copy read before a
change drops it: the task an agent added with `tasks add` or as a
`session_end` next step is gone, a task marked done is open again, with
nothing in `status` to say so. So each task changed is journalled like an
appended block (`memory.append_journal`) and judged by the same rule, with
three differences:

* **before** is the whole file before the change, not the bytes before a
  block at its end: the task goes into the middle of the file. A save that
  begins with exactly that file and holds more (the person's own lines
  after it) is stale, and the change is made again, as are all later ones;
  a save that changed the file elsewhere is reported, for ``restore``.
* **present** means the task is in the state the change left it in, found
  by its identity (normalised text and added date, `tasks_file.identity`),
  not by its line: *added*, the task is there, open or done (a task a person
  ticks off by hand is still there); *done*, there and done; *reopened*,
  there and open; *removed*, not there.
* **restored** means brought back to that state: an added task's line goes
  back with its own dates (so its id is unchanged), a done-marking is made
  again with its own date, a reopened task is opened, a removed one removed.

The daemon's own later change of a task replaces what the journal held for
it that it contradicts (`supersedes`): reopening drops the done-marking's
entry, removing drops them all, adding a task again drops its removal. An
added task's entry stays through a done-marking, so a save of a copy from
before the task existed gets both back, in order.

The file's I/O rules are `engine.task_ops`'s (UTF-8 text within the size
limit, locked from read to atomic replace); the helpers live here so the
journal keeper's put-back follows them too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import date
from typing import Final

from openmemoryd.errors import Forbidden, TooLarge
from openmemoryd.memory.append import Appended, digest, next_write, open_locked
from openmemoryd.memory.durable import read_all, replace_file
from openmemoryd.memory.tasks_file import Task, TasksFile, identity
from openmemoryd.workspace import MemoryPath

__all__ = [
    "TaskStates",
    "decode_tasks",
    "describe",
    "encode_tasks",
    "identities",
    "journal_changes",
    "put_back",
    "replace_tasks",
    "supersedes",
]

# What each change says of its task, and the states a later change must
# contradict for the earlier entry to go (`supersedes`).
_CONTRADICTS: Final = {
    "add": {"remove"},
    "done": {"reopen", "remove"},
    "reopen": {"done", "remove"},
    "remove": {"add", "done", "reopen"},
}
_VERBS: Final = {"add": "added", "done": "marked done", "reopen": "reopened", "remove": "removed"}


def _parse(line: str) -> Task | None:
    found = TasksFile(line).tasks()
    return found[0] if found else None


class TaskStates:
    """The tasks of one version of the file, by identity: whether each is
    open, done, or (two lines of one identity) both."""

    def __init__(self, content: bytes) -> None:
        # A person's editor may have left bytes that are not UTF-8: the
        # task lines around them still count.
        text = content.decode("utf-8", errors="replace")
        self._states: dict[str, set[bool]] = {}
        for task in TasksFile(text).tasks():
            self._states.setdefault(identity(task), set()).add(task.done)

    def holds(self, action: str, line: str) -> bool:
        """Whether the file has the task of *line* in the state *action* left it in."""
        task = _parse(line)
        if task is None:  # not a task line (never journalled so): nothing to keep
            return True
        states = self._states.get(identity(task), set())
        if action == "add":
            return bool(states)
        if action == "done":
            return True in states
        if action == "reopen":
            return False in states
        return not states


def supersedes(action: str, line: str, earlier_action: str, earlier_line: str) -> bool:
    """Whether the daemon's change *action* of the task of *line* makes the
    journal's earlier entry (*earlier_action* of *earlier_line*) obsolete: it
    is of the same task and says the opposite, so judged against the file it
    would look lost, and putting it back would undo the newer change."""
    if earlier_action not in _CONTRADICTS.get(action, ()):
        return False
    task, earlier = _parse(line), _parse(earlier_line)
    return task is not None and earlier is not None and identity(task) == identity(earlier)


def identities(lines: Iterable[str]) -> set[str]:
    """The identities of the tasks among *lines* (other lines have none)."""
    return {identity(task) for task in map(_parse, lines) if task is not None}


def describe(action: str, line: str) -> str:
    """The change in words, for `restore`'s listing."""
    task = _parse(line)
    return f"task {_VERBS.get(action, action)}: {task.text if task is not None else line}"


def journal_changes(
    mp: MemoryPath, before: bytes, after: bytes, changes: Sequence[tuple[str, str, int]]
) -> list[Appended]:
    """The journal records of *changes* ((action, task line, line number)),
    made by one replace of *mp* from *before* to *after*.

    Called in the writer lane right after the replace: each takes its write
    number there (`next_write`), so the journal orders it among the appends
    and the keeper waits for its record. Every change of one replace has
    the same before: the versions between them never reached the disk.
    """
    return [
        Appended(
            mp,
            number,
            number,
            created=not before,
            block=line,
            before_len=len(before),
            before_hash=digest(before),
            after_hash=digest(after),
            after_len=len(after),
            written=next_write(str(mp.absolute)),
            task=action,
        )
        for action, line, number in changes
    ]


def put_back(mp: MemoryPath, action: str, line: str, max_file_bytes: int) -> Appended | None:
    """In the writer lane: make the change *action* of the task of *line*
    again, unless the file already has the task in that state; return its
    new journal record.

    Judged again here, under the lock: the keeper decided on a copy read
    outside the writer lane.
    """
    wanted = _parse(line)
    if wanted is None:
        return None
    fd = open_locked(mp)
    try:
        before = read_all(fd)
        tasks = TasksFile(decode_tasks(before, mp.key, max_file_bytes))
        same = [t for t in tasks.tasks() if identity(t) == identity(wanted)]
        if action == "remove":
            if not same:
                return None
            written, number = tasks.line(same[0]), same[0].line
            tasks.remove(same[0])
        else:
            task = _redo(tasks, action, line, wanted, same)
            if task is None:
                return None
            written, number = tasks.line(task), task.line
        after = encode_tasks(tasks.text(), mp.key, max_file_bytes)
        replace_tasks(fd, mp, after)
    finally:
        os.close(fd)
    return journal_changes(mp, before, after, [(action, written, number)])[0]


def _redo(tasks: TasksFile, action: str, line: str, wanted: Task, same: list[Task]) -> Task | None:
    """Add, mark done or reopen the task again (None: it is so already)."""
    if action == "add":
        return None if same else tasks.put(line)
    if action == "done":
        if any(t.done for t in same):
            return None
        if not same:
            return tasks.put(line)
        return tasks.complete(same[0], wanted.completed or date.today().isoformat())
    if any(not t.done for t in same):
        return None
    return tasks.reopen(same[0]) if same else tasks.put(line)


def decode_tasks(data: bytes, key: str, limit: int) -> str:
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


def encode_tasks(text: str, key: str, limit: int) -> bytes:
    data = text.encode("utf-8")
    if len(data) > limit:
        raise TooLarge(f"{key} would exceed the {limit}-byte file limit; nothing was changed")
    return data


def replace_tasks(fd: int, mp: MemoryPath, data: bytes) -> None:
    """Atomically give the locked file *mp* the content *data* (its mode kept)."""
    mode = os.fstat(fd).st_mode & 0o777
    replace_file(mp.absolute, data, mode=mode, tag="tasks")
