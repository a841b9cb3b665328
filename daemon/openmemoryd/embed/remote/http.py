"""Shared machinery of the remote embedders: HTTP, retries, batching, checks.

Invariants:

- One `httpx.Client` per provider instance, closed by `close()`; requests go
  only to the configured base URL's origin. Redirects are followed only when
  they keep the POST (307/308) and stay on the same scheme, host and port,
  because configured headers may carry keys and must never reach another host.
- A request is retried only for 408, 429, 5xx, timeouts and connection errors,
  at most ``max_retries`` times, sleeping ``0.5 s × 2**n × (1 + rand·0.2)``
  capped at 8 s, or the server's ``Retry-After`` seconds (capped the same).
  Every other failure is an `EmbeddingError` with ``retryable=False`` whose
  message says what to fix.
- No secret appears in an error message or a log line: messages name the
  endpoint without credentials or query string, and whatever a server said is
  quoted only after the API key and configured header values are blanked out.
- `RemoteEmbedder` turns N texts into exactly N L2-normalised float32 rows, in
  input order. Each request holds at most the provider's count limit and at
  most the byte budget (a single larger piece goes alone); no piece exceeds
  `max_input_bytes` (longer texts are split and their pieces' vectors
  averaged); blank texts are sent as one space, which every API accepts.
- `dims` is None until the first good response fixes it; any other width
  afterwards, or a width other than the requested dimensions, is an error.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import ClassVar

import httpx
import numpy as np

from omem_protocol import __version__
from openmemoryd.embed.provider import EmbeddingError, Vectors
from openmemoryd.embed.vectors import sanitize, split_for_limit

logger = logging.getLogger("openmemoryd.embed")

BACKOFF_START_S = 0.5
BACKOFF_CAP_S = 8.0
JITTER = 0.2
MAX_REDIRECTS = 3
_QUOTE_CHARS = 200
_RETRY_STATUSES = frozenset({408, 429})
_BAD_KEY_PHRASES = ("api key not valid", "api_key_invalid", "invalid api key", "incorrect api key")


@dataclass(frozen=True, slots=True)
class Backoff:
    """When to retry; `sleep` and `rand` are injectable so tests never wait."""

    max_retries: int
    sleep: Callable[[float], None] = time.sleep
    rand: Callable[[], float] = random.random

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number *retry* (0-based).

        A server's Retry-After wins over our own schedule (it knows when the
        rate window reopens) but is capped, so a hostile or confused server
        cannot park an indexing worker for an hour.
        """
        if retry_after is not None:
            return min(retry_after, BACKOFF_CAP_S)
        delay = BACKOFF_START_S * 2.0**retry * (1.0 + self.rand() * JITTER)
        return min(delay, BACKOFF_CAP_S)


@dataclass(frozen=True, slots=True)
class RemoteConfig:
    """Everything one provider instance needs, resolved from the settings.

    Secrets are kept out of `repr` so a logged config cannot leak them.
    """

    model: str
    base_url: httpx.URL
    api_key: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    dimensions: int = 0
    timeout_s: float = 60.0
    batch_max_bytes: int = 64 * 1024
    backoff: Backoff = field(default_factory=lambda: Backoff(max_retries=3))
    key_hint: str = ""
    transport: httpx.BaseTransport | None = field(default=None, repr=False)


class _TransientError(EmbeddingError):
    """A failure worth retrying, with the server's Retry-After if it sent one."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, retryable=True, status=status)
        self.retry_after = retry_after


def public_endpoint(url: httpx.URL) -> str:
    """The base URL as shown to people: no credentials, query or trailing slash."""
    return f"{url.scheme}://{url.netloc.decode('ascii')}{url.path.rstrip('/')}"


class Redactor:
    """Blanks out secrets in text quoted from a server (which may echo a key)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


