"""A fake rerank service on 127.0.0.1 speaking one provider's wire format.

A `tests.fake_http.FakeHTTPServer` (a real HTTP server on 127.0.0.1) that
answers the rerank request of one *flavor*: Cohere (``/v2/rerank``), Jina,
Voyage and llama.cpp (``/v1/rerank``) or TEI (``/rerank``), each with its
own request fields and reply shape, and 404 for any other path. It records
every request (path, headers, JSON body); the faults of `fake_http` apply
(a status, invalid JSON, a hang), plus malformed replies of the right JSON
but the wrong shape (`MISSING`, `BAD_INDEX`, `WRONG_SHAPE`).

Invariants: a document's relevance is a deterministic function of the query
and its text (`FakeRerankServer.relevance`: a `boost` substring wins, else
the share of the query's words it holds, halved); results come back most
relevant first, never in request order, so a client that ignores ``index``
is caught; llama.cpp answers raw logits (``8·(p − 0.5)``), as the real one
does, so the client's squashing is exercised.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from tests.fake_http import HANG, INVALID_JSON, FakeHTTPServer, Fault, Recorded, status

MISSING = Fault("missing")
BAD_INDEX = Fault("bad_index")
WRONG_SHAPE = Fault("wrong_shape")

ROUTES = {
    "cohere": "/v2/rerank",
    "jina": "/v1/rerank",
    "voyage": "/v1/rerank",
    "llamacpp": "/v1/rerank",
    "tei": "/rerank",
}
"""The path each flavor answers, with the base URL `BASE_PATHS` gives."""

BASE_PATHS = {"cohere": "/v2", "jina": "/v1", "voyage": "/v1", "llamacpp": "/v1", "tei": ""}


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class FakeRerankServer(FakeHTTPServer):
    """Scores in one provider's wire format; `boost` pins chosen documents' scores."""

    def __init__(self, flavor: str, *, hang_s: float = 5.0) -> None:
        if flavor not in ROUTES:
            raise ValueError(f"unknown flavor {flavor!r}")
        self.flavor = flavor
        self.boost: dict[str, float] = {}
        super().__init__(hang_s=hang_s)

    def base_url(self) -> str:
        return self.url + BASE_PATHS[self.flavor]

    def documents(self) -> list[list[str]]:
        """The documents of each recorded request."""
        key = "texts" if self.flavor == "tei" else "documents"
        return [list(r.body[key]) for r in self.requests if isinstance(r.body, dict)]

    def relevance(self, query: str, document: str) -> float:
        for needle, score in self.boost.items():
            if needle in document:
                return score
        wanted = _words(query)
        return 0.5 * len(wanted & _words(document)) / len(wanted) if wanted else 0.0

    def answer(self, path: str, body: dict[str, Any], fault: Fault | None) -> tuple[int, Any]:
        route = path.split("?", 1)[0]
        if route != ROUTES[self.flavor]:
            return 404, {"error": {"message": f"no route {route}"}}
        documents = body.get("texts" if self.flavor == "tei" else "documents")
        query = body.get("query")
        if not isinstance(query, str) or not isinstance(documents, list):
            return 422, {"message": "query and documents are required"}
        scores = [self.relevance(query, str(doc)) for doc in documents]
        if self.flavor == "llamacpp":
            scores = [8.0 * (s - 0.5) for s in scores]
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        cut = body.get("top_k" if self.flavor == "voyage" else "top_n")
        if isinstance(cut, int):
            order = order[:cut]
        kind = fault.kind if fault else None
        if kind == "missing" and order:
            order = order[:-1]
        score_key = "score" if self.flavor == "tei" else "relevance_score"
        items: list[dict[str, Any]] = [{"index": i, score_key: scores[i]} for i in order]
        if kind == "bad_index" and items:
            items[0]["index"] = len(documents)
        if kind == "wrong_shape":
            return 200, {"ranking": items}
        if self.flavor == "tei":
            return 200, items
        if self.flavor == "voyage":
            return 200, {"object": "list", "data": items, "model": body.get("model"), "usage": {}}
        if self.flavor == "jina":
            return 200, {"model": body.get("model"), "usage": {"total_tokens": 1}, "results": items}
        if self.flavor == "llamacpp":
            return 200, {"model": body.get("model", ""), "object": "list", "results": items}
        return 200, {"id": "fake", "results": items, "meta": {"api_version": {"version": "2"}}}


class GatedReranker(FakeRerankServer):
    """A Cohere-style reranker that answers only once `gate` is set, and sets
    `arrived` when a request reaches it: a test then knows a search is inside
    the daemon, waiting (the stop tests hold a request in flight with it)."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.gate = threading.Event()
        super().__init__("cohere", hang_s=30)

    def answer(self, path: str, body: dict[str, Any], fault: Fault | None) -> tuple[int, Any]:
        self.arrived.set()
        self.gate.wait(30)
        return super().answer(path, body, fault)

    def close(self) -> None:
        self.gate.set()  # never leave a handler thread waiting
        super().close()


__all__ = [
    "BAD_INDEX",
    "BASE_PATHS",
    "HANG",
    "INVALID_JSON",
    "MISSING",
    "ROUTES",
    "WRONG_SHAPE",
    "FakeRerankServer",
    "Fault",
    "GatedReranker",
    "Recorded",
    "status",
]
