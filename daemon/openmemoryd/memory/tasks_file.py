"""``memory/TASKS.md``: open and done tasks as Markdown checkboxes, edited in place.

The file belongs to people as much as to agents, so the editor is careful:

* Only top-level checkbox lines (``- [ ] …``, ``- [x] …``; ``*`` and ``+``
  bullets too) are tasks. Every other line — prose, headings, nested items,
  comments, CRLF endings — is kept byte for byte, and a task line is only
  rewritten when its own state changes (mark and date, nothing else).
* A task's block is its line plus the indented lines under it (notes,
  sub-items); a block moves as one.
* Dates use the Obsidian Tasks convention, so that plugin reads the file
  too: ``➕ YYYY-MM-DD`` when added, ``✅ YYYY-MM-DD`` when done.
* The daemon's own layout is ``## Open`` and ``## Done`` sections. With both
  present, completing a task moves its block to the end of Done and
  reopening moves it back; without them a task is toggled where it is.
  New tasks go to the end of ``## Open`` (else after the last task, else a new
  ``## Open`` section at the end).
* A task's id is a hash of its normalised text (case and spacing ignored)
  and its added date, so it needs no marker in the file and survives moves,
  completion and hand edits that leave those alone; a text added again
  after it was done gets a new id. Should two lines still share both, the
  n-th (n ≥ 2) hashes n too, so every id in a file is unique.

This module is pure (text in, text out); `engine.task_ops` does the locking,
the atomic replace and the indexing.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from openmemoryd.errors import BadRequest, NotFound

TASKS_KEY: Final = "memory/TASKS.md"
ADDED_MARK: Final = "➕"
DONE_MARK: Final = "✅"
ID_CHARS: Final = 6
NEW_FILE: Final = "# Tasks\n\n## Open\n\n## Done\n"

_TASK: Final = re.compile(r"^(?P<head>[-*+] \[)(?P<mark>[ xX])(?P<tail>\] )(?P<body>.*?)[ \t]*$")
_META: Final = re.compile(r"[ \t]+(?P<sign>➕|✅)[ \t]*(?P<day>\d{4}-\d{2}-\d{2})[ \t]*$")
_DONE_META: Final = re.compile(r"[ \t]+✅[ \t]*\d{4}-\d{2}-\d{2}")
_SECTION: Final = re.compile(r"^##[ \t]+(?P<name>[^\r\n]*?)[ \t#]*$")
_TOP_HEADING: Final = re.compile(r"^#{1,2}[ \t]")
_BULLET_PREFIX: Final = re.compile(r"^(?:[-*+](?:[ \t]+|$))?(?:\[[ xX]\](?:[ \t]+|$))?")
_ID: Final = re.compile(rf"^[0-9a-f]{{{ID_CHARS}}}$")


@dataclass(frozen=True, slots=True)
class Task:
    """One task as the file has it now. `index` is its 0-based line number."""

    id: str
    text: str
    done: bool
    added: str | None
    completed: str | None
    index: int
    size: int  # lines in its block: the task line and the indented ones under it

    @property
    def line(self) -> int:
        return self.index + 1


def normalize_key(text: str) -> str:
    """What two task texts must share to be the same task."""
    return " ".join(text.casefold().split())


def clean_task_text(raw: str) -> str:
    """A task text as it is written: one line, no bullet or checkbox of its own.

    Raises:
        BadRequest: nothing is left.
    """
    text = " ".join(raw.split())
    text = _BULLET_PREFIX.sub("", text, count=1).strip()
    if not text:
        raise BadRequest("a task needs some text")
    return text


def distinct_tasks(texts: Iterable[str]) -> list[str]:
    """*texts* without a repeat of one before them, each task once.

    Two texts are the same task when `normalize_key` says so, as `TasksFile.add`
    judges them, so whatever lists a session's next steps (its journal block)
    lists them as the task list holds them: "Write docs", "write  docs" and
    "- [ ] Write docs" are one. The first spelling is kept, as `add` keeps the
    task already open. Give them cleaned (`clean_task_text`).
    """
    seen: set[str] = set()
    kept: list[str] = []
    for text in texts:
        key = normalize_key(text)
        if key not in seen:
            seen.add(key)
            kept.append(text)
    return kept


def identity(task: Task) -> str:
    """What makes two task lines the same task (its id without the
    occurrence count): the normalised text and the added date."""
    return f"{normalize_key(task.text)}\x00{task.added or ''}"


def _task_id(key: str, occurrence: int) -> str:
    seed = key if occurrence == 1 else f"{key}\x01{occurrence}"
    return hashlib.sha256(seed.encode("utf-8")).hexdigest()[:ID_CHARS]


def _split_body(body: str) -> tuple[str, str | None, str | None]:
    """(text, added, completed) of a task line's body: its trailing date marks peeled off."""
    added = completed = None
    while match := _META.search(body):
        if match.group("sign") == ADDED_MARK:
            added = added or match.group("day")
        else:
            completed = completed or match.group("day")
        body = body[: match.start()]
    return body.strip(), added, completed


