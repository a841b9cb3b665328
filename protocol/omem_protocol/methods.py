"""The method table: every RPC declared once, for every surface to read.

A method is its Params struct (whose tag is the method's name), its Result
struct, a one-line summary and the few facts the surfaces need to present
it. The daemon's dispatch, its advertised capabilities, both clients, the MCP
tools and the HTTP routes with their OpenAPI document are all derived from
`METHODS`, so adding a method is one entry here, one handler in the daemon,
its CLI command and its tests; a surface cannot silently miss it, because
the tests walk this table.
"""

from __future__ import annotations

from typing import Any, Final, Generic, TypeVar

import msgspec

from omem_protocol._base import Msg
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

P = TypeVar("P", bound=Msg)
R = TypeVar("R", bound=Msg)


class Method(msgspec.Struct, Generic[P, R], frozen=True, kw_only=True):
    """One RPC method and what its surfaces need to know about it.

    Attributes:
        params: the request struct; its tag is the method's name on the wire.
        result: the struct a successful reply carries.
        summary: one line for humans (OpenAPI summaries, `--help`, tool lists).
        writes: changes memory files or the index, so it is not read-only
            (MCP's ``readOnlyHint``; an HTTP client must not retry it blindly).
        destructive: removes what was written (MCP's ``destructiveHint``).
        progress: long-running; the daemon sends ``Progress`` frames before
            the reply, which a client may show.
        agent_tool: offered to models as an MCP tool. The others are for the
            agent's harness (transcripts, session start) or for the user
            (sync, doctor, export, restore), and are reached through the
            clients, the CLI and HTTP.
    """

    params: type[P]
    result: type[R]
    summary: str
    writes: bool = False
    destructive: bool = False
    progress: bool = False
    agent_tool: bool = True

    @property
    def name(self) -> str:
        """The method's name: its params' tag (``search``, ``log_turns``, ...)."""
        tag = self.params.__struct_config__.tag
        assert isinstance(tag, str)
        return tag


STATUS: Final = Method(params=StatusParams, result=StatusResult, summary="Daemon and index status")
SEARCH: Final = Method(
    params=SearchParams, result=SearchResult, summary="Hybrid (vector + keyword) search"
)
GET: Final = Method(params=GetParams, result=GetResult, summary="Read lines of a memory file")
APPEND: Final = Method(
    params=AppendParams,
    result=AppendResult,
    summary="Append text to a memory file (default: today's daily file)",
    writes=True,
)
SYNC: Final = Method(
    params=SyncParams,
    result=SyncResult,
    summary="Bring the index up to date with the files",
    writes=True,
    progress=True,
    agent_tool=False,
)
LOG_TURNS: Final = Method(
    params=LogTurnsParams,
    result=LogTurnsResult,
    summary="Append conversation turns to a session's transcript",
    writes=True,
    agent_tool=False,
)
SESSION_START: Final = Method(
    params=SessionStartParams,
    result=SessionStartResult,
    summary="An agent's session starts: index its pending transcript lines",
    writes=True,
    agent_tool=False,
)
RECALL: Final = Method(
    params=RecallParams, result=RecallResult, summary="Memories to put before a prompt"
)
CAPTURE: Final = Method(
    params=CaptureParams,
    result=CaptureResult,
    summary="Keep the durable facts of the user's messages",
    writes=True,
)
FORGET: Final = Method(
    params=ForgetParams,
    result=ForgetResult,
    summary="Erase a memory from its file and the index",
    writes=True,
    destructive=True,
)
RESTORE: Final = Method(
    params=RestoreParams,
    result=RestoreResult,
    summary="Append again what an external rewrite removed",
    writes=True,
    agent_tool=False,  # the user's decision, after status or doctor reported the loss
)
PRIMER: Final = Method(
    params=PrimerParams, result=PrimerResult, summary="Context to start a session with"
)
FLUSH_CHECK: Final = Method(
    params=FlushCheckParams,
    result=FlushCheckResult,
    summary="Whether to run the pre-compaction memory flush now",
    writes=True,  # records that the flush ran in this compaction cycle
)
DOCTOR: Final = Method(
    params=DoctorParams,
    result=DoctorResult,
    summary="Health checks run inside the daemon",
    agent_tool=False,
)
EXPORT: Final = Method(
    params=ExportParams,
    result=ExportResult,
    summary="Archive the memory's Markdown to a tar.gz on the daemon's disk",
    writes=True,
    agent_tool=False,
)
SESSION_END: Final = Method(
    params=SessionEndParams,
    result=SessionEndResult,
    summary="Journal a session and turn its next steps into tasks",
    writes=True,
)
TASKS: Final = Method(
    params=TasksParams,
    result=TasksResult,
    summary="List or change the tasks in memory/TASKS.md",
    writes=True,
)
LOG: Final = Method(
    params=LogParams,
    result=LogResult,
    summary="File one memory through the write pipeline",
    writes=True,
)
COMPACT: Final = Method(
    params=CompactParams,
    result=CompactResult,
    summary="Summarise a conversation into the daily file",
    writes=True,
    progress=True,
)
COMPACT_CHECK: Final = Method(
    params=CompactCheckParams,
    result=CompactCheckResult,
    summary="Whether the context passed the compaction threshold, and what must go",
)

METHODS: Final[tuple[Method[Any, Any], ...]] = (
    STATUS,
    SEARCH,
    GET,
    APPEND,
    SYNC,
    LOG_TURNS,
    SESSION_START,
    RECALL,
    CAPTURE,
    FORGET,
    RESTORE,
    PRIMER,
    FLUSH_CHECK,
    DOCTOR,
    EXPORT,
    SESSION_END,
    TASKS,
    LOG,
    COMPACT,
    COMPACT_CHECK,
)
METHODS_BY_NAME: Final[dict[str, Method[Any, Any]]] = {m.name: m for m in METHODS}
METHODS_BY_PARAMS: Final[dict[type[Msg], Method[Any, Any]]] = {m.params: m for m in METHODS}

# What a daemon can do beyond its methods, announced with them in `Welcome`.
FEATURES: Final = ("progress", "search.fresh", "search.explain")
