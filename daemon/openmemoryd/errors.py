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

from typing import ClassVar

from omem_protocol import ErrorCode


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
