"""What a reranker is, and the HTTP machinery every remote one shares.

A reranker (a cross-encoder) reads the query and one candidate *together*,
which no embedding can, so it can tell "Wei likes oolong" from "Wei dislikes
oolong" where both legs of the search see the same words and meaning. It is
also slow and, hosted, paid per call, which is why it only ever sees the
best few candidates of a search (`stage`).

Invariants:

- `Reranker.rerank` answers exactly one finite score per document, in the
  order the documents were given, or raises `RerankError`; never a partial
  or reordered list, since the caller pairs scores with candidates by position.
- HTTP goes through `http_session.HttpSession`, so a rerank request is
  redirected, redacted and reported exactly like an embedding or chat
  request. The blocking call runs in a worker thread under a trio deadline
  of ``timeout_s`` (retries included); past it the thread is abandoned (its
  own HTTP timeout ends it), so a hung service cannot hold up a search.
- Building never touches the network (`build`).
"""

from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar, Protocol

import trio

from openmemoryd.errors import RemoteServiceError
from openmemoryd.http_session import HttpSession, RemoteConfig, public_endpoint

logger = logging.getLogger("openmemoryd.rerank")


class RerankError(RemoteServiceError):
    """The reranker gave no usable answer; the search keeps its fused order."""


class RerankSkipped(RerankError):
    """The reranker does not apply to this query (not a failure: no warning, no status issue).

    The local model reads English only; a question in Chinese keeps its fused
    order, which is the best order there is for it.
    """


class RerankBusy(RerankSkipped):
    """The reranker is scoring another search and this one will not wait for it.

    Counted with the searches held back for others running (`status`): it
    says agents overlap, not that the query was out of the model's reach.
    """


class Reranker(Protocol):
    """Scores documents against a query; higher means more relevant."""

    @property
    def name(self) -> str:
        """The provider, as configured (``cohere``, ``tei``, …)."""
        ...

    @property
    def model(self) -> str:
        """The model asked for; empty when the server decides (TEI, llama.cpp)."""
        ...

    @property
    def in_process(self) -> bool:
        """Whether scoring takes the daemon's own cores (a model run in it),
        so that it is spent only on a search no other search overlaps."""
        ...

    async def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """One score per document, in the documents' order."""
        ...

    def close(self) -> None:
        """Release the connection pool."""
        ...


class HttpReranker(ABC):
    """A `Reranker` behind an HTTP API; subclasses speak one wire format.

    A subclass sets the class constants and implements `_body` (the request)
    and `_results` (the list of ``{index, <score_key>}`` objects in the
    answer); pairing scores with documents and checking them lives here.
    """

    provider: ClassVar[str]
    default_base_url: ClassVar[str]
    default_model: ClassVar[str] = ""
    path: ClassVar[str] = "rerank"
    score_key: ClassVar[str] = "relevance_score"
    key_env_vars: ClassVar[tuple[str, ...]] = ()
    hosted_hosts: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: RemoteConfig) -> None:
        self._model = config.model
        self._timeout_s = config.timeout_s
        endpoint = public_endpoint(config.base_url)
        shown = f"{self._model} at {endpoint}" if self._model else endpoint
        self._label = f"rerank {self.provider} ({shown})"
        auth = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._session = HttpSession(
            self.provider,
            self._label,
            config,
            auth,
            error=RerankError,
            too_large_hint="request too large; lower search.rerank.top_n",
            log=logger,
        )

    @property
    def name(self) -> str:
        return self.provider

    @property
    def model(self) -> str:
        return self._model

    @property
    def in_process(self) -> bool:
        return False  # a service's cores are its own

    @property
    def label(self) -> str:
        """How messages name this reranker (no secrets)."""
        return self._label

    async def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        with trio.move_on_after(self._timeout_s):
            return await trio.to_thread.run_sync(
                self.score, query, list(documents), abandon_on_cancel=True
            )
        raise RerankError(
            f"{self._label}: no answer within {self._timeout_s:g} s (search.rerank.timeout_s)",
            retryable=True,
        )

    def score(self, query: str, documents: list[str]) -> list[float]:
        """The blocking request: one score per document, in order."""
        # Blank documents are sent as one space, which every API accepts.
        texts = [text if text.strip() else " " for text in documents]
        payload = self._session.post_json(self.path, self._body(query, texts))
        return self._scores(self._results(payload), len(texts))

    def close(self) -> None:
        self._session.close()

    @abstractmethod
    def _body(self, query: str, documents: list[str]) -> dict[str, object]:
        """The JSON request for scoring every document."""

    @abstractmethod
    def _results(self, payload: object) -> list[object]:
        """The answer's list of per-document results."""

    # ------------------------------------------------------------ helpers

    def _list_field(self, payload: object, key: str) -> list[object]:
        value = payload.get(key) if isinstance(payload, dict) else None
        if not isinstance(value, list):
            raise self._malformed(f"no {key!r} list")
        return value

    def _scores(self, results: list[object], expected: int) -> list[float]:
        """Scores by the results' ``index``: every document exactly once.

        Services answer most relevant first, not in request order, so a
        client that paired by position would silently shuffle the hits.
        """
        scores: list[float | None] = [None] * expected
        for item in results:
            index, value = self._index_and_score(item)
            if not 0 <= index < expected:
                raise self._malformed(f"index {index} outside 0..{expected - 1}")
            if scores[index] is not None:
                raise self._malformed(f"index {index} answered twice")
            scores[index] = value
        missing = [i for i, s in enumerate(scores) if s is None]
        if missing:
            raise self._malformed(f"{len(missing)} of {expected} documents have no score")
        return [s for s in scores if s is not None]

    def _index_and_score(self, item: object) -> tuple[int, float]:
        if not isinstance(item, Mapping):
            raise self._malformed("a result is not an object")
        index, value = item.get("index"), item.get(self.score_key)
        if not isinstance(index, int) or isinstance(index, bool):
            raise self._malformed("a result has no integer 'index'")
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self._malformed(f"a result has no numeric {self.score_key!r}")
        if not math.isfinite(value):
            raise self._malformed(f"a non-finite {self.score_key!r}")
        return index, float(value)

    def _malformed(self, what: str) -> RerankError:
        return RerankError(f"{self._label}: unexpected response: {what}", retryable=False)
