"""The blocking client.

One `Client` holds one connection, opened on first use (or by ``with``),
performs the Hello/Welcome handshake, and sends one request at a time (a lock
makes it safe to share between threads). Results are the protocol's typed
Structs. Every failure is an `OmemError`: connection problems are
`ConnectError` (`DaemonNotRunning` when nothing listens), error replies are
`DaemonError` subclasses named after their code.

The client imports only the standard library, msgspec and omem_protocol, so
importing it costs milliseconds and never drags in the daemon's runtime.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from omem_client._calls import (
    ProgressCallback,
    TaskAction,
    TaskStatus,
    as_turn,
    capture_message,
    closed_by_daemon,
    compact_params,
    connect_error,
    encode,
    iso_date,
    lost_connection,
    no_answer,
    parting_error,
    reply_error,
    result_of,
    session_end_params,
    tasks_params,
    violation,
    welcome_of,
)
from omem_client._discovery import discover_socket
from omem_client._errors import DaemonError, ProtocolViolation
from omem_protocol import (
    DEFAULT_MAX_FRAME,
    PROTOCOL_VERSION,
    AppendParams,
    AppendResult,
    CaptureMessage,
    CaptureParams,
    CaptureResult,
    CompactResult,
    DaemonFrame,
    DoctorParams,
    DoctorResult,
    Error,
    ExportParams,
    ExportResult,
    FlushCheckParams,
    FlushCheckResult,
    ForgetParams,
    ForgetResult,
    FrameBuffer,
    GetParams,
    GetResult,
    Hello,
    LogParams,
    LogResult,
    LogTurnsParams,
    LogTurnsResult,
    PrimerParams,
    PrimerResult,
    Progress,
    ProtocolError,
    RecallParams,
    RecallResult,
    Reply,
    ReplyBody,
    Request,
    RequestBody,
    RestoreParams,
    RestoreResult,
    SearchParams,
    SearchResult,
    SessionEndResult,
    SessionStartParams,
    SessionStartResult,
    StatusParams,
    StatusResult,
    SyncParams,
    SyncResult,
    TasksResult,
    Turn,
    Welcome,
    __version__,
    decode_daemon_frame,
)

R = TypeVar("R")

DEFAULT_TIMEOUT = 60.0


class Client:
    """A connection to openmemoryd.

    Args:
        socket_path: where the daemon listens; default: ``OPENMEMORY_SOCKET``,
            the config file's ``socket``, then the platform default.
        timeout: seconds to wait for each frame from the daemon (None: forever).
        name: how this client introduces itself in the handshake.
    """

    def __init__(
        self,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        name: str = f"omem_client/{__version__}",
        workspace: str | None = None,
    ) -> None:
        self.socket_path = discover_socket(socket_path)
        self.timeout = timeout
        self.name = name
        self.workspace = workspace  # None: the daemon's default workspace
        self.welcome: Welcome | None = None
        self._sock: socket.socket | None = None
        self._frames = FrameBuffer(DEFAULT_MAX_FRAME)
        self._pending: deque[DaemonFrame] = deque()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # ------------------------------------------------------------ lifecycle

    def connect(self) -> Welcome:
        """Connect and handshake now (otherwise the first call does it)."""
        with self._lock:
            return self._ensure_connected()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def __enter__(self) -> Client:
        self.connect()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------ methods

    def status(self) -> StatusResult:
        """The daemon's and the workspace's state."""
        return self._call(StatusParams(), StatusResult)

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
        agent: str | None = None,
        fresh: bool = False,
        explain: bool = False,
    ) -> SearchResult:
        """Search memory; `limit` and `min_score` default to the daemon's config.

        `sources` (``memory``, ``sessions``) and `agent` narrow the search.
        With `fresh`, every change made to the files before the call is
        indexed first (the reply says ``stale`` if that took too long). With
        `explain`, the result carries how scores were combined.
        """
        params = SearchParams(
            query=query,
            limit=limit,
            min_score=min_score,
            sources=tuple(sources) if sources is not None else None,
            agent=agent,
            fresh=fresh,
            explain=explain,
        )
        return self._call(params, SearchResult)

    def get(
        self, path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> GetResult:
        """Read a memory file, or `lines` lines of it starting at `from_line` (1-based)."""
        return self._call(GetParams(path=path, from_line=from_line, lines=lines), GetResult)

    def append(self, text: str, *, path: str | None = None) -> AppendResult:
        """Append *text* (default: to today's daily file); searchable on return."""
        return self._call(AppendParams(text=text, path=path), AppendResult)

    def log_turns(
        self, agent: str, session_id: str, turns: Sequence[Turn | Mapping[str, object]]
    ) -> LogTurnsResult:
        """Append conversation turns to the daemon-kept transcript of a session.

        Turns are `Turn`s or mappings with ``role`` (user/assistant) and
        ``content`` or ``text``, optionally ``timestamp`` (epoch seconds).
        They are searchable with ``sources=["sessions"]`` when this returns.
        """
        params = LogTurnsParams(
            agent=agent, session_id=session_id, turns=tuple(as_turn(t) for t in turns)
        )
        return self._call(params, LogTurnsResult)

    def session_start(self, agent: str, session_id: str | None = None) -> SessionStartResult:
        """Tell the daemon a session starts: the agent's transcripts are indexed now."""
        return self._call(
            SessionStartParams(agent=agent, session_id=session_id), SessionStartResult
        )

    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
        agent: str | None = None,
    ) -> RecallResult:
        """Memories relevant to *query* as a ``<relevant-memories>`` block to
        put before the prompt (``result.block``; "" when nothing qualifies)."""
        params = RecallParams(
            query=query,
            limit=limit,
            min_score=min_score,
            sources=tuple(sources) if sources is not None else None,
            agent=agent,
        )
        return self._call(params, RecallResult)

    def capture(
        self,
        messages: Sequence[CaptureMessage | Mapping[str, object]],
        *,
        max_captures: int | None = None,
    ) -> CaptureResult:
        """Write the durable facts in the user's *messages* to today's daily file.

        Messages are `CaptureMessage`s or chat-style mappings with ``role``
        and ``content`` (a string or a list of ``{"type": "text", ...}``
        blocks). The reply says what was captured and why the rest was not.
        """
        params = CaptureParams(
            messages=tuple(capture_message(m) for m in messages), max_captures=max_captures
        )
        return self._call(params, CaptureResult)

    def forget(
        self,
        *,
        citation: str | None = None,
        text: str | None = None,
        query: str | None = None,
        all: bool = False,
    ) -> ForgetResult:
        """Erase a memory from its file and the index: by `citation`
        (``path#L5-L7``), exact `text`, or `query` (only a single clear match
        is removed; otherwise ``result.candidates`` lists the options)."""
        params = ForgetParams(citation=citation, text=text, query=query, all=all)
        return self._call(params, ForgetResult)

    def restore(self, path: str | None = None, *, dry_run: bool = False) -> RestoreResult:
        """Append again what an external rewrite removed from *path* (every
        file when None) and the daemon did not restore by itself; with
        *dry_run*, only list it."""
        return self._call(RestoreParams(path=path, dry_run=dry_run), RestoreResult)

    def primer(
        self, *, budget: int | None = None, private: bool = False, today: date | None = None
    ) -> PrimerResult:
        """Context to start a session with, within *budget* tokens (default
        1000): USER.md, PROJECT.md, today's and yesterday's daily files, and
        MEMORY.md only when *private* (never in a group conversation)."""
        params = PrimerParams(budget=budget, private=private, date=iso_date(today))
        return self._call(params, PrimerResult)

    def flush_check(
        self,
        session: str,
        *,
        tokens: int,
        context_window: int,
        compaction_count: int | None = None,
        agent: str | None = None,
        read_only: bool = False,
        today: date | None = None,
    ) -> FlushCheckResult:
        """Whether to run the pre-compaction memory flush now (at most once per
        compaction cycle of *session*), with the system and user prompts to run."""
        params = FlushCheckParams(
            session=session,
            tokens=tokens,
            context_window=context_window,
            compaction_count=compaction_count,
            agent=agent,
            read_only=read_only,
            date=iso_date(today),
        )
        return self._call(params, FlushCheckResult)

    def export(self, output: str | os.PathLike[str]) -> ExportResult:
        """Archive the memory's Markdown with a manifest (never the index) to
        *output*; the daemon writes it, so a relative path is made absolute here."""
        path = os.path.abspath(os.fspath(output))
        return self._call(ExportParams(output=path), ExportResult)

    def doctor(self) -> DoctorResult:
        """The daemon's health checks, run inside it on its live index,
        embedder and watcher; ``result.ok`` is false when any check failed."""
        return self._call(DoctorParams(), DoctorResult)

    def sync(
        self, *, full: bool = False, on_progress: ProgressCallback | None = None
    ) -> SyncResult:
        """Bring the index up to date with the files; `full` re-chunks everything."""
        return self._call(SyncParams(full=full), SyncResult, on_progress)

    def session_end(
        self,
        *,
        request: str | None = None,
        learned: str | Sequence[str] = (),
        completed: str | Sequence[str] = (),
        next_steps: str | Sequence[str] = (),
        agent: str | None = None,
        session: str | None = None,
    ) -> SessionEndResult:
        """Close a session: a journal block (request, learned, completed, next
        steps) appended to today's daily file, and the next steps added to
        ``memory/TASKS.md`` as open tasks (one already open is not repeated; a
        completed item naming an open task exactly marks it done)."""
        params = session_end_params(request, learned, completed, next_steps, agent, session)
        return self._call(params, SessionEndResult)

    def tasks(
        self,
        action: TaskAction = "list",
        tasks: str | Sequence[str] = (),
        *,
        status: TaskStatus = "open",
    ) -> TasksResult:
        """List the tasks in ``memory/TASKS.md`` (`status`: open, done or all), or
        ``add`` texts, or mark tasks ``done``, ``reopen`` or ``remove`` them, named
        by id or text (exact, else a unique part). All of a change is made, or none."""
        return self._call(tasks_params(action, tasks, status), TasksResult)

    def log(
        self,
        text: str,
        *,
        type: str | None = None,
        replace: bool = False,
        force: bool = False,
        dry_run: bool = False,
        agent: str | None = None,
    ) -> LogResult:
        """File one memory through seed 003's write pipeline.

        The daemon gates it (too short, filler, pure code, speculative),
        masks or rejects secrets, routes it by `type` (preference, decision,
        lesson, fact, project, note; classified when None) to its file and
        section, and dedupes it: the same memory again is counted on its line
        (``result.status == "reinforced"``); a close one with another detail
        is a ``"conflict"``, written only with `replace` (swap that line) or
        `force` (keep both; also skips the quality rules). `dry_run` decides
        without writing. ``result.reasons`` says why at every step.
        """
        params = LogParams(
            text=text,
            memory_type=type,
            replace=replace,
            force=force,
            dry_run=dry_run,
            agent=agent,
        )
        return self._call(params, LogResult)

    def compact(
        self,
        session: str,
        messages: Sequence[CaptureMessage | Mapping[str, object]],
        *,
        keep_last: int | None = None,
        agent: str | None = None,
        flush: bool | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> CompactResult:
        """Compact a conversation with the daemon's chat model (``[chat]``):
        capture its durable memories, summarise all but the last *keep_last*
        messages (default 5) and append the summary to today's daily file.
        Replace the summarised messages with ``result.summary``. Messages are
        ``{role, content}`` mappings (string or text-block content)."""
        params = compact_params(session, messages, keep_last=keep_last, agent=agent, flush=flush)
        return self._call(params, CompactResult, on_progress)

    # ------------------------------------------------------------ plumbing

    def _call(
        self, body: RequestBody, expected: type[R], on_progress: ProgressCallback | None = None
    ) -> R:
        with self._lock:
            self._ensure_connected()
            request_id = next(self._ids)
            self._send(Request(id=request_id, body=body, workspace=self.workspace))
            while True:
                frame = self._receive()
                if isinstance(frame, Progress):
                    if frame.id == request_id and on_progress is not None:
                        on_progress(frame)
                    continue
                if not isinstance(frame, Reply):
                    raise self._violation(f"unexpected {type(frame).__name__} frame")
                if frame.id == 0 and isinstance(frame.body, Error):
                    self._drop()
                    raise reply_error(frame.body)
                if frame.id != request_id:
                    continue
                return self._result(frame.body, expected)

    def _result(self, body: ReplyBody, expected: type[R]) -> R:
        try:
            return result_of(body, expected)
        except ProtocolViolation:
            self._drop()
            raise

    def _ensure_connected(self) -> Welcome:
        if self._sock is not None and self.welcome is not None:
            return self.welcome
        self._sock = self._open_socket()
        self._send(Hello(protocol=PROTOCOL_VERSION, client=self.name))
        try:
            welcome = welcome_of(self._receive())
        except (DaemonError, ProtocolViolation):
            self._drop()
            raise
        self.welcome = welcome
        return welcome

    def _open_socket(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(os.fspath(self.socket_path))
        except OSError as exc:
            sock.close()
            raise connect_error(exc, self.socket_path) from None
        return sock

    def _send(self, frame: Hello | Request) -> None:
        assert self._sock is not None
        data = encode(frame)
        try:
            self._sock.sendall(data)
        except OSError as exc:
            refusal = parting_error(self._frames, self._drain())
            self._drop()
            raise (refusal or lost_connection(exc)) from None

    def _receive(self) -> DaemonFrame:
        while not self._pending:
            assert self._sock is not None
            try:
                data = self._sock.recv(65536)
            except TimeoutError:
                self._drop()
                raise no_answer(self.timeout) from None
            except OSError as exc:
                self._drop()
                raise lost_connection(exc) from None
            if not data:
                self._drop()
                raise closed_by_daemon()
            try:
                bodies = self._frames.feed(data)
                self._pending.extend(decode_daemon_frame(body) for body in bodies)
            except ProtocolError as exc:
                raise self._violation(str(exc)) from None
        return self._pending.popleft()

    def _drain(self) -> bytes:
        """Whatever the daemon sent that we have not read (it may have closed)."""
        assert self._sock is not None
        chunks: list[bytes] = []
        self._sock.setblocking(False)
        try:
            while chunk := self._sock.recv(65536):
                chunks.append(chunk)
        except OSError:
            pass  # nothing more (EAGAIN) or reset: what we have is all there is
        return b"".join(chunks)

    def _violation(self, message: str) -> ProtocolViolation:
        self._drop()
        return violation(message)

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self.welcome = None
        self._frames = FrameBuffer(DEFAULT_MAX_FRAME)
        self._pending.clear()


def default_socket() -> Path:
    """The socket a `Client()` without arguments would use."""
    return discover_socket()
