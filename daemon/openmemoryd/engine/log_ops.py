"""`log`: the Python MCP memory server's write pipeline, from an agent's sentence to a filed memory.

Quality gate → privacy filter → routing → dedupe → write, each stage adding
a reason to the reply, so the caller always learns where the memory went
and why (or which rule stopped it):

1. the quality rules of `memory.log_gate` (skipped with ``force``), then its
   safety rules (never skipped): secrets are masked or the text rejected;
2. the type (given, or classified by keyword) picks the file and section
   (`memory.log_routes`);
3. the closest remembered lines are scored (`engine.similar`): both the
   rescaled embedding similarity and the word overlap at least
   `REINFORCE_AT` (0.92) is the same memory again, and its line's count goes
   up; either of them at least `CONFLICT_AT` (0.85) is a possible conflict,
   reported and written only with ``replace`` (that line is swapped) or
   ``force`` (written alongside). Requiring the words to agree for a
   reinforcement matters: e5 rates "I prefer dark mode" and "I prefer light
   mode" 0.986 alike. Overlap alone is not enough either: a long Chinese
   sentence with 90 changed to 30 keeps 0.96 of its terms, so a line whose
   numbers, names or negations differ (`text.facts`) is never a repeat but
   a conflict, as is one that differs in those details alone ("I prefer
   Neovim" / "I prefer Emacs"); and the same words less a pronoun or a
   particle (我们决定 … / 决定 …) are a repeat;
4. the write goes through the engine's writer lane, under the file's lock,
   as an insertion or a one-line swap (`memory.edit`, `memory.sections`), or
   an append for the daily file, and the file is re-indexed before the reply.

Logs to one workspace run one at a time, so two identical logs arriving
together give one memory counted twice, not two copies.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from functools import partial
from typing import TYPE_CHECKING, Final, Literal

import trio

from omem_protocol import MAX_LOG_CHARS, LogParams, LogResult, LogSimilar
from openmemoryd.engine.journal_keeper import forget_absent
from openmemoryd.engine.similar import (
    BULLET,
    MAX_COMPARED_CHARS,
    Scored,
    nearby_lines,
    score_lines,
)
from openmemoryd.errors import BadRequest, Conflict
from openmemoryd.memory.append import Appended, append_block, target_path
from openmemoryd.memory.capture_rules import contains_secret
from openmemoryd.memory.edit import edit_file, insert_line
from openmemoryd.memory.log_gate import Rejected, check_quality, check_safety, one_line
from openmemoryd.memory.log_routes import Route, Typed, classify, resolve_type, route
from openmemoryd.memory.sections import replace_line, split_count, with_count
from openmemoryd.search.hits import citation
from openmemoryd.text.facts import Change, compare
from openmemoryd.workspace import MemoryPath, template_text

if TYPE_CHECKING:
    from openmemoryd.engine.engine import Engine

__all__ = ["CONFLICT_AT", "REINFORCE_AT", "log"]

logger = logging.getLogger("openmemoryd.log")

# The Python MCP memory server's thresholds, applied to the rescaled similarity (see module doc).
REINFORCE_AT: Final = 0.92
CONFLICT_AT: Final = 0.85

_locks: weakref.WeakKeyDictionary[Engine, trio.Lock] = weakref.WeakKeyDictionary()

Verdict = Literal["new", "reinforce", "conflict"]


@dataclass(frozen=True, slots=True)
class _Outcome:
    status: str
    path: str | None = None
    line: int | None = None
    similar: LogSimilar | None = None
    method: str = "lexical"
    rule: str | None = None


async def log(engine: Engine, params: LogParams) -> LogResult:
    """The `log` RPC. A rejection or a conflict is a reply, not an error;
    only malformed input (empty, too long, NUL, unknown type) raises."""
    started = time.perf_counter()
    raw = params.text
    if "\x00" in raw:
        raise BadRequest("text contains a NUL character")
    if not raw.strip():
        raise BadRequest("nothing to log: text is empty")
    if len(raw) > MAX_LOG_CHARS:
        raise BadRequest(
            f"text is {len(raw)} characters; one memory is at most {MAX_LOG_CHARS} "
            "(log one fact at a time, or use append for notes)"
        )
    text = one_line(raw)
    typed = resolve_type(params.memory_type) if params.memory_type else classify(text)
    reasons = [typed.reason]
    where: Route | None = None
    redactions: tuple[str, ...] = ()
    rejected = None if params.force else check_quality(raw)
    if rejected is None:
        reasons.append("quality gate skipped (force)" if params.force else "quality gate: passed")
    safe = check_safety(text) if rejected is None else rejected
    if isinstance(safe, Rejected):
        reasons.append(f"rejected by rule {safe.rule}: {safe.detail}")
        outcome = _Outcome("rejected", rule=safe.rule)
    else:
        text, redactions = safe.text, safe.redactions
        masked = len(redactions)
        reasons.append(f"privacy: masked {masked} secret(s)" if masked else "privacy: no secrets")
        where = route(typed.type, text)
        reasons.append(_route_reason(typed, where))
        async with _lock_for(engine):
            outcome = await _file(engine, params, text, where, reasons)
    if outcome.status == "rejected" and contains_secret(text):
        text = ""  # the reply, often printed or logged, must not repeat a secret
    result = LogResult(
        status=outcome.status,
        memory_type=typed.type,
        text=text,
        reasons=tuple(reasons),
        path=outcome.path,
        line=outcome.line,
        citation=citation(outcome.path, outcome.line, outcome.line)
        if outcome.path and outcome.line
        else None,
        section=where.section if where else None,
        rule=outcome.rule,
        redactions=redactions,
        similar=outcome.similar,
        similarity_method=outcome.method,
        dry_run=params.dry_run,
        took_ms=round((time.perf_counter() - started) * 1000, 3),
    )
    logger.info(
        "log%s: %s %s (%s)",
        f" from {params.agent}" if params.agent else "",
        result.status,
        result.citation or result.path or result.rule or "",
        typed.type,
    )
    return result


async def _file(
    engine: Engine, params: LogParams, text: str, where: Route, reasons: list[str]
) -> _Outcome:
    """Dedupe *text* against what is remembered, then write it (or not)."""
    scored, no_vectors = await score_lines(engine, text, await nearby_lines(engine, text))
    method = "lexical" if no_vectors else "vector+lexical"
    if no_vectors:
        reasons.append(f"similarity: word overlap only ({no_vectors})")
    decision = _decide(text, scored)
    match = decision.match
    if match is None:
        reasons.append(_closest_reason(scored))
        return await _write_new(engine, params, text, where, None, method, reasons)
    similar, at = _similar(match), match.line
    close = f"{similar.similarity:.2f} similar to {similar.citation} (words {similar.lexical:.2f})"
    if decision.change is not None:
        close += f", differing in {decision.change}"
    if decision.verdict == "reinforce":
        count = at.count + 1
        why = f"both ≥ {REINFORCE_AT}"
        if decision.same_words:
            why = "the same words but for a pronoun, article or particle"
        reasons.append(f"dedupe: {close}, {why}: the same memory, now ×{count}")
        if not params.dry_run:
            await _swap_in(engine, match, with_count(at.line, count), reasons)
        return _Outcome("reinforced", at.path, at.number, similar, method)
    if params.force:
        reasons.append(f"dedupe: {close}: a possible conflict, written alongside it (force)")
        return await _write_new(engine, params, text, where, similar, method, reasons)
    if not params.replace:
        reasons.append(
            f"dedupe: {close}: a possible conflict, nothing written; pass replace to swap "
            "that line for this one, or force to keep both"
        )
        return _Outcome("conflict", at.path, None, similar, method)
    reasons.append(f"dedupe: {close}: a possible conflict, that line replaced (replace)")
    if not params.dry_run:
        await _swap_in(engine, match, _restated(at.line, text), reasons)
    return _Outcome("replaced", at.path, at.number, similar, method)


async def _write_new(
    engine: Engine,
    params: LogParams,
    text: str,
    where: Route,
    similar: LogSimilar | None,
    method: str,
    reasons: list[str],
) -> _Outcome:
    mp = _target(engine, where)
    if params.dry_run:
        return _Outcome("written", mp.key, None, similar, method)
    number = await _write(engine, mp, partial(_insert, engine, mp, where, text), reasons)
    return _Outcome("written", mp.key, number, similar, method)


def _lock_for(engine: Engine) -> trio.Lock:
    lock = _locks.get(engine)
    if lock is None:
        lock = _locks[engine] = trio.Lock()
    return lock


def _route_reason(typed: Typed, where: Route) -> str:
    target = f"{where.file} § {where.section}" if where.file else "today's daily file"
    return f"route: {typed.type} → {target} ({where.reason})"


@dataclass(frozen=True, slots=True)
class _Decision:
    verdict: Verdict
    match: Scored | None = None
    # How the new text changes the matched line's details (`text.facts`).
    change: Change | None = None
    # Reinforced as the same words less an article, pronoun or particle,
    # though the word overlap is under `REINFORCE_AT`.
    same_words: bool = False


def _decide(text: str, scored: list[Scored]) -> _Decision:
    """Reinforce the closest line that says the same thing: both measures at
    `REINFORCE_AT` or more (or the same words but for a filler, with the
    vectors agreeing) and no detail changed. Else a conflict with the
    closest line either measure puts at `CONFLICT_AT` or more, or that
    differs from the new text in its details alone, a line that only a
    changed detail kept from being a repeat first; else new."""
    text = text[:MAX_COMPARED_CHARS]
    compared = [(s, compare(s.line.content[:MAX_COMPARED_CHARS], text)) for s in scored]
    same = [
        (s, c)
        for s, c in compared
        if (s.semantic is None or s.semantic >= REINFORCE_AT)
        and (s.lexical >= REINFORCE_AT or c.same_words)
    ]
    repeats = [(s, c) for s, c in same if c.change is None]
    if repeats:
        s, c = max(repeats, key=lambda sc: (sc[0].lexical, sc[0].semantic or 0.0))
        return _Decision("reinforce", s, same_words=s.lexical < REINFORCE_AT)
    if same:  # a repeat but for a changed number, name or negation
        s, c = max(same, key=lambda sc: (sc[0].lexical, sc[0].semantic or 0.0))
        return _Decision("conflict", s, c.change)
    close = [
        (s, c)
        for s, c in compared
        if _closeness(s) >= CONFLICT_AT or (c.change is not None and c.same_skeleton)
    ]
    if close:
        s, c = max(close, key=lambda sc: (_closeness(sc[0]), sc[0].lexical))
        # Two sentences close in meaning alone differ in every detail; only
        # a near-repeat's changed details say what changed.
        near = s.lexical >= CONFLICT_AT or c.same_skeleton
        return _Decision("conflict", s, c.change if near else None)
    return _Decision("new")


def _closeness(s: Scored) -> float:
    return max(s.semantic or 0.0, s.lexical)


def _similar(s: Scored) -> LogSimilar:
    line = s.line
    return LogSimilar(
        citation=citation(line.path, line.number, line.number),
        path=line.path,
        line=line.number,
        text=line.content,
        similarity=round(s.semantic if s.semantic is not None else s.lexical, 4),
        lexical=round(s.lexical, 4),
        cosine=round(s.cosine, 4) if s.cosine is not None else None,
        count=line.count,
    )


def _closest_reason(scored: list[Scored]) -> str:
    if not scored:
        return "dedupe: nothing similar remembered"
    best = max(scored, key=_closeness)
    cite = citation(best.line.path, best.line.number, best.line.number)
    return f"dedupe: nothing ≥ {CONFLICT_AT} similar (closest {_closeness(best):.2f}, {cite})"


def _restated(old: str, text: str) -> str:
    """*old* saying *text* instead: its indentation and list marker kept,
    its count dropped (a new statement has been said once)."""
    bare, _ = split_count(old)
    marker = BULLET.match(bare)
    prefix = bare[: marker.end()] if marker else bare[: len(bare) - len(bare.lstrip())]
    return prefix + text


def _target(engine: Engine, where: Route) -> MemoryPath:
    if where.file is None:
        return target_path(engine.policy, None, date.today())
    return engine.policy.resolve(where.file)


# ---------------------------------------------------------------- the writer lane


async def _write(
    engine: Engine, mp: MemoryPath, op: Callable[[], int | Appended], reasons: list[str]
) -> int:
    """Run *op* (a file edit returning the memory's line) in the writer
    lane and re-index the file there: searchable when this returns, unless
    the index failed (the reasons then say so; the memory is written)."""
    done, indexed = await engine.edit_markdown(op, paths=[mp], reason="log")
    if not indexed:
        reasons.append("index: not updated now (see status); the file is indexed once it can be")
    if isinstance(done, Appended):  # a new line, appended or inserted: journal it
        await engine.journal_append(done)
        return done.start_line
    return done


async def _swap_in(engine: Engine, match: Scored, new: str, reasons: list[str]) -> None:
    mp = engine.policy.resolve(match.line.path)
    await _write(engine, mp, partial(_swap, engine, mp, match, new), reasons)


def _insert(engine: Engine, mp: MemoryPath, where: Route, text: str) -> Appended:
    bullet = f"- {text}"
    limit = engine.config.index.max_file_bytes
    if where.section is None:
        return append_block(mp, bullet, limit, engine.known)
    template = template_text(mp.key) if where.file else ""
    titles = (where.section, *where.aliases)
    return insert_line(mp, titles, bullet, max_file_bytes=limit, template=template)


def _swap(engine: Engine, mp: MemoryPath, match: Scored, new: str) -> int:
    """In the writer lane: *match*'s line becomes *new* (a repeat counted, or
    a conflicting memory replaced)."""
    number, old = match.line.number, match.line.line

    def edit(current: str) -> tuple[str, int]:
        try:
            return replace_line(current, number, old, new), number
        except LookupError:
            raise Conflict(
                f"{mp.key} changed while logging (line {number}); nothing written, try again"
            ) from None

    done = edit_file(mp, edit, max_file_bytes=engine.config.index.max_file_bytes)
    if split_count(new)[0] != split_count(old)[0]:
        # Replaced on purpose: a journalled write of the old line must not be
        # put back as if a stale rewrite had dropped it (same lane as the
        # edit, so the journal keeper never sees one without the other). A
        # counted repeat keeps its entry: the journal knows `- x (×2)` is `- x`.
        forget_absent(engine, mp, [old])
    return done
