"""The HTTP API as a small ASGI app over `Api.dispatch`.

Every method route ends in the same `Api.dispatch` the socket server calls,
so both front ends share one engine, one writer and one set of limits and
errors. Order of checks, each answering on its own: stopping (503),
Host/Origin guard (403), route (404), method (405), token (401), capacity
(429), body size (413), body shape (400), then the call, whose `OmemdError`
becomes the status below.

Nothing a client sends can raise out of `__call__`: every failure is a JSON
``{"error": {"code", "message"}}`` reply. The token never reaches a log line
or a message.

Stopping (`begin_stop`, `abandon`, `wait_idle`, driven by `serve`): once the
daemon stops, a request that reaches the app gets 503 ``unavailable`` before
any other check, and every reply, including those of the requests already
running, carries ``Connection: close``, so no client reuses a connection to
a daemon that is going away. A request still running when the grace period
ends is cancelled and answered 503 too: a client must learn that its
request was not finished, which a cut connection does not say.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final
from urllib.parse import parse_qs

import msgspec
import trio

from omem_protocol import PROTOCOL_VERSION, RequestBody, __version__
from openmemoryd.api import Api
from openmemoryd.errors import BadRequest, OmemdError
from openmemoryd.gateway.address import GatewayPlan
from openmemoryd.gateway.guard import bearer_token, host_problem, origin_problem, token_matches
from openmemoryd.gateway.openapi import build_openapi
from openmemoryd.gateway.routes import (
    ROUTES,
    ErrorDetail,
    ErrorReply,
    HealthResult,
    Route,
    body_params,
    merge_workspace,
    query_params,
    query_workspace,
)
from openmemoryd.gateway.wording import reply_in_http_words

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

logger = logging.getLogger("openmemoryd.http")

# The socket's error codes as HTTP statuses.
STATUS_FOR_CODE: Final = {
    "bad_request": 400,
    "version_mismatch": 400,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "too_large": 413,
    "internal": 500,
    "unavailable": 503,
    "timeout": 504,
}
# Codes only the HTTP API sends, for statuses the socket has no use for: a
# client that switches on `code` must be able to tell a missing token from a
# path outside the workspace (``forbidden``, 403) and a wrong verb from a bad
# body (``bad_request``, 400). The socket's `ErrorCode` set stays closed.
HTTP_ONLY_CODES: Final = {
    "unauthorized": 401,
    "method_not_allowed": 405,
    "request_timeout": 408,
}
# How long a request's body may take to arrive before it is answered 408.
BODY_WAIT_S: Final = 10.0
_JSON_HEADERS: Final = [
    (b"content-type", b"application/json"),
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
]
_ENCODER: Final = msgspec.json.Encoder()
_CLOSE: Final = (b"connection", b"close")
STOPPING_MESSAGE: Final = (
    "openmemoryd is stopping and takes no new requests; retry once it runs again"
)


class HttpFailure(Exception):
    """A reply other than 200, raised anywhere below `__call__`."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or []


class _ClientGone(Exception):
    """The client disconnected before its request body arrived."""


async def _no_progress(done: int, total: int, phase: str) -> None:
    """HTTP replies are whole; interim progress has nowhere to go."""


