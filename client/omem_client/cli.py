"""The ``omem-client`` command.

Exit codes (stable; scripts rely on them):

* 0 success, including a search with no results;
* 2 usage error (bad flags or arguments);
* 3 the daemon is not reachable (the message says how to start it);
* 4 the daemon answered with an error (the message is the daemon's).

Human output goes to stdout, remarks (why a search is empty, progress) to
stderr; ``--json`` prints the daemon's reply as one JSON object instead.
No traceback is ever shown for an expected failure.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated, NoReturn, TypeVar

import msgspec
import typer

from omem_client import _render
from omem_client._client import DEFAULT_TIMEOUT, Client
from omem_client._errors import ConnectError, DaemonError, OmemError, ProtocolViolation
from omem_client._requests import TaskAction, TaskStatus
from omem_protocol import KNOWN_SOURCES, MAX_LIMIT, Msg, TasksResult, __version__

EXIT_UNREACHABLE = 3
EXIT_DAEMON_ERROR = 4

T = TypeVar("T")
R = TypeVar("R", bound=Msg)

app = typer.Typer(
    name="omem-client",
    help="Talk to openmemoryd: search, read and append memory, check status.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # -h as well as --help, on every command (typer only knows --help).
    context_settings={"help_option_names": ["-h", "--help"]},
)


@dataclass(frozen=True, slots=True)
class Options:
    socket: Path | None
    timeout: float
    workspace: str | None = None


JsonOpt = Annotated[bool, typer.Option("--json", help="Print the reply as JSON.")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"omem-client {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    ctx: typer.Context,
    socket: Annotated[
        Path | None,
        typer.Option(
            "--socket", help="Daemon socket (default: $OPENMEMORY_SOCKET, config, runtime dir)."
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, help="Seconds to wait for the daemon.")
    ] = DEFAULT_TIMEOUT,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace", "-w", help="Which of the daemon's workspaces (default: default)."
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Client for the openmemory daemon."""
    ctx.obj = Options(socket=socket, timeout=timeout, workspace=workspace)


def _call(ctx: typer.Context, action: Callable[[Client], T]) -> T:
    options: Options = ctx.obj
    try:
        with Client(options.socket, timeout=options.timeout, workspace=options.workspace) as client:
            return action(client)
    except DaemonError as exc:
        _fail(f"error ({exc.code}): {exc}", EXIT_DAEMON_ERROR, error=exc.code, plain=str(exc))
    except ConnectError as exc:
        _fail(str(exc), EXIT_UNREACHABLE, error="unreachable", hint=START_HINT)
    except ProtocolViolation as exc:
        _fail(str(exc), EXIT_DAEMON_ERROR, error="protocol")
    except OmemError as exc:
        _fail(str(exc), EXIT_DAEMON_ERROR, error="client")


START_HINT = "start the daemon: openmemoryd run (or systemctl --user start openmemoryd)"


def _json_errors() -> bool:
    """Whether this run asked for JSON (then errors are JSON too, on stdout).

    Read from the command line because errors are raised before, or outside,
    the command that parsed ``--json``; no option takes a value that could
    be the literal ``--json``.
    """
    return "--json" in sys.argv[1:]


def _print_error(code: str, message: str, hint: str | None) -> None:
    error = {"error": {"code": code, "message": message, "hint": hint}}
    sys.stdout.write(msgspec.json.encode(error).decode("utf-8") + "\n")


def _fail(
    message: str,
    code: int,
    *,
    error: str | None = None,
    hint: str | None = None,
    plain: str | None = None,
) -> NoReturn:
    """Exit with *code*: *message* on stderr, or under ``--json`` an object
    ``{"error": {"code", "message", "hint"}}`` on stdout (*plain* is the
    message without the code already in it)."""
    if _json_errors():
        _print_error(error or ("usage" if code == 2 else "error"), plain or message, hint)
    else:
        typer.echo(f"omem-client: {message}", err=True)
    raise typer.Exit(code)


def _print_json(result: Msg) -> None:
    sys.stdout.write(msgspec.json.encode(result).decode("utf-8") + "\n")


def _output(result: R, as_json: bool, render: Callable[[R], list[str]]) -> None:
    """The reply as JSON, or as the lines *render* makes of it."""
    if as_json:
        _print_json(result)
    else:
        _print_lines(render(result))


