"""Every JSON-RPC request on the bridge's stdin gets an answer.

The MCP SDK's stdio transport (mcp 2.3) parses each line with pydantic and
hands the server an exception for a line that does not parse; the server
logs it at debug level and drops it. So a request the parser refuses is
never answered, and the host's tool call hangs until its own timeout. Two
such lines come from real hosts:

* a string holding a lone UTF-16 surrogate escape, ``"Postgres \\ud83d"``:
  what JavaScript's ``JSON.stringify`` writes for a string cut in the middle
  of an emoji. Python's ``json`` reads it (as U+D83D); pydantic's parser
  refuses the line whole, so not even its ``id`` is known to the SDK;
* a line that is not JSON, or not a JSON-RPC message.

`AnsweringReader` sits between the transport's read stream and the server,
the narrowest place the SDK lets us in without giving up its handling of
fds 0 and 1. It turns each exception back into what the line held:

* a ``tools/call`` whose only bad text is in its arguments goes on to the
  server as a request, and `Bridge.call_tool` answers it with a tool error
  (``isError``) naming the argument, as it does for any bad argument;
* another request with a lone surrogate gets ``-32602`` (invalid params);
  JSON that is not a JSON-RPC message ``-32600``, with the request's id when
  there is one; a line that is not JSON ``-32700`` with a null id, as
  JSON-RPC 2.0 says;
* a notification or a response is never answered (JSON-RPC forbids it), and
  blank lines are ignored.

Replies never echo the offending text: pydantic cannot write a lone
surrogate, and a write that fails would end the transport.
"""

from __future__ import annotations

import contextvars
import json
from types import TracebackType
from typing import Any, Final, Protocol, Self

import anyio
import pydantic
from mcp import types
from mcp.shared.message import SessionMessage

__all__ = [
    "LONE_SURROGATE",
    "AnsweringReader",
    "Answers",
    "Unanswered",
    "lone_surrogate_at",
    "triage",
]

LONE_SURROGATE: Final = (
    "text contains an invalid character (a lone surrogate: an emoji cut in half?)"
)

Item = SessionMessage | Exception


class _Source(Protocol):
    async def receive(self) -> Item: ...
    async def aclose(self) -> None: ...


