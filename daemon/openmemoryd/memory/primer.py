"""The session primer: what an agent should know before its first turn.

OpenClaw injects its bootstrap files whole; the Python MCP memory server's primer aims at
500-1000 tokens. We read USER.md, PROJECT.md, the open tasks of memory/TASKS.md (with
their ids, so the agent can close them), today's and yesterday's daily
files, and MEMORY.md only for private sessions (it holds personal, curated
memory that must not leak into a group conversation), and fit them into a
token budget:

* template boilerplate is dropped first (HTML comments, the template's
  italic guidance lines, unfilled ``- **Name:**`` fields, horizontal rules,
  headings left with nothing under them, a file that is still the pristine
  template), since it costs tokens and says nothing;
* the budget is shared fairly: files smaller than their share keep all of
  it and hand the rest on, so one long daily log cannot starve USER.md;
* a file cut short keeps its start, except daily logs, which keep their
  end (the newest entries), and the cut is marked with the command that
  shows the rest;
* a file with no room at all is named with the smallest budget that would
  show some of it, so a caller whose budget held nothing can ask again.

Files are read as the indexer reads them (`workspace.decoding.readable_text`):
a daily log saved as GBK or cp1251 shows its words, not mojibake, and lines
no encoding reads are left out, as search leaves them out.

Token counts use `estimate_tokens` per line (newline included), whose sum is
never below the estimate of the joined text, so the primer never exceeds its
budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final

from openmemoryd.errors import NotFound, OmemdError
from openmemoryd.memory.tasks_file import TASKS_KEY, TasksFile
from openmemoryd.text.tokens import estimate_tokens
from openmemoryd.workspace import (
    ROOT_FILES,
    PathPolicy,
    daily_key,
    is_pristine_template,
    read_memory_file,
    template_text,
)
from openmemoryd.workspace.decoding import readable_text

_COMMENT: Final = re.compile(r"<!--.*?-->", re.S)
_EMPTY_FIELD: Final = re.compile(r"^\s*[-*+]\s+\*\*[^*]+:?\*\*:?\s*$")
_HEADING: Final = re.compile(r"^(#{1,6})\s")
_ITALIC: Final = re.compile(r"^\*[^*].*\*$")
_RULE: Final = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")


@dataclass(frozen=True, slots=True)
class Section:
    path: str
    label: str
    tokens: int
    start_line: int
    end_line: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class Primer:
    text: str
    sections: tuple[Section, ...]
    tokens: int
    omitted: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Source:
    path: str
    label: str
    title: str
    keep_tail: bool


@dataclass(slots=True)
class _Part:
    source: _Source
    header: str
    lines: list[tuple[int, str]]  # (1-based line number, text)
    costs: list[int]

    @property
    def size(self) -> int:
        return _cost(self.header) + sum(self.costs)


def build_primer(
    policy: PathPolicy, *, today: date, budget: int, private: bool, max_file_bytes: int
) -> Primer:
    """The primer for a session starting on *today* (see the module docstring)."""
    parts: list[_Part] = []
    omitted: list[str] = []
    for source in _sources(today, private):
        lines, why = _read(policy, source.path, max_file_bytes)
        if why is not None:
            omitted.append(f"{source.path}: {why}")
            continue
        header = f"## {source.title} ({source.path})"
        parts.append(_Part(source, header, lines, [_cost(text) for _, text in lines]))
    shares = _shares([part.size for part in parts], budget)
    rendered: list[str] = []
    sections: list[Section] = []
    for index, (part, share) in enumerate(zip(parts, shares, strict=True)):
        block = _fit(part, share)
        if block is None:
            omitted.append(_no_room(part.source.path, budget, _budget_showing(parts, index)))
            continue
        text, section = block
        rendered.append(text)
        sections.append(section)
    text = "\n\n".join(rendered)
    return Primer(text, tuple(sections), estimate_tokens(text), tuple(omitted))


def _no_room(path: str, budget: int, shown_from: int) -> str:
    """Why *path* is left out when its share of *budget* held none of it.

    Both numbers are budgets, the one given and the smallest that shows
    something of the file, so the reason reads as what to ask for next
    (clients read the second number: `omem_client._render.budget_showing`).
    """
    return (
        f"{path}: no room in a {budget}-token budget; "
        f"a budget of {shown_from} tokens shows some of it"
    )


def _sources(today: date, private: bool) -> list[_Source]:
    yesterday = today - timedelta(days=1)
    sources = [
        _Source("USER.md", "user", "User", keep_tail=False),
        _Source("PROJECT.md", "project", "Project", keep_tail=False),
        _Source(TASKS_KEY, "tasks", "Open tasks", keep_tail=False),
    ]
    if private:
        sources.append(_Source("MEMORY.md", "memory", "Long-term memory", keep_tail=False))
    sources.append(_Source(daily_key(today), "today", f"Today, {today}", keep_tail=True))
    sources.append(
        _Source(daily_key(yesterday), "yesterday", f"Yesterday, {yesterday}", keep_tail=True)
    )
    return sources


def _read(
    policy: PathPolicy, key: str, max_file_bytes: int
) -> tuple[list[tuple[int, str]], str | None]:
    """The file's meaningful lines, or why it contributes nothing."""
    try:
        raw, _ = read_memory_file(policy.resolve(key), max_file_bytes)
    except NotFound:
        return [], "missing"
    except (OmemdError, OSError) as exc:
        return [], f"unreadable ({exc})"
    if is_pristine_template(key, raw):
        return [], "still the template"
    if key == TASKS_KEY:
        return _open_tasks(readable_text(raw))
    lines = _meaningful(readable_text(raw), _boilerplate(key))
    return (lines, None) if lines else ([], "empty")


