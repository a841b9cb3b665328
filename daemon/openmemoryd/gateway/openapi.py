"""The OpenAPI 3 document, generated from the wire Structs so it cannot drift.

Request and reply schemas come from `msgspec.json.schema_components` over
the very Params/Result types the routes decode and encode. Two adjustments
say what the HTTP API does differently from the socket: a request's
``type`` tag is optional (the path already names the method), and every
request accepts a ``workspace``. Each operation lists the error statuses
the app can answer it with (`_error_statuses`), so a generated client and
a conformance test know every reply that can come.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from omem_protocol import PROTOCOL_VERSION, __version__
from openmemoryd.gateway.routes import ROUTES, ErrorReply, Route

REF: Final = "#/components/schemas/{name}"
_WORKSPACE: Final = {
    "type": "string",
    "pattern": "^[a-z0-9][a-z0-9_-]{0,31}$",
    "description": "Which of the daemon's workspaces (default: default).",
}
_STATUS_TEXT: Final = {
    400: "Malformed JSON, unknown field, wrong type or value out of range",
    401: "Missing or wrong bearer token",
    403: "Host or Origin is not loopback, or the path is outside the memory files",
    404: "Unknown file or workspace",
    405: "Another HTTP method than this operation's (the Allow header names this one)",
    408: "The request's body did not arrive in time (10 s); nothing was done",
    409: "A memory file changed or was locked during the call; nothing was written",
    413: "Request or reply over the size limit",
    429: "Too many requests in flight",
    500: "A bug in the daemon (its log has the details); it goes on serving",
    503: "The index or embedder cannot serve now, or the daemon is stopping",
}
# Where the gateway answers by itself (/health, /openapi.json), 503 has one cause.
_STOPPING: Final = "The daemon is stopping"
# The header the app sends with each of these errors.
_HEADERS: Final = {
    401: ("WWW-Authenticate", "The bearer challenge (RFC 6750)"),
    405: ("Allow", "The method this path takes"),
    429: ("Retry-After", "Seconds to wait before retrying"),
}


def build_openapi(*, token_required: bool) -> dict[str, Any]:
    """The document served at ``/openapi.json``."""
    requests = [r.params for r in ROUTES.values() if r.params is not None and r.from_body]
    replies = [r.result for r in ROUTES.values() if r.result is not dict] + [ErrorReply]
    request_refs, request_components = msgspec.json.schema_components(requests, ref_template=REF)
    reply_refs, reply_components = msgspec.json.schema_components(replies, ref_template=REF)
    for schema in request_components.values():
        _tag_optional(schema)
    for params in requests:
        schema = request_components[params.__name__]
        schema["properties"]["workspace"] = {"anyOf": [_WORKSPACE, {"type": "null"}]}
        schema["additionalProperties"] = False  # `body_params` refuses unknown fields
    for route in ROUTES.values():
        if route.params is None or not route.from_body:
            continue
        schema = request_components[route.params.__name__]
        if route.aliases:
            _add_aliases(schema, route.aliases)
        for name, aliases in route.item_aliases.items():
            # the items' component (CaptureMessage, Turn) is shared by every
            # route whose list holds it, so those routes take the same aliases
            item = schema["properties"][name]["items"]["$ref"].rsplit("/", 1)[-1]
            _add_aliases(request_components[item], aliases)
    body_ref = dict(zip(requests, request_refs, strict=True))
    result_ref = dict(zip(replies, reply_refs, strict=True))
    paths = {
        path: {route.method.lower(): _operation(path, route, body_ref, result_ref, token_required)}
        for path, route in ROUTES.items()
    }
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "openmemory HTTP API",
            "version": __version__,
            "description": (
                "Local-first long-term memory for LLM agents. The same methods as the Unix "
                f"socket (protocol {PROTOCOL_VERSION}), as JSON over HTTP; errors are "
                '{"error": {"code", "message"}} with the socket\'s codes.'
            ),
        },
        "paths": paths,
        "components": {"schemas": {**request_components, **reply_components}},
    }
    if token_required:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    return document


def _operation(
    path: str,
    route: Route,
    body_ref: dict[Any, dict[str, Any]],
    result_ref: dict[Any, dict[str, Any]],
    token_required: bool,
) -> dict[str, Any]:
    result = result_ref.get(route.result, {"type": "object"})
    operation: dict[str, Any] = {
        "summary": route.summary,
        "operationId": path.strip("/").replace(".", "_"),
        "responses": {"200": {"description": "OK", "content": _json(result)}},
    }
    if route.params is not None and route.from_body:
        operation["requestBody"] = {"required": True, "content": _json(body_ref[route.params])}
    parameters = [_query_parameter(name, field, route) for name, field in route.query.items()]
    # A body names its workspace in the body; ``?workspace=`` is documented
    # only where there is no body (the server takes it on POST too, and
    # refuses it when it contradicts the body: a rule a schema cannot state).
    if route.params is not None and not route.from_body:
        parameters.append(
            {"name": "workspace", "in": "query", "required": False, "schema": _WORKSPACE}
        )
    if parameters:
        operation["parameters"] = parameters
    for code in sorted(_error_statuses(route, token_required)):
        operation["responses"][str(code)] = _error_response(code, route, result_ref[ErrorReply])
    if token_required and not route.public:
        operation["security"] = [{"bearer": []}]
    return operation


def _error_statuses(route: Route, token_required: bool) -> set[int]:
    """The error statuses *route* can answer with, as `GatewayApp` checks them.

    Every request: 403 (Host/Origin guard), 405 (another method on its
    path) and 503 (the daemon is stopping). A route that calls the engine
    adds what its parameters, size, load and a bug can bring (a body that
    does not arrive in time, 408, where it takes one); one that writes,
    409; one behind the token, 401. `timeout` (504) is left out: no method
    of the daemon gives up waiting yet, and a status that never comes would
    only be noise in a generated client.
    """
    codes = {403, 405, 503}
    if route.params is not None:
        codes |= {400, 404, 413, 429, 500}
        if route.from_body:
            codes.add(408)
    if route.writes:
        codes.add(409)
    if token_required and not route.public:
        codes.add(401)
    return codes


def _error_response(code: int, route: Route, error: dict[str, Any]) -> dict[str, Any]:
    """An error status's response object: ``{"error": {"code", "message"}}``,
    and the header the status comes with."""
    description = _STOPPING if code == 503 and route.params is None else _STATUS_TEXT[code]
    response: dict[str, Any] = {"description": description, "content": _json(error)}
    if code in _HEADERS:
        name, said = _HEADERS[code]
        schema: dict[str, Any] = {"type": "string"}
        if code == 405:
            schema["enum"] = [route.method]
        elif code == 429:
            schema = {"type": "integer", "minimum": 0}
        response["headers"] = {name: {"description": said, "required": True, "schema": schema}}
    return response


def _query_parameter(name: str, field: str, route: Route) -> dict[str, Any]:
    assert route.params is not None
    (_, components) = msgspec.json.schema_components([route.params], ref_template=REF)
    schema = components[route.params.__name__]
    return {
        "name": name,
        "in": "query",
        "required": field in schema.get("required", ()),
        "schema": schema["properties"][field],
    }


def _add_aliases(schema: dict[str, Any], aliases: Mapping[str, str]) -> None:
    """Document each alias as the same field under another name: one of the
    two is required where the field is, both together are refused. Adding
    the same aliases twice (a shared component) changes nothing."""
    required = list(schema.get("required", ()))
    alternatives = []
    for alias, name in aliases.items():
        schema["properties"][alias] = {
            **schema["properties"][name],
            "description": f"Another name for `{name}`.",
        }
        if name in required:
            required.remove(name)
            alternatives.append({"oneOf": [{"required": [name]}, {"required": [alias]}]})
    schema["required"] = required
    if alternatives:
        schema["allOf"] = alternatives


def _tag_optional(schema: dict[str, Any]) -> None:
    required = schema.get("required")
    if required and "type" in required:
        schema["required"] = [name for name in required if name != "type"]


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}
