"""How a recalled part of a memory file reads in the ``<relevant-memories>`` block.

The block is put before a model's prompt, one memory to a line, so the
Markdown around a memory is noise that costs tokens and muddles its
meaning:

* A list marker (``- ``, ``* ``, ``1. ``) is layout, not part of what the
  memory says: ``У пользователя горный велосипед Merida``, not
  ``- У пользователя …``. The ``[category]`` capture and log put after it
  becomes the memory's category when every item of the part has the same
  one; with several it stays before each item, so none is lost.
* A part of several list items (a hit recalled whole, its memories matching
  by meaning alone) keeps them apart with "; ": joined by spaces, three
  tasks read as one run-on sentence (``- [ ] 一个 ➕ 2026-11-28 - [ ] 二个…``).
  An item already ending in a stop (``.``, ``!``, ``?``, ``:``, ``;``, ``…``
  or their CJK forms) needs no "; " after it; a space does.
* A task line (``- [ ] …``, ``- [x] …``: the Obsidian Tasks format of
  `memory.tasks_file`) says its checkbox in words — ``open task: …`` or
  ``done task: …`` — and drops the ``➕ YYYY-MM-DD`` it was added on: a model
  reads a checkbox as punctuation, and the added date rarely answers
  anything. The ``✅`` date a task was done on does ("when did I send the
  report?"), so it is kept, as words: ``done task (2026-11-29): …``.

Headings are dropped when the part has other text: a daily file's
``# YYYY-MM-DD`` is already in the citation.
"""

from __future__ import annotations

import re
from typing import Final

from openmemoryd.memory.sections import BULLET
from openmemoryd.memory.tasks_file import TasksFile

__all__ = ["ITEM_SEPARATOR", "memory_text"]

ITEM_SEPARATOR: Final = "; "

_HEADING: Final = re.compile(r"^#{1,6}\s")
_STOPS: Final = tuple(".!?:;…。！？：；")


def memory_text(snippet: str, source: str) -> tuple[str, str]:
    """(category, one-line text) of a recalled part (see the module docstring);
    a part without a shared ``[category]`` is labelled by where it came from."""
    lines = [line.strip() for line in snippet.splitlines() if line.strip()]
    body = [line for line in lines if not _HEADING.match(line)]
    items: list[tuple[str | None, str]] = []  # (category, text) of each list item
    for line in body or lines:
        item = _list_item(line)
        if item is not None:
            items.append(item)
        elif items:  # a wrapped line continues the item before it
            category, text = items[-1]
            items[-1] = (category, f"{text} {line}".strip())
        else:
            items.append((None, line))
    categories = {category for category, _ in items}
    if len(categories) == 1 and None not in categories:
        return categories.pop() or "", _joined([text for _, text in items])
    label = "session" if source == "sessions" else "memory"
    return label, _joined([f"[{c}] {text}" if c else text for c, text in items])


def _list_item(line: str) -> tuple[str | None, str] | None:
    """(category, text) of a list item line, without its marker; None for
    a line that is not one."""
    tasks = TasksFile(line).tasks()
    if tasks:
        task = tasks[0]
        if not task.done:
            return None, f"open task: {task.text}".rstrip()
        when = f" ({task.completed})" if task.completed else ""
        return None, f"done task{when}: {task.text}".rstrip()
    match = BULLET.match(line)
    if match is None:
        return None
    return match.group("cat"), line[match.end() :]


def _joined(texts: list[str]) -> str:
    """The items on one line, "; " after each that does not end in a stop."""
    out = ""
    for text in texts:
        if not text:
            continue
        if out:
            out += " " if out.endswith(_STOPS) else ITEM_SEPARATOR
        out += text
    return out
