"""End to end: `omem-client compact` through the real daemon against a fake chat server.

What an agent relies on: the summary lands in today's daily file under
``## Session Summary`` and is searchable at once, the last N messages are not
summarised, the conversation shrinks, durable facts are captured first, and
every failure (no chat model, a failing or babbling server, nothing to
compact) is one clear error with nothing written. A slow model must not
hold up other clients' searches.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from conftest import KEYWORD_ONLY, Daemon, Env
from fake_chat_servers import HANG, INVALID_JSON, FakeChatServer, status

pytestmark = pytest.mark.e2e

SECRET = "sk-live-abcdefghijklmnopqrstuvwxyz0123456789"


def chat_config(server: FakeChatServer, provider: str = "openai", **extra: object) -> str:
    base = f"{server.url}/v1" if provider == "openai" else server.url
    lines = [f'provider = "{provider}"', f'base_url = "{base}"', 'model = "fake-7b"']
    lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
    return KEYWORD_ONLY + "\n[chat]\n" + "\n".join(lines) + "\n"


@pytest.fixture
def chat() -> Iterator[FakeChatServer]:
    with FakeChatServer(hang_s=1.5) as server:
        yield server


def start(env: Env, config: str) -> Daemon:
    env.write_config(config)
    return Daemon(env).start()


@pytest.fixture
def chat_daemon(env: Env, chat: FakeChatServer) -> Iterator[Daemon]:
    handle = start(env, chat_config(chat, max_retries=1, timeout_s=5.0))
    try:
        yield handle
    finally:
        handle.stop()


def today_file(env: Env) -> Path:
    return env.workspace / "memory" / f"{date.today().isoformat()}.md"


def conversation() -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You are a coding assistant."},
        {"role": "user", "content": "Remember that I prefer tabs over spaces in every project."},
        {"role": "assistant", "content": "Noted: tabs, not spaces."},
        {
            "role": "user",
            "content": "Let us migrate the zebrafish pipeline to Postgres. "
            + "It currently lives in a pile of CSV files and cron jobs. " * 8,
        },
        {
            "role": "assistant",
            "content": "Plan: dump the CSVs, create the schema, backfill, then cut over. "
            + "Each step is reversible and we keep the CSVs until the backfill is checked. " * 8,
        },
        {"role": "user", "content": f"Use OPENAI_API_KEY={SECRET} for the embedding job."},
        {"role": "tool", "content": '{"stdout": "COPY 1200 (toolnoise)"}'},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function"}]},
        {"role": "assistant", "content": "The backfill finished: 1200 rows in the new table."},
    ]
    messages += [
        {"role": "user", "content": "keptmarker one: what about the indexes?"},
        {"role": "assistant", "content": "keptmarker two: add a btree on sample_id."},
        {"role": "user", "content": "keptmarker three: do it."},
    ]
    return messages


# ---------------------------------------------------------------- the happy path


def test_compact_summarises_appends_and_shrinks(
    chat_daemon: Daemon, chat: FakeChatServer, tmp_path: Path
) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(conversation()))
    shown = chat_daemon.cli(
        "compact", "--session", "s1", "--agent", "coder", "--messages", str(conv),
        "--keep-last", "3", "--json",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr + chat_daemon.log()
    result = json.loads(shown.stdout)
    assert result["messages_summarised"] == 9
    assert result["messages_kept"] == 3
    assert result["messages_skipped"] == 3  # system, tool, tool call without text
    assert result["tokens_after"] < result["tokens_before"]
    assert (result["provider"], result["model"]) == ("openai", "fake-7b")
    assert result["stages"] == 1
    assert result["calls"] == 1
    assert "zebrafish" in result["summary"]

    # What the model saw: the older messages, cleaned; never the kept ones or the key.
    (request,) = chat.requests
    assert request.path == "/v1/chat/completions"
    assert "zebrafish" in request.user
    assert "keptmarker" not in request.user
    assert SECRET not in request.user
    assert "toolnoise" not in request.user  # tool output
    assert "coding assistant" not in request.user  # system prompt

    # The daily file: the flush's capture first, then the summary block.
    text = today_file(chat_daemon.env).read_text()
    assert "- [preference] Remember that I prefer tabs over spaces" in text
    assert text.index("[preference]") < text.index("## Session Summary")
    heading = next(line for line in text.splitlines() if line.startswith("## Session Summary"))
    assert "session s1" in heading
    assert "agent coder" in heading
    assert result["summary"] in text
    assert SECRET not in text
    lines = text.splitlines()
    assert lines[result["start_line"] - 1] == heading
    assert [c["category"] for c in result["captured"]] == ["preference"]

    # Searchable at once, cited inside the appended block.
    found = chat_daemon.cli("search", "zebrafish", "pipeline", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert any(
        h["path"] == result["path"]
        and h["start_line"] <= result["end_line"]
        and h["end_line"] >= result["start_line"]
        for h in hits
    ), hits

    # The compaction closed this flush cycle: the next flush-check may say yes again.
    with chat_daemon.client() as client:
        check = client.flush_check("s1", agent="coder", tokens=190_000, context_window=200_000)
    assert check.should_flush
    assert check.cycle == 1

    # Human output.
    again = chat_daemon.cli(
        "compact", "--session", "s2", "--messages", str(conv), "--keep-last", "1", "--no-flush"
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("Compacted 11 message(s) in 1 stage(s)")
    assert "Tokens: " in again.stdout
    assert "Summary appended to memory/" in again.stdout


def test_long_chinese_conversation_is_staged_and_merged_over_ollama(
    env: Env, chat: FakeChatServer
) -> None:
    handle = start(env, chat_config(chat, "ollama", max_input_tokens=400))
    try:
        messages = [
            {"role": "user" if i % 2 == 0 else "assistant",
             "content": f"第{i}轮：我们讨论了数据库迁移方案，决定先备份再迁移，保证可以回滚。" * 4}
            for i in range(12)
        ]  # fmt: skip
        body = json.dumps({"model": "whatever", "messages": messages})  # OpenAI request shape
        shown = handle.cli("compact", "--session", "zh", "--messages", "-", "--json", stdin=body)
        assert shown.returncode == 0, shown.stderr + handle.log()
    finally:
        handle.stop()
    result = json.loads(shown.stdout)
    assert result["messages_summarised"] == 7
    assert result["messages_kept"] == 5
    assert result["stages"] > 1
    assert result["calls"] > result["stages"]  # the partial summaries were merged
    requests = chat.requests
    assert all(r.path == "/api/chat" for r in requests)
    assert requests[0].user.startswith(f'<conversation part="1/{result["stages"]}">')
    assert "<summary" in requests[-1].user
    assert "第0轮" in result["summary"]
    assert "第7轮" not in "".join(r.user for r in requests)  # kept verbatim, never sent


# ---------------------------------------------------------------- failures


def test_without_a_chat_model_compact_says_what_to_set(
    daemon: Daemon, chat: FakeChatServer, tmp_path: Path
) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(conversation()))
    shown = daemon.cli("compact", "--session", "s1", "--messages", str(conv))
    assert shown.returncode == 4
    assert "[chat] provider" in shown.stderr
    assert "chat.model" in shown.stderr
    assert "Traceback" not in shown.stderr
    assert not today_file(daemon.env).exists()  # no capture either

    # Following the advice: configure a chat model and reload, no restart.
    daemon.env.write_config(chat_config(chat))
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while (again := daemon.cli("compact", "--session", "s1", "--messages", str(conv))).returncode:
        assert time.monotonic() < deadline, again.stderr
        time.sleep(0.1)
    assert "## Session Summary" in today_file(daemon.env).read_text()


def test_server_errors_are_retried_and_failures_write_nothing(
    chat_daemon: Daemon, chat: FakeChatServer, tmp_path: Path
) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(conversation()))
    args = ("compact", "--session", "s1", "--messages", str(conv))

    chat.fail_next(status(500), status(500))  # more than max_retries = 1
    failed = chat_daemon.cli(*args)
    assert failed.returncode == 4
    assert "HTTP 500" in failed.stderr
    assert "gave up after 2 attempts" in failed.stderr
    assert not today_file(chat_daemon.env).exists()

    chat.fail_next(INVALID_JSON)
    garbage = chat_daemon.cli(*args)
    assert garbage.returncode == 4
    assert "not valid JSON" in garbage.stderr
    assert not today_file(chat_daemon.env).exists()

    short = chat_daemon.cli(*args, "--keep-last", "50")
    assert short.returncode == 4
    assert "nothing to compact" in short.stderr

    chat.fail_next(status(500))  # one retry is allowed: recovers
    before = len(chat.requests)
    recovered = chat_daemon.cli(*args, "--json")
    assert recovered.returncode == 0, recovered.stderr
    assert len(chat.requests) == before + 2
    assert today_file(chat_daemon.env).read_text().count("## Session Summary") == 1


def test_a_slow_chat_model_does_not_hold_up_searches(
    chat_daemon: Daemon, chat: FakeChatServer
) -> None:
    with chat_daemon.client() as client:
        client.append("the heron nests by the quiet river")
    chat.fail_next(HANG)  # 1.5 s without an answer, then a retry that works
    outcome: dict[str, object] = {}
    phases: list[str] = []

    def run_compact() -> None:
        with chat_daemon.client() as client:
            outcome["result"] = client.compact(
                "slow", conversation(), keep_last=2, on_progress=lambda p: phases.append(p.phase)
            )

    worker = threading.Thread(target=run_compact)
    worker.start()
    try:
        time.sleep(0.3)
        assert worker.is_alive()
        with chat_daemon.client() as client:
            started = time.perf_counter()
            found = client.search("heron river")
            took = time.perf_counter() - started
        assert found.results
        assert took < 1.0
        assert worker.is_alive()  # the compaction really was in flight meanwhile
    finally:
        worker.join(30)
    assert "result" in outcome
    assert phases
    assert phases[0] == "chat request 1 to fake-7b"


# ---------------------------------------------------------------- MCP


async def test_mcp_memory_compact(chat_daemon: Daemon, chat: FakeChatServer) -> None:
    from test_mcp_bridge import bridge, ok

    messages = [
        {"role": m["role"], "content": m["content"]}
        for m in conversation()
        if isinstance(m["content"], str)
    ]
    async with bridge(chat_daemon.env) as session:
        text, result = await ok(
            session, "memory_compact", session="mcp-1", messages=messages, keep_last=2
        )
    assert text.startswith("Compacted 9 message(s)")
    assert result["messages_kept"] == 2
    assert "zebrafish" in result["summary"]
    assert len(chat.requests) == 1


async def test_mcp_memory_compact_without_a_chat_model(daemon: Daemon) -> None:
    from test_mcp_bridge import bridge, failed

    async with bridge(daemon.env) as session:
        message = await failed(
            session,
            "memory_compact",
            session="mcp-1",
            messages=[{"role": "user", "content": "hello"}] * 8,
        )
    assert "[chat] provider" in message
