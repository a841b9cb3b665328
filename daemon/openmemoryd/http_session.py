"""One remote HTTP API's connection pool and request policy (retries, redirects, errors).

Shared by the remote embedders (`embed.remote`) and the chat models
(`chat`), so every remote service backs off, redacts and reports alike.

Invariants:

- One `httpx.Client` per session, closed by `close()`; requests go only to
  the configured base URL's origin. Redirects are followed only when they
  keep the method and body (307/308) and stay on the same scheme, host and port,
  because configured headers may carry keys and must never reach another host.
- A request is retried only for 408, 429, 5xx, timeouts and connection errors,
  at most ``max_retries`` times, sleeping ``0.5 s × 2**n × (1 + rand·0.2)``
  capped at 8 s, or the server's ``Retry-After`` seconds (capped the same).
  Every other failure (including an answer that is not JSON) is the session's
  error type with ``retryable=False`` and a message that says what to fix.
- No secret appears in an error message or a log line: messages name the
  endpoint without credentials or query string, and whatever a server said is
  quoted only after the API key and configured header values are blanked out.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from omem_protocol import __version__
from openmemoryd.errors import RemoteServiceError

if TYPE_CHECKING:
    # httpx is imported where a request is made: it takes ~0.1 s (more with
    # rich and click installed, whose CLI it loads), and a daemon with no remote
    # service configured never needs it.
    import httpx

logger = logging.getLogger("openmemoryd.http")

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


@dataclass(frozen=True, slots=True)
class _Request:
    """What to send (beside the URL), kept whole across retries and redirects."""

    method: str
    json: Mapping[str, object] | None
    files: Mapping[str, tuple[str, bytes, str]] | None
    data: Mapping[str, str] | None
    text: bool


class _TransientError(RemoteServiceError):
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
    session owns retries so every provider backs off the same way. Failures
    are raised as *error* (`EmbeddingError` for embedders, `ChatError` for
    chat models), so each caller keeps its own exception type; *too_large_hint*
    tells the user which setting makes an HTTP 413 go away; retries are
    logged to *log*, the caller's area.
    """

    def __init__(
        self,
        provider: str,
        label: str,
        config: RemoteConfig,
        auth: Mapping[str, str],
        *,
        error: type[RemoteServiceError] = RemoteServiceError,
        too_large_hint: str = "request too large",
        log: logging.Logger = logger,
    ) -> None:
        import httpx

        self._provider = provider
        self._error = error
        self._too_large_hint = too_large_hint
        self._log = log
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
        return self.call("POST", suffix, json=body)

    def call(
        self,
        method: str,
        suffix: str,
        *,
        json: Mapping[str, object] | None = None,
        files: Mapping[str, tuple[str, bytes, str]] | None = None,
        data: Mapping[str, str] | None = None,
        text: bool = False,
    ) -> object:
        """One request to *suffix* under the retry policy of `post_json`.

        The batch APIs need more than a JSON POST: GETs to poll a job, a
        multipart upload (*files* and form *data*), and a download whose body
        is JSON Lines (*text* returns it as a string instead of decoding it).
        """
        url = self.url(suffix)
        request = _Request(method, json, files, data, text)
        retry = 0
        while True:
            try:
                return self._call_once(url, request)
            except _TransientError as error:
                if retry >= self._backoff.max_retries:
                    raise self._error(
                        f"{error} (gave up after {retry + 1} attempts)",
                        retryable=True,
                        status=error.status,
                    ) from error
                delay = self._backoff.delay(retry, error.retry_after)
                self._log.info(
                    "%s; retry %d/%d in %.2f s", error, retry + 1, self._backoff.max_retries, delay
                )
                self._backoff.sleep(delay)
                retry += 1

    def close(self) -> None:
        self._client.close()

    def _call_once(self, url: httpx.URL, request: _Request) -> object:
        response = self._send(url, request)
        if not response.is_success:
            raise self._status_error(response)
        if request.text:
            return response.text
        try:
            return response.json()
        except ValueError:
            raise self._error(
                f"{self._label}: the response is not valid JSON",
                retryable=False,
                status=response.status_code,
            ) from None

    def _send(self, url: httpx.URL, request: _Request) -> httpx.Response:
        import httpx

        for _ in range(MAX_REDIRECTS + 1):
            try:
                response = self._client.request(
                    request.method,
                    url,
                    json=request.json,
                    files=request.files,
                    data=request.data,
                )
            except httpx.TimeoutException as exc:
                raise _TransientError(
                    f"{self._label}: no answer within {self._timeout_s:g} s ({type(exc).__name__})"
                ) from exc
            except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
                raise _TransientError(
                    f"{self._label}: {type(exc).__name__}: {self._redact(str(exc))}"
                ) from exc
            except httpx.HTTPError as exc:
                raise self._error(
                    f"{self._label}: {type(exc).__name__}: {self._redact(str(exc))}",
                    retryable=False,
                ) from exc
            if not response.is_redirect:
                return response
            target = url.join(response.headers["location"])
            if response.status_code not in (307, 308) or _origin(target) != _origin(url):
                raise self._error(
                    f"{self._label}: HTTP {response.status_code} redirect to "
                    f"{target.scheme}://{target.netloc.decode('ascii')}; requests are not "
                    "forwarded elsewhere, set base_url to the address the service wants",
                    retryable=False,
                    status=response.status_code,
                )
            url = target
        raise self._error(f"{self._label}: too many redirects", retryable=False)

    def _status_error(self, response: httpx.Response) -> RemoteServiceError:
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
            hint = self._too_large_hint
        else:
            hint = "the service rejected the request"
        return self._error(
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
