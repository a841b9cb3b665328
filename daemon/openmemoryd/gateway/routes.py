"""The HTTP API's routes and how a request becomes an RPC body.

Each route names the same msgspec Params struct the socket decodes, so the
HTTP API has the socket's field names, types and limits (query length,
result limits, path rules) by construction; only two things are stricter
here, because a hand-written curl call is more likely to carry a typo than
a client library: unknown fields are refused, and a ``type`` field, if
given, must be the method's tag.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal

import msgspec

from omem_protocol import (
    METHODS,
    Method,
    RequestBody,
    SearchParams,
    SearchResult,
    StatusParams,
    StatusResult,
)
from openmemoryd.errors import BadRequest, invalid_request
from openmemoryd.gateway.wording import body_error, in_http_words

WorkspaceName = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")]


class ErrorDetail(msgspec.Struct, kw_only=True, frozen=True):
    """The socket's `Error`, as the HTTP API reports it.

    Every error reply of the app, whatever its status, is built from this
    Struct, so this is where its message is put in an HTTP caller's words:
    a hint the daemon gives as an ``omem-client`` command names the HTTP
    request that does the same (`wording.in_http_words`).
    """

    code: str
    message: str

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "message", in_http_words(self.message))


class ErrorReply(msgspec.Struct, kw_only=True, frozen=True):
    """Every non-2xx reply: ``{"error": {"code", "message"}}``."""

    error: ErrorDetail


class HealthResult(msgspec.Struct, kw_only=True, frozen=True):
    """The process is up and serving HTTP (no index is touched)."""

    status: Literal["ok"]
    version: str
    protocol: int


@dataclass(frozen=True, slots=True)
class Route:
    method: Literal["GET", "POST"]
    summary: str
    result: type[Any]
    params: type[RequestBody] | None = None  # None: answered by the gateway itself
    # query parameter -> Params field, for GET routes
    query: Mapping[str, str] = field(default_factory=dict)
    public: bool = False  # served without the bearer token
    # body field -> Params field: names other memory tools' HTTP APIs use
    aliases: Mapping[str, str] = field(default_factory=dict)
    # list field -> its items' aliases (item field -> Struct field)
    item_aliases: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    writes: bool = False  # may answer 409 when a file changes under it

    @property
    def from_body(self) -> bool:
        return self.method == "POST"


def method_path(method: Method[Any, Any]) -> str:
    """A method's HTTP path: its name, with ``-`` for ``_`` (``/session-end``)."""
    return "/" + method.name.replace("_", "-")


# A conversation as OpenAI-style chat APIs (and `omem-client`'s --messages)
# spell it: {"role", "content"}; the wire's field is `text`.
_MESSAGE_CONTENT: Final = {"content": "text"}

# Where a method's route differs from the rule in `_method_route`.
_SHAPES: Final[Mapping[str, Mapping[str, Any]]] = {
    "get": {
        "verb": "GET",
        "query": {"path": "path", "from": "from_line", "lines": "lines", "to": "to_line"},
    },
    "append": {
        "summary": "Append text to a memory file (`content` is accepted for `text`)",
        "aliases": {"content": "text"},
    },
    "capture": {"item_aliases": {"messages": _MESSAGE_CONTENT}},
    "compact": {"item_aliases": {"messages": _MESSAGE_CONTENT}},
    "log_turns": {"item_aliases": {"turns": _MESSAGE_CONTENT}},
}


def _method_route(method: Method[Any, Any]) -> Route:
    """GET /<name> for a read that takes no arguments (status, doctor), else
    POST /<name> with the params as the JSON body."""
    shape = _SHAPES.get(method.name, {})
    bare = not method.writes and not method.params.__struct_fields__
    return Route(
        shape.get("verb", "GET" if bare else "POST"),
        shape.get("summary", method.summary),
        method.result,
        method.params,
        query=shape.get("query", {}),
        aliases=shape.get("aliases", {}),
        item_aliases=shape.get("item_aliases", {}),
        writes=method.writes,
    )


ROUTES: Final[Mapping[str, Route]] = {
    **{method_path(method): _method_route(method) for method in METHODS},
    # The routes of agent tools that keep memory under /memory/ (WorkAny's).
    "/memory/search": Route("POST", "Hybrid search (same as /search)", SearchResult, SearchParams),
    "/memory/status": Route(
        "GET", "Daemon and index status (same as /status)", StatusResult, StatusParams
    ),
    "/health": Route("GET", "Liveness (no token needed)", HealthResult, public=True),
    "/openapi.json": Route("GET", "This API's OpenAPI 3 document", dict, public=True),
}


