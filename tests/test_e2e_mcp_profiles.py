"""`omem-client mcp --profile NAME`: other memory systems' tool names and
arguments, served by the real bridge against the real daemon.

An agent written for OpenClaw (and its memory-lancedb plugin), WorkAny or
the Python MCP memory server calls its own tools unchanged; each result is
validated against the tool's output schema (the method's result).
"""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager
from datetime import date
from typing import Any

import jsonschema
import pytest
from mcp import ClientSession, types

from conftest import Daemon, Env
from omem_client._errors import BadRequestError
from omem_client._mcp_profiles import PROFILES, task_changes
from omem_protocol import MCP_PROFILES
from test_mcp_bridge import bridge

pytestmark = pytest.mark.e2e


def profile_session(env: Env, profile: str) -> AbstractAsyncContextManager[ClientSession]:
    return bridge(env, mcp_options=("--profile", profile))


async def ok(session: ClientSession, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """A call that must succeed, its structured result checked against the output schema."""
    listed = {t.name: t for t in (await session.list_tools()).tools}
    result = await session.call_tool(tool, arguments)
    text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
    assert not result.is_error, text
    assert isinstance(result.structured_content, dict)
    schema = listed[tool].output_schema
    assert schema is not None
    jsonschema.validate(result.structured_content, schema)
    return text, result.structured_content


def test_the_cli_knows_every_profile() -> None:
    assert set(MCP_PROFILES) == set(PROFILES)


@pytest.mark.parametrize(
    ("profile", "tools"),
    [
        (
            "openclaw",
            {"memory_search", "memory_get", "memory_store", "memory_recall", "memory_forget"},
        ),
        ("workany", {"memory_search", "memory_save", "memory_read"}),
        (
            "openclaw-memory",
            {
                "memory_primer",
                "memory_search",
                "memory_log",
                "memory_session_end",
                "memory_update_tasks",
                "memory_read",
            },
        ),
    ],
)
async def test_each_profile_lists_exactly_its_tools(
    env: Env, profile: str, tools: set[str]
) -> None:
    async with profile_session(env, profile) as session:
        listed = (await session.list_tools()).tools
    assert {tool.name for tool in listed} == tools
    for tool in listed:
        assert tool.output_schema is not None
        assert tool.output_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False


async def test_openclaw_tools_with_their_own_arguments(daemon: Daemon) -> None:
    async with profile_session(daemon.env, "openclaw") as session:
        _, stored = await ok(
            session,
            "memory_store",
            text="I prefer rye bread over white bread.",
            category="preference",
        )
        assert stored["status"] == "written"
        text, found = await ok(
            session, "memory_search", query="rye bread", maxResults=2, minScore=0.0
        )
        assert 1 <= len(found["results"]) <= 2
        assert "rye bread" in text
        hit = found["results"][0]
        span = {"from": hit["start_line"], "lines": hit["end_line"] - hit["start_line"] + 1}
        _, got = await ok(session, "memory_get", path=hit["path"], **span)
        assert (got["from_line"], got["to_line"]) == (hit["start_line"], hit["end_line"])
        assert "rye bread" in got["text"]
        _, recalled = await ok(session, "memory_recall", query="which bread do I prefer?", limit=1)
        assert len(recalled["memories"]) <= 1
        # memory-lancedb forgets by id: here the id is the citation
        _, forgot = await ok(session, "memory_forget", memoryId=stored["citation"])
        assert forgot["removed"]
        wrong = await session.call_tool("memory_forget", {"query": "x", "memoryId": "y"})
        assert wrong.is_error
    assert "rye bread" not in (daemon.env.workspace / stored["path"]).read_text()


async def test_workany_saves_reads_and_searches(daemon: Daemon) -> None:
    async with profile_session(daemon.env, "workany") as session:
        _, saved = await ok(
            session, "memory_save", content="The boat key is under the mat.", file="MEMORY.md"
        )
        assert saved["path"] == "MEMORY.md"
        text, _ = await ok(session, "memory_read", file="MEMORY.md")
        assert "boat key is under the mat" in text
        _, found = await ok(session, "memory_search", query="boat key")
        assert found["results"][0]["path"] == "MEMORY.md"


async def test_openclaw_memory_budget_summary_and_tasks_json(daemon: Daemon) -> None:
    with daemon.client() as client:
        for n in range(8):
            client.append(
                f"Harbour note {n}: the ferry leaves pier {n} at dawn " + "and more " * 20
            )
    async with profile_session(daemon.env, "openclaw-memory") as session:
        _, budgeted = await ok(session, "memory_search", query="harbour ferry pier", max_tokens=80)
        _, everything = await ok(session, "memory_search", query="harbour ferry pier")
        assert 1 <= len(budgeted["results"]) < len(everything["results"])
        assert budgeted["budget_omitted"] >= 1
        _, both = await ok(session, "memory_search", query="harbour ferry pier", scope="all")
        assert both["results"]
        assert {h["workspace"] for h in both["results"]} == {"default"}
        _, ended = await ok(session, "memory_session_end", summary="Planned the ferry timetable.")
        journal = (daemon.env.workspace / ended["path"]).read_text()
        assert "Planned the ferry timetable." in journal
        _, tasks = await ok(
            session,
            "memory_update_tasks",
            tasks_json=json.dumps(["Buy ferry tickets", "Call the pier"]),
        )
        assert {t["text"] for t in tasks["changed"]} == {"Buy ferry tickets", "Call the pier"}
        _, done = await ok(
            session, "memory_update_tasks", tasks_json='{"done": ["Buy ferry tickets"]}'
        )
        assert [t["text"] for t in done["changed"]] == ["Buy ferry tickets"]
        bad = await session.call_tool("memory_update_tasks", {"tasks_json": "{not json"})
        assert bad.is_error
        _, primer = await ok(session, "memory_primer")
        assert primer["type"] == "primer_result"
        text, _ = await ok(session, "memory_read", path=f"memory/{date.today().isoformat()}.md")
        assert "Harbour note 0" in text


@pytest.mark.parametrize(
    "raw",
    ["{not json", "[]", "{}", '{"finish": ["x"]}', '{"add": [1]}', '{"add": [""]}', "3"],
)
def test_tasks_json_that_cannot_be_read_is_a_clear_error(raw: str) -> None:
    with pytest.raises(BadRequestError):
        task_changes(raw)


def test_tasks_json_forms() -> None:
    assert task_changes('["a", "b"]') == [("add", ["a", "b"])]
    assert task_changes('{"remove": "a", "add": ["b"]}') == [("add", ["b"]), ("remove", ["a"])]
