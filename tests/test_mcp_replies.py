"""The bridge's own words, without a daemon: conflicts, primers, shell hints
and lines the SDK's parser refuses (`test_e2e_mcp_replies.py` drives them
through the real bridge and daemon)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pydantic
import pytest
from mcp import types

from omem_client import _mcp_tools
from omem_client._mcp_answers import SHARED_HINTS, conflict_lead, log_answer, primer_answer
from omem_client._mcp_profiles import PROFILES, LogContentArgs
from omem_client._mcp_tools import TOOLS_BY_NAME, input_schema
from omem_client._mcp_wire import lone_surrogate_at, triage
from omem_protocol import LogResult, LogSimilar, PrimerResult
from openmemoryd.memory.log_routes import ALIASES, TYPES

ROOT = Path(__file__).resolve().parents[1]


def conflict(lexical: float) -> LogResult:
    """Two lessons about a staging deploy: e5 finds them 0.96 similar, 0.43 in words."""
    old = "Lesson learned: the staging deploy failed because the .env file was missing"
    return LogResult(
        status="conflict",
        memory_type="lesson",
        text="Lesson: the staging deploy broke because nobody ran the migrations first",
        reasons=(
            "type lesson (keyword 'lesson')",
            "dedupe: 0.96 similar to MEMORY.md#L19 (words 0.43): a possible conflict, nothing "
            "written; pass replace to swap that line for this one, or force to keep both",
        ),
        path="MEMORY.md",
        section="Lessons Learned",
        similar=LogSimilar(
            citation="MEMORY.md#L19",
            path="MEMORY.md",
            line=19,
            text=old,
            similarity=0.96,
            lexical=lexical,
        ),
    )


def test_two_facts_close_only_in_meaning_are_not_called_two_versions() -> None:
    text, result = log_answer(conflict(0.43), lambda r: "ADVICE")
    assert text.splitlines()[-1] == (
        "The two are close in meaning but not in wording, so they may be two different "
        "facts: ask the user whether the new one replaces the old one. ADVICE"
    )
    assert "force" not in text
    assert isinstance(result, LogResult)
    # the structured reply no longer offers force either
    assert result.reasons[-1] == (
        "dedupe: 0.96 similar to MEMORY.md#L19 (words 0.43): a possible conflict, nothing written"
    )
    assert conflict_lead(conflict(0.9)).startswith("The two differ in a detail")


def test_a_changed_detail_is_one_memory_in_two_versions_however_few_words_match() -> None:
    # "I prefer Neovim" / "I prefer Emacs": 0.67 in words, but the daemon
    # found the name changed and nothing else.
    changed = msgspec.structs.replace(
        conflict(0.67),
        reasons=(
            "dedupe: 0.67 similar to MEMORY.md#L19 (words 0.67), differing in Neovim → Emacs: "
            "a possible conflict, nothing written; pass replace to swap that line for this one, "
            "or force to keep both",
        ),
    )
    text, result = log_answer(changed, lambda r: "ADVICE")
    assert text.splitlines()[-1] == (
        "The two differ in a detail: ask the user which version is right. ADVICE"
    )
    assert "differing in Neovim → Emacs" in text
    assert "force" not in result.reasons[-1]


def test_keeping_both_is_offered_as_the_append_it_takes() -> None:
    text, _ = log_answer(conflict(0.43), _mcp_tools._keep_both)
    new = conflict(0.43).text
    assert text.endswith(
        "If the new one is to replace the old one, call memory_log again with replace=true. If "
        f'both hold, keep the new one with memory_append (path "MEMORY.md", text "- {new}"): it '
        "goes to the end of MEMORY.md as given."
    )


def primer(text: str, omitted: tuple[str, ...], budget: int = 50) -> PrimerResult:
    return PrimerResult(
        text=text, sections=(), tokens=0, budget=budget, omitted=omitted, took_ms=0.0
    )


def test_an_empty_primer_says_whether_the_files_are_empty_or_the_budget_small() -> None:
    full = primer(
        "",
        (
            "USER.md: no room in a 50-token budget; a budget of 97 tokens shows some of it",
            "PROJECT.md: still the template",
            # as a daemon older than the client words it
            "MEMORY.md: no room in the budget (shown from a budget of 120 tokens)",
        ),
    )
    text = primer_answer(full, "Call memory_primer again with budget={budget}.")
    assert text.splitlines()[0] == (
        "Nothing fitted in a budget of 50 tokens, but the memory files are not empty: a "
        "budget of 97 tokens shows the first of them. Call memory_primer again with budget=97."
    )
    assert text.splitlines()[-1].startswith("Left out: USER.md: no room in a 50-token budget")
    fresh = primer("", ("USER.md: still the template", "memory/2026-11-28.md: missing"))
    assert primer_answer(fresh, "").startswith("Nothing to start with: the memory files hold no")
    assert primer_answer(primer("## User (USER.md)\n- Wei", ()), "") == "## User (USER.md)\n- Wei"


def test_every_shell_hint_a_profile_translates_is_still_said_somewhere() -> None:
    """A hint whose wording changed at its source would reach the model as a shell command."""
    sources = [
        p.read_text("utf-8")
        for package in ("daemon/openmemoryd", "client/omem_client")
        for p in (ROOT / package).rglob("*.py")
        if p.name != "_mcp_answers.py"
    ]
    for profile in PROFILES.values():
        for cli, said in (*profile.hints, *SHARED_HINTS):
            assert any(cli in source for source in sources), cli
            assert "omem-client" not in said or "ask the user" in said or "the user can" in said


def test_a_profile_says_hints_in_its_own_tools() -> None:
    message = "no task matches 'x' (see `omem-client tasks --all` for ids)"
    assert PROFILES["openmemory"].in_tool_words(message) == (
        "no task matches 'x' (memory_tasks with status \"all\" lists every task with its id)"
    )
    assert "memory_read" in PROFILES["openclaw-memory"].in_tool_words(message)


def test_openclaw_memory_takes_every_type_the_daemon_knows_by_that_servers_names() -> None:
    offered = set(input_schema(LogContentArgs)["properties"]["type"]["enum"])
    documented = {"instruction", "pattern", "user", "context", "journal"}  # docs/cli.md
    assert offered == set(TYPES) | documented
    assert documented <= set(ALIASES)


# ---------------------------------------------------------------- lines the SDK refuses


def refusal(line: str) -> Exception:
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except pydantic.ValidationError as exc:
        return exc
    raise AssertionError(f"the SDK parses {line!r}")


def request(params: Any, request_id: Any = 7, method: str = "tools/call") -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


def test_a_tool_call_with_a_cut_emoji_goes_on_to_the_tool() -> None:
    line = request({"name": "memory_search", "arguments": {"query": "Postgres \ud83d"}})
    message, reply = triage(refusal(line))
    assert reply is None
    assert isinstance(message, types.JSONRPCRequest)
    assert message.params is not None
    assert message.params["arguments"] == {"query": "Postgres \ud83d"}


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        ("{not json", (None, types.PARSE_ERROR)),
        ('{"jsonrpc": "2.0", "id": 3, "method": "tools/call"', (None, types.PARSE_ERROR)),
        ("[1, 2]", (None, types.INVALID_REQUEST)),
        ('"hello"', (None, types.INVALID_REQUEST)),
        ('{"jsonrpc": "2.0", "id": 3}', (3, types.INVALID_REQUEST)),
        ('{"jsonrpc": "2.0", "method": 5}', (None, types.INVALID_REQUEST)),
        (request("not an object"), (7, types.INVALID_REQUEST)),
        (request({"name": "memory_search\ud83d", "arguments": {}}), (7, types.INVALID_PARAMS)),
        (request({"query": "\udcff"}, method="prompts/get"), (7, types.INVALID_PARAMS)),
        (request({}, request_id="id-\ud83d"), (None, types.INVALID_REQUEST)),
    ],
)
def test_a_request_the_sdk_cannot_read_gets_an_error(
    line: str, answer: tuple[int | None, int]
) -> None:
    message, reply = triage(refusal(line))
    assert message is None
    assert reply is not None
    assert (reply.id, reply.error.code) == answer
    # never echoes what it could not read: a lone surrogate cannot be written
    assert reply.model_dump_json()


@pytest.mark.parametrize(
    "line",
    [
        "   ",
        '{"jsonrpc": "2.0", "method": "notifications/progress", "params": "x"}',
        json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"m": "\ud83d"}}
        ),
        '{"jsonrpc": "2.0", "id": 4, "result": "not an object"}',
        '{"jsonrpc": "2.0", "id": 4, "error": "not an object"}',
    ],
)
def test_notifications_responses_and_blank_lines_are_never_answered(line: str) -> None:
    message, reply = triage(refusal(line))
    assert (message, reply) == (None, None)


def test_the_first_lone_surrogate_is_named_by_its_path() -> None:
    assert lone_surrogate_at({"query": "fine 🐘"}) is None
    assert lone_surrogate_at(
        {"a": "ok", "messages": [{"content": "x"}, {"content": "\udcff"}]}
    ) == ("$.messages[1].content")
    assert lone_surrogate_at({"a\ud83d": 1}) == "$"


def test_a_file_too_long_for_one_tool_result_is_given_in_part() -> None:
    from omem_protocol import GetResult

    lines = [f"- line {n} " + "слово " * 40 for n in range(1, 401)]
    whole = GetResult(
        path="memory/big.md", text="\n".join(lines), from_line=1, to_line=400, total_lines=400
    )
    text, shown = _mcp_tools.get_answer(whole)
    assert isinstance(shown, GetResult)
    assert len(shown.text) <= _mcp_tools.MAX_GET_CHARS
    assert shown.text == "\n".join(lines[: shown.to_line])  # whole lines, cited exactly
    assert text.startswith(f"memory/big.md lines 1-{shown.to_line} of 400:\n")
    assert text.endswith(f"ask for the lines from {shown.to_line + 1} on to read further]")
    one = GetResult(path="a.md", text="这" * 300_000, from_line=1, to_line=1, total_lines=1)
    text, shown = _mcp_tools.get_answer(one)
    assert len(shown.text) == _mcp_tools.MAX_GET_CHARS  # the start of a line too long alone
    small = GetResult(path="a.md", text="short", from_line=1, to_line=1, total_lines=1)
    assert _mcp_tools.get_answer(small) == ("a.md lines 1-1 of 1:\nshort", small)


# ---------------------------------------------------------------- the names HTTP and the CLI use


def test_a_message_may_give_its_text_as_content_or_as_text() -> None:
    """HTTP and the CLI take both; MCP refused `text` ("unknown field")."""
    for tool in ("memory_capture", "memory_compact"):
        parse = TOOLS_BY_NAME[tool].parse
        base = {"session": "s"} if tool == "memory_compact" else {}
        messages = [{"role": "user", "text": "I drink oolong"}, {"role": "user", "content": "hi"}]
        parsed = parse({**base, "messages": messages})
        assert [m.said for m in parsed.messages] == ["I drink oolong", "hi"]  # type: ignore[attr-defined]
        for message, error in [
            ({"role": "user", "text": "a", "content": "b"}, "not both"),
            ({"role": "user"}, "as content or as text"),
        ]:
            with pytest.raises(msgspec.ValidationError, match=error):
                parse({**base, "messages": [message]})
        item = TOOLS_BY_NAME[tool].definition().input_schema["properties"]["messages"]["items"]
        assert set(item["properties"]) == {"role", "content", "text"}
        assert item["required"] == ["role"]


@pytest.mark.parametrize("tool", ["memory_primer", "memory_flush_check"])
def test_the_day_is_date_as_in_http_and_the_cli_and_today_still_works(tool: str) -> None:
    parse = TOOLS_BY_NAME[tool].parse
    base = {"session": "s", "tokens": 1, "context_window": 10} if tool != "memory_primer" else {}
    schema = TOOLS_BY_NAME[tool].definition().input_schema["properties"]
    assert "date" in schema
    assert "today" not in schema  # one name shown to the model
    day = "2026-11-28"
    assert str(parse({**base, "date": day}).date) == day  # type: ignore[attr-defined]
    assert str(parse({**base, "today": day}).date) == day  # type: ignore[attr-defined]
    with pytest.raises(msgspec.ValidationError, match="give `date` or `today`, not both"):
        parse({**base, "date": day, "today": day})
    # an error about the value names the argument as it was sent
    with pytest.raises(msgspec.ValidationError, match=r"`\$\.today`"):
        parse({**base, "today": "tomorrow"})


def test_hints_no_tool_can_follow_are_said_as_what_to_ask_the_user() -> None:
    issue = (
        "2 appended lines missing from memory/2026-11-28.md after an external rewrite "
        "(omem-client restore re-adds them)"
    )
    for profile in PROFILES.values():  # no profile has a restore tool
        said = profile.in_tool_words(issue)
        assert said.endswith("(ask the user to run `omem-client restore`, which re-adds them)")
    listing = "1 open, 1 done (--all shows the done ones too)"
    assert PROFILES["openmemory"].in_tool_words(listing) == (
        '1 open, 1 done (memory_tasks with status "all" shows the done ones too)'
    )
    watcher = "off (changes are found by the periodic check and `omem-client sync`)"
    assert "the user can run `omem-client sync`" in PROFILES["openmemory"].in_tool_words(watcher)


def test_status_issues_of_restored_tasks_and_a_missing_workspace_are_asks() -> None:
    """Two more status issues named a command: task changes a rewrite removed,
    and a workspace gone under the daemon (a write's error says it too)."""
    tasks = (
        "1 task change missing from memory/TASKS.md after an external rewrite "
        "(omem-client restore makes them again)"
    )
    gone = (
        "workspace missing: /home/wei/ws (deleted or moved?); nothing can be written to "
        "memory until it is back. Restore it and the daemon watches and re-indexes it at "
        "once, or `openmemoryd init` creates an empty workspace there"
    )
    for profile in PROFILES.values():
        assert profile.in_tool_words(tasks).endswith(
            "(ask the user to run `omem-client restore`, which makes them again)"
        )
        assert profile.in_tool_words(gone).endswith(
            "ask the user to run `openmemoryd init`, which creates an empty workspace there"
        )


def test_an_absent_daemon_is_for_the_user_to_start() -> None:
    from omem_client.mcp_bridge import not_running

    said = not_running(Path("/run/user/1000/openmemory/openmemoryd.sock"))
    assert said.startswith("The memory daemon is not running (nothing listens on /run/user/")
    assert "ask the user to start it (`openmemoryd start`)" in said
