"""What the HTTP API accepts as callers really send it, and how it says no.

OpenAI-style messages (``{"role", "content"}``) on every route that takes a
conversation, the allowed values of a field with a fixed set, a health
probe with a cache-buster, and the docs' route table and error codes kept
whole. In-process, as test_http_gateway.py; test_e2e_http_input.py goes
through the real daemon.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from openmemoryd.api import Api, DaemonInfo
from openmemoryd.engine import Engine
from openmemoryd.gateway import HTTP_ONLY_CODES, STATUS_FOR_CODE
from openmemoryd.gateway.routes import ROUTES
from openmemoryd.gateway.wording import HTTP_HINTS, allowed_values, in_http_words
from test_http_gateway import error_of, http, make_app

HTTP_DOC = (Path(__file__).parents[1] / "docs" / "http.md").read_text("utf-8")


@pytest.fixture
async def client(engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    api = Api(engine, DaemonInfo(socket="/tmp/test.sock"))
    async with http(make_app(api)) as c:
        yield c


# ---------------------------------------------------------------- content for text


async def test_log_turns_takes_openai_style_content(client: httpx.AsyncClient) -> None:
    turns = [
        {"role": "user", "content": "the ferry leaves from pier 39 at noon"},
        {"role": "assistant", "text": "noted: pier 39, noon"},  # the two may be mixed
    ]
    logged = await client.post(
        "/log-turns", json={"agent": "claude", "session_id": "s-1", "turns": turns}
    )
    assert logged.status_code == 200, logged.text
    assert logged.json()["end_line"] - logged.json()["start_line"] == 1
    found = await client.post("/search", json={"query": "ferry pier 39", "sources": ["sessions"]})
    assert "pier 39" in found.json()["results"][0]["snippet"]


async def test_capture_takes_openai_style_content(client: httpx.AsyncClient) -> None:
    captured = await client.post(
        "/capture",
        json={"messages": [{"role": "user", "content": "I prefer green tea over coffee always"}]},
    )
    assert captured.status_code == 200, captured.text
    assert [c["category"] for c in captured.json()["captured"]] == ["preference"]


async def test_compact_takes_content_too(client: httpx.AsyncClient) -> None:
    """/compact's messages are /capture's (one schema): the same alias. With
    no chat model configured, 503 shows the body itself was accepted."""
    chat = [{"role": "user", "content": f"message {i}"} for i in range(8)]
    compacted = await client.post("/compact", json={"session": "s1", "messages": chat})
    assert compacted.status_code == 503, compacted.text
    assert "[chat] provider" in error_of(compacted)["message"]


@pytest.mark.parametrize(
    ("path", "body", "expected"),
    [
        (
            "/log-turns",
            {"agent": "a", "session_id": "s", "turns": [{"role": "user", "text": "a"}, {}]},
            "turns[1]: ",
        ),
        ("/capture", {"messages": [{"role": "user"}]}, "messages[0]: "),
        ("/compact", {"session": "s", "messages": [{"role": "user"}] * 3}, "messages[2]: "),
    ],
)
async def test_text_and_content_together_is_400(
    client: httpx.AsyncClient, path: str, body: dict[str, object], expected: str
) -> None:
    items = body.get("turns") or body["messages"]
    assert isinstance(items, list)
    items[-1] = {"role": "user", "text": "one", "content": "two"}
    refused = await client.post(path, json=body)
    assert refused.status_code == 400
    assert error_of(refused) == {
        "code": "bad_request",
        "message": f"{expected}give 'text' or 'content', not both",
    }


async def test_errors_name_the_field_as_it_was_sent(client: httpx.AsyncClient) -> None:
    empty = await client.post(
        "/log-turns",
        json={"agent": "a", "session_id": "s", "turns": [{"role": "user", "content": ""}]},
    )
    assert empty.status_code == 400
    assert error_of(empty)["message"] == "turns[0].content is empty"
    wrong_type = await client.post(
        "/capture", json={"messages": [{"role": "user", "content": ["parts"]}]}
    )
    assert wrong_type.status_code == 400
    assert "`messages[0].content` must be str, not array" in error_of(wrong_type)["message"]
    # neither: the error says the alias is accepted too
    neither = await client.post("/capture", json={"messages": [{"role": "user", "txt": "x"}]})
    assert neither.status_code == 400
    message = error_of(neither)["message"]
    assert "missing required field `text` - at `$.messages[0]`" in message
    assert message.endswith("'content' is accepted for 'text'")
    append = await client.post("/append", json={"path": "MEMORY.md"})
    assert error_of(append)["message"].endswith("'content' is accepted for 'text'")


async def test_the_openapi_document_shows_the_message_alias(client: httpx.AsyncClient) -> None:
    schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]
    either = {"oneOf": [{"required": ["text"]}, {"required": ["content"]}]}
    for name in ("Turn", "CaptureMessage"):
        assert schemas[name]["properties"]["content"]["description"] == "Another name for `text`."
        assert "text" not in schemas[name]["required"]
        assert schemas[name]["allOf"] == [either]


# ---------------------------------------------------------------- fixed sets of values


@pytest.mark.parametrize(
    ("path", "body", "said"),
    [
        (
            "/search",
            {"query": "x", "scope": "galaxy"},
            "`scope` must be one of: all, global, project",
        ),
        (
            "/tasks",
            {"action": "finish"},
            "`action` must be one of: add, done, list, remove, reopen",
        ),
        ("/tasks", {"status": "closed"}, "`status` must be one of: all, done, open"),
        (
            "/log-turns",
            {"agent": "a", "session_id": "s", "turns": [{"role": "system", "content": "x"}]},
            "`turns[0].role` must be one of: assistant, user",
        ),
    ],
)
async def test_a_value_outside_its_set_lists_the_allowed_ones(
    client: httpx.AsyncClient, path: str, body: dict[str, object], said: str
) -> None:
    refused = await client.post(path, json=body)
    assert refused.status_code == 400
    message = error_of(refused)["message"]
    assert message.startswith(f"invalid request: {said} (Invalid enum value ")  # msgspec's kept


def test_allowed_values_walks_lists_and_optionals() -> None:
    from omem_protocol import LogTurnsParams, SearchParams

    assert allowed_values(SearchParams, "scope") == ("all", "global", "project")
    assert allowed_values(LogTurnsParams, "turns[3].role") == ("assistant", "user")
    assert allowed_values(SearchParams, "query") == ()
    assert allowed_values(SearchParams, "nowhere.deeper[0]") == ()
    assert allowed_values(LogTurnsParams, "agent[0]") == ()


# ---------------------------------------------------------------- health


@pytest.mark.parametrize(
    "query", ["x=1", "_=1700000000", "x=1&x=2", "workspace=Not%20A%20Name", "%FF=%FE"]
)
async def test_health_ignores_its_query_string(client: httpx.AsyncClient, query: str) -> None:
    probe = await client.get(f"/health?{query}")
    assert probe.status_code == 200, probe.text
    assert probe.json()["status"] == "ok"


async def test_other_gets_still_refuse_unknown_parameters(client: httpx.AsyncClient) -> None:
    refused = await client.get("/status?x=1")
    assert refused.status_code == 400
    assert "unknown query parameter(s) x" in error_of(refused)["message"]


# ---------------------------------------------------------------- the docs


def test_the_route_table_lists_every_route() -> None:
    table = "\n".join(line for line in HTTP_DOC.splitlines() if line.startswith("| `"))
    documented = set(re.findall(r"`(GET|POST) (/[\w./-]+)`", table))
    assert documented == {(route.method, path) for path, route in ROUTES.items()}


def test_the_docs_give_every_error_code_its_status() -> None:
    for code, status in {**STATUS_FOR_CODE, **HTTP_ONLY_CODES}.items():
        if code == "version_mismatch":
            continue  # a socket handshake's; HTTP has no handshake
        assert f"`{code}` {status}" in HTTP_DOC.replace("\n", " "), code


# ---------------------------------------------------------------- hints in HTTP words


async def test_an_unknown_task_names_the_request_that_lists_them(
    client: httpx.AsyncClient,
) -> None:
    """The daemon's hint was `omem-client tasks --all`, a command an HTTP caller may not have."""
    added = await client.post("/tasks", json={"action": "add", "tasks": ["Feed the cat"]})
    assert added.status_code == 200, added.text
    missing = await client.post("/tasks", json={"action": "done", "tasks": ["walk the dog"]})
    assert missing.status_code == 404
    message = error_of(missing)["message"]
    assert "omem-client" not in message
    assert message == (
        "no task matches 'walk the dog' "
        '(POST /tasks with {"status": "all"} lists every task with its id)'
    )
    # and the request it names does that
    listed = await client.post("/tasks", json={"status": "all"})
    assert [task["text"] for task in listed.json()["tasks"]] == ["Feed the cat"]


def test_every_shell_hint_the_http_api_rewords_is_still_said_by_the_daemon() -> None:
    """A hint reworded at its source would reach HTTP callers as a shell command again."""
    root = Path(__file__).parents[1] / "daemon" / "openmemoryd"
    sources = [p.read_text("utf-8") for p in root.rglob("*.py") if p.parent.name != "gateway"]
    for cli, said in HTTP_HINTS:
        assert any(cli in source for source in sources), cli
        assert "omem-client" not in said
        assert in_http_words(f"x {cli} y") == f"x {said} y"
