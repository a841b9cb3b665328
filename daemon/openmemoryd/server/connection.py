"""One client connection: handshake, concurrent requests, ordered frames.

Invariants:

* Nothing a client sends can crash the daemon: undecodable frames get an
  ``Error`` reply with id 0 and the connection stays usable; an oversized
  length prefix gets ``too_large`` and the connection is closed (the stream
  cannot be resynchronised); a malformed request body gets ``bad_request``
  tied to that request's id.
* Up to ``max_inflight_per_connection`` requests run at once; beyond that the
  connection simply stops reading (backpressure), so a client flooding
  requests, or never reading its replies, only slows itself down.
* Frames are written whole under a lock, so concurrent replies never
  interleave their bytes.
* A handler never waits for the socket: it may report progress while holding
  a lock other clients need (a sync pass holds the index's sync lock), so
  progress goes through a `ProgressRelay`, which keeps only the latest report
  and sends it when the connection can take it. The last report still
  precedes the reply.
* Every request read gets a reply, the daemon's stop included (`begin_stop`,
  `abandon`, `quiet`, driven by `rpc`). Clients keep their connection open
  between requests, so once the daemon stops the connection goes on reading:
  a request sent meanwhile is answered ``unavailable`` at once, while the
  requests already running finish with their normal reply. One still
  running when the grace period ends is cancelled and answered
  ``unavailable`` as well: a client must learn that its request did not
  finish, which a cut connection does not say. The connection is closed
  only when `quiet`: nothing running, nothing read but unanswered, nothing
  unread in the kernel (closing a socket with unread bytes resets it, and
  the reset can destroy replies the client has not read yet).

The stream is any trio stream, so the protocol logic is tested over
in-memory streams; the peer credential check happens where real sockets are
accepted (`rpc`).
"""

from __future__ import annotations

import logging
import os
import select
from collections.abc import Awaitable, Callable
from typing import Final

import trio

from omem_protocol import (
    PROTOCOL_VERSION,
    DaemonFrame,
    Error,
    FrameBuffer,
    FrameTooLarge,
    Hello,
    MessageDecodeError,
    Progress,
    RawRequest,
    Reply,
    ReplyBody,
    RequestBody,
    Welcome,
    __version__,
    decode_client_frame,
    decode_request_body,
    encode_message,
)
from omem_protocol.methods import METHODS_BY_PARAMS
from openmemoryd.api import CAPABILITIES, Api
from openmemoryd.config import ServerSettings
from openmemoryd.errors import OmemdError, invalid_request

logger = logging.getLogger("openmemoryd.server")

RECEIVE_SIZE = 65536

# msgspec reports nesting deeper than the interpreter's recursion limit
# (about 1000 levels: a frame of 1 KB) as RecursionError, and a string that
# is not UTF-8 as UnicodeDecodeError, not as a DecodeError. omem_protocol
# turns both into MessageDecodeError; RecursionError stays here as a second
# guard.
_UNDECODABLE = (MessageDecodeError, RecursionError)

STOPPING_MESSAGE: Final = (
    "openmemoryd is stopping and takes no new requests; retry once it runs again"
)
"""The reply to a request that arrives once the daemon is stopping (the HTTP
API's words for the same moment)."""


def abandoned_message(body: RequestBody, grace_s: float) -> str:
    """The reply to *body*'s request, cancelled because the daemon stopped.

    Whether a write may be sent again is for the user to decide, so it is
    said to be uncertain: each step of a write (a Markdown edit and its
    indexing, in one writer-lane call running in a thread) is never cut, but
    a request of several steps (an append and its journal entry, a capture's
    appends, a sync's batches) may have done some of them when cancelled.
    """
    method = METHODS_BY_PARAMS.get(type(body))
    name = method.name if method is not None else "the request"
    said = (
        f"{name} did not finish: openmemoryd stopped (it waited {grace_s:g} s for it, "
        "[server] drain_timeout_s)"
    )
    if method is None or method.writes:
        return (
            f"{said}; a change it was making may or may not have been saved: "
            "check before sending it again"
        )
    return f"{said}; retry once it runs again"


