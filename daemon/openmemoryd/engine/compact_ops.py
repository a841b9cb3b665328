"""compact: the openmemory design's compaction flow, run for agents that want it done for them.

1. Refuse before anything else when no chat model is configured, or when
   nothing would be summarised (every message is among the last `keep_last`,
   or the older ones hold no user/assistant text).
2. Summarise all but the last `keep_last` messages in stages with the chat
   model (`chat.summarize`). Each request runs in a worker thread under its
   own small limiter, so a slow model holds neither the event loop nor the
   threads searches use; while it runs, a progress frame every
   `HEARTBEAT_S` keeps the client's per-frame timeout from firing.
3. The memory flush: `capture` over all the messages (the design's
   ``flushBeforeCompact``), unless turned off.
4. Append the summary to today's daily file under ``## Session Summary``
   (the design sends the summary to long-term memory; the daily file keeps
   it dated and decaying like the conversation it replaces); indexed, so
   searchable, when the call returns.
5. Record the compaction in the flush record: this cycle's flush is done and
   a new cycle begins (`memory.flush_state`).

Nothing is written before the summary exists, so a missing or failing chat
model leaves the Markdown untouched; the flush still lands before the summary
in the file, the design's order. Tokens are estimated the same way before and
after (`chat.staging`), so ``tokens_after < tokens_before`` is meaningful.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final

import trio

from omem_protocol import CaptureMessage, CompactCheckResult, CompactParams, CompactResult
from openmemoryd.chat import (
    DEFAULT_MERGE_PROMPT,
    DEFAULT_SUMMARY_PROMPT,
    ChatModel,
    Complete,
    build_chat,
    conversation_tokens,
    message_tokens,
    prepare,
    split_stages,
    stage_budget,
    summarize_in_stages,
)
from openmemoryd.engine.agent_ops import capture
from openmemoryd.errors import BadRequest, ConfigError

if TYPE_CHECKING:
    from openmemoryd.engine.engine import Engine
    from openmemoryd.engine.hosts import ProgressFn

HEARTBEAT_S: Final = 10.0
CHAT_THREADS: Final = 4
SUMMARY_HEADING: Final = "## Session Summary"

logger = logging.getLogger("openmemoryd.chat")

_CHAT_LIMITER: Final = trio.lowlevel.RunVar[trio.CapacityLimiter]("openmemoryd.chat_limiter")


async def compact(
    engine: Engine, params: CompactParams, progress: ProgressFn | None = None
) -> CompactResult:
    started = time.perf_counter()
    settings = engine.config.chat
    # In a thread: an httpx client loads the CA bundle, too slow for the event loop.
    model = await trio.to_thread.run_sync(
        lambda: build_chat(settings, os.environ, config_path=engine.config.config_path)
    )
    try:
        keep = settings.keep_last if params.keep_last is None else params.keep_last
        cut = max(0, len(params.messages) - keep)
        older, kept = params.messages[:cut], params.messages[cut:]
        if not older:
            raise BadRequest(
                f"nothing to compact: {len(params.messages)} messages and the last "
                f"{keep} are kept (lower keep_last)"
            )
        prompt = settings.prompt or DEFAULT_SUMMARY_PROMPT
        merge_prompt = settings.merge_prompt or DEFAULT_MERGE_PROMPT
        try:
            budget = stage_budget(settings.max_input_tokens, max(prompt, merge_prompt, key=len))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        # Redaction and staging scan every character: a long conversation is a thread's work.
        stages, skipped = await trio.to_thread.run_sync(_stages, older, budget)
        if not stages:
            raise BadRequest(
                f"nothing to compact: the {len(older)} older messages hold no user or "
                "assistant text"
            )
        summary = await summarize_in_stages(
            stages,
            complete=_completer(model, progress),
            budget=budget,
            prompt=prompt,
            merge_prompt=merge_prompt,
        )
    finally:
        model.close()

    flush = settings.flush_before if params.flush is None else params.flush
    captured = await capture(engine, params.messages, None) if flush else None
    block = f"{_heading(params)}\n\n{summary.text}"
    appended = await engine.append(block, None)
    engine.flush.compacted(f"{params.agent or ''}/{params.session}")
    logger.info(
        "compacted session %s: %d messages in %d stages, %d calls to %s",
        params.session,
        len(older),
        summary.stages,
        summary.calls,
        model.model,
    )
    return CompactResult(
        summary=summary.text,
        path=appended.path,
        start_line=appended.start_line,
        end_line=appended.end_line,
        citation=appended.citation,
        captured=captured.captured if captured is not None else (),
        tokens_before=conversation_tokens(m.text for m in params.messages),
        tokens_after=message_tokens(summary.text) + conversation_tokens(m.text for m in kept),
        messages_summarised=len(older),
        messages_kept=len(kept),
        messages_skipped=skipped,
        stages=summary.stages,
        calls=summary.calls,
        provider=model.provider,
        model=model.model,
        took_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def _stages(messages: Sequence[CaptureMessage], budget: int) -> tuple[list[list[str]], int]:
    """The messages worth summarising, cleaned and cut into stages; how many were skipped."""
    lines, skipped = prepare([(m.role, m.text) for m in messages])
    return split_stages(lines, budget), skipped


def _heading(params: CompactParams) -> str:
    """``## Session Summary 14:05 · session S · agent A`` (the file is already dated)."""
    parts = [datetime.now().strftime("%H:%M"), f"session {params.session}"]
    if params.agent:
        parts.append(f"agent {params.agent}")
    return f"{SUMMARY_HEADING} {' · '.join(parts)}"


