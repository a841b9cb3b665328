"""What the fake remote services share: a real HTTP server on 127.0.0.1 that
records every request and can be told to misbehave.

A subclass of `FakeHTTPServer` only says what a well-formed answer is
(`answer`); the server (stdlib, a thread per request, port 0), the recording
(path, lower-cased headers, JSON body), and the faults common to every wire
format live here: an HTTP status (`status`), invalid JSON (`INVALID_JSON`), a
hang longer than the client's timeout (`HANG`), queued for the next requests
(`fail_next`) or for every request until `recover` (`outage`). Faults of a
kind the base does not know reach `answer`, which spoils its own payload.
GET and DELETE are served too, and a ``multipart/form-data`` POST is
recorded as ``{"fields": {...}, "files": {name: text}}`` (the batch APIs'
uploads); an answer may be `Raw` text instead of JSON (their downloads).

Invariants: `close` and `recover` release hanging handlers, and `close` joins
the server thread, so no socket outlives a test.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self


@dataclass(frozen=True)
class Fault:
    """How to spoil one answer."""

    kind: str
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: str = ""


def status(
    code: int, *, retry_after: str | None = None, body: str = "", location: str | None = None
) -> Fault:
    """Answer with HTTP *code* (and a JSON error body unless *body* is given)."""
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    if location is not None:
        headers["Location"] = location
    text = body or json.dumps({"error": {"message": f"fake error {code}"}})
    return Fault("status", status=code, headers=headers, body=text)


INVALID_JSON = Fault("invalid_json")
HANG = Fault("hang")


@dataclass(frozen=True)
class Raw:
    """An answer sent as it is (JSON Lines, say), not encoded as JSON."""

    text: str
    content_type: str = "application/octet-stream"


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it; header names are lower-cased."""

    path: str
    headers: dict[str, str]
    body: Any
    method: str = "POST"


class FakeHTTPServer:
    """The server, its thread, its recordings and its faults."""

    recorded_type: ClassVar[type[Recorded]] = Recorded

    def __init__(self, *, hang_s: float = 5.0) -> None:
        self.hang_s = hang_s
        self._lock = threading.Lock()
        self._faults: deque[Fault] = deque()
        self._requests: list[Recorded] = []
        self._release = threading.Event()
        self._outage: list[Fault] = []
        self._outage_served = 0
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def fail_next(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    def outage(self, *faults: Fault) -> None:
        """Spoil every answer from now on, cycling through *faults*."""
        with self._lock:
            self._outage = list(faults)
            self._outage_served = 0

    def recover(self) -> None:
        """End the outage; requests hanging now are let go (they get no answer)."""
        with self._lock:
            self._outage = []
            release, self._release = self._release, threading.Event()
        release.set()

    def close(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------ serving

    def answer_request(self, request: Recorded, fault: Fault | None) -> tuple[int, Any]:
        """Status and payload for *request*; by default `answer` (POST only)."""
        return self.answer(request.path, request.body, fault)

    def answer(self, path: str, body: dict[str, Any], fault: Fault | None) -> tuple[int, Any]:
        """Status and JSON payload for a well-formed request (*fault*: one the
        base does not handle, for the subclass to apply)."""
        raise NotImplementedError

    def record(self, request: Recorded) -> Fault | None:
        """Keep *request*; the fault it is to suffer, if any."""
        with self._lock:
            self._requests.append(request)
            if self._faults:
                return self._faults.popleft()
            if self._outage:
                self._outage_served += 1
                return self._outage[(self._outage_served - 1) % len(self._outage)]
            return None

    def wait_released(self) -> None:
        with self._lock:
            release = self._release
        release.wait(self.hang_s)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeHTTPServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: clients hanging up on a hang fault is expected."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        self._serve("POST")

    def do_GET(self) -> None:
        self._serve("GET")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        content_type = self.headers.get("Content-Type") or ""
        body: Any
        if method != "POST":
            body = {}
        elif content_type.startswith("multipart/form-data"):
            body = _multipart(content_type, raw)
        else:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = fake.recorded_type(self.path, headers, body, method)
        fault = fake.record(request)
        if fault is not None and fault.kind == "hang":
            fake.wait_released()
            self.close_connection = True
            return
        if fault is not None and fault.kind == "status":
            self._send(fault.status, fault.body.encode(), fault.headers)
            return
        if fault is not None and fault.kind == "invalid_json":
            self._send(200, b'{"data": [oops')
            return
        if not isinstance(body, dict):
            self._send(400, b'{"error": {"message": "body is not a JSON object"}}')
            return
        code, payload = fake.answer_request(request, fault)
        if isinstance(payload, Raw):
            self._send(code, payload.text.encode(), {"Content-Type": payload.content_type})
            return
        self._send(code, json.dumps(payload).encode())

    def _send(self, code: int, payload: bytes, headers: Mapping[str, str] | None = None) -> None:
        extra = dict(headers or {})
        self.send_response(code)
        self.send_header("Content-Type", extra.pop("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(payload)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""


def _multipart(content_type: str, raw: bytes) -> dict[str, Any]:
    """A multipart form as ``{"fields": {name: value}, "files": {name: text}}``."""
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
    )
    fields: dict[str, str] = {}
    files: dict[str, str] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        text = payload.decode("utf-8") if isinstance(payload, bytes) else ""
        if part.get_filename() is not None:
            files[str(name)] = text
        else:
            fields[str(name)] = text
    return {"fields": fields, "files": files}
