"""`openmemoryd init` and `openmemoryd configure`, end to end.

init: ask (or take the defaults), write the config, create the workspace from
its templates, say where everything is and what to do next. configure: only
the embedding questions, for a config that already works. Both write the
config only when an answer differs from it, and never touch the index: a
running daemon picks the change up when restarted (embedding settings change
the index's fingerprint, which re-embeds in the background).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from omem_protocol import default_config_path
from openmemoryd.config import Config
from openmemoryd.errors import ConfigError
from openmemoryd.server.instance import STATE_LOCK_NAME, InstanceLock
from openmemoryd.wizard.config_file import ConfigUpdate, update_config
from openmemoryd.wizard.mcp_hosts import SERVER_NAME, bridge_command, cursor_config_path, register
from openmemoryd.wizard.prompts import Option, Prompter
from openmemoryd.wizard.questions import (
    EmbeddingAnswers,
    Probe,
    ask_embedding,
    ask_workspace,
    home_relative,
)
from openmemoryd.workspace import init_workspace

Echo = Callable[[str], None]
RULE = "─" * 22


@dataclass(frozen=True, slots=True)
class Preset:
    """Answers given as flags, which skip their questions."""

    provider: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class McpHosts:
    """Which MCP hosts init registers the bridge with.

    ``cursor``: True registers it in Cursor's ``mcp.json``, False does not,
    None asks a person at the terminal when Cursor is installed (its
    ``~/.cursor`` exists) and otherwise does nothing: a script gets it only by
    asking for it. ``profile`` is the bridge's tool profile (`omem-client mcp
    --profile`), None for ours.
    """

    cursor: bool | None = None
    profile: str | None = None
    home: Path | None = None  # tests point it elsewhere


def run_init(
    config: Config,
    prompter: Prompter,
    echo: Echo,
    *,
    interactive: bool,
    preset: Preset,
    environ: Mapping[str, str],
    probe: Probe | None = None,
    hosts: McpHosts | None = None,
) -> None:
    """Ask, write the config, create the workspace, register the MCP bridge
    with the hosts asked for, print the next steps.

    Without a person at the terminal the config is written only if there is
    none yet (the defaults, so the next `openmemoryd run` finds the same
    workspace) or flags asked for a change: a script re-running init must not
    rewrite a config someone edited by hand.
    """
    config_path = config.config_path or default_config_path(environ)
    if interactive:
        prompter.say(f"openmemory init\n{RULE}")
    workspace = ask_workspace(prompter, config.workspace)
    answers = ask_embedding(
        prompter,
        config.embedding,
        environ,
        provider=preset.provider,
        model=preset.model,
        probe=probe,
    )
    update: ConfigUpdate | None = None
    if interactive or config.config_path is None or preset != Preset():
        update = update_config(
            config_path,
            workspace=home_relative(workspace)
            if workspace != config.workspace or not config.config_path
            else None,
            embedding=answers,
        )
    echo("Creating workspace...")
    try:
        created = init_workspace(workspace)
    except OSError as exc:
        raise ConfigError(f"cannot create {workspace}: {exc.strerror}") from None
    for item in created:
        echo(f"  ✓ Created {item}")
    if not created:
        echo("  nothing to create: the workspace is complete")
    _register_cursor(config, prompter, echo, interactive, hosts or McpHosts())
    echo(RULE)
    echo("openmemory initialized" if created else "openmemory is set up")
    echo("")
    echo(f"Workspace: {workspace}")
    echo(f"Config:    {_config_line(config_path, update)}")
    echo(f"Index:     {config.index_path}")
    echo(f"Socket:    {config.socket}")
    echo(f"Embedding: {_describe(answers)}")
    _notes(echo, answers)
    echo("")
    echo("Next steps:")
    if _daemon_running(config):
        echo("  a daemon is already running: restart it to use these settings")
        echo("  (systemctl --user restart openmemoryd, or stop and start `openmemoryd run`)")
    else:
        echo("  openmemoryd run                   # start the daemon in this terminal")
        echo("  openmemoryd install-service       # or run it as a user service")
    echo("  omem-client status                # check it")
    echo('  omem-client search "…"            # search your memory')


def run_configure(
    config: Config,
    prompter: Prompter,
    echo: Echo,
    *,
    preset: Preset,
    environ: Mapping[str, str],
    probe: Probe | None = None,
) -> None:
    """Re-ask the embedding questions and update only ``[embedding]``."""
    config_path = config.config_path or default_config_path(environ)
    answers = ask_embedding(
        prompter,
        config.embedding,
        environ,
        provider=preset.provider,
        model=preset.model,
        probe=probe,
    )
    update = update_config(config_path, embedding=answers)
    echo(f"Config:    {_config_line(config_path, update)}")
    echo(f"Embedding: {_describe(answers)}")
    _notes(echo, answers)
    if update.changed and _daemon_running(config):
        echo("Restart the daemon to use it (systemctl --user restart openmemoryd);")
        echo("the index re-embeds in the background, keyword search keeps working.")


def _register_cursor(
    config: Config, prompter: Prompter, echo: Echo, interactive: bool, hosts: McpHosts
) -> None:
    """Add the bridge to Cursor's MCP servers, if asked to (see `McpHosts`)."""
    path = cursor_config_path(hosts.home)
    wanted = hosts.cursor
    if wanted is None and interactive and path.parent.is_dir():
        answer = prompter.choose(
            f"Add openmemory to Cursor's MCP servers ({home_relative(path)})?",
            [Option("yes", "yes, Cursor's agents get the memory tools"), Option("no", "no")],
            "yes",
        )
        wanted = answer == "yes"
    if not wanted:
        return
    entry = bridge_command(socket=config.socket, profile=hosts.profile)
    outcome = register(path, entry)
    said = {"added": "Added", "updated": "Updated", "unchanged": "Already in"}[outcome]
    echo(f"  ✓ {said} Cursor's MCP servers: {path} ({SERVER_NAME}: {shlex.join(entry.argv)})")


def _config_line(path: Path, update: ConfigUpdate | None) -> str:
    if update is None:
        return f"{path} (kept as it is)"
    if update.created:
        return f"{path} (created)"
    if update.changed:
        return f"{path} (updated; the previous one is {update.backup})"
    return f"{path} (unchanged)"


def _describe(answers: EmbeddingAnswers) -> str:
    match answers.provider:
        case "none":
            return "none (keyword search only)"
        case "auto":
            return "auto (the bundled local model, else a remote API whose key is set)"
        case "local":
            return f"local ({answers.model or 'multilingual-e5-small, the default'})"
    where = f" at {answers.base_url}" if answers.base_url else ""
    return f"{answers.provider} ({answers.model}{where})"


def _notes(echo: Echo, answers: EmbeddingAnswers) -> None:
    for note in answers.notes:
        echo(f"  ! {note}")


def _daemon_running(config: Config) -> bool:
    return InstanceLock(config.state_dir / STATE_LOCK_NAME, "").held()