def _completer(model: ChatModel, progress: ProgressFn | None) -> Complete:
    """One chat request per call, in a worker thread, with a progress heartbeat."""
    calls = 0

    async def complete(system: str, user: str) -> str:
        nonlocal calls
        calls += 1
        phase = f"chat request {calls} to {model.model}"
        reply, error = "", None
        async with trio.open_nursery() as nursery:
            if progress is not None:
                nursery.start_soon(_heartbeat, progress, calls, phase)
            try:
                reply = await trio.to_thread.run_sync(
                    model.complete, system, user, limiter=_limiter(), abandon_on_cancel=True
                )
            except Exception as exc:  # raised below, outside the nursery: no ExceptionGroup
                error = exc
            finally:
                nursery.cancel_scope.cancel()
        if error is not None:
            raise error
        return reply

    return complete


async def _heartbeat(progress: ProgressFn, call: int, phase: str) -> None:
    await progress(call - 1, 0, phase)
    while True:
        await trio.sleep(HEARTBEAT_S)
        await progress(call - 1, 0, phase)


def _limiter() -> trio.CapacityLimiter:
    """This trio run's chat threads: separate from the default limiter that
    searches and indexing share, so slow models cannot starve them."""
    try:
        return _CHAT_LIMITER.get()
    except LookupError:
        limiter = trio.CapacityLimiter(CHAT_THREADS)
        _CHAT_LIMITER.set(limiter)
        return limiter


def compact_check(
    tokens: int, context_window: int, threshold: float, budget: float
) -> CompactCheckResult:
    """Whether a context of *tokens* in *context_window* passed the compaction
    *threshold* (a share of the window), and how much must go to fit *budget*.

    The design's rule: compact once the conversation holds 60 % of the window,
    down to 40 %; below the threshold it is "within budget" and nothing is done.
    """
    threshold_tokens = math.floor(context_window * threshold)
    budget_tokens = math.floor(context_window * min(budget, threshold))
    action = "compact" if tokens >= threshold_tokens else "within_budget"
    return CompactCheckResult(
        action=action,
        tokens=tokens,
        context_window=context_window,
        threshold_tokens=threshold_tokens,
        budget_tokens=budget_tokens,
        excess_tokens=max(0, tokens - budget_tokens) if action == "compact" else 0,
    )
