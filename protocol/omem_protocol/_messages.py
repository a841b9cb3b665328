"""The frames that cross the socket, and the unions of requests and replies.

All wire types derive from `Msg`: frozen, keyword-only msgspec Structs tagged
by a ``type`` field, so a decoder reads the tag first and builds the right
class directly. Schema-evolution rules, which keep old clients and new
daemons talking (and the reverse):

* a field added after a release always has a default;
* a field is never renamed, retyped or removed, and a tag is never reused;
* unknown fields are ignored (no ``forbid_unknown_fields`` on wire types).

Conversation shape::

    client: Hello                    daemon: Welcome
    client: Request{id, body}        daemon: Progress{id, ...}*  Reply{id, body}

Several requests may be in flight on one connection; replies carry the
request's id and may come back in any order. A reply with id 0 reports a
problem with a frame that could not be tied to any request.

Constraints declared with `msgspec.Meta` are enforced when the daemon decodes
a request, so out-of-range values come back as ``bad_request`` errors that
name the offending field.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from omem_protocol._base import Msg, NonNegInt, WorkspaceName
from omem_protocol._params import (
    AppendParams,
    CaptureParams,
    CompactCheckParams,
    CompactParams,
    DoctorParams,
    ExportParams,
    FlushCheckParams,
    ForgetParams,
    GetParams,
    LogParams,
    LogTurnsParams,
    PrimerParams,
    RecallParams,
    RestoreParams,
    SearchParams,
    SessionEndParams,
    SessionStartParams,
    StatusParams,
    SyncParams,
    TasksParams,
)
from omem_protocol._results import (
    AppendResult,
    CaptureResult,
    CompactCheckResult,
    CompactResult,
    DoctorResult,
    ExportResult,
    FlushCheckResult,
    ForgetResult,
    GetResult,
    LogResult,
    LogTurnsResult,
    PrimerResult,
    RecallResult,
    RestoreResult,
    SearchResult,
    SessionEndResult,
    SessionStartResult,
    SyncResult,
    TasksResult,
)
from omem_protocol._status import (
    StatusResult,
)

# ---------------------------------------------------------------- handshake


class Hello(Msg, tag="hello", frozen=True):
    """First frame a client sends: its protocol major and what it can handle."""

    protocol: int
    client: str = ""
    capabilities: tuple[str, ...] = ()


class Welcome(Msg, tag="welcome", frozen=True):
    """The daemon's answer to `Hello` when the protocol majors match."""

    protocol: int
    daemon_version: str
    pid: int
    workspaces: tuple[str, ...]
    capabilities: tuple[str, ...]


RequestBody = (
    StatusParams
    | SearchParams
    | GetParams
    | AppendParams
    | SyncParams
    | LogTurnsParams
    | SessionStartParams
    | RecallParams
    | CaptureParams
    | ForgetParams
    | PrimerParams
    | FlushCheckParams
    | ExportParams
    | DoctorParams
    | SessionEndParams
    | TasksParams
    | LogParams
    | CompactParams
    | RestoreParams
    | CompactCheckParams
)


class Request(Msg, tag="request", frozen=True):
    """A call: `id` is chosen by the client and echoed in the reply (>= 1).

    `workspace` names which of the daemon's workspaces the call is about
    (`Welcome.workspaces` lists them); None means ``default``.
    """

    id: Annotated[int, msgspec.Meta(ge=1)]
    body: RequestBody
    workspace: WorkspaceName | None = None


class Error(Msg, tag="error", frozen=True):
    """A failed request. `code` is one of `ErrorCode`; `message` is for humans."""

    code: str
    message: str
    detail: str | None = None


ReplyBody = (
    StatusResult
    | SearchResult
    | GetResult
    | AppendResult
    | SyncResult
    | LogTurnsResult
    | SessionStartResult
    | RecallResult
    | CaptureResult
    | ForgetResult
    | PrimerResult
    | FlushCheckResult
    | ExportResult
    | DoctorResult
    | SessionEndResult
    | TasksResult
    | LogResult
    | CompactResult
    | RestoreResult
    | CompactCheckResult
    | Error
)


class Reply(Msg, tag="reply", frozen=True):
    """The answer to request `id` (0: a frame that matched no request)."""

    id: NonNegInt
    body: ReplyBody


class Progress(Msg, tag="progress", frozen=True):
    """Interim progress of request `id`; zero or more precede its `Reply`."""

    id: int
    done: int
    total: int
    phase: str = ""


ClientFrame = Hello | Request
DaemonFrame = Welcome | Reply | Progress
