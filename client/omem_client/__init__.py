"""omem_client: talk to openmemoryd from Python or the shell.

``Client`` is the blocking library client, ``AsyncClient`` its async twin
for trio and asyncio; ``omem-client`` (module `omem_client.cli`) is the
command line. Importing this package loads only the standard library, msgspec
and omem_protocol: no trio, SQLite or model runtime. ``AsyncClient`` needs
anyio, which costs tens of milliseconds to import, so it is loaded on first
use and the command line never pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from omem_client._async import AsyncClient

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


def __getattr__(name: str) -> object:
    if name == "AsyncClient":
        from omem_client._async import AsyncClient

        return AsyncClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
