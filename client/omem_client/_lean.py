"""The lean path: ``omem-client search|get|append|status`` without typer.

Shell scripts call these commands in loops, and importing typer (with click
and its helpers) costs more than the daemon takes to answer. A command line
that `_lean_args.parse` accepts (one of these commands, every option well
formed) runs here, through the same command bodies as the full CLI
(`_cli_io`); anything else (help, completion, another command, a misspelt or
out-of-range option) goes to the full CLI, errors included. So the lean path
never decides what is an error: it only skips the framework for command
lines the framework would accept.
"""

from __future__ import annotations

from pathlib import Path

from omem_client._cli_io import (
    Options,
    append_command,
    get_command,
    search_command,
    status_command,
)
from omem_client._client import DEFAULT_TIMEOUT
from omem_client._lean_args import Plan


def run(plan: Plan) -> None:
    """Run a parsed lean command line; exits (``SystemExit``) as the full CLI
    would on a daemon or connection error."""
    socket = plan.shared.get("socket")
    options = Options(
        socket=Path(socket) if socket is not None else None,
        timeout=plan.shared.get("timeout", DEFAULT_TIMEOUT),
        workspace=plan.shared.get("workspace"),
    )
    words, given = plan.words, plan.given
    if plan.command == "search":
        search_command(options, " ".join(words), **given)
    elif plan.command == "get":
        get_command(options, words[0], **given)
    elif plan.command == "append":
        append_command(options, words[0] if words else None, **given)
    else:
        status_command(options, **given)
