"""`omem-client mcp` driven by a real MCP client over stdio, against the real daemon.

Each test spawns the bridge as an MCP host would (``python -m omem_client
mcp`` with the test's environment) and talks to it through the SDK's own
`ClientSession`, so what is checked is what Claude Code or Cursor would see:
the tool list, the text the model reads, the structured result, and errors
that arrive as ``isError`` results while the bridge keeps serving.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from conftest import Daemon, Env
from omem_client.cli import app

pytestmark = pytest.mark.e2e

TOOLS = {
    "memory_search": ["query"],
    "memory_get": ["path"],
    "memory_append": ["text"],
    "memory_recall": ["query"],
    "memory_capture": ["messages"],
    "memory_forget": [],
    "memory_primer": [],
    "memory_flush_check": ["session", "tokens", "context_window"],
    "memory_session_end": [],
    "memory_tasks": [],
    "memory_update_tasks": ["action", "tasks"],
    "memory_log": ["content"],
    "memory_compact": ["session", "messages"],
    "memory_status": [],
    "memory_compact_check": ["tokens", "context_window"],
}


@asynccontextmanager
async def bridge(
    env: Env, *options: str, mcp_options: tuple[str, ...] = ()
) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with a freshly spawned ``omem-client
    [options] mcp [mcp_options]``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "omem_client", *options, "mcp", *mcp_options],
        env=env.vars,
    )
    with (env.root / "bridge.log").open("a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, /, **arguments: Any) -> types.CallToolResult:
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, types.CallToolResult)
    return result


async def ok(session: ClientSession, tool: str, /, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """The text and structured content of a call that must succeed."""
    result = await call(session, tool, **arguments)
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return text_of(result), result.structured_content


async def failed(session: ClientSession, tool: str, /, **arguments: Any) -> str:
    """The message of a call that must come back as a tool error."""
    result = await call(session, tool, **arguments)
    assert result.is_error, text_of(result)
    return text_of(result)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def today_file(env: Env) -> Path:
    return env.workspace / "memory" / f"{date.today().isoformat()}.md"


# ---------------------------------------------------------------- the tools


async def test_lists_every_tool_with_a_description_and_a_schema(env: Env) -> None:
    # No daemon: a host may start its bridge first, and listing needs none.
    async with bridge(env) as session:
        init = await session.initialize()  # the handshake's answer, kept by the session
        listed = await session.list_tools()
    assert init.server_info.name == "openmemory"
    assert init.instructions is not None
    assert "memory_recall" in init.instructions
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == set(TOOLS)
    for name, required in TOOLS.items():
        tool = tools[name]
        assert tool.description is not None
        assert len(tool.description) > 150, name
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert schema["required"] == required, name
        assert schema["additionalProperties"] is False
        assert "$ref" not in str(schema), "hosts differ in following $ref"
        for field, spec in schema["properties"].items():
            assert spec.get("description"), f"{name}.{field} has no description"
        output = tool.output_schema  # the daemon's reply, as structuredContent
        assert output is not None, name
        assert output["type"] == "object", name
        assert "$ref" not in str(output), name
    assert tools["memory_recall"].description is not None
    assert "before answering" in tools["memory_recall"].description
    assert tools["memory_forget"].annotations is not None
    assert tools["memory_forget"].annotations.destructive_hint is True
    assert tools["memory_search"].annotations is not None
    assert tools["memory_search"].annotations.read_only_hint is True
    assert "<relevant-memories>" in (tools["memory_recall"].description or "")


async def test_append_then_search_and_get(daemon: Daemon) -> None:
    async with bridge(daemon.env) as session:
        text, appended = await ok(
            session, "memory_append", text="The heron colony nests on the west island."
        )
        assert text.startswith(f"Appended to {appended['citation']} (indexed")
        path = appended["path"]
        assert path == f"memory/{date.today().isoformat()}.md"

        text, found = await ok(session, "memory_search", query="heron colony", limit=3)
        hit = found["results"][0]
        assert hit["path"] == path
        assert f"{path}:{hit['start_line']}-{hit['end_line']}" in text.splitlines()[0]
        assert "heron colony nests" in text

        text, got = await ok(
            session, "memory_get", path=path, from_line=appended["start_line"], lines=1
        )
        assert got["text"].strip() == "The heron colony nests on the west island."
        assert text.splitlines()[0].startswith(f"{path} lines {appended['start_line']}-")
        assert "The heron colony nests on the west island." in text
        # the citation the append answered with reads back the same line
        text, got = await ok(session, "memory_get", path=appended["citation"])
        assert got["text"] == "The heron colony nests on the west island."
        assert text.splitlines()[0] == (
            f"{path} lines {appended['start_line']}-{appended['start_line']} "
            f"of {got['total_lines']}:"
        )

        text, none = await ok(session, "memory_search", query="zeppelin", min_score=0.9)
        assert none["results"] == []
        assert text.startswith("No matches.")


async def test_recall_returns_a_relevant_memories_block(daemon: Daemon) -> None:
    async with bridge(daemon.env) as session:
        _, appended = await ok(session, "memory_append", text="Wei prefers oolong tea.")
        text, recalled = await ok(session, "memory_recall", query="what tea does Wei drink")
        assert text.startswith("<relevant-memories>")
        assert text.endswith("</relevant-memories>")
        assert "Wei prefers oolong tea" in text
        memory = recalled["memories"][0]
        assert memory["path"] == appended["path"]
        assert memory["citation"] in text

        text, _ = await ok(session, "memory_recall", query="quantum chromodynamics lattice")
        assert text == "No relevant memories."


async def test_capture_then_search_then_forget(daemon: Daemon) -> None:
    fact = "Remember that I always deploy on Thursdays"
    async with bridge(daemon.env) as session:
        text, captured = await ok(
            session,
            "memory_capture",
            messages=[
                {"role": "user", "content": fact},
                {"role": "assistant", "content": "Noted: you deploy on Thursdays."},
            ],
        )
        (kept,) = captured["captured"]
        assert kept["text"] == fact
        assert text.splitlines()[0] == f"Captured {kept['citation']} [{kept['category']}] {fact}"
        assert "skipped message 2: not_user" in text  # the second, counted from 1
        assert fact in today_file(daemon.env).read_text()

        _, found = await ok(session, "memory_search", query="deploy thursdays")
        assert any(fact in hit["snippet"] for hit in found["results"])

        text, forgotten = await ok(session, "memory_forget", citation=kept["citation"])
        assert forgotten["removed"] == [kept["citation"]]
        assert text == f"Forgot {kept['citation']}: - [{kept['category']}] {fact}"
        assert fact not in today_file(daemon.env).read_text()
        _, after = await ok(session, "memory_search", query="deploy thursdays", min_score=0.01)
        assert not any(fact in hit["snippet"] for hit in after["results"])


async def test_forget_by_a_vague_query_lists_candidates_for_the_model(daemon: Daemon) -> None:
    async with bridge(daemon.env) as session:
        await ok(session, "memory_append", text="the staging database runs Postgres 15")
        await ok(session, "memory_append", text="the production database runs Postgres 16")
        text, result = await ok(session, "memory_forget", query="database Postgres")
        assert result["removed"] == []
        assert "Candidates:" in text
        assert text.splitlines()[-1].endswith("call memory_forget with its citation.")
        assert "omem-client" not in text


# ---------------------------------------------------------------- failures


async def test_daemon_errors_and_bad_arguments_are_tool_errors(daemon: Daemon) -> None:
    async with bridge(daemon.env) as session:
        message = await failed(session, "memory_get", path="../etc/passwd.md")
        assert "refused the call (forbidden)" in message
        assert "'..'" in message

        missing = await failed(session, "memory_search")
        assert "invalid arguments for memory_search" in missing
        assert "`query`" in missing
        assert "`$.limit`" in await failed(session, "memory_search", query="x", limit="many")
        assert "`$.limit`" in await failed(session, "memory_search", query="x", limit=0)
        assert "`max_results`" in await failed(session, "memory_search", query="x", max_results=3)
        assert "exactly one of citation, text or query" in await failed(session, "memory_forget")
        assert "`$.messages`" in await failed(session, "memory_capture", messages="hi")
        with pytest.raises(MCPError, match="unknown tool 'memory_frobnicate'"):
            await session.call_tool("memory_frobnicate", {})

        # Loose but unambiguous values are taken as meant: models send these.
        _, found = await ok(session, "memory_search", query="x", limit="2", agent=None)
        assert found["results"] == []

        # and the bridge goes on serving
        _, appended = await ok(session, "memory_append", text="still serving after errors")
        assert appended["indexed"] is True


async def test_without_a_daemon_calls_say_how_to_start_it(env: Env) -> None:
    assert not env.socket.exists()
    async with bridge(env) as session:
        message = await failed(session, "memory_search", query="anything")
        assert "memory daemon is not running" in message
        assert "ask the user to start it (`openmemoryd start`)" in message
        assert "not running" in await failed(session, "memory_append", text="a note")

        # The same bridge works as soon as the daemon is up: no host restart needed.
        daemon = Daemon(env).start()
        try:
            _, appended = await ok(session, "memory_append", text="the daemon came up late")
            assert appended["indexed"] is True
        finally:
            daemon.stop()


async def test_a_restarted_daemon_is_reconnected(daemon: Daemon) -> None:
    async with bridge(daemon.env) as session:
        await ok(session, "memory_append", text="the osprey returns in March")
        daemon.stop()
        restarted = Daemon(daemon.env).start()
        try:
            # The old connection is dead; a read is retried on a new one.
            _, found = await ok(session, "memory_search", query="osprey")
            assert found["results"]
            _, appended = await ok(session, "memory_append", text="and leaves in October")
            assert appended["indexed"] is True
        finally:
            restarted.stop()


async def test_two_bridges_share_one_daemon(daemon: Daemon) -> None:
    # The second bridge finds the daemon through --socket, as a host's
    # config may say, while its environment points nowhere.
    elsewhere = Env(root=daemon.env.root / "other", socket_dir=daemon.env.root / "none")
    async with (
        bridge(daemon.env) as claude,
        bridge(elsewhere, "--socket", str(daemon.env.socket)) as cursor,
    ):
        _, appended = await ok(claude, "memory_append", text="the kestrel hovers over the dunes")
        _, found = await ok(cursor, "memory_search", query="kestrel dunes")
        assert [hit["path"] for hit in found["results"]] == [appended["path"]]
        text, _ = await ok(cursor, "memory_get", path=appended["path"])
        assert "kestrel hovers" in text


def test_without_the_mcp_extra_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # makes `import mcp` fail
    monkeypatch.delitem(sys.modules, "omem_client.mcp_bridge", raising=False)
    result = CliRunner().invoke(app, ["mcp"])
    assert result.exit_code == 2
    assert (
        "install the MCP extra: pip install -e '.[mcp]' in your openmemoryd clone" in result.output
    )


# ---------------------------------------------------------------- session edges


async def test_primer_gives_the_session_context(daemon: Daemon) -> None:
    (daemon.env.workspace / "USER.md").write_text("# User\n\nWei, a marine biologist.\n")
    (daemon.env.workspace / "MEMORY.md").write_text("# Memory\n\nThe grant renews in May.\n")
    async with bridge(daemon.env) as session:
        text, primer = await ok(session, "memory_primer", budget=500)
        assert "Wei, a marine biologist." in text
        assert "grant renews" not in text  # MEMORY.md only in private sessions
        assert primer["budget"] == 500
        text, _ = await ok(session, "memory_primer", private=True)
        assert "The grant renews in May." in text


async def test_flush_check_says_when_to_flush_once_per_cycle(daemon: Daemon) -> None:
    check = {"session": "s-1", "context_window": 200_000}
    async with bridge(daemon.env) as session:
        text, early = await ok(session, "memory_flush_check", tokens=1_000, **check)
        assert early["should_flush"] is False
        assert text.startswith("flush: no (1000 tokens < threshold")

        text, due = await ok(session, "memory_flush_check", tokens=190_000, **check)
        assert due["should_flush"] is True
        assert text.startswith("flush: yes")
        assert due["prompt"] in text

        _, again = await ok(session, "memory_flush_check", tokens=191_000, **check)
        assert again["should_flush"] is False
        assert again["reason"] == "already_flushed"


async def test_session_end_then_tasks_then_update_them(daemon: Daemon) -> None:
    async with bridge(daemon.env) as session:
        text, ended = await ok(
            session,
            "memory_session_end",
            request="Tune the kestrel cache",
            learned=["The kestrel cache evicts by size, not age"],
            next_steps=["Benchmark the kestrel cache", "Write the cache ADR"],
            agent="cursor",
        )
        assert text.splitlines()[0] == f"Journal written to {ended['citation']}"
        assert ended["path"] == f"memory/{date.today().isoformat()}.md"
        assert [t["text"] for t in ended["tasks_added"]] == [
            "Benchmark the kestrel cache",
            "Write the cache ADR",
        ]
        assert "kestrel cache evicts by size" in today_file(daemon.env).read_text()

        text, listed = await ok(session, "memory_tasks")
        bench = listed["tasks"][0]
        assert f"{bench['id']}  [ ] Benchmark the kestrel cache" in text
        assert listed["open"] == 2

        text, updated = await ok(
            session, "memory_update_tasks", action="done", tasks=[bench["id"], "ADR"]
        )
        assert [t["done"] for t in updated["changed"]] == [True, True]
        assert text.splitlines()[-1] == "0 open, 2 done in memory/TASKS.md"
        _, done = await ok(session, "memory_tasks", status="done")
        assert len(done["tasks"]) == 2

        _, found = await ok(session, "memory_search", query="kestrel cache evicts")
        assert found["results"][0]["path"] == ended["path"]

        message = await failed(session, "memory_update_tasks", action="reopen", tasks=["zebra"])
        assert "not_found" in message
        assert "zebra" in message
        message = await failed(session, "memory_session_end")
        assert "give at least one of" in message
        message = await failed(session, "memory_update_tasks", action="list", tasks=["x"])
        assert "invalid arguments" in message


async def test_log_files_reinforces_and_asks_before_replacing(daemon: Daemon) -> None:
    memory = daemon.env.workspace / "MEMORY.md"
    async with bridge(daemon.env) as session:
        text, first = await ok(session, "memory_log", content="I prefer dark mode in every editor")
        assert first["status"] == "written"
        assert text.startswith(f"Written to {first['citation']} (§ User Preferences)")
        _, again = await ok(session, "memory_log", content="I prefer dark mode in every editor")
        assert again["status"] == "reinforced"
        text, conflict = await ok(
            session, "memory_log", content="I prefer light mode in every editor"
        )
        assert conflict["status"] == "conflict"
        assert "call memory_log again with replace=true" in text
        assert "light" not in memory.read_text("utf-8")
        _, replaced = await ok(
            session, "memory_log", content="I prefer light mode in every editor", replace=True
        )
        assert replaced["status"] == "replaced"
        text, rejected = await ok(session, "memory_log", content="好的，没问题！", type="note")
        assert (rejected["status"], rejected["rule"]) == ("rejected", "filler")
        assert "kind" in await failed(session, "memory_log", content="x", kind="note")
    lines = memory.read_text("utf-8").splitlines()
    assert lines[first["line"] - 1] == "- I prefer light mode in every editor"


async def test_a_call_the_daemon_left_unanswered_says_it_may_have_been_done(env: Env) -> None:
    """A write the daemon took but did not answer within the timeout may be
    done: the tool says so once, in the tools' words, not as "not running"."""
    from test_async_client import fake_daemon

    with fake_daemon(env.socket, lambda conn, request: None):
        async with bridge(env, "--timeout", "0.5") as session:
            written = await call(session, "memory_append", text="- a note")
            assert written.is_error
            said = text_of(written)
            assert said.startswith("openmemoryd did not answer within 0.5 s.")
            assert "check with memory_search before repeating it" in said
            assert "not running" not in said
            read = await call(session, "memory_search", query="note")
            assert read.is_error
            assert text_of(read).endswith("ask again in a moment.")


def test_requests_piped_before_stdin_closes_are_all_answered(daemon: Daemon) -> None:
    """A script that writes its requests and closes stdin (printf … |
    omem-client mcp) got "Connection closed" for each, and the append it
    asked for was never written: at the end of stdin the server cancelled
    every handler still running (found by dogfooding)."""
    import json
    import subprocess

    def request(number: int, method: str, params: dict[str, Any]) -> str:
        return json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params})

    lines = [
        request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "script", "version": "1"},
            },
        ),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        request(2, "tools/call", {"name": "memory_append", "arguments": {"text": "- piped note"}}),
        request(3, "tools/call", {"name": "memory_status", "arguments": {}}),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "omem_client", "mcp"],
        input="\n".join(lines) + "\n",
        env=daemon.env.vars,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert sorted(replies) == [1, 2, 3], done.stdout
    assert all("error" not in r for r in replies.values()), done.stdout
    assert not replies[2]["result"].get("isError"), replies[2]
    today = daemon.env.workspace / "memory" / f"{date.today().isoformat()}.md"
    assert "- piped note" in today.read_text("utf-8")
