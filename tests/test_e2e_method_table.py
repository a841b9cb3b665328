"""The method table, walked: every method is reachable through every surface.

One real daemon (keyword search, a fake chat server for `compact`, HTTP with
a bearer token) and, for each entry of `omem_protocol.METHODS`: the blocking
and the async client, the HTTP route (its reply validated against the
OpenAPI document the daemon serves) and, for the methods offered to models,
an MCP tool whose structured result is validated against its
``outputSchema``. A method added to the table without a sample here, a
handler, a client method, a route or a tool fails this file.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import msgspec
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from schemathesis.specs.openapi.checks import positive_data_acceptance

from conftest import Daemon, Env
from fake_chat_servers import FakeChatServer
from omem_client import AsyncClient, Client, _requests
from omem_client._mcp_tools import TOOLS
from omem_protocol import METHODS, Method
from openmemoryd.gateway.routes import ROUTES, method_path
from test_e2e_compact import chat_config
from test_e2e_http import free_port, wait_http

pytestmark = pytest.mark.e2e

TOKEN = "walk-the-table-7Qx"
NOTE = "The heron colony nests on the west island."
MESSAGES = [
    {"role": "user", "content": "Remember that I prefer green tea over coffee."},
    {"role": "assistant", "content": "Noted: green tea."},
    {"role": "user", "content": "Let us plan the heron survey for next spring."},
]


def samples(out: Path) -> dict[str, tuple[tuple[Any, ...], dict[str, Any]]]:
    """Arguments for each method's client call, keyed by method name."""
    return {
        "status": ((), {}),
        "search": (("heron colony",), {}),
        "get": (("MEMORY.md",), {"from_line": 1, "lines": 5}),
        "append": ((NOTE,), {}),
        "sync": ((), {}),
        "log_turns": (("walker", "s1", [{"role": "user", "content": "Herons at dawn"}]), {}),
        "session_start": (("walker",), {}),
        "recall": (("where does the heron colony nest?",), {}),
        "capture": ((MESSAGES[:1],), {}),
        "forget": ((), {"text": "no line says exactly this"}),
        "restore": ((), {"dry_run": True}),
        "primer": ((), {}),
        "flush_check": (("s1",), {"tokens": 10, "context_window": 100_000}),
        "doctor": ((), {}),
        "export": ((out / f"export-{uuid.uuid4().hex[:8]}.tar.gz",), {}),
        "session_end": ((), {"learned": "Herons nest on islands", "agent": "walker"}),
        "tasks": (("add", "Count the herons"), {}),
        "log": (("I prefer green tea to coffee in the morning.",), {}),
        "compact": (("s1", MESSAGES), {"keep_last": 1}),
        "compact_check": ((70_000,), {"context_window": 100_000}),
    }


TOOL_ARGUMENTS: dict[str, dict[str, Any]] = {
    "memory_status": {},
    "memory_search": {"query": "heron colony"},
    "memory_get": {"path": "MEMORY.md", "lines": 3},
    "memory_append": {"text": "Herons return to the west island in March."},
    "memory_recall": {"query": "where do the herons nest?"},
    "memory_capture": {"messages": MESSAGES[:1]},
    "memory_forget": {"query": "a memory about zebras that was never written"},
    "memory_primer": {},
    "memory_flush_check": {"session": "s2", "tokens": 10, "context_window": 100_000},
    "memory_session_end": {"learned": ["Herons like islands"]},
    "memory_tasks": {},
    "memory_update_tasks": {"action": "add", "tasks": ["Ring the heron chicks"]},
    "memory_log": {"content": "The heron survey uses the blue boat."},
    "memory_compact": {"session": "s3", "messages": MESSAGES, "keep_last": 1},
    "memory_compact_check": {"tokens": 30_000, "context_window": 100_000},
}


