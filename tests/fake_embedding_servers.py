"""A fake embedding service on 127.0.0.1 that speaks every provider's wire format.

One real HTTP server (stdlib, a thread per request, port 0) answers the
OpenAI-style ``/embeddings`` (openai, voyage, mistral), Ollama's ``/api/embed``
and legacy ``/api/embeddings``, and Gemini's ``:batchEmbedContents`` and
``:embedContent``, routing by the path's ending. It records every request
(path, headers, JSON body) and can be told to misbehave for the next requests
(`fail_next`): an HTTP status, invalid JSON, a wrong number of vectors,
non-finite values, a different width, or a hang longer than the client's
timeout. `outage` spoils every answer, cycling through its faults, until
`recover` (which also releases hanging requests). `aliases` make a text
embed like another one, so a test can build a match that only the vector
leg of a search can find.

Invariants: vectors are deterministic functions of the text (`fake_vector`),
``dims`` wide unless the request asks for other dimensions, and deliberately
not normalised, so a client that forgets to normalise is caught; OpenAI-style
``data`` lists come back in a different order than asked, so a client that
ignores ``index`` is caught; `close` releases hanging handlers and joins the
server thread, so no socket outlives a test.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

import numpy as np

FaultKind = Literal["status", "invalid_json", "wrong_count", "nonfinite", "wrong_dims", "hang"]


@dataclass(frozen=True)
class Fault:
    """How to spoil one answer."""

    kind: FaultKind
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
WRONG_COUNT = Fault("wrong_count")
NONFINITE = Fault("nonfinite")
WRONG_DIMS = Fault("wrong_dims")
HANG = Fault("hang")


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it; header names are lower-cased."""

    path: str
    headers: dict[str, str]
    body: Any


def fake_vector(text: str, dims: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The raw (unnormalised) vector the fake returns for *text*."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng(seed).normal(size=dims) * 3.0


class FakeEmbeddingServer:
    """The server, its thread, its recordings and its queue of faults."""

    def __init__(self, *, dims: int = 8, hang_s: float = 5.0, legacy_ollama: bool = False) -> None:
        self.dims = dims
        self.hang_s = hang_s
        self.legacy_ollama = legacy_ollama
        self._lock = threading.Lock()
        self._faults: deque[Fault] = deque()
        self._requests: list[Recorded] = []
        self._release = threading.Event()
        self._outage: list[Fault] = []
        self._outage_served = 0
        self.aliases: dict[str, str] = {}
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

    def inputs(self) -> list[list[str]]:
        """The texts of each recorded request, whatever the wire format."""
        return [_texts(request.path, request.body) for request in self.requests]

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

    def __enter__(self) -> FakeEmbeddingServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------ serving

    def record_and_pop(self, request: Recorded) -> Fault | None:
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

    def answer(self, path: str, body: Any, fault: Fault | None) -> tuple[int, Any]:
        """Status and JSON payload for a well-formed request."""
        route = path.split("?", 1)[0]
        kind = fault.kind if fault else None
        if route.endswith("/api/embed") and self.legacy_ollama:
            return 404, {"error": "404 page not found"}
        texts = _texts(path, body)
        dims = _requested_dims(body) or self.dims
        if kind == "wrong_dims":
            dims += 1
        vectors = [fake_vector(self.aliases.get(text, text), dims).tolist() for text in texts]
        if kind == "nonfinite" and vectors:
            vectors[0][0] = float("nan")
            vectors[0][1] = float("inf")
        if kind == "wrong_count":
            vectors = vectors[:-1] if len(vectors) > 1 else [*vectors, vectors[0]]
        if route.endswith("/api/embed"):
            return 200, {"embeddings": vectors}
        if route.endswith("/api/embeddings"):
            return 200, {"embedding": vectors[0]}
        if route.endswith(":batchEmbedContents"):
            return 200, {"embeddings": [{"values": vector} for vector in vectors]}
        if route.endswith(":embedContent"):
            return 200, {"embedding": {"values": vectors[0]}}
        if route.endswith("/embeddings"):
            data = [
                {"object": "embedding", "embedding": vector, "index": index}
                for index, vector in enumerate(vectors)
            ]
            return 200, {"object": "list", "data": _shuffled(data)}
        return 404, {"error": {"message": f"no route {route}"}}


def _texts(path: str, body: Any) -> list[str]:
    route = path.split("?", 1)[0]
    if route.endswith(":batchEmbedContents"):
        return [request["content"]["parts"][0]["text"] for request in body["requests"]]
    if route.endswith(":embedContent"):
        return [body["content"]["parts"][0]["text"]]
    if route.endswith("/api/embeddings"):
        return [body["prompt"]]
    return list(body["input"])


def _requested_dims(body: Any) -> int | None:
    if "requests" in body:
        body = body["requests"][0]
    for key in ("dimensions", "output_dimension", "outputDimensionality"):
        if key in body:
            return int(body[key])
    return None


def _shuffled(items: list[Any]) -> list[Any]:
    """A deterministic permutation that differs from the input when it can."""
    result = list(items)
    random.Random(len(items)).shuffle(result)
    return result[::-1] if result == items else result


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeEmbeddingServer

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
        fault = fake.record_and_pop(Recorded(self.path, headers, body))
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
        if body is None:
            self._send(400, b'{"error": {"message": "body is not JSON"}}')
            return
        code, payload = fake.answer(self.path, body, fault)
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
