"""The HTTP gateway's ASGI app, driven in-process through httpx.ASGITransport.

httpx's ASGI transport runs on whatever async library calls it (it asks
sniffio), so these tests run under pytest-trio against a real in-process
engine; the end-to-end tests (test_e2e_http.py) add the real hypercorn
server and daemon.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import jsonschema
import msgspec
import pytest
import trio

from omem_protocol import METHODS, ReplyBody, RequestBody
from openmemoryd.api import Api, DaemonInfo
from openmemoryd.engine import Engine, ProgressFn
from openmemoryd.gateway import GatewayApp, GatewayPlan, ListenAddress
from openmemoryd.gateway import asgi as asgi_module
from openmemoryd.gateway.routes import ROUTES

TOKEN = "s3cret-token-value"


def make_app(
    api: Api, *, token: str | None = None, max_body: int = 1 << 20, **plan: Any
) -> GatewayApp:
    return GatewayApp(
        api, GatewayPlan(ListenAddress("127.0.0.1", 8787), token, **plan), max_body_bytes=max_body
    )


def http(app: GatewayApp, **headers: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://127.0.0.1:8787",
        headers=headers,
    )


@pytest.fixture
async def api(engine: Engine) -> Api:
    return Api(engine, DaemonInfo(socket="/tmp/test.sock", http="http://127.0.0.1:8787"))


@pytest.fixture
async def client(api: Api) -> AsyncIterator[httpx.AsyncClient]:
    async with http(make_app(api)) as c:
        yield c


async def raw_asgi(
    app: GatewayApp, method: str, path: str, chunks: list[bytes]
) -> tuple[int, bytes]:
    """One request straight through the ASGI interface, body in *chunks*."""
    pending = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8787")],
    }
    await app(scope, receive, send)
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    return int(sent[0]["status"]), bytes(sent[1]["body"])


def error_of(response: httpx.Response) -> dict[str, str]:
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    return dict(body["error"])


# ---------------------------------------------------------------- routes


async def test_append_then_search_get_recall_capture_and_status(
    client: httpx.AsyncClient,
) -> None:
    appended = await client.post("/append", json={"text": "Rosalind keeps the spare keys"})
    assert appended.status_code == 200, appended.text
    result = appended.json()
    assert result["indexed"] is True
    found = await client.post("/search", json={"query": "spare keys Rosalind"})
    assert found.status_code == 200
    hits = found.json()["results"]
    assert hits
    assert "Rosalind keeps the spare keys" in hits[0]["snippet"]
    assert hits[0]["path"] == result["path"]

    got = await client.get(
        "/get", params={"path": result["path"], "from": result["start_line"], "lines": 1}
    )
    assert got.status_code == 200
    assert got.json()["text"].strip().endswith("Rosalind keeps the spare keys")

    recalled = await client.post("/recall", json={"query": "who keeps the spare keys"})
    assert recalled.status_code == 200
    assert "Rosalind" in recalled.json()["block"]

    captured = await client.post(
        "/capture",
        json={"messages": [{"role": "user", "text": "I prefer green tea over coffee always"}]},
    )
    assert captured.status_code == 200, captured.text
    assert [c["category"] for c in captured.json()["captured"]] == ["preference"]

    status = await client.get("/status")
    assert status.status_code == 200
    assert status.json()["http"] == "http://127.0.0.1:8787"
    assert status.json()["workspace"] == "default"


async def test_health_and_openapi(client: httpx.AsyncClient) -> None:
    health = await client.get("/health")
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    doc = (await client.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.")
    # every method of the table, plus the gateway's own routes and the aliases
    assert set(doc["paths"]) == {
        *("/" + method.name.replace("_", "-") for method in METHODS),
        "/memory/search",
        "/memory/status",
        "/health",
        "/openapi.json",
    }
    schemas = doc["components"]["schemas"]
    # generated from the wire Structs: the protocol's own limits are there
    assert schemas["SearchParams"]["properties"]["query"]["maxLength"] == 8192
    assert "type" not in schemas["SearchParams"]["required"]
    assert "workspace" in schemas["AppendParams"]["properties"]
    assert "results" in schemas["SearchResult"]["properties"]
    search = doc["paths"]["/search"]["post"]
    assert search["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SearchParams"
    }
    get_params = {p["name"]: p for p in doc["paths"]["/get"]["get"]["parameters"]}
    assert get_params["path"]["required"] is True
    assert get_params["from"]["required"] is False
    assert "securitySchemes" not in doc["components"]


async def test_append_takes_content_as_other_memory_apis_send_it(
    client: httpx.AsyncClient,
) -> None:
    appended = await client.post(
        "/append", json={"path": "memory/2026-02-03.md", "content": "新的记忆内容"}
    )
    assert appended.status_code == 200, appended.text
    found = await client.post("/memory/search", json={"query": "新的记忆内容", "limit": 5})
    assert found.status_code == 200
    assert found.json()["results"][0]["path"] == "memory/2026-02-03.md"
    both = await client.post("/append", json={"text": "a", "content": "b"})
    assert both.status_code == 400
    assert "not both" in error_of(both)["message"]
    status = await client.get("/memory/status")
    assert status.status_code == 200
    assert status.json()["files_indexed"] >= 1
    doc = (await client.get("/openapi.json")).json()
    append = doc["components"]["schemas"]["AppendParams"]
    assert "content" in append["properties"]
    assert "text" not in append.get("required", [])
    assert {"oneOf": [{"required": ["text"]}, {"required": ["content"]}]} in append["allOf"]


async def test_unknown_path_and_wrong_method(client: httpx.AsyncClient) -> None:
    missing = await client.get("/nope")
    assert missing.status_code == 404
    assert error_of(missing)["code"] == "not_found"
    wrong = await client.get("/search")
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "POST"
    # its own code: a client switching on `code` must not read it as a bad body
    assert error_of(wrong) == {
        "code": "method_not_allowed",
        "message": "/search takes POST, not GET",
    }
    options = await client.options("/append")  # no CORS preflight is ever granted
    assert options.status_code == 405


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"{not json", "not valid JSON"),
        (b"", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"query": "x", "limti": 3}', "unknown field(s) 'limti'"),
        (b'{"query": "x", "limit": "3"}', "`$.limit`"),
        (b'{"query": "x", "limit": 0}', "`$.limit`"),
        (b'{"query": "x", "type": "get"}', "field 'type' must be 'search'"),
        (b'{"query": "x", "workspace": "Bad Name"}', "invalid workspace"),
        (b"[" * 5000 + b"]" * 5000, "not valid JSON"),
        (b'{"query": "caf\xe9"}', "not valid JSON"),  # Latin-1, not UTF-8
        (b'{"query": "x\\ud800"}', "not valid JSON"),  # a lone surrogate
        (b'{"query": "' + b"x" * 9000 + b'"}', "Expected `str` of length <= 8192"),
    ],
)
async def test_malformed_bodies_are_400(
    client: httpx.AsyncClient, body: bytes, expected: str
) -> None:
    response = await client.post("/search", content=body)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "bad_request"
    assert expected in error["message"]


async def test_query_string_errors_are_400(client: httpx.AsyncClient) -> None:
    cases = {
        "/get?path=MEMORY.md&from=abc": "query parameter `from`",
        "/get?path=MEMORY.md&form=3": "unknown query parameter(s) form",
        "/get?path=MEMORY.md&path=USER.md": "more than once: path",
        "/get?from=2": "missing required field `path`",
        "/search?query=x": "only workspace may be in the query",
    }
    for url, expected in cases.items():
        method = "POST" if url.startswith("/search") else "GET"
        response = await client.request(method, url, json={"query": "x"})
        assert response.status_code == 400, url
        assert expected in error_of(response)["message"], url


async def test_engine_errors_keep_the_socket_codes(client: httpx.AsyncClient) -> None:
    outside = await client.get("/get", params={"path": "../etc/passwd.md"})
    assert outside.status_code == 403
    assert error_of(outside)["code"] == "forbidden"
    missing = await client.get("/get", params={"path": "memory/never.md"})
    assert missing.status_code == 404
    assert error_of(missing)["code"] == "not_found"
    no_ws = await client.get("/status", params={"workspace": "other"})
    assert no_ws.status_code == 404
    assert "no workspace named 'other'" in error_of(no_ws)["message"]
    clash = await client.post("/search?workspace=default", json={"query": "x", "workspace": "b"})
    assert clash.status_code == 400
    named = await client.post("/search?workspace=default", json={"query": "x"})
    assert named.status_code == 200


async def test_body_over_the_limit_is_413(api: Api) -> None:
    async with http(make_app(api, max_body=1024)) as client:
        big = await client.post("/append", json={"text": "y" * 2000})
        assert big.status_code == 413
        assert error_of(big)["code"] == "too_large"

        # no Content-Length (chunked): counted as it arrives, refused at the limit
        status, reply = await raw_asgi(
            make_app(api, max_body=1024), "POST", "/append", [b'{"text": "'] + [b"z" * 200] * 10
        )
        assert status == 413
        assert b'"too_large"' in reply
        # a reply over the limit is refused too, like the socket's frame limit
        api.engine.config.workspace.joinpath("MEMORY.md").write_text("w\n" * 2000)
        reply = await client.get("/get", params={"path": "MEMORY.md"})
        assert reply.status_code == 413
        assert "ask for less" in error_of(reply)["message"]


async def test_a_client_that_leaves_mid_body_gets_no_reply(api: Api) -> None:
    sent: list[Any] = []
    messages = [{"type": "http.request", "body": b'{"te', "more_body": True}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/append", "query_string": b""}
    scope["headers"] = [(b"host", b"localhost")]
    await make_app(api)(scope, receive, send)
    assert sent == []


async def test_lifespan_is_acknowledged(api: Api) -> None:
    messages = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: Any) -> None:
        sent.append(message["type"])

    await make_app(api)({"type": "lifespan"}, receive, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


async def test_too_many_in_flight_is_429(api: Api) -> None:
    app = make_app(api, max_inflight=1)
    app.inflight = 1  # one request is running
    async with http(app) as client:
        busy = await client.post("/search", json={"query": "x"})
        assert busy.status_code == 429
        assert busy.headers["retry-after"] == "1"
        assert error_of(busy)["code"] == "unavailable"
        assert (await client.get("/health")).status_code == 200  # liveness still answers


class BrokenApi(Api):
    async def dispatch(
        self, body: RequestBody, progress: ProgressFn, workspace: str | None = None
    ) -> ReplyBody:
        raise RuntimeError("boom with a secret inside")


async def test_a_bug_is_500_and_the_app_keeps_serving(engine: Engine) -> None:
    async with http(make_app(BrokenApi(engine, DaemonInfo(socket="s")))) as client:
        failed = await client.post("/search", json={"query": "x"})
        assert failed.status_code == 500
        error = error_of(failed)
        assert error == {
            "code": "internal",
            "message": "internal error (RuntimeError); see the daemon log",
        }
        assert (await client.get("/health")).status_code == 200


# ---------------------------------------------------------------- guard


@pytest.mark.parametrize("host", ["127.0.0.1:8787", "localhost", "LOCALHOST:1", "[::1]:8787"])
async def test_loopback_hosts_pass(client: httpx.AsyncClient, host: str) -> None:
    assert (await client.get("/health", headers={"host": host})).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"host": "evil.example"},
        {"host": "evil.example:8787"},
        {"host": "127.0.0.1.evil.example"},
        {"host": "10.0.0.5:8787"},
        {"origin": "http://evil.example"},
        {"origin": "http://127.0.0.1.evil.example:8787"},
        {"origin": "null"},
        {"origin": "file://"},
        {"origin": "http://[::1"},
    ],
)
async def test_rebinding_guard_refuses_foreign_host_or_origin(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    for method, url in (("GET", "/health"), ("POST", "/append")):
        response = await client.request(method, url, headers=headers, json={"text": "pwned"})
        assert response.status_code == 403, (headers, url)
        assert error_of(response)["code"] == "forbidden"


async def test_loopback_origins_pass(client: httpx.AsyncClient) -> None:
    for origin in ("http://localhost:3000", "http://127.0.0.1:8787", "https://[::1]"):
        response = await client.get("/status", headers={"origin": origin})
        assert response.status_code == 200, origin


async def test_allowed_hosts_extend_the_guard(api: Api) -> None:
    async with http(make_app(api, allowed_hosts=frozenset({"mybox.lan"}))) as client:
        assert (await client.get("/health", headers={"host": "mybox.lan:8787"})).status_code == 200
        assert (await client.get("/health", headers={"host": "other.lan"})).status_code == 403


# ---------------------------------------------------------------- token


async def test_bearer_token(api: Api) -> None:
    app = make_app(api, token=TOKEN)
    async with http(app) as client:
        missing = await client.post("/search", json={"query": "x"})
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == 'Bearer realm="openmemory"'
        # 401's own code, not 403's `forbidden` (a path outside the workspace)
        assert error_of(missing)["code"] == "unauthorized"
        assert error_of(missing)["message"].startswith("a bearer token is required")
        # no bearer token tried (another scheme, or none after "Bearer"):
        # told one is required, with no error code in the challenge (RFC 6750)
        for other in (f"Basic {TOKEN}", "Basic dXNlcjpwYXNz", "Bearer", "Bearer   ", TOKEN):
            response = await client.post(
                "/search", json={"query": "x"}, headers={"authorization": other}
            )
            assert response.status_code == 401, other
            assert response.headers["www-authenticate"] == 'Bearer realm="openmemory"', other
            error = error_of(response)
            assert error["code"] == "unauthorized"
            assert error["message"].startswith("a bearer token is required"), other
            assert "holds no bearer token" in error["message"]
            assert TOKEN not in response.text
        for wrong in ("Bearer nope", f"Bearer {TOKEN}x", f"bearer {TOKEN[:-1]}"):
            response = await client.post(
                "/search", json={"query": "x"}, headers={"authorization": wrong}
            )
            assert response.status_code == 401, wrong
            assert "invalid_token" in response.headers["www-authenticate"]
            assert error_of(response) == {
                "code": "unauthorized",
                "message": "the bearer token is wrong",
            }
            assert TOKEN not in response.text
        ok = await client.post(
            "/search", json={"query": "x"}, headers={"authorization": f"Bearer {TOKEN}"}
        )
        assert ok.status_code == 200
        # liveness and the API description need no token
        assert (await client.get("/health")).status_code == 200
        doc = (await client.get("/openapi.json")).json()
        assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
        assert doc["paths"]["/search"]["post"]["security"] == [{"bearer": []}]
        assert TOKEN not in str(doc)
    # the guard comes first: a foreign Host with the right token is still refused
    async with http(app, authorization=f"Bearer {TOKEN}") as client:
        assert (await client.get("/status", headers={"host": "evil.example"})).status_code == 403
    assert TOKEN not in repr(app.plan)


def test_every_socket_error_code_has_an_http_status() -> None:
    from omem_protocol import ERROR_CODES
    from openmemoryd.gateway import HTTP_ONLY_CODES, STATUS_FOR_CODE

    assert set(STATUS_FOR_CODE) == set(ERROR_CODES)
    assert all(400 <= status < 600 for status in STATUS_FOR_CODE.values())
    # HTTP's own codes never collide with the socket's (the client library
    # maps those to its exception classes) and name statuses the socket lacks
    assert not set(HTTP_ONLY_CODES) & set(ERROR_CODES)
    assert not set(HTTP_ONLY_CODES.values()) & set(STATUS_FOR_CODE.values())


# ---------------------------------------------------------------- the documented errors


def _documented(doc: dict[str, Any], path: str, method: str, status: int) -> dict[str, Any]:
    """The OpenAPI response *doc* gives for *status* of *method* *path*."""
    response: dict[str, Any] = doc["paths"][path][method.lower()]["responses"][str(status)]
    return response


async def test_every_error_status_the_app_sends_is_in_the_openapi_document(
    engine: Engine,
) -> None:
    """405 on every path (its Allow header as documented), 500 on every route
    that calls the engine: both were sent but missing from the document."""
    async with http(make_app(BrokenApi(engine, DaemonInfo(socket="s")))) as client:
        doc = (await client.get("/openapi.json")).json()
        for path, route in ROUTES.items():
            other = "POST" if route.method == "GET" else "GET"
            wrong = await client.request(other, path)
            assert wrong.status_code == 405, path
            documented = _documented(doc, path, route.method, 405)
            allow = documented["headers"]["Allow"]["schema"]
            jsonschema.validate(wrong.headers["allow"], allow)
            error = documented["content"]["application/json"]["schema"]
            jsonschema.validate(wrong.json(), {**error, "components": doc["components"]})
            if route.params is None:
                assert "500" not in doc["paths"][path][route.method.lower()]["responses"]
        failed = await client.post("/search", json={"query": "x"})
        assert failed.status_code == 500
        error = _documented(doc, "/search", "POST", 500)["content"]["application/json"]["schema"]
        jsonschema.validate(failed.json(), {**error, "components": doc["components"]})


async def test_a_stopping_daemon_answers_even_health_with_the_documented_503(
    api: Api,
) -> None:
    app = make_app(api)
    async with http(app) as client:
        doc = (await client.get("/openapi.json")).json()
        app.begin_stop(1.0)
        for path in ("/health", "/openapi.json", "/status"):
            assert (await client.get(path)).status_code == 503, path
            assert "503" in doc["paths"][path]["get"]["responses"], path
    assert _documented(doc, "/health", "GET", 503)["description"] == "The daemon is stopping"


async def test_a_body_that_does_not_arrive_is_408_and_holds_no_slot(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """64 clients sending a body a byte at a time held every slot of
    `max_inflight` for the server's read timeout, and every other caller got
    429 (found by dogfooding). The body is read before a slot is taken, and
    a body that does not arrive within `BODY_WAIT_S` is answered 408."""
    monkeypatch.setattr(asgi_module, "BODY_WAIT_S", 0.2)
    app = make_app(api, max_inflight=1)
    sent: list[dict[str, Any]] = []
    started = trio.Event()

    async def receive() -> dict[str, Any]:
        started.set()
        await trio.sleep_forever()
        raise AssertionError  # pragma: no cover

    async def send(message: Any) -> None:
        sent.append(dict(message))

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/search",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8787"), (b"content-length", b"100")],
    }
    async with trio.open_nursery() as nursery:
        nursery.start_soon(app, scope, receive, send)
        await started.wait()
        assert app.inflight == 0  # the stalled upload holds no slot
        async with http(app) as client:
            assert (await client.post("/search", json={"query": "x"})).status_code == 200
    assert sent[0]["status"] == 408
    assert msgspec.json.decode(sent[1]["body"])["error"]["code"] == "request_timeout"
