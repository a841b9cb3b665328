"""The journal block a session end appends to the daily file.

One ``## Session end HH:MM`` heading (with the agent and session when
given) and a ``###`` section per part that has content, in a fixed order:
Request, Learned, Completed, Next steps. The headings make the chunker
carry "Session end … > Learned" with each part, so a search for what was
learned finds the right lines and cites them. Lists are plain bullets (not
checkboxes: the open tasks live in ``memory/TASKS.md``, and a second set of
checkboxes in the daily file would only disagree with it); an item of
several lines keeps them, indented under its bullet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from openmemoryd.errors import BadRequest


@dataclass(frozen=True, slots=True)
class SessionNotes:
    """What an agent says at the end of a session, as given."""

    request: str | None
    learned: Sequence[str]
    completed: Sequence[str]
    next_steps: Sequence[str]
    agent: str | None = None
    session: str | None = None


def _lines(text: str) -> list[str]:
    """*text* as lines: LF only, outer blank lines and trailing spaces dropped."""
    unified = text.replace("\r\n", "\n").replace("\r", "\n")
    return [line.rstrip() for line in unified.strip("\n").split("\n")]


def _check(notes: SessionNotes) -> None:
    """Refuse notes that would write nothing, or an empty bullet."""
    parts = {"learned": notes.learned, "completed": notes.completed, "next": notes.next_steps}
    for name, items in parts.items():
        for number, item in enumerate(items, 1):
            if "\x00" in item:
                raise BadRequest(f"{name} item {number} contains a NUL character")
            if not item.strip():
                raise BadRequest(f"{name} item {number} is empty")
    if notes.request is not None and "\x00" in notes.request:
        raise BadRequest("request contains a NUL character")
    has_request = notes.request is not None and notes.request.strip()
    if not has_request and not any(parts.values()):
        raise BadRequest(
            "nothing to record: give at least one of request, learned, completed or next steps"
        )


def render_journal(notes: SessionNotes, at: datetime) -> str:
    """The Markdown block for *notes*, headed with the local time *at*.

    Raises:
        BadRequest: nothing to record, an empty item, or a NUL character.
    """
    _check(notes)
    who = [f"agent {notes.agent}"] if notes.agent else []
    if notes.session:
        who.append(f"session {notes.session}")
    heading = f"## Session end {at:%H:%M}" + (f" ({', '.join(who)})" if who else "")
    out = [heading]
    if notes.request is not None and notes.request.strip():
        out += ["", "### Request", *_lines(notes.request)]
    for title, items in (
        ("Learned", notes.learned),
        ("Completed", notes.completed),
        ("Next steps", notes.next_steps),
    ):
        if items:
            out += ["", f"### {title}", *_bullets(items)]
    return "\n".join(out)


def _bullets(items: Sequence[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        first, *rest = _lines(item)
        out.append(f"- {first.strip()}")
        out += [f"  {line}" if line else "" for line in rest]
    return out