def body_params(route: Route, payload: Any) -> tuple[RequestBody, str | None]:
    """A decoded JSON body -> (Params, workspace); `BadRequest` names the problem."""
    assert route.params is not None
    if not isinstance(payload, dict):
        raise BadRequest("the request body must be a JSON object")
    fields = route.params.__struct_encode_fields__
    tag = route.params.__struct_config__.tag
    renamed = _rename(payload, route.aliases, "")
    aliases_at: dict[str, Mapping[str, str]] = {"": route.aliases}
    for name, aliases in route.item_aliases.items():
        items = payload.get(name)
        for i, item in enumerate(items if isinstance(items, list) else ()):
            if isinstance(item, dict):  # anything else: msgspec names the problem
                aliases_at[f"{name}[{i}]"] = aliases
                renamed.update(_rename(item, aliases, f"{name}[{i}]"))
    unknown = sorted(set(payload) - {*fields, "type", "workspace"})
    if unknown:
        raise BadRequest(
            f"unknown field(s) {', '.join(map(repr, unknown))}; accepted: {', '.join(fields)}"
            " (and workspace)"
        )
    if "type" in payload and payload["type"] != tag:
        raise BadRequest(f"field 'type' must be {tag!r} here (or be left out)")
    workspace = payload.pop("workspace", None)
    try:
        params: RequestBody = msgspec.convert(_integral(payload), route.params, strict=True)
    except msgspec.ValidationError as exc:
        raise BadRequest(body_error(str(exc), route.params, renamed, aliases_at)) from None
    return params, _workspace(workspace)


def _rename(obj: dict[str, Any], aliases: Mapping[str, str], where: str) -> dict[str, str]:
    """Rename *obj*'s alias keys to their fields, in place; exactly one of the
    two may be given. Returns each renamed field's path -> the path as sent,
    so an error about the value names what the caller wrote."""
    renamed: dict[str, str] = {}
    for alias, name in aliases.items():
        if alias in obj:
            if name in obj:
                raise BadRequest(
                    f"{where + ': ' if where else ''}give {name!r} or {alias!r}, not both"
                )
            obj[name] = obj.pop(alias)
            prefix = f"{where}." if where else ""
            renamed[prefix + name] = prefix + alias
    return renamed


def _integral(value: Any) -> Any:
    """*value* with every whole-number float as an int: JSON does not tell 3
    from 3.0 (JSON Schema calls both integers, and JavaScript sends either),
    while a strict decode refuses 3.0 for an int field. An int is accepted
    for a float field, so nothing else changes."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral(item) for item in value]
    return value


def query_params(
    route: Route, query: Mapping[str, list[str]]
) -> tuple[RequestBody | None, str | None]:
    """Query-string parameters -> (Params, workspace); each may appear once."""
    accepted = {*route.query, "workspace"}
    unknown = sorted(set(query) - accepted)
    if unknown:
        names = ", ".join(sorted(accepted))
        raise BadRequest(f"unknown query parameter(s) {', '.join(unknown)}; accepted: {names}")
    workspace = query_workspace(query)
    if route.params is None:
        return None, workspace
    values = {route.query[name]: query[name][0] for name in route.query if name in query}
    try:
        # not strict: "from=3" arrives as a string and means the number 3
        return _convert(route.params, values, strict=False), workspace
    except BadRequest as exc:
        message = str(exc)
        for name, attr in route.query.items():
            message = message.replace(f"`$.{attr}`", f"query parameter `{name}`")
        raise BadRequest(message) from None


def query_workspace(query: Mapping[str, list[str]]) -> str | None:
    """``?workspace=NAME`` (checked), after refusing any repeated parameter."""
    repeated = sorted(name for name, values in query.items() if len(values) > 1)
    if repeated:
        raise BadRequest(f"query parameter(s) given more than once: {', '.join(repeated)}")
    return _workspace(query["workspace"][0]) if "workspace" in query else None


def merge_workspace(from_query: str | None, from_body: str | None) -> str | None:
    if from_query is not None and from_body is not None and from_query != from_body:
        raise BadRequest(f"workspace {from_body!r} in the body contradicts ?workspace={from_query}")
    return from_body if from_body is not None else from_query


def _convert(params: type[RequestBody], values: dict[str, Any], *, strict: bool) -> RequestBody:
    try:
        converted: RequestBody = msgspec.convert(values, params, strict=strict)
    except msgspec.ValidationError as exc:
        raise BadRequest(invalid_request(str(exc))) from None
    return converted


def _workspace(value: Any) -> str | None:
    if value is None:
        return None
    try:
        name: str = msgspec.convert(value, WorkspaceName)
    except msgspec.ValidationError:
        raise BadRequest(
            f"invalid workspace {value!r}: lower-case letters, digits, - and _ (at most 32)"
        ) from None
    return name
