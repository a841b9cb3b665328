"""An empty field gets one plain message on every surface: "query is empty".

Found by a user: `omem-client search ""`, `omem-client log ""`, MCP
``memory_search {"query": ""}`` and ``Client().search("")`` answered
"invalid request: `query` must not be empty (Expected `str` of length >= 1 -
at `$.query`)", msgspec's words about its own types, while `search "   "`
said "query is empty". Now every field that must not be empty is said so,
in the words a blank one gets, with the same error code (``bad_request``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from msgspec import inspect

from conftest import Daemon
from omem_client import BadRequestError, Client
from omem_protocol import (
    CaptureMessage,
    MessageDecodeError,
    Turn,
    decode_request_body,
)
from omem_protocol.methods import METHODS
from openmemoryd.errors import invalid_request
from test_mcp_bridge import bridge, call, text_of

# A valid body for each method with such a field; each test empties one field.
BODIES: dict[str, dict[str, Any]] = {
    "search": {"query": "tea"},
    "get": {"path": "MEMORY.md"},
    "append": {"text": "- a note", "path": "MEMORY.md"},
    "log_turns": {
        "agent": "a",
        "session_id": "s",
        "turns": [{"type": "turn", "role": "user", "text": "hi"}],
    },
    "capture": {"messages": [{"type": "capture_message", "role": "user", "text": "hi"}]},
    "forget": {"citation": "MEMORY.md#L1", "text": "x", "query": "x"},
    "restore": {"path": "MEMORY.md"},
    "export": {"output": "/tmp/x.tar.gz"},
    "log": {"text": "I prefer tea"},
    "compact": {
        "session": "s",
        "messages": [{"type": "capture_message", "role": "user", "text": "hi"}],
    },
}


def fields_that_must_not_be_empty() -> set[tuple[str, str]]:
    """(method, field path) for every string or list of the method table
    that must hold at least one character or item."""
    found: set[tuple[str, str]] = set()

    def walk(method: str, info: inspect.Type, path: str) -> None:
        if isinstance(info, inspect.UnionType):
            for member in info.types:
                walk(method, member, path)
        elif isinstance(info, inspect.StrType) and info.min_length:
            found.add((method, path))
        elif isinstance(info, inspect.VarTupleType | inspect.ListType):
            if info.min_length:
                found.add((method, path))
            walk(method, info.item_type, f"{path}[0]")
        elif isinstance(info, inspect.StructType):
            for field in info.fields:
                walk(method, field.type, f"{path}.{field.encode_name}".lstrip("."))

    for method in METHODS:
        walk(method.name, inspect.type_info(method.params), "")
    return found


def emptied(method: str, path: str) -> dict[str, Any]:
    """`BODIES[method]` with the field at *path* empty ("" or [])."""
    body = msgspec.json.decode(msgspec.json.encode(BODIES[method]))
    *parents, last = path.replace("[0]", ".0").split(".")
    target: Any = body
    for step in parents:
        target = target[int(step)] if step.isdigit() else target[step]
    target[last] = [] if isinstance(target[last], list) else ""
    return {"type": method, **body}


def test_the_bodies_cover_every_field_that_must_not_be_empty() -> None:
    assert {method for method, _ in fields_that_must_not_be_empty()} == set(BODIES)


@pytest.mark.parametrize(("method", "path"), sorted(fields_that_must_not_be_empty()))
def test_the_daemon_says_an_empty_field_is_empty_in_plain_words(method: str, path: str) -> None:
    """As the daemon decodes a request off the socket (and HTTP does the same)."""
    decode_request_body(msgspec.Raw(msgspec.msgpack.encode({"type": method, **BODIES[method]})))
    with pytest.raises(MessageDecodeError) as refused:
        decode_request_body(msgspec.Raw(msgspec.msgpack.encode(emptied(method, path))))
    assert invalid_request(str(refused.value)) == f"{path} is empty"


# ---------------------------------------------------------------- through the daemon

LIBRARY_CALLS: dict[str, Callable[[Client], object]] = {
    "query": lambda c: c.search(""),
    "path": lambda c: c.get(""),
    "text": lambda c: c.append(""),
    "turns[0].text": lambda c: c.log_turns("agent", "s1", [Turn(role="user", text="")]),
    "turns": lambda c: c.log_turns("agent", "s1", []),
    "messages[0].role": lambda c: c.capture([CaptureMessage(role="", text="I like tea")]),
}


@pytest.mark.e2e
def test_every_surface_says_query_is_empty_as_for_a_blank_query(daemon: Daemon) -> None:
    blank = daemon.cli("search", "   ")
    assert blank.returncode == 4
    assert blank.stderr == "omem-client: error (bad_request): query is empty\n"
    for args, field in (
        (("search", ""), "query"),
        (("log", ""), "text"),
        (("append", ""), "text"),
        (("get", ""), "path"),
        (("forget", "--query", ""), "query"),
    ):
        result = daemon.cli(*args)
        assert result.returncode == 4, result.stderr
        assert result.stderr == f"omem-client: error (bad_request): {field} is empty\n", args
    as_json = daemon.cli("search", "", "--json")
    error = msgspec.json.decode(as_json.stdout)["error"]
    assert (error["code"], error["message"]) == ("bad_request", "query is empty")

    with daemon.client() as client:
        for field, send in LIBRARY_CALLS.items():
            with pytest.raises(BadRequestError) as refused:
                send(client)
            assert (refused.value.code, str(refused.value)) == (
                "bad_request",
                f"{field} is empty",
            )
        client.status()  # the connection stays usable


@pytest.mark.e2e
async def test_the_mcp_bridge_says_so_too(daemon: Daemon) -> None:
    async with bridge(daemon.env) as session:
        for tool, arguments, said in (
            ("memory_search", {"query": ""}, "query is empty"),
            ("memory_log", {"content": ""}, "content is empty"),
            ("memory_append", {"text": ""}, "text is empty"),
        ):
            result = await call(session, tool, **arguments)
            assert result.is_error
            assert text_of(result) == f"invalid arguments for {tool}: {said}"
        blank = await call(session, "memory_search", query="   ")
        assert text_of(blank).endswith("query is empty")
