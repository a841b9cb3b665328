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

import errno
import itertools
import os
import socket
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from omem_client._discovery import discover_socket
from omem_client._errors import (
    BadRequestError,
    ConnectError,
    DaemonNotRunning,
    ProtocolViolation,
    daemon_error,
)
from omem_protocol import (
    DEFAULT_MAX_FRAME,
    PROTOCOL_VERSION,
    AppendParams,
    AppendResult,
    DaemonFrame,
    Error,
    FrameBuffer,
    GetParams,
    GetResult,
    Hello,
    LogTurnsParams,
    LogTurnsResult,
    Progress,
    ProtocolError,
    Reply,
    ReplyBody,
    Request,
    RequestBody,
    SearchParams,
    SearchResult,
    SessionStartParams,
    SessionStartResult,
    StatusParams,
    StatusResult,
    SyncParams,
    SyncResult,
    Turn,
    Welcome,
    __version__,
    decode_daemon_frame,
    encode_message,
)

R = TypeVar("R")
ProgressCallback = Callable[[Progress], None]

DEFAULT_TIMEOUT = 60.0
START_HINT = "start it with `openmemoryd run` (or `systemctl --user start openmemoryd`)"


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
    ) -> None:
        self.socket_path = discover_socket(socket_path)
        self.timeout = timeout
        self.name = name
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
            agent=agent, session_id=session_id, turns=tuple(_turn(t) for t in turns)
        )
        return self._call(params, LogTurnsResult)

    def session_start(self, agent: str, session_id: str | None = None) -> SessionStartResult:
        """Tell the daemon a session starts: the agent's transcripts are indexed now."""
        return self._call(
            SessionStartParams(agent=agent, session_id=session_id), SessionStartResult
        )

    def sync(
        self, *, full: bool = False, on_progress: ProgressCallback | None = None
    ) -> SyncResult:
        """Bring the index up to date with the files; `full` re-chunks everything."""
        return self._call(SyncParams(full=full), SyncResult, on_progress)

    # ------------------------------------------------------------ plumbing

    def _call(
        self, body: RequestBody, expected: type[R], on_progress: ProgressCallback | None = None
    ) -> R:
        with self._lock:
            self._ensure_connected()
            request_id = next(self._ids)
            self._send(Request(id=request_id, body=body))
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
                    raise daemon_error(frame.body.code, frame.body.message, frame.body.detail)
                if frame.id != request_id:
                    continue
                return self._result(frame.body, expected)

    def _result(self, body: ReplyBody, expected: type[R]) -> R:
        if isinstance(body, Error):
            raise daemon_error(body.code, body.message, body.detail)
        if not isinstance(body, expected):
            raise self._violation(f"expected {expected.__name__}, got {type(body).__name__}")
        return body

    def _ensure_connected(self) -> Welcome:
        if self._sock is not None and self.welcome is not None:
            return self.welcome
        self._sock = self._open_socket()
        self._send(Hello(protocol=PROTOCOL_VERSION, client=self.name))
        frame = self._receive()
        if isinstance(frame, Reply) and isinstance(frame.body, Error):
            self._drop()
            raise daemon_error(frame.body.code, frame.body.message, frame.body.detail)
        if not isinstance(frame, Welcome):
            raise self._violation(f"expected Welcome, got {type(frame).__name__}")
        self.welcome = frame
        return frame

    def _open_socket(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(os.fspath(self.socket_path))
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            raise DaemonNotRunning(
                f"openmemoryd is not running (nothing listens on {self.socket_path}); {START_HINT}"
            ) from None
        except OSError as exc:
            sock.close()
            if exc.errno in (errno.EACCES, errno.EPERM):
                raise ConnectError(f"permission denied connecting to {self.socket_path}") from None
            raise ConnectError(
                f"cannot connect to {self.socket_path}: {exc.strerror or exc}"
            ) from None
        return sock

    def _send(self, frame: Hello | Request) -> None:
        assert self._sock is not None
        try:
            data = encode_message(frame)
        except ProtocolError as exc:
            raise ProtocolViolation(f"request too large to send: {exc}") from None
        try:
            self._sock.sendall(data)
        except OSError as exc:
            self._drop()
            raise ConnectError(
                f"lost the connection to openmemoryd: {exc.strerror or exc}"
            ) from None

    def _receive(self) -> DaemonFrame:
        while not self._pending:
            assert self._sock is not None
            try:
                data = self._sock.recv(65536)
            except TimeoutError:
                self._drop()
                raise ConnectError(
                    f"openmemoryd did not answer within {self.timeout:g} s"
                ) from None
            except OSError as exc:
                self._drop()
                raise ConnectError(
                    f"lost the connection to openmemoryd: {exc.strerror or exc}"
                ) from None
            if not data:
                self._drop()
                raise ConnectError("openmemoryd closed the connection")
            try:
                bodies = self._frames.feed(data)
                self._pending.extend(decode_daemon_frame(body) for body in bodies)
            except ProtocolError as exc:
                raise self._violation(str(exc)) from None
        return self._pending.popleft()

    def _violation(self, message: str) -> ProtocolViolation:
        self._drop()
        return ProtocolViolation(f"protocol error talking to openmemoryd: {message}")

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self.welcome = None
        self._frames = FrameBuffer(DEFAULT_MAX_FRAME)
        self._pending.clear()


def _turn(turn: Turn | Mapping[str, object]) -> Turn:
    if isinstance(turn, Turn):
        return turn
    text = turn.get("content", turn.get("text"))
    timestamp = turn.get("timestamp")
    if not isinstance(text, str):
        raise BadRequestError("each turn needs a 'content' (or 'text') string")
    if timestamp is not None and not isinstance(timestamp, int | float):
        raise BadRequestError("a turn's 'timestamp' must be epoch seconds")
    role = turn.get("role")
    if role != "user" and role != "assistant":
        raise BadRequestError(f"a turn's role must be 'user' or 'assistant', not {role!r}")
    return Turn(role=role, text=text, timestamp=timestamp)


def default_socket() -> Path:
    """The socket a `Client()` without arguments would use."""
    return discover_socket()
