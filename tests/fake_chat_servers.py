"""A fake chat model on 127.0.0.1 that speaks OpenAI's and Ollama's chat wire formats.

One real HTTP server (stdlib, a thread per request, port 0) answers
OpenAI-style ``POST …/chat/completions`` (``{"choices": [{"message": …}]}``)
and Ollama's ``POST /api/chat`` with ``stream: false`` (``{"message": …,
"done": true}``), routing by the path's ending. It records every request
(path, headers, JSON body), so tests can read the prompts it got, and can be
told to misbehave for the next requests (`fail_next`): an HTTP status,
invalid JSON, an empty reply, a reply of the wrong shape, or a hang longer
than the client's timeout. `reply_next` queues literal replies.

Invariants: the default reply is a deterministic function of the prompt
(`fake_summary`): one bullet per conversation line holding its first words,
so a summary is shorter than long messages, keeps their distinctive words
(searchable later) and shows which messages the model saw; `close` releases
hanging handlers and joins the server thread, so no socket outlives a test.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

FaultKind = Literal["status", "invalid_json", "empty", "wrong_shape", "hang"]
SUMMARY_WORDS = 6


@dataclass(frozen=True)
class Fault:
    """How to spoil one answer."""

    kind: FaultKind
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: str = ""


def status(code: int, *, retry_after: str | None = None, body: str = "") -> Fault:
    """Answer with HTTP *code* (and a JSON error body unless *body* is given)."""
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    text = body or json.dumps({"error": {"message": f"fake chat error {code}"}})
    return Fault("status", status=code, headers=headers, body=text)


INVALID_JSON = Fault("invalid_json")
EMPTY = Fault("empty")
WRONG_SHAPE = Fault("wrong_shape")
HANG = Fault("hang")


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it; header names are lower-cased."""

    path: str
    headers: dict[str, str]
    body: Any

    @property
    def system(self) -> str:
        return str(self.body["messages"][0]["content"])

    @property
    def user(self) -> str:
        return str(self.body["messages"][-1]["content"])


def fake_summary(user: str) -> str:
    """The fake model's reply: a bullet with the first words of each line it was given."""
    bullets = []
    for line in user.splitlines():
        line = re.sub(r"</?(conversation|summary)\b[^>]*>", "", line).strip(" -")
        if line:
            bullets.append("- " + " ".join(line.split()[:SUMMARY_WORDS]))
    return "\n".join(bullets) or "- (nothing)"


class FakeChatServer:
    """The server, its thread, its recordings and its queues of faults and replies."""

    def __init__(self, *, hang_s: float = 5.0) -> None:
        self.hang_s = hang_s
        self._lock = threading.Lock()
        self._faults: deque[Fault] = deque()
        self._replies: deque[str] = deque()
        self._requests: list[Recorded] = []
        self._release = threading.Event()
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

    def reply_next(self, *replies: str) -> None:
        with self._lock:
            self._replies.extend(replies)

    def close(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> FakeChatServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------ serving

    def record_and_pop(self, request: Recorded) -> tuple[Fault | None, str | None]:
        with self._lock:
            self._requests.append(request)
            fault = self._faults.popleft() if self._faults else None
            reply = self._replies.popleft() if fault is None and self._replies else None
            return fault, reply

    def wait_released(self) -> None:
        self._release.wait(self.hang_s)

    def answer(
        self, path: str, body: Any, fault: Fault | None, reply: str | None
    ) -> tuple[int, Any]:
        """The JSON payload for a well-formed request, in the path's wire format."""
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, {"error": {"message": "messages must be a non-empty list"}}
        text = reply if reply is not None else fake_summary(str(messages[-1].get("content")))
        if fault is not None and fault.kind == "empty":
            text = ""
        model = body.get("model", "")
        route = path.split("?", 1)[0]
        if route.endswith("/api/chat"):
            if fault is not None and fault.kind == "wrong_shape":
                return 200, {"model": model, "response": text, "done": True}
            return 200, {
                "model": model,
                "created_at": "2026-11-23T12:00:00Z",
                "message": {"role": "assistant", "content": text},
                "done": True,
                "done_reason": "stop",
            }
        if route.endswith("/chat/completions"):
            if fault is not None and fault.kind == "wrong_shape":
                return 200, {"id": "chatcmpl-fake", "object": "chat.completion", "choices": []}
            return 200, {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        return 404, {"error": {"message": f"no route {route}"}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeChatServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: clients hanging up on a hang fault is expected."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        fault, reply = fake.record_and_pop(Recorded(self.path, headers, body))
        if fault is not None and fault.kind == "hang":
            fake.wait_released()
            self.close_connection = True
            return
        if fault is not None and fault.kind == "status":
            self._send(fault.status, fault.body.encode(), fault.headers)
            return
        if fault is not None and fault.kind == "invalid_json":
            self._send(200, b'{"choices": [oops')
            return
        if not isinstance(body, dict):
            self._send(400, b'{"error": {"message": "body is not a JSON object"}}')
            return
        code, payload = fake.answer(self.path, body, fault, reply)
        self._send(code, json.dumps(payload).encode())

    def _send(self, code: int, payload: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""
