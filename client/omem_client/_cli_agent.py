"""The commands for agents' memory work: transcripts, recall, capture, forget,
the session primer and end, tasks, the write pipeline and compaction."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Annotated, Final

import typer

from omem_client import _render
from omem_client._cli_base import (
    JsonOpt,
    TextCommand,
    _call,
    _parse_date,
    _parse_turns,
    _read_text,
    app,
)
from omem_client._cli_io import (
    fail,
    output,
    print_json,
    print_lines,
    read_stdin,
    text_or_stdin,
)
from omem_client._requests import TaskAction, TaskStatus
from omem_protocol import MAX_LIMIT, TasksResult

TokensOpt = Annotated[
    int, typer.Option("--tokens", min=0, help="Tokens the conversation holds now.")
]
WindowOpt = Annotated[
    int, typer.Option("--context-window", min=1, help="The model's context window.")
]


@app.command("log-turns")
def log_turns(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option("--agent", help="Agent name (letters, digits, . _ -).")],
    session: Annotated[str, typer.Option("--session", help="Session id (letters, digits, . _ -).")],
    messages: Annotated[
        Path,
        typer.Option("--messages", help="JSON list (or JSONL) of {role, content}; '-' is stdin."),
    ] = Path("-"),
    as_json: JsonOpt = False,
) -> None:
    """Append conversation turns to a session transcript kept by the daemon."""
    raw = read_stdin() if str(messages) == "-" else _read_text(messages)
    turns = _parse_turns(raw)
    result = _call(ctx, lambda c: c.log_turns(agent, session, turns))
    if as_json:
        print_json(result)
        return
    state = "indexed" if result.indexed else "not indexed yet"
    typer.echo(f"Logged {len(turns)} turn(s) to {result.citation} ({state})")


@app.command("session-start")
def session_start(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option("--agent", help="The agent whose session starts.")],
    session: Annotated[
        str | None,
        typer.Option("--session", help="Only this session's transcript (<id>.jsonl)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Index an agent's transcripts now, so its recent sessions are searchable."""
    result = _call(ctx, lambda c: c.session_start(agent, session))
    if as_json:
        print_json(result)
        return
    typer.echo(f"{result.agent}: {result.transcripts} transcript(s), {result.chunks} new chunk(s)")


