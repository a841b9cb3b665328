"""A fake embedding service on 127.0.0.1 that speaks every provider's wire format.

A `tests.fake_http.FakeHTTPServer` (a real HTTP server on 127.0.0.1) answers the
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
import random
from typing import Any

import numpy as np
from tests.fake_http import HANG, INVALID_JSON, FakeHTTPServer, Fault, Recorded, status

WRONG_COUNT = Fault("wrong_count")
NONFINITE = Fault("nonfinite")
WRONG_DIMS = Fault("wrong_dims")


def fake_vector(text: str, dims: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The raw (unnormalised) vector the fake returns for *text*."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng(seed).normal(size=dims) * 3.0


class FakeEmbeddingServer(FakeHTTPServer):
    """Vectors in every provider's wire format, and aliases between texts."""

    def __init__(self, *, dims: int = 8, hang_s: float = 5.0, legacy_ollama: bool = False) -> None:
        self.dims = dims
        self.legacy_ollama = legacy_ollama
        self.aliases: dict[str, str] = {}
        super().__init__(hang_s=hang_s)

    def inputs(self) -> list[list[str]]:
        """The texts of each recorded request, whatever the wire format."""
        return [
            _texts(request.path, request.body)
            for request in self.requests
            if request.path.split("?", 1)[0].endswith(_ROUTES)
        ]

    def answer(self, path: str, body: dict[str, Any], fault: Fault | None) -> tuple[int, Any]:
        """Status and JSON payload for a well-formed request."""
        route = path.split("?", 1)[0]
        kind = fault.kind if fault else None
        if route.endswith("/api/embed") and self.legacy_ollama:
            return 404, {"error": "404 page not found"}
        if not route.endswith(_ROUTES):
            return 404, {"error": {"message": f"no route {route}"}}
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


_ROUTES = ("/api/embed", "/api/embeddings", ":batchEmbedContents", ":embedContent", "/embeddings")


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


__all__ = [
    "HANG",
    "INVALID_JSON",
    "NONFINITE",
    "WRONG_COUNT",
    "WRONG_DIMS",
    "FakeEmbeddingServer",
    "Fault",
    "Recorded",
    "fake_vector",
    "status",
]
