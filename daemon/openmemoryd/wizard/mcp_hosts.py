"""Registering the MCP bridge with an MCP host: Cursor's ``mcp.json``.

`openmemoryd init --cursor` (or "yes" to init's question when Cursor is
installed) adds an ``openmemory`` server to ``~/.cursor/mcp.json``, the file
Cursor reads its MCP servers from, so an agent in Cursor gets the memory
tools without anyone editing JSON by hand:

    {"mcpServers": {"openmemory": {"command": "/…/omem-client", "args": ["mcp"]}}}

The rest of the file is the user's and is kept as it was: other servers, other
keys, their order. An entry already named ``openmemory`` is replaced only when
it differs; the previous file is then saved next to it as ``mcp.json.bak``.
A file that is not a JSON object, or whose ``mcpServers`` is not one, is left
untouched and reported (a `ConfigError` saying which file and what to fix):
overwriting it would lose the user's other servers.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from openmemoryd.errors import ConfigError
from openmemoryd.memory.durable import replace_file

__all__ = ["SERVER_NAME", "McpEntry", "bridge_command", "cursor_config_path", "register"]

SERVER_NAME: Final = "openmemory"

Outcome = Literal["added", "updated", "unchanged"]


@dataclass(frozen=True, slots=True)
class McpEntry:
    """How a host starts the bridge: the command and its arguments."""

    command: str
    args: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        return {"command": self.command, "args": list(self.args)}

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]


def cursor_config_path(home: Path | None = None) -> Path:
    """Cursor's global MCP configuration file."""
    return (home or Path.home()) / ".cursor" / "mcp.json"


def bridge_command(
    *, socket: Path | None = None, profile: str | None = None, python: str = sys.executable
) -> McpEntry:
    """The bridge as a host should start it: ``omem-client`` by its full
    path (hosts start servers without the user's shell PATH), found next to
    this Python (the same install) or else on PATH; a socket that is not the
    default and a tool profile are passed along."""
    beside = Path(python).parent / "omem-client"
    command = str(beside) if os.access(beside, os.X_OK) else shutil.which("omem-client")
    args: list[str] = []
    if socket is not None:
        args += ["--socket", str(socket)]
    args.append("mcp")
    if profile is not None:
        args += ["--profile", profile]
    return McpEntry(command or "omem-client", tuple(args))


def register(path: Path, entry: McpEntry) -> Outcome:
    """Add or update the ``openmemory`` server in the MCP config at *path*."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raw = None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    document: dict[str, object] = {}
    if raw is not None and raw.strip():
        try:
            loaded = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{path} is not valid JSON ({exc}); fix it or move it aside, then run init again"
            ) from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path} is not a JSON object; fix it, then run init again")
        document = loaded
    servers = document.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f'"mcpServers" in {path} is not an object; fix it, then run init again')
    wanted = entry.as_json()
    if servers.get(SERVER_NAME) == wanted:
        return "unchanged"
    outcome: Outcome = "updated" if SERVER_NAME in servers else "added"
    servers[SERVER_NAME] = wanted
    data = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        # A new file is private (hosts keep API keys in their servers' env);
        # an existing one keeps its mode.
        mode = path.stat().st_mode & 0o777 if raw is not None else 0o600
        path.parent.mkdir(parents=True, exist_ok=True)
        if raw is not None:
            replace_file(path.with_name(path.name + ".bak"), raw, mode=mode, tag="init")
        replace_file(path, data, mode=mode, tag="init")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
    return outcome