@app.command(cls=TextCommand)
def recall(
    ctx: typer.Context,
    query: Annotated[list[str], typer.Argument(help="The prompt to recall memories for.")],
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", min=1, max=MAX_LIMIT, help="How many (default 3)."),
    ] = None,
    min_score: Annotated[
        float | None,
        typer.Option("--min-score", min=0.0, max=1.0, help="Only at least this (default 0.3)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a <relevant-memories> block to put before a prompt (nothing if none)."""
    text = " ".join(query)
    result = _call(ctx, lambda c: c.recall(text, limit=limit, min_score=min_score))
    if as_json:
        print_json(result)
        return
    if result.block:
        typer.echo(result.block)


@app.command()
def capture(
    ctx: typer.Context,
    messages: Annotated[
        Path,
        typer.Option(
            "--messages", help="JSON list (or JSONL, or {messages: [...]}) of {role, content}."
        ),
    ] = Path("-"),
    max_captures: Annotated[
        int | None, typer.Option("--max", min=1, max=20, help="At most this many (default 3).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember the durable facts in the user's messages (to today's daily file)."""
    raw = read_stdin() if str(messages) == "-" else _read_text(messages)
    parsed = _parse_turns(raw)
    result = _call(ctx, lambda c: c.capture(parsed, max_captures=max_captures))
    output(result, as_json, _render.capture_lines)


@app.command()
def forget(
    ctx: typer.Context,
    citation: Annotated[
        str | None, typer.Argument(help="What to forget: path#L5 or path#L5-L7.")
    ] = None,
    text: Annotated[
        str | None, typer.Option("--text", help="Forget the lines saying exactly this.")
    ] = None,
    query: Annotated[
        str | None,
        typer.Option("--query", help="Forget the one memory clearly matching this."),
    ] = None,
    all_matches: Annotated[
        bool, typer.Option("--all", help="With --text: forget every place it occurs.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Erase a memory from its Markdown file and from every part of the index."""
    if sum(v is not None for v in (citation, text, query)) != 1:
        fail("give exactly one of: a citation, --text or --query", 2)
    result = _call(
        ctx, lambda c: c.forget(citation=citation, text=text, query=query, all=all_matches)
    )
    output(result, as_json, _render.forget_lines)
    if not result.removed:
        raise typer.Exit(1)


@app.command()
def primer(
    ctx: typer.Context,
    budget: Annotated[
        int | None,
        typer.Option("--budget", min=50, max=200_000, help="Token budget (default 1000)."),
    ] = None,
    private: Annotated[
        bool,
        typer.Option("--private", help="One-to-one session: include MEMORY.md (never in groups)."),
    ] = False,
    today: Annotated[
        str | None, typer.Option("--date", help="Your today (YYYY-MM-DD), if not the daemon's.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the context to start a session with: USER.md, PROJECT.md, recent days."""
    day = _parse_date(today)
    result = _call(ctx, lambda c: c.primer(budget=budget, private=private, today=day))
    if as_json:
        print_json(result)
        return
    if result.text:
        typer.echo(result.text)
    print_lines(_render.primer_notes(result), err=True)


@app.command("flush-check")
def flush_check(
    ctx: typer.Context,
    session: Annotated[str, typer.Option("--session", help="The agent's session id.")],
    tokens: TokensOpt,
    context_window: WindowOpt,
    compaction_count: Annotated[
        int | None,
        typer.Option(
            "--compaction-count", min=0, help="Compactions so far; a new count is a new cycle."
        ),
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="The agent's name.")] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="The agent cannot write the workspace.")
    ] = False,
    today: Annotated[
        str | None, typer.Option("--date", help="Your today (YYYY-MM-DD), if not the daemon's.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Say whether to run the pre-compaction memory flush now (exit 0) or not (exit 1)."""
    day = _parse_date(today)
    result = _call(
        ctx,
        lambda c: c.flush_check(
            session,
            tokens=tokens,
            context_window=context_window,
            compaction_count=compaction_count,
            agent=agent,
            read_only=read_only,
            today=day,
        ),
    )
    output(result, as_json, _render.flush_lines)
    if not result.should_flush:
        raise typer.Exit(1)


@app.command("compact-check")
def compact_check(
    ctx: typer.Context,
    tokens: TokensOpt,
    context_window: WindowOpt,
    as_json: JsonOpt = False,
) -> None:
    """Say whether to compact the conversation now (exit 0) or not (exit 1), and by how much."""
    result = _call(ctx, lambda c: c.compact_check(tokens, context_window=context_window))
    output(result, as_json, _render.compact_check_lines)
    if result.action != "compact":
        raise typer.Exit(1)


# ---------------------------------------------------------------- session end and tasks


@app.command("session-end")
def session_end(
    ctx: typer.Context,
    request: Annotated[
        str | None, typer.Option("--request", help="What the user asked for in this session.")
    ] = None,
    learned: Annotated[
        list[str] | None, typer.Option("--learned", help="Something learned (repeatable).")
    ] = None,
    completed: Annotated[
        list[str] | None,
        typer.Option(
            "--completed", help="Something done (repeatable); an open task of that text is closed."
        ),
    ] = None,
    next_steps: Annotated[
        list[str] | None,
        typer.Option("--next", help="A next step (repeatable); becomes an open task."),
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="The agent's name.")] = None,
    session: Annotated[str | None, typer.Option("--session", help="The session id.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Journal the session in today's daily file; next steps become open tasks."""
    if request is None and not (learned or completed or next_steps):
        fail("nothing to record: give --request, --learned, --completed or --next", 2)
    result = _call(
        ctx,
        lambda c: c.session_end(
            request=request,
            learned=learned or (),
            completed=completed or (),
            next_steps=next_steps or (),
            agent=agent,
            session=session,
        ),
    )
    output(result, as_json, _render.session_end_lines)


tasks_app = typer.Typer(
    help="List and update the tasks in memory/TASKS.md (default: list the open ones).",
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(tasks_app, name="tasks")

TaskRefs = Annotated[list[str], typer.Argument(help="Task ids or texts (exact, or a unique part).")]


@tasks_app.callback(invoke_without_command=True)
def tasks_list(
    ctx: typer.Context,
    show_all: Annotated[bool, typer.Option("--all", help="Open and done tasks.")] = False,
    show_done: Annotated[bool, typer.Option("--done", help="Only the done tasks.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List the open tasks: `id  [ ] text  (added DATE)` each."""
    if ctx.invoked_subcommand is not None:
        return
    status: TaskStatus = "all" if show_all else "done" if show_done else "open"
    result = _call(ctx, lambda c: c.tasks("list", status=status))
    output(result, as_json, lambda r: _render.tasks_lines(r, status))


def _change_tasks(
    ctx: typer.Context, action: TaskAction, refs: list[str], as_json: bool
) -> TasksResult:
    result = _call(ctx, lambda c: c.tasks(action, refs))
    output(result, as_json, lambda r: _render.tasks_lines(r, "open"))
    return result


@tasks_app.command("add", cls=TextCommand)
def tasks_add(
    ctx: typer.Context,
    texts: Annotated[list[str], typer.Argument(help="The new tasks, one argument each.")],
    as_json: JsonOpt = False,
) -> None:
    """Add open tasks, one quoted argument each (one already open is not added twice)."""
    if len(texts) > 1 and any(_one_word(text) for text in texts):
        # `tasks add Fix the login bug` would otherwise add four tasks.
        joined = shlex.quote(" ".join(texts))
        fail(
            f"ambiguous: {len(texts)} arguments, some of them single words. One task? "
            f"quote it: omem-client tasks add {joined}. Several? quote each one.",
            2,
        )
    _change_tasks(ctx, "add", texts, as_json)


# Han, kana and Hangul: written without spaces, so a phrase is one "word".
_CJK: Final = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
# Chinese is written without spaces, so an argument of two characters or
# more was typed as one, and short tasks are common (买菜, 交房租, 写周报):
# only a lone character is as ambiguous as a lone English word.
_CJK_PHRASE: Final = 2


def _one_word(text: str) -> bool:
    """Whether *text* reads as a single word, not a task."""
    return len(text.split()) < 2 and len(_CJK.findall(text)) < _CJK_PHRASE


@tasks_app.command("done", cls=TextCommand)
def tasks_done(ctx: typer.Context, refs: TaskRefs, as_json: JsonOpt = False) -> None:
    """Mark tasks done, with today's date."""
    _change_tasks(ctx, "done", refs, as_json)


@tasks_app.command("reopen", cls=TextCommand)
def tasks_reopen(ctx: typer.Context, refs: TaskRefs, as_json: JsonOpt = False) -> None:
    """Open done tasks again."""
    _change_tasks(ctx, "reopen", refs, as_json)


@tasks_app.command("remove", cls=TextCommand)
def tasks_remove(ctx: typer.Context, refs: TaskRefs, as_json: JsonOpt = False) -> None:
    """Delete tasks from the file (with their indented lines)."""
    _change_tasks(ctx, "remove", refs, as_json)


@app.command("log", cls=TextCommand)
def log_memory(
    ctx: typer.Context,
    text: Annotated[
        str | None, typer.Argument(help="The memory, one fact; '-' or nothing reads stdin.")
    ] = None,
    memory_type: Annotated[
        str | None,
        typer.Option(
            "--type",
            "-t",
            help="preference, decision, lesson, fact, project or note (default: classified).",
        ),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Swap a conflicting memory's line for this one.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Write despite the quality rules or a conflict (never a secret)."
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say where it would go and why; write nothing.")
    ] = False,
    agent: Annotated[str | None, typer.Option("--agent", help="Who is logging it.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """File one memory: gate, privacy, route to its file and section, dedupe.

    Prints where it went and why. Exit 0 when written, reinforced or
    replaced (or with --dry-run); 1 when rejected or a possible conflict
    left it unwritten.
    """
    body = text_or_stdin(text, "log")
    result = _call(
        ctx,
        lambda c: c.log(
            body,
            type=memory_type,
            replace=replace,
            force=force,
            dry_run=dry_run,
            agent=agent,
        ),
    )
    output(result, as_json, _render.log_lines)
    if result.status in ("rejected", "conflict") and not dry_run:
        raise typer.Exit(1)


@app.command()
def compact(
    ctx: typer.Context,
    session: Annotated[str, typer.Option("--session", help="The session being compacted.")],
    messages: Annotated[
        Path,
        typer.Option(
            "--messages",
            help="JSON list (or JSONL, or {messages: [...]}) of {role, content}; - for stdin.",
        ),
    ] = Path("-"),
    keep_last: Annotated[
        int | None,
        typer.Option(
            "--keep-last", min=0, help="Recent messages kept verbatim (default chat.keep_last, 5)."
        ),
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="The agent it belongs to.")] = None,
    no_flush: Annotated[
        bool, typer.Option("--no-flush", help="Skip the memory flush (capture) before it.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    r"""Summarise all but the last N messages with the daemon's chat model (\[chat]).

    The durable memories in the messages are captured first; the summary goes
    to today's daily file under "## Session Summary" and is printed, with the
    estimated tokens before and after. Without a configured chat model it
    fails (exit 4) and writes nothing.
    """
    raw = read_stdin() if str(messages) == "-" else _read_text(messages)
    parsed = _parse_turns(raw)
    flush = False if no_flush else None
    result = _call(
        ctx, lambda c: c.compact(session, parsed, keep_last=keep_last, agent=agent, flush=flush)
    )
    output(result, as_json, _render.compact_lines)