def _open_tasks(text: str) -> tuple[list[tuple[int, str]], str | None]:
    """Only the open tasks, each with the id `tasks done ID` takes: done
    ones are history, and the file's prose is for people."""
    lines = [
        (task.line, f"- [ ] {task.text} (id {task.id})")
        for task in TasksFile(text).tasks()
        if not task.done
    ]
    return (lines, None) if lines else ([], "no open tasks")


def _boilerplate(key: str) -> frozenset[str]:
    """The template's italic guidance lines, which a filled-in file keeps."""
    if key not in ROOT_FILES:
        return frozenset()
    lines = (line.strip() for line in template_text(key).splitlines())
    return frozenset(line for line in lines if _ITALIC.match(line))


def _meaningful(text: str, boilerplate: frozenset[str]) -> list[tuple[int, str]]:
    """Numbered lines minus boilerplate; the file's own title goes (our
    section header replaces it) and inner headings move one level down."""
    # blank out comments but keep their newlines, so line numbers stay true
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    numbered = [
        (number, line.rstrip())
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip()
        and line.strip() not in boilerplate
        and not _EMPTY_FIELD.match(line)
        and not _RULE.match(line)
    ]
    if numbered and numbered[0][1].startswith("# "):
        numbered = numbered[1:]
    numbered = _without_empty_headings(numbered)
    out: list[tuple[int, str]] = []
    for number, line in numbered:
        heading = _HEADING.match(line)
        if heading is not None and len(heading.group(1)) < 6:
            line = "#" + line
        out.append((number, line))
    return out


def _without_empty_headings(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Drop a heading whose section (up to the next heading at its level or
    above) has no content: an unfilled template section."""
    kept: list[tuple[int, str]] = []
    for index, (number, line) in enumerate(lines):
        heading = _HEADING.match(line)
        if heading is None:
            kept.append((number, line))
            continue
        level = len(heading.group(1))
        has_content = False
        for _, later in lines[index + 1 :]:
            inner = _HEADING.match(later)
            if inner is None:
                has_content = True
                break
            if len(inner.group(1)) <= level:
                break
        if has_content:
            kept.append((number, line))
    return kept


def _cost(line: str) -> int:
    return estimate_tokens(line + "\n")


def _shares(sizes: list[int], budget: int) -> list[int]:
    """Max-min fair shares of *budget* for parts of *sizes* (water-filling)."""
    shares = [0] * len(sizes)
    remaining = budget - _cost("") * max(len(sizes) - 1, 0)  # the blank lines between sections
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for position, index in enumerate(order):
        fair = remaining // (len(order) - position)
        shares[index] = min(sizes[index], fair)
        remaining -= shares[index]
    return shares


def _need(part: _Part) -> int:
    """The smallest share in which `_fit` shows something of *part*: all of
    it, or its header, the cut marker and the first line it keeps."""
    first = part.costs[-1] if part.source.keep_tail else part.costs[0]
    return min(part.size, _cost(part.header) + _cost(_marker(part, len(part.lines))) + first)


def _budget_showing(parts: list[_Part], index: int) -> int:
    """The smallest budget whose fair share shows something of ``parts[index]``.

    A file left out only for want of room is not empty, and the reply must
    say so with a number the caller can ask for again: a small budget split
    six ways (50 tokens, a tool schema's minimum) shows nothing at all.
    Shares grow with the budget, so a bisection finds it.
    """
    sizes = [part.size for part in parts]
    need = _need(parts[index])
    low, high = need, sum(sizes) + _cost("") * len(sizes)  # at `high` everything fits
    while low < high:
        middle = (low + high) // 2
        if _shares(sizes, middle)[index] >= need:
            high = middle
        else:
            low = middle + 1
    return low


def _fit(part: _Part, share: int) -> tuple[str, Section] | None:
    """The part within *share* tokens, or None when not even one line fits."""
    if part.size <= share:
        chosen = list(range(len(part.lines)))
        marker = ""
    else:
        room = share - _cost(part.header) - _cost(_marker(part, len(part.lines)))
        indices = range(len(part.lines))
        order = reversed(indices) if part.source.keep_tail else indices
        chosen = []
        for index in order:
            if part.costs[index] > room:
                break
            room -= part.costs[index]
            chosen.append(index)
        chosen.sort()
        if not chosen:
            return None
        marker = _marker(part, len(part.lines) - len(chosen))
    body = [part.lines[i][1] for i in chosen]
    if marker:
        body = [marker, *body] if part.source.keep_tail else [*body, marker]
    text = "\n".join([part.header, *body])
    section = Section(
        path=part.source.path,
        label=part.source.label,
        tokens=estimate_tokens(text),
        start_line=part.lines[chosen[0]][0],
        end_line=part.lines[chosen[-1]][0],
        truncated=bool(marker),
    )
    return text, section


def _marker(part: _Part, left_out: int) -> str:
    where = "earlier" if part.source.keep_tail else "more"
    return f"(… {left_out} {where} lines: omem-client get {part.source.path})"
