"""The blocking client.

One `Client` holds one connection, opened on first use (or by ``with``),
performs the Hello/Welcome handshake, and sends one request at a time (a lock
makes it safe to share between threads). Results are the protocol's typed
Structs. Every failure is an `OmemError`: connection problems are
`ConnectError` (`DaemonNotRunning` when no daemon is there; one that is
stopping or starting is waited for, `_restart_wait`), error replies are
`DaemonError` subclasses named after their code.

The client imports only the standard library, msgspec and omem_protocol, so
importing it costs milliseconds and never drags in the daemon's runtime.
"""

from __future__ import annotations

import itertools
import os
import select
import socket
import threading
import time
from collections import deque
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from omem_client import _requests
from omem_client._binding import Call, blocking
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
from omem_client._discovery import discover_socket
from omem_client._errors import ConnectError, DaemonError, ProtocolViolation
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
        self.timeout = wait_limit(timeout)
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
    # Each is declared once, in `_requests`; see `_binding`.

    status = blocking(_requests.status)
    search = blocking(_requests.search)
    get = blocking(_requests.get)
    append = blocking(_requests.append)
    sync = blocking(_requests.sync)
    log_turns = blocking(_requests.log_turns)
    session_start = blocking(_requests.session_start)
    recall = blocking(_requests.recall)
    capture = blocking(_requests.capture)
    forget = blocking(_requests.forget)
    restore = blocking(_requests.restore)
    primer = blocking(_requests.primer)
    flush_check = blocking(_requests.flush_check)
    doctor = blocking(_requests.doctor)
    export = blocking(_requests.export)
    session_end = blocking(_requests.session_end)
    tasks = blocking(_requests.tasks)
    log = blocking(_requests.log)
    compact = blocking(_requests.compact)
    compact_check = blocking(_requests.compact_check)

    # ------------------------------------------------------------ plumbing

    def _run(self, call: Call[R]) -> R:
        """Send *call* and wait for its reply, passing its Progress frames on."""
        body, expected, on_progress = call.params, call.result, call.on_progress
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
            if not self._closed_by_daemon():
                return self.welcome
            self._drop()  # the daemon restarted or stopped since the last call
        self._sock = self._open_socket()
        self._send(Hello(protocol=PROTOCOL_VERSION, client=self.name))
        try:
            welcome = welcome_of(self._receive())
        except (DaemonError, ProtocolViolation):
            self._drop()
            raise
        self.welcome = welcome
        return welcome

    def _closed_by_daemon(self) -> bool:
        """Whether the daemon has closed this connection while it sat idle.

        Between two calls nothing is owed to us, so anything to read (the end
        of the stream, a reset) means the daemon that answered the last call
        is gone: it was restarted or stopped. Nothing of the next request has
        been sent yet, so connecting afresh loses nothing; sending first would
        fail the call with "lost the connection: Broken pipe" and leave the
        reconnecting to the call after it, as a long-lived client (an agent's
        process) across a daemon restart saw.
        """
        assert self._sock is not None
        # the end of the stream, a reset, or a parting frame of a stopping daemon
        return readable_now(self._sock)

    def _open_socket(self) -> socket.socket:
        """A connected socket; waits out a daemon that is stopping or starting
        (`RestartWait`), up to the timeout."""
        wait = RestartWait(self.socket_path, self.timeout)
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            try:
                sock.connect(os.fspath(self.socket_path))
            except OSError as exc:
                sock.close()
                pause = wait.after(exc)
                if isinstance(pause, ConnectError):
                    raise pause from None
                time.sleep(pause)
            else:
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


def readable_now(sock: socket.socket) -> bool:
    """Whether *sock* holds something to read (data, its end, or a reset), without waiting.

    Polled, not a non-blocking recv: a socket with a timeout waits for data
    before any recv, whatever its flags. ``poll`` where there is one, since
    ``select`` refuses descriptors past 1023, which a busy agent's process
    may well hand out.
    """
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def default_socket() -> Path:
    """The socket a `Client()` without arguments would use."""
    return discover_socket()