class _Sink(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...
    async def aclose(self) -> None: ...


class _Closing:
    """A stream that is its own context manager: leaving it closes it."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


class Unanswered:
    """The ids of the requests read and not yet answered.

    At the end of stdin the SDK's server stops and cancels every handler
    still running: a host (or a script) that writes its requests and closes
    stdin got "Connection closed" for each, and a piped ``memory_append``
    was never written. So the reader holds the end of the stream back until
    every request read has had its answer (`AnsweringReader.receive`), each
    answer seen on its way out (`Answers`).
    """

    def __init__(self) -> None:
        self._ids: set[Any] = set()
        self._drained = anyio.Event()
        self._drained.set()

    def read(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self._ids.add(message.id)
            if self._drained.is_set():
                self._drained = anyio.Event()

    def answered(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._ids.discard(message.id)
            if not self._ids:
                self._drained.set()

    async def wait(self) -> None:
        await self._drained.wait()


class Answers(_Closing):
    """The transport's write stream, telling `Unanswered` of each answer."""

    def __init__(self, sink: _Sink, unanswered: Unanswered) -> None:
        self._sink = sink
        self._unanswered = unanswered

    async def send(self, item: SessionMessage, /) -> None:
        await self._sink.send(item)
        self._unanswered.answered(item.message)

    async def aclose(self) -> None:
        await self._sink.aclose()


class AnsweringReader(_Closing):
    """The transport's read stream, with the lines it could not parse answered
    (see the module docstring) instead of dropped, and its end held back
    until every request read is answered (*unanswered*, `Unanswered`)."""

    def __init__(
        self, source: _Source, replies: _Sink, unanswered: Unanswered | None = None
    ) -> None:
        self._source = source
        self._replies = replies
        self._unanswered = unanswered

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last item, which the SDK runs handlers in."""
        context: contextvars.Context | None = getattr(self._source, "last_context", None)
        return context

    async def receive(self) -> Item:
        while True:
            try:
                item = await self._source.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                if self._unanswered is not None:
                    await self._unanswered.wait()
                raise
            if not isinstance(item, Exception):
                if self._unanswered is not None:
                    self._unanswered.read(item.message)
                return item
            message, reply = triage(item)
            if reply is not None:
                await self._replies.send(SessionMessage(reply))
            if message is not None:
                if self._unanswered is not None:
                    self._unanswered.read(message)
                return SessionMessage(message)
            if reply is None:
                return item  # not ours to answer: the SDK logs and drops it, as before

    async def aclose(self) -> None:
        await self._source.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


def triage(exc: Exception) -> tuple[types.JSONRPCMessage | None, types.JSONRPCError | None]:
    """What a line the transport could not parse held: a request to serve
    after all, or the error reply it is owed (either may be None)."""
    found = _what_failed(exc)
    if found is None:
        return None, None
    is_line, value = found
    if is_line:
        if not value.strip():
            return None, None
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as error:
            return None, _reply(None, types.PARSE_ERROR, f"Parse error: {error}")
    if not isinstance(value, dict):
        return None, _reply(None, types.INVALID_REQUEST, "Invalid Request: not a JSON object")
    if "method" not in value and ("result" in value or "error" in value):
        return None, None  # a response to the server: never answered
    if "id" not in value:
        if isinstance(value.get("method"), str):
            return None, None  # a notification: never answered, however malformed
        return None, _reply(None, types.INVALID_REQUEST, "Invalid Request")
    request_id = _request_id(value["id"])
    where = lone_surrogate_at(value)
    if where is None or request_id is None or "method" not in value:
        return None, _reply(request_id, types.INVALID_REQUEST, "Invalid Request")
    if value["method"] == "tools/call" and where.startswith("$.params.arguments"):
        try:
            return types.jsonrpc_message_adapter.validate_python(value, by_name=False), None
        except pydantic.ValidationError:
            pass  # wrong in other ways too: answered below
    return None, _reply(
        request_id, types.INVALID_PARAMS, f"Invalid params: {LONE_SURROGATE} - at `{where}`"
    )


def lone_surrogate_at(value: Any, path: str = "$") -> str | None:
    """The JSON path of the first string (or key) in *value* holding a lone
    surrogate, or None. Python's ``json`` joins an escaped pair into one
    character, so any surrogate left in a decoded string is a lone one."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if _has_surrogate(item):
                return where
        elif isinstance(item, dict):
            for key, inner in reversed(item.items()):
                if isinstance(key, str) and _has_surrogate(key):
                    return where
                stack.append((f"{where}.{key}", inner))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", inner) for i, inner in reversed(list(enumerate(item))))
    return None


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in text)


def _what_failed(exc: Exception) -> tuple[bool, Any] | None:
    """From pydantic's error: (True, the line) for a line that is not JSON
    to pydantic, (False, the JSON value) for one holding no message, or None.

    A line pydantic cannot read fails as ``json_invalid``, with the line as
    its input. Valid JSON that is no message fails once per message type; a
    ``model_type`` error at the top, or a top-level field ``missing``, has
    the whole value as its input.
    """
    if not isinstance(exc, pydantic.ValidationError):
        return None
    for error in exc.errors():
        loc, kind, value = error.get("loc", ()), error.get("type"), error.get("input")
        if kind == "json_invalid" and isinstance(value, str):
            return True, value
        if (kind == "model_type" and len(loc) <= 1) or (kind == "missing" and len(loc) == 2):
            return False, value
    return None


def _request_id(value: Any) -> types.RequestId | None:
    """*value* as the id to answer with, or None (``"id": null``) when it cannot be one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, str) and not _has_surrogate(value)):
        return value
    return None


def _reply(request_id: types.RequestId | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )
