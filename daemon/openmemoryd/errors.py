"""The daemon's exception tree; each request error maps to one wire code.

::

    OmemdError                 (internal)   anything we raise on purpose
    ├── BadRequest             bad_request  malformed or nonsensical input
    ├── NotFound               not_found    the file or thing does not exist
    ├── Forbidden              forbidden    outside the memory files, symlinks, ...
    ├── TooLarge               too_large    over a configured size limit
    ├── Unavailable            unavailable  the index or a provider cannot serve now
    │   └── RemoteServiceError unavailable  an embedding or chat API failed (retryable?)
    ├── DeadlineExceeded       timeout      gave up waiting
    ├── Conflict               conflict     the state changed under the request
    ├── ConfigError            bad_request  the configuration is invalid
    └── StartupError           internal     the daemon cannot start (already running, unsafe dir)

OSError, apsw and msgspec errors are mapped onto this tree where they enter
the daemon's code (file access, the store, request decoding), so the RPC
layer only ever has to translate `OmemdError` into an `Error` reply; anything
else reaching it is a bug and is reported as ``internal``.
"""

from __future__ import annotations

import re
from typing import ClassVar, Final

from omem_protocol import ErrorCode, empty_field


class OmemdError(Exception):
    """Base class: an error with a message fit to show a user."""

    code: ClassVar[ErrorCode] = "internal"


class BadRequest(OmemdError):
    code = "bad_request"


class NotFound(OmemdError):
    code = "not_found"


class Forbidden(OmemdError):
    code = "forbidden"


class TooLarge(OmemdError):
    code = "too_large"


class Unavailable(OmemdError):
    code = "unavailable"


class DeadlineExceeded(OmemdError):
    code = "timeout"


class Conflict(OmemdError):
    code = "conflict"


class ConfigError(OmemdError):
    code = "bad_request"


class StartupError(OmemdError):
    """The daemon must not start; the message tells the user what to do."""


class RemoteServiceError(Unavailable):
    """A remote API (embedding or chat) failed; `retryable` says whether
    waiting might help (rate limits, 5xx, timeouts) or not (bad key, unknown
    model, malformed answers), and `status` is the HTTP status if there was one."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


# msgspec's wording of a value outside its field's bounds, and where it is.
_AT: Final = re.compile(r"^(?P<what>.*) - at `\$\.(?P<field>[^`]+)`$")
_BOUND: Final = re.compile(
    r"^Expected `(?P<type>\w+)(?: \| null)?`(?P<of_length> of length)? (?P<op>[<>]=) (?P<n>[\d.]+)$"
)
_WRONG_TYPE: Final = re.compile(r"^Expected `(?P<want>[^`]+)`, got `(?P<got>\w+)`$")
_MISSING: Final = re.compile(r"^Object missing required field `(?P<field>[^`]+)`$")


def invalid_request(detail: str) -> str:
    """The message of a request whose body does not fit its method's
    parameters, in words a person reads ("`limit` must be at most 100", not
    "Expected `int` <= 100 - at `$.limit`"); msgspec's own wording follows
    in brackets for programs that read it, and stands alone where it is not
    one of the common forms.

    An empty field is the exception: it is said as a blank one is ("query is
    empty", `omem_protocol.empty_field`), alone. `search ""` said "invalid
    request: `query` must not be empty (Expected `str` of length >= 1 - at
    `$.query`)" where `search "  "` said "query is empty".
    """
    empty = empty_field(detail)
    if empty is not None:
        return empty
    missing = _MISSING.match(detail)
    if missing is not None:
        return f"invalid request: `{missing['field']}` is required ({detail})"
    at = _AT.match(detail)
    if at is None:
        return f"invalid request: {detail}"
    field, what = at["field"], at["what"]
    bound = _BOUND.match(what)
    wrong = _WRONG_TYPE.match(what)
    if bound is not None:
        n, big = bound["n"], bound["op"] == "<="
        if bound["of_length"]:
            unit = "characters" if bound["type"] == "str" else "items"
            said = f"must be {'at most' if big else 'at least'} {n} {unit} long"
        else:
            said = f"must be {'at most' if big else 'at least'} {n}"
    elif wrong is not None:
        said = f"must be {wrong['want'].replace(' | null', '')}, not {wrong['got']}"
    else:
        return f"invalid request: {detail}"
    return f"invalid request: `{field}` {said} ({detail})"
