"""`openmemoryd init --cursor`: the MCP bridge registered in Cursor's mcp.json.

The entry is checked the way Cursor uses it: the command and arguments it
holds are started as an MCP server by the official SDK's stdio client, against
a real daemon, and must list the memory tools.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from conftest import Daemon, Env
from openmemoryd.errors import ConfigError
from openmemoryd.wizard.mcp_hosts import McpEntry, bridge_command, register

ENTRY = McpEntry("/opt/bin/omem-client", ("--socket", "/run/x.sock", "mcp"))


def home(env: Env) -> Path:
    path = env.root / "home"
    path.mkdir(exist_ok=True)
    return path


def init(env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    """`openmemoryd init ARGS` without a terminal, with its own home directory."""
    return subprocess.run(
        [sys.executable, "-m", "openmemoryd", "init", *args],
        env={**env.vars, "HOME": str(home(env))},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# ---------------------------------------------------------------- the file


def test_a_new_file_gets_the_entry_and_is_private(tmp_path: Path) -> None:
    path = tmp_path / ".cursor" / "mcp.json"
    assert register(path, ENTRY) == "added"
    assert json.loads(path.read_text()) == {
        "mcpServers": {
            "openmemory": {
                "command": "/opt/bin/omem-client",
                "args": ["--socket", "/run/x.sock", "mcp"],
            }
        }
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not path.with_name("mcp.json.bak").exists()


def test_other_servers_and_keys_are_kept_and_the_old_file_saved(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    before = {
        "mcpServers": {"github": {"command": "gh-mcp", "env": {"TOKEN": "t"}}},
        "other": [1, 2],
    }
    path.write_text(json.dumps(before))
    path.chmod(0o644)
    assert register(path, ENTRY) == "added"
    after = json.loads(path.read_text())
    assert after["other"] == [1, 2]
    assert after["mcpServers"]["github"] == before["mcpServers"]["github"]
    assert list(after["mcpServers"]) == ["github", "openmemory"]
    assert json.loads(path.with_name("mcp.json.bak").read_text()) == before
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # its mode kept


def test_the_same_entry_twice_changes_nothing_and_a_new_one_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    register(path, ENTRY)
    written = path.read_bytes()
    assert register(path, ENTRY) == "unchanged"
    assert path.read_bytes() == written
    other = McpEntry("/usr/bin/omem-client", ("mcp", "--profile", "workany"))
    assert register(path, other) == "updated"
    assert json.loads(path.read_text())["mcpServers"]["openmemory"]["args"] == [
        "mcp",
        "--profile",
        "workany",
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"mcpServers": []}', '"mcpServers"'),
    ],
)
def test_a_file_it_cannot_understand_is_left_alone(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        register(path, ENTRY)
    assert path.read_text() == content
    assert not path.with_name("mcp.json.bak").exists()


def test_the_command_is_this_installs_omem_client_by_its_full_path(tmp_path: Path) -> None:
    entry = bridge_command(socket=tmp_path / "d.sock", profile="openclaw-memory")
    assert os.path.isabs(entry.command)
    assert entry.command == str(Path(sys.executable).parent / "omem-client")
    assert entry.args == (
        "--socket",
        str(tmp_path / "d.sock"),
        "mcp",
        "--profile",
        "openclaw-memory",
    )


# ---------------------------------------------------------------- through init


def test_init_without_the_flag_never_touches_cursor(env: Env) -> None:
    (home(env) / ".cursor").mkdir()
    done = init(env, "--yes")
    assert done.returncode == 0, done.stderr
    assert not (home(env) / ".cursor" / "mcp.json").exists()


def test_a_bad_profile_is_refused_before_anything_is_written(env: Env) -> None:
    env.config_file.unlink()
    done = init(env, "--yes", "--cursor", "--mcp-profile", "nosuch")
    assert done.returncode == 2
    assert "openclaw-memory" in done.stderr  # the valid ones are listed
    assert not env.config_file.exists()
    assert not (home(env) / ".cursor").exists()


@pytest.mark.e2e
async def test_the_entry_init_writes_starts_a_bridge_cursor_can_use(env: Env) -> None:
    done = init(env, "--yes", "--cursor", "--mcp-profile", "openclaw-memory")
    assert done.returncode == 0, done.stderr
    path = home(env) / ".cursor" / "mcp.json"
    assert f"Added Cursor's MCP servers: {path}" in done.stdout
    entry = json.loads(path.read_text())["mcpServers"]["openmemory"]
    assert entry["args"] == ["--socket", str(env.socket), "mcp", "--profile", "openclaw-memory"]
    assert (
        "Already in Cursor's MCP servers"
        in init(env, "--yes", "--cursor", "--mcp-profile", "openclaw-memory").stdout
    )

    daemon = Daemon(env).start()
    try:
        # As Cursor starts it: the command and args from the file, an
        # environment without our variables (the socket is in the args).
        bare = {k: v for k, v in env.vars.items() if not k.startswith("OPENMEMORY_")}
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=bare)
        with (env.root / "bridge.log").open("a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = {tool.name for tool in (await session.list_tools()).tools}
                result = await session.call_tool(
                    "memory_log", {"content": "I prefer tabs to spaces"}
                )
    finally:
        daemon.stop()
    assert {"memory_primer", "memory_search", "memory_log", "memory_read"} <= tools
    assert not result.is_error, result
