"""Which kind of memory a logged text is, and where in the workspace it goes.

The Python MCP memory server routes a write by keywords to the file that holds its kind; our
workspace has those files already (docs/architecture.md):

=============  ============================================  ==========================
type           file and section                              for
=============  ============================================  ==========================
preference     ``MEMORY.md`` § User Preferences              how the user wants things
decision       ``MEMORY.md`` § Important Decisions           what was settled, and why
lesson         ``MEMORY.md`` § Lessons Learned               mistakes, gotchas, insights
fact           ``USER.md`` § Notes                           facts about the user
project        ``PROJECT.md`` § Goals / Constraints /        the project's context
               Overview (by keyword)
note           today's ``memory/YYYY-MM-DD.md``              everything else (decays)
=============  ============================================  ==========================

Invariants:

* `classify` tries the rules in `_RULES` order (lesson, decision, preference,
  fact, project) and names the keyword that decided; nothing matching is a
  ``note``. A decision that mentions a liking is still a decision;
* a given type is checked against `TYPES` (plus a few seed-003 aliases such
  as ``instruction`` and ``pattern``); anything else is a `BadRequest` that
  lists the choices;
* pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, get_args

from openmemoryd.errors import BadRequest
from openmemoryd.workspace import SECTIONS

__all__ = [
    "ALIASES",
    "TYPES",
    "MemoryType",
    "Route",
    "Typed",
    "classify",
    "resolve_type",
    "route",
]

MemoryType = Literal["preference", "decision", "lesson", "fact", "project", "note"]
TYPES: Final[tuple[MemoryType, ...]] = get_args(MemoryType)
# The Python MCP memory server files instructions with preferences and patterns with lessons.
ALIASES: Final[dict[str, MemoryType]] = {
    "instruction": "preference",
    "pattern": "lesson",
    "user": "fact",
    "context": "project",
    "daily": "note",
    "journal": "note",
}


@dataclass(frozen=True, slots=True)
class Typed:
    """The memory's type and a sentence saying how it was chosen."""

    type: MemoryType
    reason: str


@dataclass(frozen=True, slots=True)
class Route:
    """Where a memory goes. `file` None is today's daily file; `section` is
    the heading to write under, `aliases` other headings that count as it."""

    file: str | None
    section: str | None
    aliases: tuple[str, ...] = ()
    reason: str = ""


def _en(pattern: str) -> Callable[[str], re.Match[str] | None]:
    return re.compile(pattern, re.IGNORECASE | re.ASCII).search


def _zh(pattern: str) -> Callable[[str], re.Match[str] | None]:
    return re.compile(pattern, re.IGNORECASE).search


_Finder = Callable[[str], re.Match[str] | None]

_RULES: Final[tuple[tuple[MemoryType, tuple[_Finder, ...]], ...]] = (
    (
        "lesson",
        (
            _en(
                r"\b(?:lessons?|learn(?:ed|t)|mistakes?|gotchas?|turns?\s+out|next\s+time"
                r"|in\s+hindsight|root\s+cause|pitfalls?|the\s+fix\s+(?:is|was))\b"
            ),
            _zh(r"教[训訓]|学到|學到|踩坑|下次|原来|原來|吸取|经验|經驗|根本原因|坑"),
        ),
    ),
    (
        "decision",
        (
            _en(
                r"\b(?:decided|decision|we(?:\s+will|['’]ll|\s+are\s+going\s+to)\s+use"
                r"|let['’]?s\s+use|going\s+with|(?:we\s+)?chose|chosen|switched\s+to"
                r"|settled\s+on|agreed\s+(?:on|to)|adopt(?:ed)?)\b"
            ),
            _zh(
                r"[决決]定|改用|[选選][择擇]了|[选選]用|采用|採用|我[们們](?:[将將]|[会會]|要)?用|定下"
            ),
        ),
    ),
    (
        "preference",
        (
            _en(
                r"\b(?:prefers?|preferred|preferences?|likes?|loves?|hates?|dislikes?"
                r"|wants?|favou?rite|always|never|rather|don['’]?t\s+like)\b"
            ),
            _zh(r"喜[欢歡]|偏好|[讨討][厌厭]|想要|不要|[总總]是|从不|從不|永[远遠]不|最爱|最愛"),
        ),
    ),
    (
        "fact",
        (
            _en(
                r"\b(?:my\s+name|i\s+am|i['’]m|i\s+live|i\s+work|i\s+was\s+born|i\s+have"
                r"|my\s+(?:wife|husband|partner|kids?|children|birthday|job|role|timezone"
                r"|time\s+zone|email|phone|address|company|team|manager|dog|cat)"
                r"|the\s+user(?:['’]s)?|user\s+is)\b"
            ),
            _zh(r"我叫|我是|我住|我在.{0,12}工作|我的.{1,10}是|我今年|我来自|我來自|用[户戶]"),
        ),
    ),
    (
        "project",
        (
            _en(
                r"\b(?:project|repo|repository|codebase|this\s+app|service|deadline"
                r"|milestone|release|stack|staging|production|deploy(?:ed|s|ment)?|ci"
                r"|pipeline|roadmap|sprint|backend|frontend|api)\b"
            ),
            _zh(r"项目|項目|仓库|倉庫|代码库|代碼庫|截止|上线|上線|部署|里程碑|版本|后端|前端"),
        ),
    ),
)

_PROJECT_SECTIONS: Final[tuple[tuple[str, tuple[_Finder, ...]], ...]] = (
    (
        "Goals",
        (
            _en(r"\b(?:goals?|aims?|objectives?|achieve|target)\b"),
            _zh(r"目[标標]|旨在|达成|達成"),
        ),
    ),
    (
        "Constraints",
        (
            _en(r"\b(?:must|mustn['’]?t|cannot|can['’]?t|only|limits?|constraints?|requires?)\b"),
            _zh(r"必[须須]|不能|只能|限制|要求|不得"),
        ),
    ),
)


def resolve_type(given: str) -> Typed:
    """The type a caller named (an alias resolved); BadRequest for an unknown one."""
    name = given.strip().lower()
    if name in TYPES:
        return Typed(name, f"type {name} (given)")
    if name in ALIASES:
        return Typed(ALIASES[name], f"type {ALIASES[name]} (given as {name!r})")
    choices = ", ".join(TYPES)
    raise BadRequest(f"unknown memory type {given!r}; choose one of: {choices}")


def classify(text: str) -> Typed:
    """The type *text* reads as, with the keyword that decided it."""
    for kind, finders in _RULES:
        for find in finders:
            match = find(text)
            if match is not None:
                return Typed(kind, f"type {kind} (keyword {match.group()!r})")
    return Typed("note", "type note (no preference, decision, lesson, user or project keyword)")


def route(kind: MemoryType, text: str) -> Route:
    """Where a memory of *kind* saying *text* is written."""
    match kind:
        case "preference" | "decision" | "lesson":
            file, (section, *aliases) = SECTIONS[kind]
            return Route(file, section, tuple(aliases), f"{kind}s")
        case "fact":
            return Route("USER.md", "Notes", (), "facts about the user")
        case "project":
            for section, finders in _PROJECT_SECTIONS:
                for find in finders:
                    found = find(text)
                    if found is not None:
                        return Route("PROJECT.md", section, (), f"keyword {found.group()!r}")
            return Route("PROJECT.md", "Overview", (), "project context")
        case "note":
            return Route(None, None, (), "notes go to today's daily file")