class HttpSession:
    """One provider's connection pool and request policy.

    One client per provider keeps TLS connections alive across batches; the
    session owns retries so every provider backs off the same way.
    """

    def __init__(
        self, provider: str, label: str, config: RemoteConfig, auth: Mapping[str, str]
    ) -> None:
        self._provider = provider
        self._label = label
        self._base = config.base_url
        self._timeout_s = config.timeout_s
        self._backoff = config.backoff
        self._key_hint = config.key_hint
        password = config.base_url.password or ""
        self._redact = Redactor([config.api_key or "", password, *config.headers.values()])
        headers = {"User-Agent": f"openmemory/{__version__}", "Accept": "application/json"}
        headers.update(auth)
        headers.update(config.headers)
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(config.timeout_s),
            follow_redirects=False,
            transport=config.transport,
        )

    def url(self, suffix: str) -> httpx.URL:
        """The base URL with *suffix* appended to its path (its query is kept)."""
        return self._base.copy_with(path=self._base.path.rstrip("/") + "/" + suffix)

    def post_json(self, suffix: str, body: Mapping[str, object]) -> object:
        """POST *body* as JSON to *suffix* and return the decoded answer, retrying."""
        url = self.url(suffix)
        retry = 0
        while True:
            try:
                return self._post_once(url, body)
            except _TransientError as error:
                if retry >= self._backoff.max_retries:
                    raise EmbeddingError(
                        f"{error} (gave up after {retry + 1} attempts)",
                        retryable=True,
                        status=error.status,
                    ) from error
                delay = self._backoff.delay(retry, error.retry_after)
                logger.info(
                    "%s; retry %d/%d in %.2f s", error, retry + 1, self._backoff.max_retries, delay
                )
                self._backoff.sleep(delay)
                retry += 1

    def close(self) -> None:
        self._client.close()

    def _post_once(self, url: httpx.URL, body: Mapping[str, object]) -> object:
        response = self._send(url, body)
        if not response.is_success:
            raise self._status_error(response)
        try:
            return response.json()
        except ValueError:
            raise EmbeddingError(
                f"{self._label}: the response is not valid JSON",
                retryable=False,
                status=response.status_code,
            ) from None

    def _send(self, url: httpx.URL, body: Mapping[str, object]) -> httpx.Response:
        for _ in range(MAX_REDIRECTS + 1):
            try:
                response = self._client.post(url, json=body)
            except httpx.TimeoutException as exc:
                raise _TransientError(
                    f"{self._label}: no answer within {self._timeout_s:g} s ({type(exc).__name__})"
                ) from exc
            except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
                raise _TransientError(
                    f"{self._label}: {type(exc).__name__}: {self._redact(str(exc))}"
                ) from exc
            except httpx.HTTPError as exc:
                raise EmbeddingError(
                    f"{self._label}: {type(exc).__name__}: {self._redact(str(exc))}",
                    retryable=False,
                ) from exc
            if not response.is_redirect:
                return response
            target = url.join(response.headers["location"])
            if response.status_code not in (307, 308) or _origin(target) != _origin(url):
                raise EmbeddingError(
                    f"{self._label}: HTTP {response.status_code} redirect to "
                    f"{target.scheme}://{target.netloc.decode('ascii')}; requests are not "
                    "forwarded elsewhere, set base_url to the address the service wants",
                    retryable=False,
                    status=response.status_code,
                )
            url = target
        raise EmbeddingError(f"{self._label}: too many redirects", retryable=False)

    def _status_error(self, response: httpx.Response) -> EmbeddingError:
        status = response.status_code
        said = _server_says(response, self._redact)
        detail = f" (server said: {said})" if said else ""
        if status in _RETRY_STATUSES or status >= 500:
            return _TransientError(
                f"{self._label}: HTTP {status}{detail}",
                status=status,
                retry_after=_retry_after(response),
            )
        if status in (401, 403) or (status == 400 and _mentions_bad_key(said)):
            hint = f"check the API key for {self._provider}{self._key_hint}"
        elif status == 404:
            hint = "unknown model or wrong base_url"
        elif status == 413:
            hint = "request too large; lower embedding.batch_max_bytes"
        else:
            hint = "the service rejected the request"
        return EmbeddingError(
            f"{self._label}: HTTP {status}: {hint}{detail}", retryable=False, status=status
        )


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return (url.scheme, url.host, url.port)


def _retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds; the HTTP-date form is ignored (backoff applies)."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _mentions_bad_key(said: str) -> bool:
    """Gemini reports a bad key as HTTP 400 ``API_KEY_INVALID``, not 401."""
    lowered = said.lower()
    return any(phrase in lowered for phrase in _BAD_KEY_PHRASES)


def _server_says(response: httpx.Response, redact: Redactor) -> str:
    """The server's own error message, redacted, on one line, truncated."""
    try:
        text = _error_text(response.json())
    except ValueError:
        text = response.text
    text = " ".join(redact(text).split())
    return text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "…"


def _error_text(payload: object) -> str:
    if isinstance(payload, dict):
        for key in ("error", "detail", "message"):
            value = payload.get(key)
            if isinstance(value, dict):
                value = value.get("message", value)
            if value is not None:
                return value if isinstance(value, str) else str(value)
    return str(payload)