class Connection:
    """Serves one accepted stream until the client leaves or the daemon stops."""

    def __init__(self, stream: trio.abc.Stream, api: Api, settings: ServerSettings) -> None:
        self._stream = stream
        self._api = api
        self._max_frame = settings.max_frame_bytes
        self._slots = trio.Semaphore(settings.max_inflight_per_connection)
        self._send_lock = trio.Lock()
        self._reader = trio.CancelScope()
        self._greeted = False
        self._frames = FrameBuffer(self._max_frame)
        # The stop (see the module docstring).
        self._stopping = trio.Event()
        self._grace_s = 0.0
        self._requests = 0  # read and not yet answered (running, or sending the reply)
        self._calls: set[trio.CancelScope] = set()  # each running `Api.dispatch`
        self._waiting = False  # the reader waits for bytes (holds none unhandled)
        self._done_reading = False
        self._changed: trio.lowlevel.ParkingLot | None = None

    def begin_stop(self, grace_s: float, changed: trio.lowlevel.ParkingLot) -> None:
        """Answer every request from now on `STOPPING_MESSAGE`; the running
        ones go on. *grace_s* is how long they get (`abandon` is called after
        it), for the message of those that are abandoned. *changed* is
        unparked whenever this connection may have become `quiet`."""
        self._stopping.set()
        self._grace_s = grace_s
        self._changed = changed

    def abandon(self) -> int:
        """Cancel the requests still running, each then answered
        ``unavailable`` (`abandoned_message`); how many there were."""
        for call in self._calls:
            call.cancel()
        return len(self._calls)

    @property
    def running(self) -> int:
        """Requests read and not yet answered."""
        return self._requests

    def quiet(self) -> bool:
        """Whether closing now loses nothing: no request is running or being
        answered, and the reader has stopped, or waits for bytes with no
        partial frame buffered and none unread in the kernel."""
        if self._requests:
            return False
        if self._done_reading:
            return True
        return self._waiting and not self._frames.pending and not self._unread()

    def _may_be_quiet(self) -> None:
        # Every way to become quiet passes here: a request answered, the
        # reader back to waiting (having read what the kernel held), or done.
        if self._changed is not None:
            self._changed.unpark_all()

    def _unread(self) -> bool:
        sock = getattr(self._stream, "socket", None)
        if sock is None:  # an in-memory stream (tests): nothing waits in a kernel
            return False
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))

    async def serve(self) -> None:
        try:
            async with trio.open_nursery() as requests:
                with self._reader:
                    try:
                        await self._read_frames(requests)
                    finally:
                        self._done_reading = True
                        self._may_be_quiet()
        except* (trio.BrokenResourceError, trio.ClosedResourceError):
            logger.debug("client went away")
        finally:
            with trio.CancelScope(shield=True):
                await self._stream.aclose()

    async def refuse(self, message: str) -> None:
        """Tell the peer why it is not served, then close."""
        try:
            await self._send(Reply(id=0, body=Error(code="forbidden", message=message)))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            with trio.CancelScope(shield=True):
                await self._stream.aclose()
            self._done_reading = True  # it never read: the stop need not wait for it
            self._may_be_quiet()

    async def _read_frames(self, requests: trio.Nursery) -> None:
        while True:
            data = await self._receive()
            if not data:
                return
            try:
                bodies = self._frames.feed(data)
            except FrameTooLarge as exc:
                await self._send(Reply(id=0, body=Error(code="too_large", message=str(exc))))
                return
            for body in bodies:
                if not await self._on_frame(body, requests):
                    return

    async def _receive(self) -> bytes | bytearray:
        """The next bytes from the client, `_waiting` set while there are none.

        On a socket the wait for bytes and the read are two steps: a read
        takes the bytes and then yields to other tasks before returning them,
        a moment when the connection would look `quiet` with nothing unread
        while it holds a request not yet handled.
        """
        sock = getattr(self._stream, "socket", None)
        self._waiting = True
        self._may_be_quiet()
        try:
            if sock is not None:
                await trio.lowlevel.wait_readable(sock)
                self._waiting = False
            return await self._stream.receive_some(RECEIVE_SIZE)
        finally:
            self._waiting = False

    async def _on_frame(self, body: bytes, requests: trio.Nursery) -> bool:
        """Handle one frame; False means "close the connection"."""
        try:
            frame = decode_client_frame(body)
        except _UNDECODABLE as exc:
            await self._send(
                Reply(id=0, body=Error(code="bad_request", message=f"undecodable frame: {exc}"))
            )
            return True
        if isinstance(frame, Hello):
            if self._stopping.is_set() and not self._greeted:
                await self._send(Reply(id=0, body=_stopping_error()))
                return False
            return await self._on_hello(frame)
        if not self._greeted:
            message = "the first frame must be a Hello"
            await self._send(Reply(id=frame.id, body=Error(code="bad_request", message=message)))
            return False
        if not self._stopping.is_set():
            await self._slots.acquire()
            if not self._stopping.is_set():
                self._requests += 1
                requests.start_soon(self._run, frame)
                return True
            self._slots.release()  # the stop began while this waited for a slot
        await self._send(Reply(id=frame.id, body=_stopping_error()))
        return True

    async def _on_hello(self, hello: Hello) -> bool:
        if self._greeted:
            await self._send(Reply(id=0, body=Error(code="bad_request", message="duplicate Hello")))
            return True
        if hello.protocol != PROTOCOL_VERSION:
            message = (
                f"protocol mismatch: the client speaks version {hello.protocol}, this daemon "
                f"({__version__}) speaks {PROTOCOL_VERSION}; install matching openmemory versions"
            )
            await self._send(Reply(id=0, body=Error(code="version_mismatch", message=message)))
            return False
        self._greeted = True
        await self._send(
            Welcome(
                protocol=PROTOCOL_VERSION,
                daemon_version=__version__,
                pid=os.getpid(),
                workspaces=self._api.workspaces,
                capabilities=CAPABILITIES,
            )
        )
        return True

    async def _run(self, raw: RawRequest) -> None:
        try:
            try:
                body = decode_request_body(raw.body)
            except _UNDECODABLE as exc:
                reply: ReplyBody = Error(code="bad_request", message=invalid_request(str(exc)))
            else:
                reply = await self._call(raw.id, body, raw.workspace)
            await self._send(Reply(id=raw.id, body=reply))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._reader.cancel()  # the client is gone: stop reading too
        finally:
            self._requests -= 1
            self._slots.release()
            self._may_be_quiet()

    async def _call(
        self, request_id: int, body: RequestBody, workspace: str | None = None
    ) -> ReplyBody:
        async with trio.open_nursery() as relays:
            relay = ProgressRelay(request_id, self._send, relays)
            try:
                return await self._dispatch(request_id, body, relay, workspace)
            finally:
                relay.finish()

    async def _dispatch(
        self, request_id: int, body: RequestBody, relay: ProgressRelay, workspace: str | None
    ) -> ReplyBody:
        # Only the call is cancelled by `abandon`, not the progress relay: a
        # frame it was writing is finished, so the reply that follows is whole.
        with trio.CancelScope() as call:
            self._calls.add(call)
            try:
                return await self._api.dispatch(body, relay.report, workspace)
            except OmemdError as exc:
                return Error(code=exc.code, message=str(exc))
            except Exception as exc:
                logger.exception("request %d (%s) failed", request_id, type(body).__name__)
                return Error(
                    code="internal",
                    message=f"internal error ({type(exc).__name__}); see the daemon log",
                )
            finally:
                self._calls.discard(call)
        logger.warning("request %d (%s) abandoned at the stop", request_id, type(body).__name__)
        return Error(code="unavailable", message=abandoned_message(body, self._grace_s))

    async def _send(self, frame: DaemonFrame) -> None:
        try:
            data = encode_message(frame, self._max_frame)
        except FrameTooLarge as exc:
            if not isinstance(frame, Reply):
                raise
            message = (
                f"the reply ({exc.size} bytes) exceeds the {exc.limit}-byte frame limit; "
                "ask for less (fewer lines or results)"
            )
            data = encode_message(Reply(id=frame.id, body=Error(code="too_large", message=message)))
        async with self._send_lock:
            await self._stream.send_all(data)


