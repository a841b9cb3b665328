"""The operations agents call at a session's edges: primer, flush_check,
log_turns and session_start.

* **primer** is the context a session starts with (`memory.primer`); it
  reads the files in a worker thread, since a daily log may be large.
* **flush_check** is OpenClaw's pre-compaction memory flush decision
  (`memory.flush_state`): it answers with the turn to run, with today's
  date in the prompt so the model writes to the right daily file. The
  decision runs on the event loop without awaiting, so two calls for one
  session cannot interleave; it only touches the disk on a "yes" or a new
  cycle, a few times per session.
* **log_turns** appends turns to a daemon-kept transcript and indexes it;
  **session_start** indexes an agent's pending transcript lines now.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import apsw
import trio

from omem_protocol import (
    FlushCheckParams,
    FlushCheckResult,
    LogTurnsResult,
    PrimerResult,
    PrimerSection,
    SessionStartResult,
    Turn,
)
from openmemoryd.engine.recovery import IndexDamaged, IndexFull
from openmemoryd.errors import BadRequest, Unavailable
from openmemoryd.memory import append_turns
from openmemoryd.memory.flush_state import flush_threshold
from openmemoryd.memory.primer import build_primer
from openmemoryd.search import citation
from openmemoryd.store.rows import as_int
from openmemoryd.workspace import MEMORY_DIR, SESSION_SUFFIX

if TYPE_CHECKING:
    from openmemoryd.engine.engine import Engine


async def primer(
    engine: Engine, *, budget: int | None, private: bool, today: str | None
) -> PrimerResult:
    started = time.perf_counter()
    tokens = budget or engine.config.primer.budget
    built = await trio.to_thread.run_sync(
        lambda: build_primer(
            engine.policy,
            today=_day(today),
            budget=tokens,
            private=private,
            max_file_bytes=engine.config.index.max_file_bytes,
        )
    )
    return PrimerResult(
        text=built.text,
        sections=tuple(
            PrimerSection(
                path=s.path,
                label=s.label,
                tokens=s.tokens,
                start_line=s.start_line,
                end_line=s.end_line,
                truncated=s.truncated,
            )
            for s in built.sections
        ),
        tokens=built.tokens,
        budget=tokens,
        omitted=built.omitted,
        took_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def flush_check(engine: Engine, params: FlushCheckParams) -> FlushCheckResult:
    settings = engine.config.flush
    threshold = flush_threshold(
        params.context_window, settings.reserve_tokens_floor, settings.soft_threshold_tokens
    )
    blocked = None
    if not settings.enabled:
        blocked = "disabled"
    elif params.read_only or not writable(engine.config.workspace):
        blocked = "read_only"
    decision = engine.flush.decide(
        f"{params.agent or ''}/{params.session}",
        tokens=params.tokens,
        threshold=threshold,
        compaction_count=params.compaction_count,
        blocked=blocked,
    )
    day = _day(params.date).isoformat()
    run = decision.should_flush
    return FlushCheckResult(
        should_flush=run,
        reason=decision.reason,
        tokens=params.tokens,
        threshold=threshold,
        cycle=decision.cycle,
        system_prompt=settings.system_prompt.replace("YYYY-MM-DD", day) if run else "",
        prompt=settings.prompt.replace("YYYY-MM-DD", day) if run else "",
    )


def writable(workspace: Path) -> bool:
    """Can memories be written? A read-only mount or a directory we may not
    write makes a flush pointless: the model could not save anything."""
    target = workspace / MEMORY_DIR
    if not target.is_dir():
        target = workspace
    try:
        read_only_mount = bool(os.statvfs(target).f_flag & os.ST_RDONLY)
    except OSError:
        return False
    return not read_only_mount and os.access(target, os.W_OK)


def _day(raw: str | None) -> date:
    """The agent's today, else the daemon's (local time, as daily files are)."""
    if raw is None:
        return date.today()
    try:
        return date.fromisoformat(raw)
    except ValueError as exc:
        raise BadRequest(f"date must be a real YYYY-MM-DD date: {raw!r}") from exc


async def log_turns(
    engine: Engine, agent: str, session_id: str, turns: Sequence[Turn]
) -> LogTurnsResult:
    """Append turns to a daemon-kept transcript; searchable on return."""
    if engine.sessions is None:
        raise Unavailable("session transcripts are disabled (sessions.enabled = false)")
    written = await trio.to_thread.run_sync(
        append_turns, engine.config.sessions_dir, agent, session_id, turns, time.time()
    )
    session = engine.sessions.classify(written.path)
    assert session is not None  # written under the daemon's own sessions directory
    try:
        await engine.files.apply_keys([session.key], force=True)
    except (IndexDamaged, IndexFull):
        # The turns are written; the queue indexes them once it can, and
        # the reply must not invite a retry that would log them twice.
        engine.syncer.queue.notice([session.key], "log-turns", delay=0)
        indexed = False
    else:
        indexed = session.key not in engine.files.waiting
    return LogTurnsResult(
        path=session.key,
        start_line=written.start_line,
        end_line=written.end_line,
        indexed=indexed,
        citation=citation(session.key, written.start_line, written.end_line),
    )


async def session_start(
    engine: Engine, agent: str, session_id: str | None = None
) -> SessionStartResult:
    """Index every pending line of the agent's transcripts now (only the
    session's own transcript, ``<session_id>.jsonl``, when it is named), so
    a new session can recall the one before without waiting for the
    thresholds."""
    if engine.sessions is None:
        raise Unavailable("session transcripts are disabled (sessions.enabled = false)")
    found = await trio.to_thread.run_sync(engine.sessions.scan)
    keys = [
        key
        for key, session in found.items()
        if session.agent == agent
        and (session_id is None or session.path.name == f"{session_id}{SESSION_SUFFIX}")
    ]
    before = await engine.read(_chunks_of, keys)
    await engine.files.apply_keys(keys, force=True)
    after = await engine.read(_chunks_of, keys)
    return SessionStartResult(agent=agent, transcripts=len(keys), chunks=max(0, after - before))


def _chunks_of(conn: apsw.Connection, keys: Sequence[str]) -> int:
    if not keys:
        return 0
    rows = conn.execute(
        f"SELECT coalesce(sum(chunks), 0) FROM files WHERE path IN ({', '.join('?' * len(keys))})",
        tuple(keys),
    ).fetchall()
    return as_int(rows[0][0])
