"""The workspace's shape: bootstrap templates and daily file names.

`init_workspace` is idempotent and never overwrites: a file that exists is
left exactly as it is, whatever it contains. New directories are private
(0700) because memory holds personal notes.
"""

from __future__ import annotations

import functools
import os
import re
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Final

from openmemoryd.workspace.paths import MEMORY_DIR, ROOT_FILES

DAILY_KEY_RE: Final = re.compile(r"^memory/(\d{4}-\d{2}-\d{2})\.md$")

# Where each kind of lasting memory is kept: the file, and the headings of
# its section (the first is the templates'; the others count as it, among
# them the names people who write in Chinese or Russian give it). No
# headings: the whole file. `log` writes there; a search that asks for one
# of them by name reads it there.
SECTIONS: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    "preference": (
        "MEMORY.md",
        ("User Preferences", "Preferences", "偏好", "用户偏好", "Предпочтения"),
    ),
    "decision": (
        "MEMORY.md",
        ("Important Decisions", "Decisions", "决定", "重要决定", "Решения", "Важные решения"),
    ),
    "lesson": (
        "MEMORY.md",
        (
            "Lessons Learned",
            "Lessons",
            "经验教训",
            "教训",
            "Уроки",
            "Извлечённые уроки",
            "Извлеченные уроки",
        ),
    ),
    "user": ("USER.md", ()),
    "project": ("PROJECT.md", ()),
    "task": ("memory/TASKS.md", ("Open",)),
}


def daily_key(day: date) -> str:
    """Index key of the daily file for *day*: ``memory/YYYY-MM-DD.md``."""
    return f"{MEMORY_DIR}/{day.isoformat()}.md"


def daily_date(key: str) -> date | None:
    """The date a daily file's key names, or None for other files."""
    match = DAILY_KEY_RE.match(key)
    if match is None:
        return None
    try:
        return date.fromisoformat(match.group(1))
    except ValueError:
        return None


def template_text(name: str) -> str:
    """The bootstrap template for one of `ROOT_FILES`."""
    return (resources.files("openmemoryd.workspace") / "templates" / name).read_text("utf-8")


@functools.cache
def _template_bytes() -> dict[str, bytes]:
    return {name: template_text(name).encode("utf-8") for name in ROOT_FILES}


def is_pristine_template(key: str, content: bytes) -> bool:
    """True if *key* is a bootstrap file nobody has written in yet."""
    return _template_bytes().get(key) == content


def init_workspace(root: Path) -> list[str]:
    """Create the workspace and any missing bootstrap file; return what was created."""
    created: list[str] = []
    if not root.exists():
        root.mkdir(mode=0o700, parents=True)
        created.append(str(root))
    memory = root / MEMORY_DIR
    if not memory.exists():
        memory.mkdir(mode=0o700)
        created.append(f"{MEMORY_DIR}/")
    for name in ROOT_FILES:
        try:
            fd = os.open(root / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(template_text(name))
        created.append(name)
    return created
