"""The client's exception tree.

::

    OmemError                      base of everything omem_client raises
    ├── ConnectError               could not reach the daemon (or lost it)
    │   └── DaemonNotRunning       no daemon listens on the socket
    ├── ProtocolViolation          the daemon's bytes made no sense to us
    └── DaemonError(code)          the daemon answered with an Error
        ├── BadRequestError        bad_request
        ├── NotFoundError          not_found
        ├── ForbiddenError         forbidden
        ├── TooLargeError          too_large
        ├── UnavailableError       unavailable
        ├── DaemonTimeoutError     timeout
        ├── ConflictError          conflict
        ├── InternalError          internal
        └── VersionMismatchError   version_mismatch

OSError, socket timeouts and msgspec errors never escape `Client`: they are
mapped onto this tree at the socket boundary. What cannot go on the wire
(text holding bytes that were not UTF-8, kept by Python as surrogates; an
integer past 64 bits) is refused by the client itself as `BadRequestError`,
as the daemon would refuse it.
"""

from __future__ import annotations


class OmemError(Exception):
    """Base class of every error omem_client raises."""


class ConnectError(OmemError):
    """The daemon could not be reached, or the connection broke."""


class DaemonNotRunning(ConnectError):
    """Nothing listens on the socket; the message says how to start the daemon."""


class NoAnswer(ConnectError):
    """The request was sent and no answer came within the timeout.

    The daemon was there when the request went out, and may have done what
    it asked: a write retried at once is done twice (an append written
    again, a `log` counted twice). Look (search, get) before sending a
    write again. A `ConnectError`, as it was before it had a class of its
    own.
    """


class ProtocolViolation(OmemError):
    """The daemon sent something this client cannot understand."""


class DaemonError(OmemError):
    """The daemon refused or failed the request; `code` says how."""

    code = "internal"

    def __init__(self, message: str, code: str | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.detail = detail


class BadRequestError(DaemonError):
    code = "bad_request"


class NotFoundError(DaemonError):
    code = "not_found"


class ForbiddenError(DaemonError):
    code = "forbidden"


class TooLargeError(DaemonError):
    code = "too_large"


class UnavailableError(DaemonError):
    """The daemon cannot serve the request as things stand; the message says why.

    Most often it is passing: the daemon is stopping (the request was
    refused at once, or cancelled when the stop's grace period ended, and
    then the message says whether a write may have been saved), or the
    index is being rebuilt; retry once it is over. A feature turned off in
    the daemon's config is refused with this code too.
    """

    code = "unavailable"


class DaemonTimeoutError(DaemonError):
    code = "timeout"


class ConflictError(DaemonError):
    code = "conflict"


class InternalError(DaemonError):
    code = "internal"


class VersionMismatchError(DaemonError):
    code = "version_mismatch"


_BY_CODE: dict[str, type[DaemonError]] = {
    cls.code: cls
    for cls in (
        BadRequestError,
        NotFoundError,
        ForbiddenError,
        TooLargeError,
        UnavailableError,
        DaemonTimeoutError,
        ConflictError,
        InternalError,
        VersionMismatchError,
    )
}


def daemon_error(code: str, message: str, detail: str | None = None) -> DaemonError:
    """The exception for an `Error` reply; unknown codes become a plain DaemonError."""
    cls = _BY_CODE.get(code, DaemonError)
    return cls(message, code=code, detail=detail)
