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

The stream is any trio stream, so the protocol logic is tested over
in-memory streams; the peer credential check happens where real sockets are
accepted (`rpc`).
"""

from __future__ import annotations

import logging
import os

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
from openmemoryd.errors import OmemdError

logger = logging.getLogger("openmemoryd.server")

RECEIVE_SIZE = 65536


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
        except MessageDecodeError as exc:
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
            except MessageDecodeError as exc:
                reply: ReplyBody = Error(code="bad_request", message=f"invalid request: {exc}")
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
        async def progress(done: int, total: int, phase: str) -> None:
            await self._send(Progress(id=request_id, done=done, total=total, phase=phase))

        try:
            return await self._api.dispatch(body, progress, workspace)
        except OmemdError as exc:
            return Error(code=exc.code, message=str(exc))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise
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
