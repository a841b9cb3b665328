"""The async client: `Client`'s calls as coroutines, for trio and asyncio alike.

Built on anyio, so it runs under whichever event loop the agent uses. Many
tasks may share one `AsyncClient`: their requests travel over one connection,
each under its own id, and the daemon's replies (in any order, with `Progress`
frames in between) reach the task that asked.

Invariants:

* No task owns the receive side. A task waiting for a frame reads the socket
  only while no other task does (it holds the "baton"), files every frame it
  reads under its request id and wakes that request's task; the others sleep
  until a frame arrives for them or the reader leaves. A reader that leaves
  wakes everyone still waiting, so someone always takes over.
* Cancelling a call never corrupts the stream. Receiving is cancel-safe (a
  partial frame stays in the shared `FrameBuffer`), a reply whose caller has
  gone is dropped when it arrives, and every request is written whole: sends
  take turns and are shielded from cancellation up to the caller's deadline;
  a send cut short by that deadline closes the connection.
* A broken connection (end of stream, an OSError, bytes that do not decode, a
  connection-level error reply) fails every call waiting on it with the same
  error, and the next call connects afresh.
* `timeout` bounds the wait for each frame of a call, as in `Client`, so a
  call that keeps sending Progress goes on. A call that times out gives up
  alone: the connection stays up for the other tasks.

This module imports anyio (tens of milliseconds with its dependencies), so
``omem_client`` loads it only when `AsyncClient` is first used.
"""

from __future__ import annotations

import copy
import itertools
import os
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import anyio
import anyio.lowlevel
from anyio.abc import ByteStream

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
from omem_client._client import DEFAULT_TIMEOUT
from omem_client._discovery import discover_socket
from omem_client._errors import ConnectError, DaemonError, OmemError, ProtocolViolation
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

RECEIVE_SIZE = 65536


