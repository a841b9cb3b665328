"""Once per compaction cycle: the memory-flush decision and its memory.

OpenClaw runs a silent "store durable memories now" turn when a session's
tokens cross ``context_window - reserve_tokens_floor - soft_threshold_tokens``,
and records the compaction count it flushed at (``sessions.json``) so the
turn runs once per cycle. Agents ask us instead, so we keep that record,
per (agent, session), in a small JSON file under the state dir:

* not in the index, which is derived data that may be rebuilt or moved
  aside at any time, while this record cannot be derived from Markdown;
* written by temp file + fsync + rename, so a crash leaves the old record
  or the new one;
* answering "yes" records the flush at once, so two processes of one agent
  asking together get one "yes" between them.

A cycle ends when the agent reports a new `compaction_count` or, for agents
that do not count, when the tokens it reports fall back below the threshold
after a flush (its context was compacted).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgspec

from openmemoryd.memory.durable import replace_file

KEEP_S: Final = 30 * 86_400  # sessions idle this long are forgotten
MAX_SESSIONS: Final = 10_000

logger = logging.getLogger("openmemoryd.flush")


class _Entry(msgspec.Struct):
    cycle: int = 0
    flushed_cycle: int | None = None
    updated: float = 0.0


class _File(msgspec.Struct):
    version: int = 1
    sessions: dict[str, _Entry] = msgspec.field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Decision:
    should_flush: bool
    reason: str
    threshold: int
    cycle: int


def flush_threshold(context_window: int, reserve_floor: int, soft_threshold: int) -> int:
    return max(0, context_window - reserve_floor - soft_threshold)


class FlushTracker:
    """The per-session flush record; not thread-safe (the engine serialises calls)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data: _File | None = None

    def decide(
        self,
        key: str,
        *,
        tokens: int,
        threshold: int,
        compaction_count: int | None,
        blocked: str | None,
        now: float | None = None,
    ) -> Decision:
        """Whether session *key* should flush now; records a "yes".

        *blocked* is a reason that rules the flush out (``disabled``,
        ``read_only``) whatever the tokens say.
        """
        data = self._load()
        stamp = time.time() if now is None else now
        entry = data.sessions.get(key) or _Entry(updated=stamp)
        changed = False
        if compaction_count is not None:
            if entry.cycle != compaction_count:
                entry.cycle, changed = compaction_count, True
        elif entry.flushed_cycle == entry.cycle and tokens < threshold:
            entry.cycle, changed = entry.cycle + 1, True  # compacted since the flush
        if blocked is not None:
            decision = Decision(False, blocked, threshold, entry.cycle)
        elif tokens < threshold:
            decision = Decision(False, "below_threshold", threshold, entry.cycle)
        elif entry.flushed_cycle == entry.cycle:
            decision = Decision(False, "already_flushed", threshold, entry.cycle)
        else:
            entry.flushed_cycle, changed = entry.cycle, True
            decision = Decision(True, "threshold_reached", threshold, entry.cycle)
        if changed:
            entry.updated = stamp
            data.sessions[key] = entry
            self._save(data, stamp)
        return decision

    def compacted(self, key: str, *, now: float | None = None) -> int:
        """Record that `compact` flushed and compacted session *key*: this
        cycle's flush is done and a new cycle starts, so the next flush-check
        past the threshold says yes again. Returns the new cycle."""
        data = self._load()
        stamp = time.time() if now is None else now
        entry = data.sessions.get(key) or _Entry(updated=stamp)
        entry.flushed_cycle = entry.cycle
        entry.cycle += 1
        entry.updated = stamp
        data.sessions[key] = entry
        self._save(data, stamp)
        return entry.cycle

    def _load(self) -> _File:
        if self._data is None:
            self._data = self._read()
        return self._data

    def _read(self) -> _File:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return _File()
        try:
            return msgspec.json.decode(raw, type=_File)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # msgspec's error for non-UTF-8
            # A damaged record only risks one extra flush per session: keep
            # the bad file for inspection and start afresh.
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            with contextlib.suppress(OSError):
                os.replace(self.path, aside)
            logger.warning("flush record %s is damaged (%s); moved to %s", self.path, exc, aside)
            return _File()

    def _save(self, data: _File, now: float) -> None:
        stale = [k for k, e in data.sessions.items() if now - e.updated > KEEP_S]
        for key in stale:
            del data.sessions[key]
        if len(data.sessions) > MAX_SESSIONS:
            oldest = sorted(data.sessions, key=lambda k: data.sessions[k].updated)
            for key in oldest[: len(data.sessions) - MAX_SESSIONS]:
                del data.sessions[key]
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        replace_file(self.path, msgspec.json.encode(data), mode=0o600, tag="flush")
