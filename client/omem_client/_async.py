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
* A connection the daemon closed while no call was waiting on it (it was
  restarted or stopped) is noticed before the next request is sent
  (`_Connection.still_open`), and that request goes on a fresh connection,
  as in `Client`. A request that was sent is never sent again: the daemon
  may have acted on it, so its call fails instead.
* Connecting waits out a daemon that is stopping or starting, up to
  `timeout` (`_restart_wait`), as `Client` does.
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
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import anyio
import anyio.lowlevel
from anyio.abc import ByteStream, SocketAttribute

from omem_client import _requests
from omem_client._binding import Call, awaitable
from omem_client._calls import (
    closed_by_daemon,
    encode,
    lost_connection,
    no_answer,
    parting_error,
    reply_error,
    result_of,
    violation,
    wait_limit,
    welcome_of,
)
from omem_client._client import DEFAULT_TIMEOUT, readable_now
from omem_client._discovery import discover_socket
from omem_client._errors import ConnectError, DaemonError, OmemError, ProtocolViolation
from omem_client._restart_wait import RestartWait
from omem_protocol import (
    DEFAULT_MAX_FRAME,
    PROTOCOL_VERSION,
    DaemonFrame,
    Error,
    FrameBuffer,
    Hello,
    Msg,
    Progress,
    ProtocolError,
    Reply,
    ReplyBody,
    Request,
    Welcome,
    __version__,
    decode_daemon_frame,
)

R = TypeVar("R", bound=Msg)

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
        self.timeout = wait_limit(timeout)
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
    # Each is declared once, in `_requests`; see `_binding`.

    status = awaitable(_requests.status)
    search = awaitable(_requests.search)
    get = awaitable(_requests.get)
    append = awaitable(_requests.append)
    sync = awaitable(_requests.sync)
    log_turns = awaitable(_requests.log_turns)
    session_start = awaitable(_requests.session_start)
    recall = awaitable(_requests.recall)
    capture = awaitable(_requests.capture)
    forget = awaitable(_requests.forget)
    restore = awaitable(_requests.restore)
    primer = awaitable(_requests.primer)
    flush_check = awaitable(_requests.flush_check)
    doctor = awaitable(_requests.doctor)
    export = awaitable(_requests.export)
    session_end = awaitable(_requests.session_end)
    tasks = awaitable(_requests.tasks)
    log = awaitable(_requests.log)
    compact = awaitable(_requests.compact)
    compact_check = awaitable(_requests.compact_check)

    # ------------------------------------------------------------ plumbing

    async def _run(self, call: Call[R]) -> R:
        """Send *call* and wait for its reply, passing its Progress frames on."""
        body, expected, on_progress = call.params, call.result, call.on_progress
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
        # Under the lock, so one task looks at an idle connection at a time
        # and every task that found it closed gets the same fresh one.
        async with self._connecting:
            connection = self._connection
            if connection is None or not await connection.still_open():
                self._connection = None
                connection = await _Connection.open(self.socket_path, self.name, self.timeout)
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
    async def open(cls, socket_path: Path, name: str, limit: float | None) -> _Connection:
        """Connect to *socket_path* and handshake; a daemon that is stopping
        or starting is waited for up to *limit* seconds (`RestartWait`)."""
        wait = RestartWait(socket_path, limit)
        while True:
            try:
                stream = await anyio.connect_unix(socket_path)
                break
            except OSError as exc:
                pause = wait.after(exc)
                if isinstance(pause, ConnectError):
                    raise pause from None
            await anyio.sleep(pause)
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

    async def still_open(self) -> bool:
        """Whether a request sent now can reach the daemon, as far as can be told
        without waiting.

        Bytes may be waiting while no call reads: the end of the stream (or a
        reset) of a daemon restarted or stopped since the last call, an error
        it sent about the whole connection, or the late reply to a call whose
        caller gave up. Read at once, they close the connection or are
        dropped, and a closed one is replaced before anything of the next
        request is sent; sending first would fail that call with "lost the
        connection: Broken pipe" and leave the reconnecting to the call after
        it. While a call reads, that reader notices an end of stream itself.
        """
        if self.failure is None and not self._reading and _readable(self._stream):
            self._reading = True
            try:
                while self.failure is None and _readable(self._stream):
                    await self._read()
            finally:
                self._reading = False
                for waiter in self.waiters.values():  # frames may have come for them
                    waiter.wakeup.set()
        return self.failure is None

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


def _readable(stream: ByteStream) -> bool:
    """Whether a receive on *stream* would return at once (data, end, or reset)."""
    sock = stream.extra(SocketAttribute.raw_socket, None)
    return sock is not None and readable_now(sock)


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
