"""A query that names a kind of memory and nothing else: "my preferences".

Agents start a session by asking for the user's preferences, the standing
decisions or the open tasks. Those live in known sections of known files
(`workspace.SECTIONS`), written there by `log` and by people; ranked by
search, such a query returns whatever note mentions "preferences" most. So
a query that is only the name of one of those kinds, in English, Chinese or
Russian ("preferences", "what are my preferences?", "open tasks", 我的偏好,
重要决定, "мои задачи"), is answered from the section itself
(`engine.section_ops`). Any other word ("my preferences about tea") and it
is an ordinary search.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["asked_section"]

# Each kind's names; a query must be one of them, give or take filler.
_KINDS: Final = (
    (
        "preference",
        r"(?:user )?preferences?|prefs|likes(?: and dislikes)?|how (?:i|the user) likes? things"
        r"|偏好|喜好|用户偏好|предпочтения|предпочтение",
    ),
    (
        "decision",
        r"(?:important |key |standing )?decisions?(?: made)?|决定|决策|重要决定"
        r"|(?:важные |принятые )?решения",
    ),
    ("lesson", r"lessons?(?: learned| learnt)?|经验|教训|经验教训|уроки|(?:извлеч[её]нные )?уроки"),
    (
        "task",
        r"(?:open |current |pending )?(?:tasks?|todos?|to-dos?)(?: list)?|任务|待办(?:事项)?"
        r"|(?:открытые |текущие )?задачи",
    ),
    (
        "user",
        r"(?:the )?user(?:'s)? profile|about me|who am i|(?:user )?profile|关于我|用户资料|用户信息"
        r"|обо мне|профиль(?: пользователя)?",
    ),
    (
        "project",
        r"(?:the |this |current )?project(?: context| overview| goals| constraints)?"
        r"|项目(?:背景|概况|目标)?|(?:о )?проект(?:е)?",
    ),
)
_FILLER: Final = re.compile(
    r"^(?:(?:what|which|show|list|give|tell|recall|remind me of|get|read|are|is|were|me|my|our"
    r"|the|all|your|you|do|have|we|i|of|please|current)\b[\s,]*)*"
    r"|(?:\b(?:are there|do we have|do i have|so far|please)\b[\s,]*)*$",
    re.IGNORECASE,
)
_ZH_FILLER: Final = re.compile(
    r"^(?:我的|我们的|用户的|列出|显示|看看|有哪些|有什么)+|(?:有哪些|是什么|有什么|列表)$"
)
_RU_FILLER: Final = re.compile(
    r"^(?:(?:какие|какой|каковы|покажи|покажите|перечисли|мои|мой|наши|у меня|мне|все)\s+)+",
    re.IGNORECASE,
)
_PATTERNS: Final = tuple(
    (kind, re.compile(rf"(?:{names})", re.IGNORECASE)) for kind, names in _KINDS
)


def asked_section(query: str) -> str | None:
    """The kind of memory *query* asks for by name alone, or None."""
    text = query.strip().rstrip("?？!！.。 ").strip()
    text = _RU_FILLER.sub("", _ZH_FILLER.sub("", _FILLER.sub("", text))).strip(" ,，")
    text = " ".join(text.split())
    for kind, names in _PATTERNS:
        if names.fullmatch(text):
            return kind
    return None