def _stopping_error() -> Error:
    return Error(code="unavailable", message=STOPPING_MESSAGE)


class ProgressRelay:
    """Sends one request's progress without ever making its handler wait.

    `report` only records the latest report and wakes a sender task (started
    on the first report), so a client that stops reading holds up nothing
    but its own frames. Progress is advisory: reports made while an earlier
    one is still being sent are merged into the newest. `finish` lets the
    sender deliver what is pending and stop; the request's nursery waits for
    it, so no progress ever follows the reply.
    """

    def __init__(
        self,
        request_id: int,
        send: Callable[[DaemonFrame], Awaitable[None]],
        nursery: trio.Nursery,
    ) -> None:
        self._id = request_id
        self._send = send
        self._nursery = nursery
        self._latest: Progress | None = None
        self._wake = trio.Event()
        self._started = False
        self._finished = False

    async def report(self, done: int, total: int, phase: str) -> None:
        self._latest = Progress(id=self._id, done=done, total=total, phase=phase)
        if not self._started:
            self._started = True
            self._nursery.start_soon(self._forward)
        self._wake.set()

    def finish(self) -> None:
        self._finished = True
        self._wake.set()

    async def _forward(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                frame, self._latest = self._latest, None
                if frame is not None:
                    await self._send(frame)
                if self._finished and self._latest is None:
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client left; sending the reply will notice too
