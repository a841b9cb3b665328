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

The stream is any trio stream, so the protocol logic is tested over
in-memory streams; the peer credential check happens where real sockets are
accepted (`rpc`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable

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

    def stop_reading(self) -> None:
        """Take no new requests; the ones in flight still get their replies."""
        self._reader.cancel()

    async def serve(self) -> None:
        try:
            async with trio.open_nursery() as requests:
                with self._reader:
                    await self._read_frames(requests)
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

    async def _read_frames(self, requests: trio.Nursery) -> None:
        frames = FrameBuffer(self._max_frame)
        while True:
            data = await self._stream.receive_some(RECEIVE_SIZE)
            if not data:
                return
            try:
                bodies = frames.feed(data)
            except FrameTooLarge as exc:
                await self._send(Reply(id=0, body=Error(code="too_large", message=str(exc))))
                return
            for body in bodies:
                if not await self._on_frame(body, requests):
                    return

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
            return await self._on_hello(frame)
        if not self._greeted:
            message = "the first frame must be a Hello"
            await self._send(Reply(id=frame.id, body=Error(code="bad_request", message=message)))
            return False
        await self._slots.acquire()
        requests.start_soon(self._run, frame)
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
            self._slots.release()

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