class GatewayApp:
    """ASGI 3 application serving `ROUTES` over *api*."""

    def __init__(self, api: Api, plan: GatewayPlan, max_body_bytes: int) -> None:
        self.api = api
        self.plan = plan
        self.max_body_bytes = max_body_bytes
        self.inflight = 0
        self._openapi = _ENCODER.encode(build_openapi(token_required=plan.token is not None))
        # Every HTTP request inside `__call__`, not only the API calls
        # `inflight` counts against `max_inflight`: the stop waits for all.
        self.active = 0
        self._stopping = False
        self._grace_s = 0.0
        self._now_idle = trio.lowlevel.ParkingLot()
        self._work: set[trio.CancelScope] = set()

    def begin_stop(self, grace_s: float) -> None:
        """Answer every new request 503 from now on; the running ones go on.
        *grace_s* is how long they get (`abandon` is called after it), for the
        message of those that are abandoned."""
        self._stopping = True
        self._grace_s = grace_s

    async def wait_idle(self) -> None:
        """Return once no request is running (at once if none is)."""
        while self.active:
            await self._now_idle.park()

    def abandon(self) -> int:
        """Cancel the requests still running (each answers 503); how many."""
        for work in self._work:
            work.cancel()
        return len(self._work)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets: hypercorn closes what the app does not accept
        self.active += 1
        try:
            await self._serve(scope, receive, send)
        finally:
            self.active -= 1
            if self.active == 0:
                self._now_idle.unpark_all()

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        try:
            status, headers, body = await self._respond_unless_stopped(scope, receive)
        except _ClientGone:
            return
        except HttpFailure as failure:
            status, headers, body = _error_reply(failure)
        except OmemdError as exc:
            status, headers, body = _error_reply(_failure(exc))
        except Exception as exc:  # a bug: say so, keep serving
            logger.exception("HTTP %s %s failed", scope.get("method"), scope.get("path"))
            status, headers, body = _error_reply(_internal(exc))
        if self._stopping:  # read when the reply goes: a request running at the stop too
            headers = [*headers, _CLOSE]
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*_JSON_HEADERS, *headers, (b"content-length", b"%d" % len(body))],
            }
        )
        await send({"type": "http.response.body", "body": body})
        logger.debug(
            "%s %s -> %d (%.1f ms)",
            scope.get("method"),
            scope.get("path"),
            status,
            (time.perf_counter() - started) * 1000,
        )

    async def _respond_unless_stopped(
        self, scope: Scope, receive: Receive
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """`_respond`, unless the daemon is stopping (503), or stops for good
        while this runs (`abandon`: 503 as well)."""
        if self._stopping:
            await self._discard_body(receive)
            raise HttpFailure(503, "unavailable", STOPPING_MESSAGE)
        with trio.CancelScope() as work:
            self._work.add(work)
            try:
                return await self._respond(scope, receive)
            finally:
                self._work.discard(work)
        logger.warning("HTTP %s %s abandoned at the stop", scope.get("method"), scope.get("path"))
        raise HttpFailure(
            503,
            "unavailable",
            f"openmemoryd stopped before this request finished (it waited {self._grace_s:g} s "
            "for it, [server] drain_timeout_s); a change it was making may or may not have "
            "been saved: check before sending it again",
        )

    async def _discard_body(self, receive: Receive) -> None:
        """Read the request body (up to the usual limit) and drop it.

        Answering before the body is read and then closing would leave it
        unread in the kernel, and closing a socket with unread data sends a
        reset that can destroy the 503 before the client reads it."""
        size = 0
        while size <= self.max_body_bytes:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _ClientGone
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                return

    async def _respond(
        self, scope: Scope, receive: Receive
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        headers = _headers(scope)
        self._check_guard(headers)
        path: str = scope.get("path", "")
        route = ROUTES.get(path)
        if route is None:
            raise HttpFailure(404, "not_found", f"no such endpoint {path!r}; see /openapi.json")
        if scope.get("method") != route.method:
            raise HttpFailure(
                405,
                "method_not_allowed",
                f"{path} takes {route.method}, not {scope.get('method')}",
                [(b"allow", route.method.encode("ascii"))],
            )
        if not route.public:
            self._check_token(headers.get("authorization"))
        # Neither reads its query string: a probe's cache-buster (?_=1700000000)
        # or a monitor's tag must not turn "up" into a 400.
        if path == "/openapi.json":
            return 200, [], self._openapi
        if route.params is None:  # /health
            health = HealthResult(status="ok", version=__version__, protocol=PROTOCOL_VERSION)
            return 200, [], _ENCODER.encode(health)
        query = _query(scope)
        # The body is read before a slot is taken, and within BODY_WAIT_S:
        # 64 clients sending their bodies a byte at a time held every slot
        # for the server's read timeout, and every other caller got 429.
        with trio.move_on_after(BODY_WAIT_S) as waiting:
            params, workspace = await self._params(route, query, headers, receive)
        if waiting.cancelled_caught:
            raise HttpFailure(
                408,
                "request_timeout",
                f"the request's body did not arrive within {BODY_WAIT_S:g} s; send it whole",
                [_CLOSE],
            )
        if self.inflight >= self.plan.max_inflight:
            raise HttpFailure(
                429,
                "unavailable",
                f"{self.inflight} requests are already running; retry shortly",
                [(b"retry-after", b"1")],
            )
        self.inflight += 1
        try:
            return 200, [], await self._call(params, workspace)
        finally:
            self.inflight -= 1

    def _check_guard(self, headers: dict[str, str]) -> None:
        problem = host_problem(headers.get("host"), self.plan.allowed_hosts) or origin_problem(
            headers.get("origin"), self.plan.allowed_hosts
        )
        if problem is not None:
            raise HttpFailure(403, "forbidden", problem)

    def _check_token(self, authorization: str | None) -> None:
        if self.plan.token is None or token_matches(self.plan.token, authorization):
            return
        challenge = b'Bearer realm="openmemory"'
        if bearer_token(authorization) is None:  # none given: RFC 6750 sends no error code
            message = "a bearer token is required: send Authorization: Bearer <token>"
            if authorization is not None:  # Basic, or "Bearer" alone; never echoed
                message += " (the Authorization header sent holds no bearer token)"
        else:
            challenge += b', error="invalid_token"'
            message = "the bearer token is wrong"
        raise HttpFailure(401, "unauthorized", message, [(b"www-authenticate", challenge)])

    async def _params(
        self,
        route: Route,
        query: dict[str, list[str]],
        headers: dict[str, str],
        receive: Receive,
    ) -> tuple[RequestBody, str | None]:
        if not route.from_body:
            params, workspace = query_params(route, query)
            assert params is not None
            return params, workspace
        extra = sorted(set(query) - {"workspace"})
        if extra:
            raise BadRequest(
                f"unknown query parameter(s) {', '.join(extra)}; a {route.method} takes its "
                "fields as a JSON body (only workspace may be in the query)"
            )
        from_query = query_workspace(query)
        raw = await self._read_body(headers, receive)
        try:
            payload = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise BadRequest(f"the body is not valid JSON: {exc}") from None
        except UnicodeDecodeError as exc:  # msgspec's error for a string that is not UTF-8
            raise BadRequest(
                "the body is not valid JSON: a string is not UTF-8 "
                f"({exc.reason}, at its byte {exc.start})"
            ) from None
        params, from_body = body_params(route, payload)
        return params, merge_workspace(from_query, from_body)

    async def _read_body(self, headers: dict[str, str], receive: Receive) -> bytes:
        limit = self.max_body_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(int(declared), limit)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _ClientGone
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _too_large(size, limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _call(self, params: RequestBody, workspace: str | None) -> bytes:
        try:
            result = await self.api.dispatch(params, _no_progress, workspace)
        except OmemdError as exc:
            raise _failure(exc) from None
        except Exception as exc:
            logger.exception("HTTP %s failed", type(params).__name__)
            raise _internal(exc) from None
        # advice in the reply (a status issue, a doctor fix) names requests, not commands
        data = _ENCODER.encode(reply_in_http_words(result))
        if len(data) > self.max_body_bytes:
            raise HttpFailure(
                413,
                "too_large",
                f"the reply ({len(data)} bytes) exceeds the {self.max_body_bytes}-byte limit; "
                "ask for less (fewer lines or results)",
            )
        return data


async def _lifespan(receive: Receive, send: Send) -> None:
    """Nothing to set up: the daemon opened the engines before the app exists."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _headers(scope: Scope) -> dict[str, str]:
    """Request headers by lower-case name; a repeated header keeps its first value,
    except Host and Origin, whose repetition is itself suspicious."""
    headers: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        if name in headers and name in ("host", "origin"):
            raise HttpFailure(403, "forbidden", f"more than one {name.title()} header")
        headers.setdefault(name, value)
    return headers


def _query(scope: Scope) -> dict[str, list[str]]:
    raw: bytes = scope.get("query_string", b"")
    try:
        return parse_qs(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        raise BadRequest("the query string is not UTF-8") from None


def _too_large(size: int, limit: int) -> HttpFailure:
    return HttpFailure(
        413, "too_large", f"a request body of {size} bytes exceeds the limit of {limit} bytes"
    )


def _failure(exc: OmemdError) -> HttpFailure:
    return HttpFailure(STATUS_FOR_CODE.get(exc.code, 500), exc.code, str(exc))


def _internal(exc: Exception) -> HttpFailure:
    return HttpFailure(
        500, "internal", f"internal error ({type(exc).__name__}); see the daemon log"
    )


def _error_reply(failure: HttpFailure) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    body = _ENCODER.encode(
        ErrorReply(error=ErrorDetail(code=failure.code, message=failure.message))
    )
    return failure.status, failure.headers, body