def _ending(line: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    return "\n" if line.endswith("\n") else ""


class TasksFile:
    """The file's lines and the edits on them; `text()` is the result."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        first = self.lines[0] if self.lines else ""
        self.newline = "\r\n" if first.endswith("\r\n") else "\n"

    def text(self) -> str:
        return "".join(self.lines)

    # ------------------------------------------------------------ reading

    def tasks(self) -> list[Task]:
        found: list[Task] = []
        seen: Counter[str] = Counter()
        index = 0
        while index < len(self.lines):
            match = _TASK.match(self.lines[index].rstrip("\r\n"))
            if match is None:
                index += 1
                continue
            text, added, completed = _split_body(match.group("body"))
            key = f"{normalize_key(text)}\x00{added or ''}"  # as `identity`
            seen[key] += 1
            size = self._block_size(index)
            found.append(
                Task(
                    id=_task_id(key, seen[key]),
                    text=text,
                    done=match.group("mark") != " ",
                    added=added,
                    completed=completed,
                    index=index,
                    size=size,
                )
            )
            index += size
        return found

    def _block_size(self, index: int) -> int:
        size = 1
        for line in self.lines[index + 1 :]:
            if not line.strip() or line[0] not in " \t":
                break
            size += 1
        return size

    def _section(self, name: str) -> tuple[int, int] | None:
        """(heading index, end index) of the ``## name`` section, if there is one."""
        for index, line in enumerate(self.lines):
            match = _SECTION.match(line.rstrip("\r\n"))
            if match is not None and match.group("name").strip().casefold() == name:
                end = index + 1
                while end < len(self.lines) and not _TOP_HEADING.match(self.lines[end]):
                    end += 1
                return index, end
        return None

    def find(self, ref: str, *, want_done: bool | None) -> Task:
        """The task *ref* names: its id, its exact text, or a unique part of its text.

        *want_done* says which state the caller is after (None: either); among
        several matches, tasks not yet in that state win.

        Raises:
            NotFound: no task matches.
            BadRequest: the text matches several tasks.
        """
        tasks = self.tasks()
        wanted = ref.strip()
        if _ID.match(wanted):
            for task in tasks:
                if task.id == wanted:
                    return task
        key = normalize_key(clean_task_text(wanted) if wanted else wanted)
        if not key:
            raise BadRequest("name a task by its id or its text")

        def eligible(task: Task) -> bool:
            return want_done is None or task.done != want_done

        exact = [t for t in tasks if normalize_key(t.text) == key]
        if exact:
            return next((t for t in exact if eligible(t)), exact[0])
        partial = [t for t in tasks if key in normalize_key(t.text)]
        pool = [t for t in partial if eligible(t)] or partial
        if len(pool) == 1:
            return pool[0]
        if not pool:
            raise NotFound(f"no task matches {ref!r} (see `omem-client tasks --all` for ids)")
        listed = "; ".join(f"{t.id} {t.text!r}" for t in pool[:5])
        raise BadRequest(f"{ref!r} matches {len(pool)} tasks: {listed}; use an id")

    # ------------------------------------------------------------ editing

    def add(self, raw: str, today: str) -> tuple[Task, bool]:
        """Add an open task, unless the same text is open already.

        Returns the task and whether it is new.
        """
        text = clean_task_text(raw)
        key = normalize_key(text)
        for task in self.tasks():
            if not task.done and normalize_key(task.text) == key:
                return task, False
        line = f"- [ ] {text} {ADDED_MARK} {today}{self.newline}"
        at = self._open_insertion()
        self._place(at, [line])
        return self._task_at(at), True

    def complete(self, task: Task, today: str) -> Task:
        """Mark *task* done today (moved to ``## Done`` when the file has both sections)."""
        if task.done:
            return task
        line = self.lines[task.index]
        body = line.rstrip("\r\n")
        body = re.sub(r"^([-*+] \[) ", r"\1x", body)
        self.lines[task.index] = f"{body.rstrip()} {DONE_MARK} {today}{_ending(line)}"
        return self._move_between(task, "open", "done")

    def reopen(self, task: Task) -> Task:
        """Mark *task* open again, dropping its done date (back to ``## Open``)."""
        if not task.done:
            return task
        line = self.lines[task.index]
        body = _DONE_META.sub("", line.rstrip("\r\n"))
        body = re.sub(r"^([-*+] \[)[xX]", r"\1 ", body)
        self.lines[task.index] = body.rstrip() + _ending(line)
        return self._move_between(task, "done", "open")

    def remove(self, task: Task) -> None:
        """Take *task*'s block out of the file."""
        del self.lines[task.index : task.index + task.size]

    def line(self, task: Task) -> str:
        """*task*'s line as the file has it, without its line end."""
        return self.lines[task.index].rstrip("\r\n")

    def put(self, line: str) -> Task:
        """Insert the task line *line* as it is (a task lost to a stale save,
        put back with its own dates, so its id is unchanged): an open one
        where `add` puts new tasks, a done one at the end of ``## Done``
        when the file has both sections, else with the open ones."""
        task = TasksFile(line).tasks()[0]
        self._lay_out_if_empty()
        done, opened = self._section("done"), self._section("open")
        if task.done and done is not None and opened is not None:
            at = self._end_of_content(*done)
        else:
            at = self._open_insertion()
        self._place(at, [line.rstrip("\r\n") + self.newline])
        return self._task_at(at)

    # ------------------------------------------------------------ helpers

    def _task_at(self, index: int) -> Task:
        return next(t for t in self.tasks() if t.index == index)

    def _insert(self, at: int, lines: list[str]) -> None:
        if at > 0 and not _ending(self.lines[at - 1]):
            self.lines[at - 1] += self.newline  # a last line without its newline
        self.lines[at:at] = lines

    def _place(self, at: int, block: list[str]) -> None:
        """Insert *block* at *at*, keeping a blank line before a heading that follows."""
        if at < len(self.lines) and _TOP_HEADING.match(self.lines[at]):
            block = [*block, self.newline]
        self._insert(at, block)

    def _lay_out_if_empty(self) -> None:
        if not self.lines or not self.text().strip():
            self.lines = NEW_FILE.replace("\n", self.newline).splitlines(keepends=True)

    def _open_insertion(self) -> int:
        """Where a new open task goes (see the module docstring)."""
        self._lay_out_if_empty()
        section = self._section("open")
        if section is not None:
            return self._end_of_content(*section)
        tasks = self.tasks()
        if tasks:
            return tasks[-1].index + tasks[-1].size
        self._insert(len(self.lines), [])
        if self.lines and self.lines[-1].strip():
            self.lines.append(self.newline)
        self.lines += [f"## Open{self.newline}", self.newline]
        return len(self.lines)

    def _end_of_content(self, heading: int, end: int) -> int:
        """After the section's last non-blank line; after its heading's blank line if empty."""
        last = end
        while last > heading + 1 and not self.lines[last - 1].strip():
            last -= 1
        if last == heading + 1:
            if last < len(self.lines) and not self.lines[last].strip():
                return last + 1
            self._insert(last, [self.newline])
            return last + 1
        return last

    def _move_between(self, task: Task, source: str, target: str) -> Task:
        """Move *task*'s block from the *source* section to the end of *target*,
        when the file has both; otherwise it stays where it is."""
        here = self._section(source)
        if here is None or self._section(target) is None or not here[0] < task.index < here[1]:
            return self._task_at(task.index)
        block = self.lines[task.index : task.index + task.size]
        del self.lines[task.index : task.index + task.size]
        section = self._section(target)
        assert section is not None
        at = self._end_of_content(*section)
        self._place(at, block)
        return self._task_at(at)
