"""omem_client: talk to openmemoryd from Python or the shell.

``Client`` is the blocking library client, ``AsyncClient`` its async twin
for trio and asyncio; ``omem-client`` (module `omem_client.cli`) is the
command line. Importing this package loads nothing but itself; each name loads its module
on first use (the standard library, msgspec and omem_protocol for `Client`:
no trio, SQLite or model runtime). ``AsyncClient`` needs anyio, which costs
tens of milliseconds to import, so the command line never pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# Everything is loaded on first use (PEP 562), so that `omem-client`'s entry
# point can look at its command line before msgspec and the protocol load.
if TYPE_CHECKING:
    from omem_client._async import AsyncClient
    from omem_client._client import Client, default_socket
    from omem_client._errors import (
        BadRequestError,
        ConflictError,
        ConnectError,
        DaemonError,
        DaemonNotRunning,
        DaemonTimeoutError,
        ForbiddenError,
        InternalError,
        NoAnswer,
        NotFoundError,
        OmemError,
        ProtocolViolation,
        TooLargeError,
        UnavailableError,
        VersionMismatchError,
    )
    from omem_protocol import (
        AppendResult,
        CapturedMemory,
        CaptureMessage,
        CaptureResult,
        CompactResult,
        DoctorCheck,
        DoctorResult,
        ExportResult,
        FlushCheckResult,
        ForgetCandidate,
        ForgetResult,
        GetResult,
        LogResult,
        LogSimilar,
        LogTurnsResult,
        PrimerResult,
        PrimerSection,
        Progress,
        RecalledMemory,
        RecallResult,
        RejectedMessage,
        SearchHit,
        SearchResult,
        SessionEndResult,
        SessionStartResult,
        StatusResult,
        SyncResult,
        TaskItem,
        TasksResult,
        Turn,
        __version__,
    )

_ERRORS = (
    "BadRequestError",
    "ConflictError",
    "ConnectError",
    "DaemonError",
    "DaemonNotRunning",
    "DaemonTimeoutError",
    "ForbiddenError",
    "InternalError",
    "NoAnswer",
    "NotFoundError",
    "OmemError",
    "ProtocolViolation",
    "TooLargeError",
    "UnavailableError",
    "VersionMismatchError",
)

__all__ = [
    "AppendResult",
    "AsyncClient",
    "BadRequestError",
    "CaptureMessage",
    "CaptureResult",
    "CapturedMemory",
    "Client",
    "CompactResult",
    "ConflictError",
    "ConnectError",
    "DaemonError",
    "DaemonNotRunning",
    "DaemonTimeoutError",
    "DoctorCheck",
    "DoctorResult",
    "ExportResult",
    "FlushCheckResult",
    "ForbiddenError",
    "ForgetCandidate",
    "ForgetResult",
    "GetResult",
    "InternalError",
    "LogResult",
    "LogSimilar",
    "LogTurnsResult",
    "NoAnswer",
    "NotFoundError",
    "OmemError",
    "PrimerResult",
    "PrimerSection",
    "Progress",
    "ProtocolViolation",
    "RecallResult",
    "RecalledMemory",
    "RejectedMessage",
    "SearchHit",
    "SearchResult",
    "SessionEndResult",
    "SessionStartResult",
    "StatusResult",
    "SyncResult",
    "TaskItem",
    "TasksResult",
    "TooLargeError",
    "Turn",
    "UnavailableError",
    "VersionMismatchError",
    "__version__",
    "default_socket",
]


# name -> the module that defines it
_HOMES = {
    "AsyncClient": "omem_client._async",
    "Client": "omem_client._client",
    "default_socket": "omem_client._client",
    **dict.fromkeys(_ERRORS, "omem_client._errors"),
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name, "omem_protocol" if name in __all__ else None)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
