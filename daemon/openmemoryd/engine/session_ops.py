"""The operations agents call at a session's edges: primer and flush_check.

* **primer** is the context a session starts with (`memory.primer`); it
  reads the files in a worker thread, since a daily log may be large.
* **flush_check** is OpenClaw's pre-compaction memory flush decision
  (`memory.flush_state`): it answers with the turn to run, with today's
  date in the prompt so the model writes to the right daily file. The
  decision runs on the event loop without awaiting, so two calls for one
  session cannot interleave; it only touches the disk on a "yes" or a new
  cycle, a few times per session.
"""

from __future__ import annotations

import os
import time
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from omem_protocol import FlushCheckParams, FlushCheckResult, PrimerResult, PrimerSection
from openmemoryd.errors import BadRequest
from openmemoryd.memory.flush_state import flush_threshold
from openmemoryd.memory.primer import build_primer
from openmemoryd.workspace import MEMORY_DIR

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