class RemoteEmbedder(ABC):
    """An `Embedder` behind an HTTP API; subclasses speak one wire format.

    A subclass sets the class constants and implements `_request` (one API
    call for at most `batch_count_limit` texts, answering one raw vector per
    text); splitting, batching, validation and normalisation live here.
    """

    provider: ClassVar[str]
    default_base_url: ClassVar[str]
    default_model: ClassVar[str]
    key_env_vars: ClassVar[tuple[str, ...]] = ()
    hosted_hosts: ClassVar[tuple[str, ...]] = ()
    input_limit_bytes: ClassVar[int] = 8000
    batch_count_limit: ClassVar[int] = 128
    batch_bytes_cap: ClassVar[int | None] = None
    supports_dimensions: ClassVar[bool] = False

    def __init__(self, config: RemoteConfig) -> None:
        self._model = config.model
        self._endpoint = public_endpoint(config.base_url)
        self._dimensions = config.dimensions if self.supports_dimensions else 0
        cap = self.batch_bytes_cap
        self._batch_bytes = min(config.batch_max_bytes, cap) if cap else config.batch_max_bytes
        self._label = f"{self.provider} ({self._model} at {self._endpoint})"
        self._dims: int | None = None
        self._lock = threading.Lock()
        auth = self.auth_headers(config.api_key) if config.api_key else {}
        self._session = HttpSession(self.provider, self._label, config, auth)

    @classmethod
    def auth_headers(cls, api_key: str) -> dict[str, str]:
        """How this API wants its key; a bearer token unless overridden."""
        return {"Authorization": f"Bearer {api_key}"}

    @property
    def name(self) -> str:
        return self.provider

    @property
    def model(self) -> str:
        return self._model

    @property
    def dims(self) -> int | None:
        return self._dims

    @property
    def max_input_bytes(self) -> int:
        return self.input_limit_bytes

    @property
    def score_floor(self) -> float:
        """Raw cosine is the score (floor 0, ceiling 1).

        These models put unrelated texts at cosines of about 0 to 0.2 and
        relevant ones at about 0.4 to 0.7, so the default min_score (0.35)
        already separates them without rescaling.
        """
        return 0.0

    @property
    def score_ceiling(self) -> float:
        return 1.0

    def identity(self) -> str:
        suffix = f":d{self._dimensions}" if self._dimensions else ""
        return f"{self.provider}:{self._model}@{self._endpoint}{suffix}"

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, query=False)

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self._embed([text], query=True)[0]
        return row

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> RemoteEmbedder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @abstractmethod
    def _request(self, texts: list[str], *, query: bool) -> list[object]:
        """Embed one batch (within the limits); one raw vector per text, in order."""

    # ------------------------------------------------------------ helpers

    def _embed(self, texts: Sequence[str], *, query: bool) -> Vectors:
        pieces: list[str] = []
        owners: list[int] = []
        for index, text in enumerate(texts):
            for piece in self._pieces(text):
                pieces.append(piece)
                owners.append(index)
        sizes = [len(piece.encode("utf-8")) for piece in pieces]
        parts: list[Vectors] = []
        for start, end in _batches(sizes, self._batch_bytes, self.batch_count_limit):
            batch = pieces[start:end]
            parts.append(self._check(self._request(batch, query=query), len(batch)))
        if not parts:
            return np.zeros((0, self._dims or 0), dtype=np.float32)
        vectors = sanitize(np.concatenate(parts))
        if len(pieces) == len(texts):
            return vectors
        weighted = vectors * np.asarray(sizes, dtype=np.float32)[:, None]
        merged = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        np.add.at(merged, np.asarray(owners), weighted)
        return sanitize(merged)

    def _pieces(self, text: str) -> list[str]:
        if not text.strip():
            return [" "]
        if len(text.encode("utf-8")) <= self.input_limit_bytes:
            return [text]
        return split_for_limit(text, self.input_limit_bytes)

    def _check(self, raw: list[object], expected: int) -> Vectors:
        """Turn one response's vectors into a matrix, or say what is wrong."""
        if len(raw) != expected:
            raise self._malformed(f"{len(raw)} vectors for {expected} inputs")
        try:
            matrix = np.asarray(raw)
        except (ValueError, TypeError):
            raise self._malformed("vectors of different lengths") from None
        if matrix.ndim != 2 or matrix.shape[1] == 0 or matrix.dtype.kind not in "fiu":
            raise self._malformed("vectors are not lists of numbers")
        self._fix_dims(matrix.shape[1])
        vectors: Vectors = matrix.astype(np.float32)
        return vectors

    def _fix_dims(self, width: int) -> None:
        with self._lock:
            if self._dimensions and width != self._dimensions:
                raise EmbeddingError(
                    f"{self._label}: asked for {self._dimensions} dimensions, got {width}; "
                    "set embedding.dimensions = 0 or use a model that supports it",
                    retryable=False,
                )
            if self._dims is None:
                self._dims = width
            elif width != self._dims:
                raise self._malformed(f"vector width changed from {self._dims} to {width}")

    def _malformed(self, what: str) -> EmbeddingError:
        return EmbeddingError(f"{self._label}: unexpected response: {what}", retryable=False)

    def _field(self, payload: object, key: str) -> object:
        if not isinstance(payload, dict) or key not in payload:
            raise self._malformed(f"no {key!r} field")
        value: object = payload[key]
        return value

    def _list_field(self, payload: object, key: str) -> list[object]:
        value = self._field(payload, key)
        if not isinstance(value, list):
            raise self._malformed(f"{key!r} is not a list")
        return value


def _batches(sizes: Sequence[int], max_bytes: int, max_count: int) -> Iterator[tuple[int, int]]:
    """Index ranges of consecutive items within both budgets (big items alone)."""
    start, total = 0, 0
    for index, size in enumerate(sizes):
        if index > start and (total + size > max_bytes or index - start >= max_count):
            yield start, index
            start, total = index, 0
        total += size
    if start < len(sizes):
        yield start, len(sizes)
