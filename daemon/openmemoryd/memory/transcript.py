"""Writing agents' turns into the daemon-kept session transcripts.

For agents that keep no transcript of their own (`log_turns`): turns are
appended to ``<state_dir>/sessions/<agent>/<session_id>.jsonl`` as OpenClaw
message records with ISO timestamps, under the same lock-write-fsync
discipline as Markdown appends. The file is never rewritten; a last line
left unterminated by some other writer is closed first, so our records
always start on a line of their own.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from omem_protocol import Turn
from openmemoryd.errors import Forbidden
from openmemoryd.memory.durable import fsync_dir, lock_exclusive, read_all, write_all
from openmemoryd.workspace import SESSION_SUFFIX


@dataclass(frozen=True, slots=True)
class TurnsWritten:
    path: Path
    start_line: int
    end_line: int


def turn_record(turn: Turn, now: float) -> str:
    """One JSONL line in OpenClaw's transcript shape."""
    when = datetime.fromtimestamp(turn.timestamp if turn.timestamp is not None else now, UTC)
    return json.dumps(
        {
            "type": "message",
            "timestamp": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "message": {"role": turn.role, "content": turn.text},
        },
        ensure_ascii=False,
    )


def append_turns(
    own_dir: Path, agent: str, session_id: str, turns: Sequence[Turn], now: float
) -> TurnsWritten:
    """Append *turns* to the agent's session transcript; return its new lines."""
    directory = own_dir / agent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    if stat.S_ISLNK(os.lstat(directory).st_mode):
        raise Forbidden(f"the transcript directory of {agent!r} is a symlink; refusing to write")
    path = directory / f"{session_id}{SESSION_SUFFIX}"
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise Forbidden(f"cannot write transcript {path.name}: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Forbidden(f"transcript {path.name} is not a regular file")
        lock_exclusive(fd, path.name)
        existing = read_all(fd)
        prefix = b"\n" if existing and not existing.endswith(b"\n") else b""
        payload = prefix + "".join(turn_record(t, now) + "\n" for t in turns).encode("utf-8")
        write_all(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
    if not existing:
        fsync_dir(directory)
    start = (existing + prefix).count(b"\n") + 1
    return TurnsWritten(path, start, start + len(turns) - 1)