class AsyncClient:
    """A connection to openmemoryd that any number of tasks may share.

    Arguments, results and errors are those of `Client`; every call is a
    coroutine. Use one client from one event loop (trio or asyncio), with
    ``async with AsyncClient() as client:`` or a final `aclose`.

    Args:
        socket_path: where the daemon listens; default: ``OPENMEMORY_SOCKET``,
            the config file's ``socket``, then the platform default.
        timeout: seconds to wait for each frame of a call (None: forever).
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
        self._connection: _Connection | None = None
        self._connecting = anyio.Lock()
        self._ids = itertools.count(1)

    @property
    def welcome(self) -> Welcome | None:
        """The daemon's handshake answer while connected."""
        connection = self._connection
        if connection is None or connection.failure is not None:
            return None
        return connection.welcome

    # ------------------------------------------------------------ lifecycle

    async def connect(self) -> Welcome:
        """Connect and handshake now (otherwise the first call does it)."""
        with anyio.move_on_after(self.timeout):
            return (await self._connected()).welcome
        raise no_answer(self.timeout)

    async def aclose(self) -> None:
        """Close the connection; calls still waiting on it fail with `ConnectError`."""
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.abort(ConnectError("the client was closed during the call"))

    async def __aenter__(self) -> AsyncClient:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------ methods

    async def status(self) -> StatusResult:
        """The daemon's and the workspace's state."""
        return await self._call(StatusParams(), StatusResult)

    async def search(
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
        """Search memory; the arguments are those of `Client.search`."""
        params = SearchParams(
            query=query,
            limit=limit,
            min_score=min_score,
            sources=tuple(sources) if sources is not None else None,
            agent=agent,
            fresh=fresh,
            explain=explain,
        )
        return await self._call(params, SearchResult)

    async def get(
        self, path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> GetResult:
        """Read a memory file, or `lines` lines of it starting at `from_line` (1-based)."""
        params = GetParams(path=path, from_line=from_line, lines=lines)
        return await self._call(params, GetResult)

    async def append(self, text: str, *, path: str | None = None) -> AppendResult:
        """Append *text* (default: to today's daily file); searchable on return."""
        return await self._call(AppendParams(text=text, path=path), AppendResult)

    async def log_turns(
        self, agent: str, session_id: str, turns: Sequence[Turn | Mapping[str, object]]
    ) -> LogTurnsResult:
        """Append conversation turns to a session's transcript (see `Client.log_turns`)."""
        params = LogTurnsParams(
            agent=agent, session_id=session_id, turns=tuple(as_turn(t) for t in turns)
        )
        return await self._call(params, LogTurnsResult)

    async def session_start(self, agent: str, session_id: str | None = None) -> SessionStartResult:
        """Tell the daemon a session starts: the agent's transcripts are indexed now."""
        params = SessionStartParams(agent=agent, session_id=session_id)
        return await self._call(params, SessionStartResult)

    async def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
        agent: str | None = None,
    ) -> RecallResult:
        """Memories relevant to *query* as a block to put before the prompt."""
        params = RecallParams(
            query=query,
            limit=limit,
            min_score=min_score,
            sources=tuple(sources) if sources is not None else None,
            agent=agent,
        )
        return await self._call(params, RecallResult)

    async def capture(
        self,
        messages: Sequence[CaptureMessage | Mapping[str, object]],
        *,
        max_captures: int | None = None,
    ) -> CaptureResult:
        """Write the durable facts in the user's *messages* to today's daily file."""
        params = CaptureParams(
            messages=tuple(capture_message(m) for m in messages), max_captures=max_captures
        )
        return await self._call(params, CaptureResult)

    async def forget(
        self,
        *,
        citation: str | None = None,
        text: str | None = None,
        query: str | None = None,
        all: bool = False,
    ) -> ForgetResult:
        """Erase a memory by `citation`, exact `text` or `query` (see `Client.forget`)."""
        params = ForgetParams(citation=citation, text=text, query=query, all=all)
        return await self._call(params, ForgetResult)

    async def restore(self, path: str | None = None, *, dry_run: bool = False) -> RestoreResult:
        """Append again what an external rewrite removed from *path* (every
        file when None) and the daemon did not restore by itself; with
        *dry_run*, only list it."""
        return await self._call(RestoreParams(path=path, dry_run=dry_run), RestoreResult)

    async def primer(
        self, *, budget: int | None = None, private: bool = False, today: date | None = None
    ) -> PrimerResult:
        """Context to start a session with, within *budget* tokens (default
        1000): USER.md, PROJECT.md, today's and yesterday's daily files, and
        MEMORY.md only when *private* (never in a group conversation)."""
        params = PrimerParams(budget=budget, private=private, date=iso_date(today))
        return await self._call(params, PrimerResult)

    async def flush_check(
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
        return await self._call(params, FlushCheckResult)

    async def export(self, output: str | os.PathLike[str]) -> ExportResult:
        """Archive the memory's Markdown with a manifest (never the index) to
        *output*; the daemon writes it, so a relative path is made absolute here."""
        path = str(await anyio.Path(os.fspath(output)).absolute())
        return await self._call(ExportParams(output=path), ExportResult)

    async def doctor(self) -> DoctorResult:
        """The daemon's health checks, run inside it on its live index,
        embedder and watcher; ``result.ok`` is false when any check failed."""
        return await self._call(DoctorParams(), DoctorResult)

    async def sync(
        self, *, full: bool = False, on_progress: ProgressCallback | None = None
    ) -> SyncResult:
        """Bring the index up to date with the files; `full` re-chunks everything.

        `on_progress` is called in the calling task with each `Progress` frame.
        """
        return await self._call(SyncParams(full=full), SyncResult, on_progress)

    async def session_end(
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
        return await self._call(params, SessionEndResult)

    async def tasks(
        self,
        action: TaskAction = "list",
        tasks: str | Sequence[str] = (),
        *,
        status: TaskStatus = "open",
    ) -> TasksResult:
        """List the tasks in ``memory/TASKS.md`` (`status`: open, done or all), or
        ``add`` texts, or mark tasks ``done``, ``reopen`` or ``remove`` them, named
        by id or text (exact, else a unique part). All of a change is made, or none."""
        return await self._call(tasks_params(action, tasks, status), TasksResult)

    async def log(
        self,
        text: str,
        *,
        type: str | None = None,
        replace: bool = False,
        force: bool = False,
        dry_run: bool = False,
        agent: str | None = None,
    ) -> LogResult:
        """File one memory through seed 003's write pipeline (see `Client.log`)."""
        params = LogParams(
            text=text,
            memory_type=type,
            replace=replace,
            force=force,
            dry_run=dry_run,
            agent=agent,
        )
        return await self._call(params, LogResult)

    async def compact(
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
        return await self._call(params, CompactResult, on_progress)

    # ------------------------------------------------------------ plumbing

    async def _call(
        self, body: RequestBody, expected: type[R], on_progress: ProgressCallback | None = None
    ) -> R:
        with anyio.move_on_after(self.timeout) as scope:
            connection = await self._connected()
            request_id = next(self._ids)
            waiter = connection.waiters[request_id] = _Waiter()
            try:
                await connection.send(Request(id=request_id, body=body, workspace=self.workspace))
                while True:
                    frame = await connection.next_frame(waiter)
                    if isinstance(frame, Reply):
                        return await connection.result(frame.body, expected)
                    if self.timeout is not None:
                        scope.deadline = anyio.current_time() + self.timeout
                    if on_progress is not None:
                        on_progress(frame)
            finally:
                # From now on a frame for this request is dropped on arrival.
                del connection.waiters[request_id]
        raise no_answer(self.timeout)

    async def _connected(self) -> _Connection:
        connection = self._connection
        if connection is not None and connection.failure is None:
            return connection
        async with self._connecting:
            connection = self._connection
            if connection is None or connection.failure is not None:
                connection = await _Connection.open(self.socket_path, self.name)
                self._connection = connection
            return connection


class _Waiter:
    """The frames that arrived for one request, and the event its task sleeps on."""

    __slots__ = ("frames", "wakeup")

    def __init__(self) -> None:
        self.frames: deque[Reply | Progress] = deque()
        self.wakeup = anyio.Event()


class _Connection:
    """One greeted stream and the requests waiting on it."""

    def __init__(self, stream: ByteStream, buffer: FrameBuffer, welcome: Welcome) -> None:
        self.welcome = welcome
        self.waiters: dict[int, _Waiter] = {}
        self.failure: OmemError | None = None
        self._stream = stream
        self._buffer = buffer
        self._reading = False
        self._send_lock = anyio.Lock()

    @classmethod
    async def open(cls, socket_path: Path, name: str) -> _Connection:
        """Connect to *socket_path* and handshake."""
        try:
            stream = await anyio.connect_unix(socket_path)
        except OSError as exc:
            raise connect_error(exc, socket_path) from None
        try:
            try:
                await stream.send(encode(Hello(protocol=PROTOCOL_VERSION, client=name)))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                refusal = await _parting_words(stream)
                raise (refusal or _stream_error(exc)) from None
            buffer = FrameBuffer(DEFAULT_MAX_FRAME)
            frames: list[DaemonFrame] = []
            while not frames:
                frames = await _receive_frames(stream, buffer)
            # Nothing but the Welcome can follow yet: no request has been sent.
            return cls(stream, buffer, welcome_of(frames[0]))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            raise

    async def send(self, request: Request) -> None:
        """Write *request* whole, even if the caller is cancelled meanwhile."""
        data = encode(request)
        async with self._send_lock:
            self._check()
            await anyio.lowlevel.checkpoint_if_cancelled()
            # Shielded, so a cancelled caller cannot leave half a frame on the
            # wire; bounded by the caller's deadline all the same, since the
            # daemon may not be reading (it stops while its request slots are full).
            deadline = anyio.current_effective_deadline()
            with anyio.CancelScope(shield=True, deadline=deadline) as scope:
                try:
                    await self._stream.send(data)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                    await self.abort(_stream_error(exc))
            if scope.cancelled_caught:
                await self.abort(ConnectError("a request was cut short by its deadline"))
                await anyio.lowlevel.checkpoint()  # the deadline has passed: let it act
        self._check()

    async def next_frame(self, waiter: _Waiter) -> Reply | Progress:
        """The next frame for *waiter*'s request; reads the socket if no one else does."""
        try:
            while not waiter.frames:
                self._check()
                if self._reading:
                    waiter.wakeup = anyio.Event()
                    await waiter.wakeup.wait()
                    continue
                self._reading = True
                try:
                    await self._read()
                finally:
                    self._reading = False
            return waiter.frames.popleft()
        finally:
            if not self._reading:
                # Leaving while no one reads: whoever still waits must take over.
                for other in self.waiters.values():
                    other.wakeup.set()

    async def result(self, body: ReplyBody, expected: type[R]) -> R:
        """The result in *body*; a reply of the wrong kind ends the connection, as in `Client`."""
        try:
            return result_of(body, expected)
        except ProtocolViolation as exc:
            await self.abort(exc)
            raise

    async def abort(self, failure: OmemError) -> None:
        """Fail every call on this connection with *failure* (the first one wins); close it."""
        if self.failure is None:
            self.failure = failure
        for waiter in self.waiters.values():
            waiter.wakeup.set()
        with anyio.CancelScope(shield=True):
            await self._stream.aclose()

    async def _read(self) -> None:
        """Read what the socket holds and file each frame under its request."""
        try:
            for frame in await _receive_frames(self._stream, self._buffer):
                self._file(frame)
        except OmemError as exc:
            await self.abort(exc)

    def _file(self, frame: DaemonFrame) -> None:
        if isinstance(frame, Welcome):
            raise violation("unexpected Welcome frame")
        if frame.id == 0 and isinstance(frame, Reply) and isinstance(frame.body, Error):
            raise reply_error(frame.body)  # about the connection, not one request
        waiter = self.waiters.get(frame.id)
        if waiter is not None:  # otherwise its caller has gone: drop it
            waiter.frames.append(frame)
            waiter.wakeup.set()

    def _check(self) -> None:
        if self.failure is not None:
            # A copy per task: one exception object must not be raised in two tasks.
            raise copy.copy(self.failure)


async def _receive_frames(stream: ByteStream, buffer: FrameBuffer) -> list[DaemonFrame]:
    """The frames completed by one read (often one, maybe none)."""
    try:
        data = await stream.receive(RECEIVE_SIZE)
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
        raise _stream_error(exc) from None
    try:
        return [decode_daemon_frame(body) for body in buffer.feed(data)]
    except ProtocolError as exc:
        raise violation(str(exc)) from None


async def _parting_words(stream: ByteStream) -> DaemonError | None:
    """The refusal a daemon sent before closing on us (see `parting_error`)."""
    with anyio.move_on_after(1.0):
        try:
            data = await stream.receive(RECEIVE_SIZE)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return None
        return parting_error(FrameBuffer(DEFAULT_MAX_FRAME), data)
    return None


def _stream_error(exc: Exception) -> ConnectError:
    if isinstance(exc, anyio.EndOfStream):
        return closed_by_daemon()
    cause = exc.__cause__
    return lost_connection(cause if isinstance(cause, OSError) else None)
