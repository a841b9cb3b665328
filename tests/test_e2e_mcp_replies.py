"""What the model reads through the real bridge and the real daemon: only
what its tools can do, and true.

Found by driving `omem-client mcp` as a multilingual user would: a log
conflict offered ``force``, which no MCP tool has; a dry run said "Written
to"; a primer too small for anything said the files were empty; errors
named shell commands; a string cut mid-emoji was never answered; and the
openclaw-memory profile refused its own server's memory types.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from datetime import date
from typing import Any

import pytest
import trio
from mcp import ClientSession, types

from conftest import Daemon, Env
from test_mcp_bridge import bridge as mcp_session

pytestmark = pytest.mark.e2e

DARK = "I prefer dark mode in every editor"
LIGHT = "I prefer light mode in every editor"
CUT_EMOJI = "\ud83d"  # what JSON.stringify writes for a string cut in the middle of 🐘


def bridge(env: Env, *mcp_options: str) -> AbstractAsyncContextManager[ClientSession]:
    return mcp_session(env, mcp_options=mcp_options)


async def call(
    session: ClientSession, tool: str, /, **arguments: Any
) -> tuple[bool, str, dict[str, Any] | None]:
    result = await session.call_tool(tool, arguments)
    text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
    return bool(result.is_error), text, result.structured_content


async def ok(session: ClientSession, tool: str, /, **arguments: Any) -> tuple[str, dict[str, Any]]:
    failed, text, structured = await call(session, tool, **arguments)
    assert not failed, text
    assert structured is not None
    return text, structured


async def refused(session: ClientSession, tool: str, /, **arguments: Any) -> str:
    failed, text, _ = await call(session, tool, **arguments)
    assert failed, text
    return text


# ---------------------------------------------------------------- a log conflict


async def test_a_conflict_offers_only_what_the_tools_can_do(daemon: Daemon) -> None:
    memory = daemon.env.workspace / "MEMORY.md"
    async with bridge(daemon.env) as session:
        await ok(session, "memory_log", content=DARK)
        text, conflict = await ok(session, "memory_log", content=LIGHT)
        assert conflict["status"] == "conflict"
        # no MCP tool has force: neither the text nor the structured reasons offer it
        assert "force" not in text
        assert not any("force" in reason for reason in conflict["reasons"])
        assert "--replace" not in text
        last = text.splitlines()[-1]
        # nearly the same words: one memory in two versions
        assert last.startswith("The two differ in a detail: ask the user which version is right.")
        assert "call memory_log again with replace=true" in last
        assert f'memory_append (path "MEMORY.md", text "- {LIGHT}")' in last
        assert LIGHT not in memory.read_text("utf-8")

        # the way to keep both that the reply gives works
        await ok(session, "memory_append", path="MEMORY.md", text=f"- {LIGHT}")
    kept = memory.read_text("utf-8")
    assert f"- {DARK}" in kept
    assert f"- {LIGHT}" in kept


async def test_profiles_without_replace_say_what_is_left(daemon: Daemon) -> None:
    async with bridge(daemon.env, "--profile", "openclaw") as session:
        _, first = await ok(session, "memory_store", text=DARK, category="preference")
        text, conflict = await ok(session, "memory_store", text=LIGHT, category="preference")
        assert conflict["status"] == "conflict"
        assert f'call memory_forget with memoryId "{first["citation"]}"' in text
        assert "Swap it with --replace" not in text
    async with bridge(daemon.env, "--profile", "openclaw-memory") as session:
        text, conflict = await ok(session, "memory_log", content=LIGHT)
        assert conflict["status"] == "conflict"
        assert "replace=true" not in text  # this memory_log has no replace
        assert "These tools cannot swap the old memory or keep both" in text
        assert "pass replace" not in text


# ---------------------------------------------------------------- a dry run


async def test_a_dry_run_says_would_be_written(daemon: Daemon) -> None:
    before = (daemon.env.workspace / "MEMORY.md").read_text("utf-8")
    async with bridge(daemon.env) as session:
        text, dry = await ok(
            session, "memory_log", content="The user prefers light themes", dry_run=True
        )
    assert dry["status"] == "written"
    assert text.startswith(
        "Dry run, nothing changed. Would be written to MEMORY.md (§ User Preferences): "
        "The user prefers light themes"
    )
    assert "Written to" not in text
    cli = daemon.cli("log", "--dry-run", "The user prefers light themes")
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.startswith("Dry run, nothing changed. Would be written to MEMORY.md")
    assert (daemon.env.workspace / "MEMORY.md").read_text("utf-8") == before


# ---------------------------------------------------------------- a small primer


async def test_a_primer_with_no_room_says_which_budget_would_do(daemon: Daemon) -> None:
    async with bridge(daemon.env) as session:
        text, empty = await ok(session, "memory_primer", budget=50)
        assert empty["text"] == ""
        assert text.startswith("Nothing to start with: the memory files hold no memories yet.")

        long_line = "Alexei lives in Novosibirsk and writes the billing service in Go " * 3
        (daemon.env.workspace / "USER.md").write_text(f"# USER.md\n\n- {long_line}\n")
        (daemon.env.workspace / "MEMORY.md").write_text(f"# MEMORY.md\n\n- {long_line}\n")
        text, small = await ok(session, "memory_primer", budget=50, private=True)
        assert small["text"] == ""
        first = text.splitlines()[0]
        assert "the memory files are not empty" in first
        assert first.startswith(
            "Nothing fitted in a budget of 50 tokens, but the memory files are not empty: "
            "a budget of "
        )
        needed = int(first.split("a budget of ")[2].split()[0])
        assert needed > 50
        assert first.endswith(f"Call memory_primer again with budget={needed}.")
        assert "USER.md: no room in a 50-token budget; a budget of " in text

        text, enough = await ok(session, "memory_primer", budget=needed, private=True)
        assert "Alexei lives in Novosibirsk" in text
        assert enough["tokens"] <= needed


# ---------------------------------------------------------------- hints in tool words


async def test_a_task_error_names_the_tool_and_says_nothing_changed(daemon: Daemon) -> None:
    async with bridge(daemon.env) as session:
        await ok(session, "memory_update_tasks", action="add", tasks=["Renew the TLS certificate"])
        message = await refused(
            session, "memory_update_tasks", action="done", tasks=["TLS", "несуществующая задача"]
        )
        assert "omem-client" not in message
        assert "no task matches 'несуществующая задача'" in message
        assert '(memory_tasks with status "all" lists every task with its id)' in message
        assert message.endswith(
            "No task was changed: either every named task is changed or none is."
        )
        _, still = await ok(session, "memory_tasks")
        assert [t["text"] for t in still["tasks"]] == ["Renew the TLS certificate"]

    async with bridge(daemon.env, "--profile", "openclaw-memory") as session:
        failed, message, _ = await call(
            session,
            "memory_update_tasks",
            tasks_json=json.dumps({"add": ["Book the ferry"], "done": ["zebra"]}),
        )
        assert failed
        assert "omem-client" not in message
        assert 'memory_read with path "memory/TASKS.md" shows every task' in message
        assert message.endswith("No task was changed by 'done'; 'add', before it, went through.")


async def test_status_and_task_listings_say_hints_as_tools_or_as_asks(daemon: Daemon) -> None:
    """memory_status said "omem-client restore re-adds them", and a listing of
    the open tasks "--all shows the done ones too": a model can run neither."""
    with daemon.client() as client:
        first = client.append("first note")
        client.append("second note\nwith two lines")
    # an editor saves a version that also changed what came before the appends
    # (as in test_e2e_journal.py: not a stale rewrite, which the daemon repairs)
    (daemon.env.workspace / first.path).write_text("# renamed day\n\nfirst note\n", "utf-8")
    async with bridge(daemon.env) as session:
        for _ in range(100):
            text, status = await ok(session, "memory_status")
            if any("missing from" in issue for issue in status["issues"]):
                break
            await trio.sleep(0.1)
        else:
            raise AssertionError(text)
        assert "omem-client restore re-adds" not in text
        assert "(ask the user to run `omem-client restore`, which re-adds them)" in text
        # the structured reply says it the same way
        (missing,) = [issue for issue in status["issues"] if "missing from" in issue]
        assert missing.endswith("(ask the user to run `omem-client restore`, which re-adds them)")

        await ok(session, "memory_update_tasks", action="add", tasks=["Ring the chicks", "Count"])
        await ok(session, "memory_update_tasks", action="done", tasks=["Count"])
        listing, _ = await ok(session, "memory_tasks")
        assert "--all" not in listing
        assert listing.endswith('(memory_tasks with status "all" shows the done ones too)')


async def test_messages_and_days_take_the_names_http_and_the_cli_use(daemon: Daemon) -> None:
    """`text` for a message's text and `date` for the day, as HTTP and the CLI
    name them; `content` and `today` go on working."""
    day = date.today().isoformat()
    async with bridge(daemon.env) as session:
        _, by_text = await ok(
            session,
            "memory_capture",
            messages=[{"role": "user", "text": "Remember that I always drink oolong tea"}],
        )
        _, by_content = await ok(
            session,
            "memory_capture",
            messages=[{"role": "user", "content": "Remember that my editor is Helix"}],
        )
        assert [c["text"] for c in by_text["captured"] + by_content["captured"]] == [
            "Remember that I always drink oolong tea",
            "Remember that my editor is Helix",
        ]
        both = await refused(
            session, "memory_capture", messages=[{"role": "user", "text": "a", "content": "b"}]
        )
        assert "not both" in both

        text, primer = await ok(session, "memory_primer", date=day)
        assert "oolong" in text
        assert (await ok(session, "memory_primer", today=day))[1]["text"] == primer["text"]
        _, flush = await ok(
            session, "memory_flush_check", session="s1", tokens=90, context_window=100, date=day
        )
        assert flush["should_flush"] is True
        assert day in flush["prompt"]


async def test_an_absent_daemon_is_for_the_user_to_start(env: Env) -> None:
    async with bridge(env) as session:
        message = await refused(session, "memory_recall", query="what do I drink?")
    assert message == (
        f"The memory daemon is not running (nothing listens on {env.socket}); ask the user "
        "to start it (`openmemoryd start`). The memory tools work again as soon as it runs, "
        "without restarting this MCP server."
    )


async def test_a_cut_primer_points_at_the_tool_that_reads_the_rest(daemon: Daemon) -> None:
    today = daemon.env.workspace / "memory" / f"{date.today().isoformat()}.md"
    today.parent.mkdir(exist_ok=True)
    today.write_text("\n".join(f"- ferry note {n} " + "and more " * 10 for n in range(60)))
    async with bridge(daemon.env) as session:
        text, _ = await ok(session, "memory_primer", budget=200)
    assert f"earlier lines: memory_get with path memory/{today.name})" in text
    assert "omem-client" not in text


# ---------------------------------------------------------------- every request answered


@contextmanager
def raw_bridge(env: Env) -> Iterator[subprocess.Popen[bytes]]:
    """`omem-client mcp` on pipes, initialized, for lines no SDK client would send."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "omem_client", "mcp"],
        env=env.vars,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        }
        send(proc, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))
        assert answer(proc)["id"] == 1
        send(proc, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        yield proc
    finally:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()


def send(proc: subprocess.Popen[bytes], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line.encode() + b"\n")
    proc.stdin.flush()


def answer(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> dict[str, Any]:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the bridge did not answer"
    reply: dict[str, Any] = json.loads(proc.stdout.readline())
    return reply


def tool_call(request_id: int, tool: str, **arguments: Any) -> str:
    # ensure_ascii (the default) writes a lone surrogate as the escape a Node host sends
    params = {"name": tool, "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


def test_a_lone_surrogate_and_a_broken_line_are_answered(daemon: Daemon) -> None:
    today = daemon.env.workspace / "memory" / f"{date.today().isoformat()}.md"
    with raw_bridge(daemon.env) as proc:
        for request_id, tool, arguments in [
            (10, "memory_search", {"query": f"Postgres {CUT_EMOJI}"}),
            (11, "memory_append", {"text": f"Заметка с эмодзи 🎉 и обрезанным {CUT_EMOJI}"}),
            (12, "memory_log", {"content": "I prefer emoji in commit messages 🎉 \udcff"}),
        ]:
            send(proc, tool_call(request_id, tool, **arguments))
            reply = answer(proc)
            assert reply["id"] == request_id
            assert reply["result"]["isError"] is True
            (content,) = reply["result"]["content"]
            assert content["text"] == (
                f"invalid arguments for {tool}: text contains an invalid character "
                f"(a lone surrogate: an emoji cut in half?) - at `$.{next(iter(arguments))}`"
            )

        send(proc, "{not json")
        reply = answer(proc)
        assert reply["id"] is None
        assert reply["error"]["code"] == -32700

        send(proc, json.dumps({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": "x"}))
        reply = answer(proc)
        assert (reply["id"], reply["error"]["code"]) == (13, -32600)

        # and the bridge goes on serving, whole emoji and all
        send(proc, tool_call(14, "memory_append", text="Postgres 🐘 16 runs the billing database"))
        reply = answer(proc)
        assert reply["id"] == 14
        assert reply["result"]["isError"] is False
    written = today.read_text("utf-8")
    assert "Postgres 🐘 16" in written
    assert "Заметка" not in written


# ---------------------------------------------------------------- the emulated server's types


async def test_openclaw_memory_accepts_its_own_memory_types(daemon: Daemon) -> None:
    async with bridge(daemon.env, "--profile", "openclaw-memory") as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        offered = set(listed["memory_log"].input_schema["properties"]["type"]["enum"])
        assert {"instruction", "pattern", "user", "context", "journal"} <= offered
        text, written = await ok(
            session,
            "memory_log",
            content="Пользователь предпочитает общаться на русском языке",
            type="instruction",
        )
        assert (written["status"], written["memory_type"]) == ("written", "preference")
        assert written["path"] == "MEMORY.md"
        assert "type preference (given as 'instruction')" in text
        _, project = await ok(
            session,
            "memory_log",
            content="The billing service must answer within 200 ms",
            type="context",
        )
        assert (project["memory_type"], project["path"]) == ("project", "PROJECT.md")
        failed, message, _ = await call(session, "memory_log", content="x" * 20, type="mood")
        assert failed
        assert "`$.type`" in message


@pytest.fixture
def semantic(env: Env) -> Iterator[Daemon]:
    env.write_config("")  # defaults: the local embedder, as a user runs it
    handle = Daemon(env).start()
    try:
        yield handle
    finally:
        handle.stop()


@pytest.mark.slow
async def test_two_lessons_close_only_in_meaning_are_put_as_two_facts(semantic: Daemon) -> None:
    # e5 puts any two sentences about a staging deploy close, as with this pair
    env_lesson = (
        "Lesson learned: last Tuesday the staging deploy failed because the .env file was "
        "missing; always check env files first"
    )
    migrations = "Lesson: the staging deploy broke because nobody ran the database migrations first"
    async with bridge(semantic.env) as session:
        await ok(session, "memory_log", content=env_lesson)
        text, conflict = await ok(session, "memory_log", content=migrations)
    assert conflict["status"] == "conflict"
    assert conflict["similar"]["lexical"] < 0.85
    last = text.splitlines()[-1]
    assert last.startswith("The two are close in meaning but not in wording, so they may be two")
    assert f'memory_append (path "MEMORY.md", text "- {migrations}")' in last
    assert "force" not in text


async def test_memory_get_of_a_long_file_gives_what_a_host_accepts(daemon: Daemon) -> None:
    big = daemon.env.workspace / "memory" / "big-zh.md"
    big.parent.mkdir(exist_ok=True)
    big.write_text("\n".join(f"- 第{n}条：这是一个很长的备注。" * 20 for n in range(1, 301)) + "\n")
    async with bridge(daemon.env) as session:
        text, result = await ok(session, "memory_get", path="memory/big-zh.md")
        assert len(result["text"]) <= 20_000
        last = result["to_line"]
        assert 1 < last < 300
        assert text.endswith(f"ask for the lines from {last + 1} on to read further]")
        _, more = await ok(session, "memory_get", path="memory/big-zh.md", from_line=last + 1)
        assert more["from_line"] == last + 1


async def test_memory_get_leaves_out_a_byte_order_mark_as_the_cli_does(daemon: Daemon) -> None:
    """The model reads what `omem-client get` prints: no U+FEFF before line 1."""
    notepad = daemon.env.workspace / "memory" / "notepad.md"
    notepad.parent.mkdir(exist_ok=True)
    notepad.write_bytes(b"\xef\xbb\xbf# Notepad\n\n- saved with a BOM\n")
    async with bridge(daemon.env) as session:
        text, result = await ok(session, "memory_get", path="memory/notepad.md")
    assert text == "memory/notepad.md lines 1-3 of 3:\n# Notepad\n\n- saved with a BOM\n"
    assert "\ufeff" not in result["text"]
    assert notepad.read_bytes().startswith(b"\xef\xbb\xbf")


# ---------------------------------------------------------------- secrets in an append


async def test_memory_append_says_which_secrets_it_masked(daemon: Daemon) -> None:
    """A key an agent appends is masked in the file, and the model is told."""
    stripe = "sk_live_51HabcdefghijklmnopqrstuvWXyz"
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    async with bridge(daemon.env) as session:
        text, appended = await ok(
            session, "memory_append", text=f"Billing uses Stripe key {stripe}, rotate monthly."
        )
        assert appended["redactions"] == ["sk_live_…"]
        assert text.splitlines() == [
            f"Appended to {appended['citation']} (indexed, new file, 1 secret masked)",
            "  masked: sk_live_…",
        ]
        _, got = await ok(session, "memory_get", path=appended["citation"])
        assert got["text"] == "Billing uses Stripe key sk_live_…, rotate monthly."
    # WorkAny's memory_save is the same append, and says the same
    async with bridge(daemon.env, "--profile", "workany") as session:
        text, saved = await ok(
            session, "memory_save", content=f"CI pushes with {token}", file="memory/ci.md"
        )
        assert saved["redactions"] == ["ghp_…"]
        assert "  masked: ghp_…" in text.splitlines()
    kept = "".join(p.read_text("utf-8") for p in daemon.env.workspace.rglob("*.md"))
    assert "abcdefghijklmnop" not in kept
    assert "Billing uses Stripe key sk_live_…, rotate monthly." in kept
    assert "CI pushes with ghp_…" in kept