@pytest.fixture(scope="module")
def walker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, str]]:
    import shutil
    import tempfile

    socket_dir = Path(tempfile.mkdtemp(prefix="om-", dir="/tmp"))
    env = Env(root=tmp_path_factory.mktemp("walk"), socket_dir=socket_dir)
    with FakeChatServer() as chat:
        env.write_config(
            chat_config(chat)
            + f'[http]\nenabled = true\nlisten = "127.0.0.1:{free_port()}"\ntoken_env = "OM_WALK"\n'
        )
        os.environ["OM_WALK"] = TOKEN  # Env.vars passes it on to the daemon
        daemon = Daemon(env).start()
        try:
            yield daemon, wait_http(daemon)
        finally:
            daemon.stop()
            os.environ.pop("OM_WALK", None)
            shutil.rmtree(socket_dir, ignore_errors=True)


def test_every_method_has_a_sample_and_a_client_method() -> None:
    assert set(samples(Path("/nonexistent"))) == {method.name for method in METHODS}
    for method in METHODS:
        for cls in (Client, AsyncClient):
            bound = getattr(cls, method.name)  # the descriptor, on the class
            assert bound.build is getattr(_requests, method.name), (cls, method.name)


def test_every_method_through_the_blocking_client(
    walker: tuple[Daemon, str], tmp_path: Path
) -> None:
    daemon, _ = walker
    with daemon.client() as client:
        for method in METHODS:
            args, kwargs = samples(tmp_path)[method.name]
            result = getattr(client, method.name)(*args, **kwargs)
            assert isinstance(result, method.result), method.name


async def test_every_method_through_the_async_client(
    walker: tuple[Daemon, str], tmp_path: Path
) -> None:
    daemon, _ = walker
    async with AsyncClient(daemon.env.socket, timeout=30) as client:
        for method in METHODS:
            args, kwargs = samples(tmp_path)[method.name]
            result = await getattr(client, method.name)(*args, **kwargs)
            assert isinstance(result, method.result), method.name


def test_every_method_over_http_matches_the_openapi_document(
    walker: tuple[Daemon, str], tmp_path: Path
) -> None:
    _, url = walker
    auth = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, timeout=60, headers=auth) as web:
        document = web.get("/openapi.json").json()
        for method in METHODS:
            path = method_path(method)
            route = ROUTES[path]
            args, kwargs = samples(tmp_path)[method.name]
            params = msgspec.to_builtins(getattr(_requests, method.name)(*args, **kwargs).params)
            del params["type"]  # the path names the method
            if route.method == "GET":
                query = {
                    name: params[field]
                    for name, field in route.query.items()
                    if params[field] is not None  # left out, as a caller would
                }
                reply = web.get(path, params=query)
            else:
                reply = web.post(path, json=params)
            assert reply.status_code == 200, (path, reply.text)
            operation = document["paths"][path][route.method.lower()]
            assert operation["security"] == [{"bearer": []}], path
            assert {"401", "403"} <= set(operation["responses"]), path
            schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
            validate(reply.json(), schema, document)
            # and without the token, the documented 401
            refused = httpx.request(route.method, url + path, json=params if params else None)
            assert refused.status_code == 401, path
            validate(refused.json(), _response_schema(operation, "401"), document)


def test_a_wrong_method_gets_the_documented_405_on_every_path(walker: tuple[Daemon, str]) -> None:
    """405 was sent (with Allow) but in no operation's responses; the fuzzing
    below sends only each path's own method, so every path is tried here."""
    _, url = walker
    auth = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, timeout=60, headers=auth) as web:
        document = web.get("/openapi.json").json()
        for path, route in ROUTES.items():
            operation = document["paths"][path][route.method.lower()]
            assert {"403", "405", "503"} <= set(operation["responses"]), path
            if route.params is not None:
                assert "500" in operation["responses"], path
            for other in ("GET", "POST", "PUT", "DELETE"):
                if other == route.method:
                    continue
                wrong = web.request(other, path)
                assert wrong.status_code == 405, (path, other)
                allow = operation["responses"]["405"]["headers"]["Allow"]["schema"]
                jsonschema.validate(wrong.headers["allow"], allow)
                validate(wrong.json(), _response_schema(operation, "405"), document)


