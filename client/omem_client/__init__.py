"""omem_client: talk to openmemoryd from Python or the shell.

``Client`` is the blocking library client; ``omem-client`` (module
`omem_client.cli`) is the command line. Importing this package loads only the
standard library, msgspec and omem_protocol: no trio, SQLite or model runtime.
"""

from __future__ import annotations

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
    GetResult,
    LogTurnsResult,
    Progress,
    SearchHit,
    SearchResult,
    SessionStartResult,
    StatusResult,
    SyncResult,
    Turn,
    __version__,
)

__all__ = [
    "AppendResult",
    "BadRequestError",
    "Client",
    "ConflictError",
    "ConnectError",
    "DaemonError",
    "DaemonNotRunning",
    "DaemonTimeoutError",
    "ForbiddenError",
    "GetResult",
    "InternalError",
    "LogTurnsResult",
    "NotFoundError",
    "OmemError",
    "Progress",
    "ProtocolViolation",
    "SearchHit",
    "SearchResult",
    "SessionStartResult",
    "StatusResult",
    "SyncResult",
    "TooLargeError",
    "Turn",
    "UnavailableError",
    "VersionMismatchError",
    "__version__",
    "default_socket",
]
