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
import time
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer

from omem_client import _render
from omem_client._cli_base import (
    JsonOpt,
    TextCommand,
    _call,
    _known_scope,
    _known_sources,
    app,
)
from omem_client._cli_io import (
    EXIT_DAEMON_ERROR,
    EXIT_UNREACHABLE,
    Options,
    append_command,
    command_output,
    fail,
    get_command,
    json_errors,
    output,
    print_error,
    print_json,
    search_command,
    status_command,
)
from omem_protocol import KNOWN_SOURCES, MAX_LIMIT, MCP_PROFILES, Progress


@app.command(cls=TextCommand)
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
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens",
            min=1,
            max=1_000_000,
            help="Fit the answer in this many tokens: the best hits whole, later ones "
            "as their best line.",
        ),
    ] = None,
    scope: Annotated[
        str | None,
        typer.Option(
            "--scope",
            callback=_known_scope,
            help="project: this workspace (default); global: the daemon's global one; all: both.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Search memory; prints `score path:start-end · section` and the snippet for each result."""
    search_command(
        ctx.obj,
        " ".join(query),
        limit=limit,
        min_score=min_score,
        sources=source,
        agent=agent,
        fresh=fresh,
        explain=explain,
        max_tokens=max_tokens,
        scope=scope,  # type: ignore[arg-type]  # checked by _known_scope
        as_json=as_json,
    )


@app.command()
def get(
    ctx: typer.Context,
    path: Annotated[
        str,
        typer.Argument(
            help="Memory file, e.g. MEMORY.md or memory/2026-11-22.md; or a hit's place, "
            "memory/2026-11-22.md:5-7 or #L5-L7, for those lines."
        ),
    ],
    from_line: Annotated[
        int | None, typer.Option("--from", min=1, help="First line (1-based).")
    ] = None,
    lines: Annotated[int | None, typer.Option("--lines", min=1, help="How many lines.")] = None,
    to_line: Annotated[
        int | None, typer.Option("--to", min=1, help="Last line (instead of --lines).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a memory file, or some of its lines."""
    get_command(ctx.obj, path, from_line=from_line, lines=lines, to_line=to_line, as_json=as_json)


@app.command(cls=TextCommand)
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
    append_command(ctx.obj, text, path=path, as_json=as_json)


@app.command()
def status(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Show the daemon, the workspace, the index and any problems."""
    status_command(ctx.obj, as_json=as_json)


@app.command()
def sync(
    ctx: typer.Context,
    full: Annotated[
        bool, typer.Option("--full", help="Re-chunk every file, even unchanged ones.")
    ] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="Then wait until every chunk has its vector (progress on a terminal)."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Bring the index up to date with the Markdown files now."""
    bar = _render.ProgressBar(enabled=sys.stderr.isatty() and not as_json)
    result = _call(ctx, lambda c: c.sync(full=full, on_progress=bar.update))
    bar.finish()
    output(result, as_json, _render.sync_lines)
    if wait:
        _wait_for_vectors(ctx, quiet=as_json)


def _wait_for_vectors(ctx: typer.Context, *, quiet: bool) -> None:
    """Poll status until the embedder has every chunk (exit 1 if it is failing)."""
    bar = _render.ProgressBar(enabled=sys.stderr.isatty() and not quiet)
    while True:
        emb = _call(ctx, lambda c: c.status()).embedding
        if emb is None or emb.state == "off":
            break
        bar.update(Progress(id=0, done=emb.embedded, total=emb.total, phase="embedded"))
        if emb.state == "failing":
            bar.finish()
            fail(f"the embedder is failing: {emb.last_error or 'unknown error'}", 1)
        if emb.state == "idle" and emb.embedded >= emb.total:
            break
        time.sleep(0.5)
    bar.finish()
    if not quiet:
        on = emb is not None and emb.state != "off"
        typer.echo(
            "Vectors: every chunk embedded." if on else "Vectors: off (keyword search only)."
        )


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
    output(result, as_json, _render.restore_lines)


# The tool profiles of `_mcp_profiles`, named here so that a wrong name is
# refused without importing the MCP SDK (tests check that the two agree).


@app.command()
def mcp(
    ctx: typer.Context,
    profile: Annotated[
        str,
        typer.Option(
            "--profile",
            help="Which tools to offer: openmemory (ours), openclaw (memory_search, "
            "memory_get, memory_store, memory_recall, memory_forget), workany "
            "(memory_search, memory_save, memory_read) or openclaw-memory (memory_primer, "
            "memory_search with scope and max_tokens, memory_log, memory_session_end, "
            "memory_update_tasks, memory_read).",
        ),
    ] = "openmemory",
) -> None:
    """Serve the memory tools to an MCP host (Claude Code, Cursor, …) over stdin/stdout."""
    options: Options = ctx.obj
    if profile not in MCP_PROFILES:
        fail(f"unknown profile {profile!r}; choose one of: {', '.join(MCP_PROFILES)}", 2)
    try:
        # Imported here: the MCP SDK is an optional extra and slow to import.
        from omem_client import mcp_bridge
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != "mcp":
            raise
        fail("install the MCP extra: pip install -e '.[mcp]' in your openmemoryd clone", 2)
    mcp_bridge.run(options.socket, options.timeout, options.workspace, profile)


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
        print_json(result)
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
        fail("refusing to write a binary archive to a terminal; redirect stdout", 2)
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


@app.command()
def doctor(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Check the running daemon from inside: config, workspace, index, embedder, watcher.

    Exit 1 when a check failed (warnings do not count), 3 when no daemon answers:
    `openmemoryd doctor` then checks without one.
    """
    result = _call(ctx, lambda c: c.doctor())
    output(result, as_json, _render.doctor_lines)
    if not result.ok:
        raise typer.Exit(1)


# The agent commands register after the ones above, so `--help` lists memory
# commands first.
from omem_client import _cli_agent  # noqa: E402, F401


def _with_command_output(commands: typer.Typer) -> None:
    """Run the body of every command of *commands* (and of its groups, as
    `tasks`) inside `command_output`: its stdout escaped on a terminal, a
    reader that stops early no error. Done here, to every registered
    callback, so that commands printing with ``typer.echo`` are covered as
    those printing through `_cli_io`; wrapping the bodies rather than the
    whole app leaves typer's own output (help in colour, usage errors) as
    it was. `mcp` is left alone: its stdout is the MCP SDK's protocol stream.
    """
    infos = [*commands.registered_commands, commands.registered_callback]
    for info in infos:
        if info is not None and info.callback is not None and info.callback is not mcp:
            info.callback = command_output(info.callback)
    for group in commands.registered_groups:
        if group.typer_instance is not None:
            _with_command_output(group.typer_instance)


_with_command_output(app)

__all__ = ["EXIT_DAEMON_ERROR", "EXIT_UNREACHABLE", "app", "json_after_command", "main"]


def json_after_command(argv: list[str]) -> list[str]:
    """*argv* with a ``--json`` written among the global options (``omem-client
    --json append …``) moved to just after the command (``append --json …``,
    ``tasks done --json …``), where the command takes it.

    Every command but ``mcp`` has ``--json`` and no global option takes it,
    so before the command it can mean only that; click said "No such option:
    --json (Possible options: --version)". Only the tokens before the
    command are looked at (a global option's value is skipped), so a
    ``--json`` in a note's text or after ``--`` stays where it is.
    """
    # typer's own click: its classes are not the click package's, so read by shape
    group: Any = typer.main.get_command(app)
    takes_value = {
        name
        for param in group.params
        if param.param_type_name == "option" and not param.is_flag
        for name in param.opts
    }
    before: list[str] = []
    moved = False
    at = 0
    while at < len(argv) and argv[at].startswith("-") and argv[at] != "--":
        token = argv[at]
        at += 1
        if token == "--json":
            moved = True
            continue
        before.append(token)
        if token in takes_value and at < len(argv):
            before.append(argv[at])
            at += 1
    if not moved or at == len(argv) or argv[at] == "--":
        return argv  # no command to move it to: click says what is wrong
    command, end = group, at
    while end < len(argv) and argv[end] in getattr(command, "commands", {}):  # a group's
        command, end = command.commands[argv[end]], end + 1
    return [*before, *argv[at:end], "--json", *argv[end:]]


def main() -> None:
    """Console-script entry point."""
    sys.argv[1:] = json_after_command(sys.argv[1:])
    if not json_errors():
        app()
        return
    # Under --json, usage errors (a bad option, a missing argument) are JSON
    # objects like every other error, with the same exit code (2).
    try:
        code = app(standalone_mode=False)
    except typer.TyperException as exc:
        exit_code = getattr(exc, "exit_code", 1)
        print_error("usage" if exit_code == 2 else "error", exc.format_message(), None)
        sys.exit(exit_code)
    except typer.Abort:
        print_error("aborted", "aborted", None)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