def _print_lines(lines: list[str], *, err: bool = False) -> None:
    for line in lines:
        typer.echo(line, err=err)


def _known_sources(values: list[str] | None) -> list[str] | None:
    """Reject a source the daemon does not have (exit 2, naming the valid ones)."""
    for value in values or ():
        if value not in KNOWN_SOURCES:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(KNOWN_SOURCES)}")
    return values


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[
        list[str], typer.Argument(help="What to look for (words are joined with spaces).")
    ],
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", min=1, max=MAX_LIMIT, help="Maximum results (default 6)."),
    ] = None,
    min_score: Annotated[
        float | None,
        typer.Option("--min-score", min=0.0, max=1.0, help="Only results scoring at least this."),
    ] = None,
    source: Annotated[
        list[str] | None,
        typer.Option(
            "--source",
            help=f"Only this source (repeatable): {', '.join(KNOWN_SOURCES)}.",
            callback=_known_sources,
        ),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only this agent's session transcripts.")
    ] = None,
    fresh: Annotated[
        bool,
        typer.Option("--fresh", help="First wait until every change already made is indexed."),
    ] = False,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Show each result's vector, text, decay and MMR parts."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Search memory; prints `score path:start-end` and the snippet for each result."""
    text = " ".join(query)
    result = _call(
        ctx,
        lambda c: c.search(
            text,
            limit=limit,
            min_score=min_score,
            sources=source or None,
            agent=agent,
            fresh=fresh,
            explain=explain,
        ),
    )
    if as_json:
        _print_json(result)
        return
    lines = _render.search_lines(result, explain=explain)
    _print_lines(lines or ["No matches."])
    _print_lines(_render.search_notes(result), err=True)


