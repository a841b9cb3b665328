"""Where agents' session transcripts live, and how they are named.

Transcripts are ``*.jsonl`` files in ``<state_dir>/sessions/<agent>/`` (the
daemon's own, written by `log_turns` or by agents directly) and in any
configured ``sessions.paths`` directory. Below a root, the first directory
names the agent; a file directly in a root belongs to an agent named after
the root. Keys are ``sessions/<agent>/<file>.jsonl`` for the daemon's own
directory and absolute paths elsewhere, so citations stay readable and
unambiguous. Symlinks, hidden and tool directories are ignored, as for
Markdown.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from openmemoryd.workspace.paths import ignored_name

SESSION_SUFFIX: Final = ".jsonl"
SESSIONS_PREFIX: Final = "sessions"


@dataclass(frozen=True, slots=True)
class SessionFile:
    """A transcript: its index key, where it is, whose it is."""

    key: str
    path: Path
    agent: str


class SessionLocator:
    """Knows the transcript roots of one daemon."""

    def __init__(self, own_dir: Path, extra_dirs: tuple[Path, ...] = ()) -> None:
        self.own_dir = own_dir
        self.roots = (own_dir, *(d for d in extra_dirs if d != own_dir))

    def classify(self, path: Path) -> SessionFile | None:
        """The transcript *path* is, or None if it is not one."""
        if path.suffix != SESSION_SUFFIX:
            return None
        for root in self.roots:
            try:
                parts = path.relative_to(root).parts
            except ValueError:
                continue
            if not parts or any(ignored_name(p) for p in parts):
                return None
            agent = parts[0] if len(parts) > 1 else root.name
            own = root == self.own_dir
            key = "/".join((SESSIONS_PREFIX, *parts)) if own else path.as_posix()
            return SessionFile(key=key, path=path, agent=agent)
        return None

    def resolve_key(self, key: str) -> SessionFile | None:
        """The transcript a stored key names (None if no root holds it now)."""
        if key.startswith(SESSIONS_PREFIX + "/"):
            return self.classify(self.own_dir.joinpath(*key.split("/")[1:]))
        return self.classify(Path(key))

    def scan(self) -> dict[str, SessionFile]:
        """Every transcript on disk, by key (symlinks never followed)."""
        found: dict[str, SessionFile] = {}
        for root in self.roots:
            for path in _walk(root):
                session = self.classify(path)
                if session is not None:
                    found.setdefault(session.key, session)
        return found

    def agent_dir(self, agent: str) -> Path:
        return self.own_dir / agent


def _walk(directory: Path) -> list[Path]:
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    found: list[Path] = []
    for entry in entries:
        if ignored_name(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            found.extend(_walk(Path(entry.path)))
        elif stat.S_ISREG(st.st_mode) and entry.name.endswith(SESSION_SUFFIX):
            found.append(Path(entry.path))
    return found