async def test_every_agent_tool_over_mcp_matches_its_output_schema(
    walker: tuple[Daemon, str],
) -> None:
    offered = {tool.method.name for tool in TOOLS}
    assert offered == {method.name for method in METHODS if method.agent_tool}
    assert set(TOOL_ARGUMENTS) == {tool.name for tool in TOOLS}
    daemon, _ = walker
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "omem_client", "mcp"], env=daemon.env.vars
    )
    with (daemon.env.root / "bridge.log").open("a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            for tool in TOOLS:
                definition = listed[tool.name]
                assert definition.output_schema is not None, tool.name
                result = await session.call_tool(tool.name, TOOL_ARGUMENTS[tool.name])
                assert isinstance(result, types.CallToolResult)
                text = [c.text for c in result.content if isinstance(c, types.TextContent)]
                assert not result.is_error, (tool.name, text)
                jsonschema.validate(result.structured_content, definition.output_schema)
                assert result.structured_content is not None
                assert result.structured_content["type"] == _tag(tool.method), tool.name


def validate(body: Any, schema: dict[str, Any], document: dict[str, Any]) -> None:
    """*body* against an OpenAPI *schema* whose refs point into *document*."""
    jsonschema.validate(body, {**schema, "components": document["components"]})


def _response_schema(operation: dict[str, Any], status: str) -> dict[str, Any]:
    schema: dict[str, Any] = operation["responses"][status]["content"]["application/json"]["schema"]
    return schema


def _tag(method: Method[Any, Any]) -> str:
    tag = method.result.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


def test_the_table_and_the_unions_agree() -> None:
    from omem_protocol import ReplyBody, RequestBody

    assert {m.params for m in METHODS} == set(RequestBody.__args__)  # type: ignore[attr-defined]
    results = set(ReplyBody.__args__) - {m.result for m in METHODS}  # type: ignore[attr-defined]
    assert {cls.__name__ for cls in results} == {"Error"}


# ---------------------------------------------------------------- fuzzing


def test_http_api_conforms_to_its_openapi_document(walker: tuple[Daemon, str]) -> None:
    """Generated requests to every route, valid and not: no 5xx, only
    documented statuses and content types, and every reply matches its schema.

    Schema-valid requests may still be refused where a rule spans fields
    (forget takes exactly one of citation, text or query; session_end needs
    one note) or text is only whitespace: rules an OpenAPI schema generated
    from the structs cannot state, so that one check (positive data
    acceptance) is left out. /export writes an archive wherever it is told
    on this machine: it is walked above, not fuzzed.
    """
    _, url = walker
    # spelled as the security scheme says, so the ignored-auth check can take it away
    auth = {"Authorization": f"Bearer {TOKEN}"}
    schema = schemathesis.openapi.from_url(url + "/openapi.json", headers=auth)
    fuzzed = set()
    for found in schema.exclude(path="/export").get_all_operations():
        operation = found.ok()

        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
        def conforms(case: Any) -> None:
            case.call_and_validate(headers=auth, excluded_checks=[positive_data_acceptance])

        conforms()
        fuzzed.add(operation.path)
    assert fuzzed >= {method_path(method) for method in METHODS} - {"/export"}


def test_a_method_added_through_the_table_works_from_the_cli(walker: tuple[Daemon, str]) -> None:
    """compact_check was added as one table entry, one handler, one builder and
    one CLI command; every other surface (both clients, HTTP, MCP) came from
    the table and is walked above."""
    daemon, _ = walker
    due = daemon.cli("compact-check", "--tokens", "70000", "--context-window", "100000")
    assert due.returncode == 0, due.stderr
    assert "Compact now: 70,000 of 100,000 tokens" in due.stdout
    assert "bring it to 40,000 (30,000 tokens to go)" in due.stdout
    fine = daemon.cli("compact-check", "--tokens", "30000", "--context-window", "100000")
    assert fine.returncode == 1
    assert fine.stdout.startswith("Within budget: 30,000 of 100,000 tokens")