@app.command()
def get(
    ctx: typer.Context,
    path: Annotated[
        str, typer.Argument(help="Memory file, e.g. MEMORY.md or memory/2026-11-22.md.")
    ],
    from_line: Annotated[
        int | None, typer.Option("--from", min=1, help="First line (1-based).")
    ] = None,
    lines: Annotated[int | None, typer.Option("--lines", min=1, help="How many lines.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a memory file, or some of its lines."""
    result = _call(ctx, lambda c: c.get(path, from_line=from_line, lines=lines))
    if as_json:
        _print_json(result)
        return
    if result.text:
        sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")


@app.command()
def append(
    ctx: typer.Context,
    text: Annotated[
        str | None, typer.Argument(help="Text to append; '-' or nothing reads stdin.")
    ] = None,
    path: Annotated[
        str | None,
        typer.Option("--path", help="Memory file to append to (default: today's daily file)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Append a note to memory; it is searchable as soon as this returns."""
    body = _text_or_stdin(text, "append")
    result = _call(ctx, lambda c: c.append(body, path=path))
    if as_json:
        _print_json(result)
        return
    typer.echo(_render.append_line(result))


@app.command()
def status(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Show the daemon, the workspace, the index and any problems."""
    result = _call(ctx, lambda c: c.status())
    _output(result, as_json, _render.status_lines)


@app.command()
def sync(
    ctx: typer.Context,
    full: Annotated[
        bool, typer.Option("--full", help="Re-chunk every file, even unchanged ones.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Bring the index up to date with the Markdown files now."""
    bar = _render.ProgressBar(enabled=sys.stderr.isatty() and not as_json)
    result = _call(ctx, lambda c: c.sync(full=full, on_progress=bar.update))
    bar.finish()
    _output(result, as_json, _render.sync_lines)


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
    raw = sys.stdin.read() if str(messages) == "-" else _read_text(messages)
    turns = _parse_turns(raw)
    result = _call(ctx, lambda c: c.log_turns(agent, session, turns))
    if as_json:
        _print_json(result)
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
        _print_json(result)
        return
    typer.echo(f"{result.agent}: {result.transcripts} transcript(s), {result.chunks} new chunk(s)")


@app.command()
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
        _print_json(result)
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
    raw = sys.stdin.read() if str(messages) == "-" else _read_text(messages)
    parsed = _parse_turns(raw)
    result = _call(ctx, lambda c: c.capture(parsed, max_captures=max_captures))
    _output(result, as_json, _render.capture_lines)


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
        _fail("give exactly one of: a citation, --text or --query", 2)
    result = _call(
        ctx, lambda c: c.forget(citation=citation, text=text, query=query, all=all_matches)
    )
    _output(result, as_json, _render.forget_lines)
    if not result.removed:
        raise typer.Exit(1)


@app.command()
def restore(
    ctx: typer.Context,
    path: Annotated[
        str | None, typer.Argument(help="Only this file (default: every journalled file).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be re-added; change nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Re-add acknowledged appends an external rewrite removed (see `status`)."""
    result = _call(ctx, lambda c: c.restore(path, dry_run=dry_run))
    _output(result, as_json, _render.restore_lines)


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
        _print_json(result)
        return
    if result.text:
        typer.echo(result.text)


@app.command("flush-check")
def flush_check(
    ctx: typer.Context,
    session: Annotated[str, typer.Option("--session", help="The agent's session id.")],
    tokens: Annotated[int, typer.Option("--tokens", min=0, help="Tokens the session uses now.")],
    context_window: Annotated[
        int, typer.Option("--context-window", min=1, help="The model's context window.")
    ],
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
    _output(result, as_json, _render.flush_lines)
    if not result.should_flush:
        raise typer.Exit(1)


@app.command()
def mcp(ctx: typer.Context) -> None:
    """Serve the memory tools to an MCP host (Claude Code, Cursor, …) over stdin/stdout."""
    options: Options = ctx.obj
    try:
        # Imported here: the MCP SDK is an optional extra and slow to import.
        from omem_client import mcp_bridge
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != "mcp":
            raise
        _fail("install the MCP extra: pip install -e '.[mcp]' in your openmemoryd clone", 2)
    mcp_bridge.run(options.socket, options.timeout, options.workspace)


@app.command()
def export(
    ctx: typer.Context,
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="The archive to write (.tar.gz); - for stdout."),
    ] = Path("openmemory-export.tar.gz"),
    as_json: JsonOpt = False,
) -> None:
    """Archive the memory's Markdown with a manifest; never the derived index."""
    if str(output) == "-":
        _export_to_stdout(ctx, as_json)
        return
    result = _call(ctx, lambda c: c.export(output))
    if as_json:
        _print_json(result)
        return
    typer.echo(f"Exported {result.files} files ({result.bytes} bytes) to {result.path}")
    for why in result.skipped:
        typer.echo(f"  skipped {why}", err=True)
    typer.echo("Restore or merge it with: openmemoryd import " + shlex.quote(result.path))


def _export_to_stdout(ctx: typer.Context, as_json: bool) -> None:
    """``export -o -``: the daemon writes the archive into a private temporary
    directory (it runs as this user), which is copied to stdout and removed;
    the summary goes to stderr, since stdout holds the archive."""
    if sys.stdout.isatty():
        _fail("refusing to write a binary archive to a terminal; redirect stdout", 2)
    with tempfile.TemporaryDirectory(prefix="omem-export-") as tmp:
        target = Path(tmp) / "export.tar.gz"
        result = _call(ctx, lambda c: c.export(target))
        with target.open("rb") as archive:
            shutil.copyfileobj(archive, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    if as_json:
        typer.echo(msgspec.json.encode(result).decode(), err=True)
    else:
        typer.echo(f"Exported {result.files} files ({result.bytes} bytes) to stdout", err=True)
    for why in result.skipped:
        typer.echo(f"  skipped {why}", err=True)


def _text_or_stdin(text: str | None, verb: str) -> str:
    """The argument, or stdin when it is ``-`` or missing (not from a terminal)."""
    if text is not None and text != "-":
        return text
    if sys.stdin.isatty():
        _fail(f"nothing to {verb}: give the text as an argument or on stdin", 2)
    return sys.stdin.read()


def _parse_date(raw: str | None) -> date | None:
    if raw is None:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        _fail(f"--date must be YYYY-MM-DD, not {raw!r}", 2)


def _read_text(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"cannot read {path}: {exc}", 2)


def _parse_turns(raw: str) -> list[dict[str, object]]:
    """A JSON list of messages, a chat request body ({"messages": [...]}), or JSONL."""
    text = raw.strip()
    parsed: object
    try:
        parsed = msgspec.json.decode(text)
    except msgspec.DecodeError:
        try:
            parsed = [msgspec.json.decode(line) for line in text.splitlines() if line.strip()]
        except msgspec.DecodeError as exc:
            _fail(f"messages are not valid JSON: {exc}", 2)
    if isinstance(parsed, dict):
        found = parsed.get("messages")
        parsed = found if isinstance(found, list) else [parsed]
    if not isinstance(parsed, list) or not parsed or not all(isinstance(t, dict) for t in parsed):
        _fail("messages must be a non-empty list of objects with role and content", 2)
    return parsed


@app.command()
def doctor(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Check the running daemon from inside: config, workspace, index, embedder, watcher.

    Exit 1 when a check failed (warnings do not count), 3 when no daemon answers:
    `openmemoryd doctor` then checks without one.
    """
    result = _call(ctx, lambda c: c.doctor())
    _output(result, as_json, _render.doctor_lines)
    if not result.ok:
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
        _fail("nothing to record: give --request, --learned, --completed or --next", 2)
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
    _output(result, as_json, _render.session_end_lines)


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
    _output(result, as_json, lambda r: _render.tasks_lines(r, status))


def _change_tasks(
    ctx: typer.Context, action: TaskAction, refs: list[str], as_json: bool
) -> TasksResult:
    result = _call(ctx, lambda c: c.tasks(action, refs))
    _output(result, as_json, lambda r: _render.tasks_lines(r, "open"))
    return result


@tasks_app.command("add")
def tasks_add(
    ctx: typer.Context,
    texts: Annotated[list[str], typer.Argument(help="The new tasks, one argument each.")],
    as_json: JsonOpt = False,
) -> None:
    """Add open tasks, one quoted argument each (one already open is not added twice)."""
    if len(texts) > 1 and any(len(text.split()) < 2 for text in texts):
        # `tasks add Fix the login bug` would otherwise add four tasks.
        joined = shlex.quote(" ".join(texts))
        _fail(
            f"ambiguous: {len(texts)} arguments, some of them single words. One task? "
            f"quote it: omem-client tasks add {joined}. Several? quote each one.",
            2,
        )
    _change_tasks(ctx, "add", texts, as_json)


@tasks_app.command("done")
def tasks_done(ctx: typer.Context, refs: TaskRefs, as_json: JsonOpt = False) -> None:
    """Mark tasks done, with today's date."""
    _change_tasks(ctx, "done", refs, as_json)


@tasks_app.command("reopen")
def tasks_reopen(ctx: typer.Context, refs: TaskRefs, as_json: JsonOpt = False) -> None:
    """Open done tasks again."""
    _change_tasks(ctx, "reopen", refs, as_json)


@tasks_app.command("remove")
def tasks_remove(ctx: typer.Context, refs: TaskRefs, as_json: JsonOpt = False) -> None:
    """Delete tasks from the file (with their indented lines)."""
    _change_tasks(ctx, "remove", refs, as_json)


@app.command("log")
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
    body = _text_or_stdin(text, "log")
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
    _output(result, as_json, _render.log_lines)
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
    """Summarise all but the last N messages with the daemon's chat model ([chat]).

    The durable memories in the messages are captured first; the summary goes
    to today's daily file under "## Session Summary" and is printed, with the
    estimated tokens before and after. Without a configured chat model it
    fails (exit 4) and writes nothing.
    """
    raw = sys.stdin.read() if str(messages) == "-" else _read_text(messages)
    parsed = _parse_turns(raw)
    flush = False if no_flush else None
    result = _call(
        ctx, lambda c: c.compact(session, parsed, keep_last=keep_last, agent=agent, flush=flush)
    )
    _output(result, as_json, _render.compact_lines)


def main() -> None:
    """Console-script entry point."""
    if not _json_errors():
        app()
        return
    # Under --json, usage errors (a bad option, a missing argument) are JSON
    # objects like every other error, with the same exit code (2).
    try:
        code = app(standalone_mode=False)
    except typer.TyperException as exc:
        exit_code = getattr(exc, "exit_code", 1)
        _print_error("usage" if exit_code == 2 else "error", exc.format_message(), None)
        sys.exit(exit_code)
    except typer.Abort:
        _print_error("aborted", "aborted", None)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
