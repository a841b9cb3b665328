"""Chat models behind HTTP: OpenAI-compatible ``/chat/completions`` and Ollama ``/api/chat``.

`build_chat` turns the ``[chat]`` settings into a ready `ChatModel`; its
`complete(system, user)` makes one non-streaming request and returns the
reply's text.

Invariants:

- HTTP goes through `http_session.HttpSession`, so a chat request is retried,
  redirected and reported exactly like an embedding request (408/429/5xx,
  timeouts and connection errors retried with backoff; anything else, and an
  answer that is not JSON, fails at once). Every failure is a `ChatError`.
- `complete` is blocking and thread-safe enough for one call at a time per
  instance; the daemon calls it from a worker thread, never on the trio loop.
- A reply without text (no choices, no message, empty content) is an error,
  never an empty summary.
- Building never touches the network; the key comes from the settings and
  the *environ* passed in, and no key is needed unless the base URL is a
  hosted API that requires one.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Final

from openmemoryd.config import ChatSettings
from openmemoryd.errors import RemoteServiceError, Unavailable
from openmemoryd.http_session import Backoff, HttpSession, RemoteConfig, public_endpoint

if TYPE_CHECKING:
    import httpx  # imported where used (see openmemoryd.http_session)

logger = logging.getLogger("openmemoryd.chat")

# Ollama's default context (2048, or 4096 in newer versions) silently drops
# the start of a longer prompt, instructions included; ask for room for the
# stage, the reply and the instructions' share of a margin.
OLLAMA_CTX_MARGIN: Final = 1024


class ChatError(RemoteServiceError):
    """The chat model could not answer; `retryable` says whether to try later."""


class ChatNotConfigured(Unavailable):
    """No chat model is configured (or it cannot be used as configured)."""


class ChatModel(ABC):
    """One chat API; subclasses speak one wire format."""

    provider: ClassVar[str]
    default_base_url: ClassVar[str]
    default_model: ClassVar[str]
    key_env_vars: ClassVar[tuple[str, ...]] = ()
    hosted_hosts: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: RemoteConfig, settings: ChatSettings) -> None:
        self.model = config.model
        self.endpoint = public_endpoint(config.base_url)
        self._settings = settings
        self._label = f"chat {self.provider} ({self.model} at {self.endpoint})"
        auth = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._session = HttpSession(
            self.provider,
            self._label,
            config,
            auth,
            error=ChatError,
            too_large_hint="request too large; lower chat.max_input_tokens",
            log=logger,
        )

    def complete(self, system: str, user: str) -> str:
        """The model's reply to *user* under the *system* instructions."""
        return self._reply_text(self._request(system, user))

    def close(self) -> None:
        self._session.close()

    @abstractmethod
    def _request(self, system: str, user: str) -> object:
        """Send one chat request; the decoded JSON answer."""

    @abstractmethod
    def _reply_text(self, payload: object) -> str:
        """The reply's text out of *payload*, or a `ChatError`."""

    def _malformed(self, what: str) -> ChatError:
        return ChatError(f"{self._label}: unexpected response: {what}", retryable=False)

    def _text(self, message: object) -> str:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise self._malformed("the message has no text 'content'")
        if not content.strip():
            raise self._malformed("the model answered with empty text")
        return content


class OpenAIChat(ChatModel):
    """``POST {base}/chat/completions`` → ``{"choices": [{"message": {"content"}}]}``."""

    provider = "openai"
    default_base_url = "https://api.openai.com/v1"
    default_model = "gpt-4o-mini"
    key_env_vars = ("OPENAI_API_KEY",)
    hosted_hosts = ("api.openai.com", "openrouter.ai")

    def _request(self, system: str, user: str) -> object:
        return self._session.post_json(
            "chat/completions",
            {
                "model": self.model,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
                "temperature": self._settings.temperature,
                "max_tokens": self._settings.max_output_tokens,
                "stream": False,
            },
        )

    def _reply_text(self, payload: object) -> str:
        choices = payload.get("choices") if isinstance(payload, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._malformed("no 'choices'")
        if choices[0].get("finish_reason") == "length":
            logger.info("%s: the summary hit max_output_tokens and was cut", self._label)
        return self._text(choices[0].get("message"))


class OllamaChat(ChatModel):
    """``POST {base}/api/chat`` (``stream: false``) → ``{"message": {"content"}}``."""

    provider = "ollama"
    default_base_url = "http://localhost:11434"
    default_model = "llama3.2"

    def _request(self, system: str, user: str) -> object:
        settings = self._settings
        return self._session.post_json(
            "api/chat",
            {
                "model": self.model,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
                "stream": False,
                "options": {
                    "temperature": settings.temperature,
                    "num_predict": settings.max_output_tokens,
                    "num_ctx": settings.max_input_tokens
                    + settings.max_output_tokens
                    + OLLAMA_CTX_MARGIN,
                },
            },
        )

    def _reply_text(self, payload: object) -> str:
        if not isinstance(payload, dict) or "message" not in payload:
            raise self._malformed("no 'message'")
        return self._text(payload["message"])


_CLASSES: dict[str, type[ChatModel]] = {cls.provider: cls for cls in (OpenAIChat, OllamaChat)}


def not_configured_message(config_path: Path | None) -> str:
    """What to set so `compact` works; names the config file when there is one."""
    where = f" in {config_path}" if config_path else " in config.toml"
    return (
        "compact needs a chat model and none is configured: set [chat] provider = "
        '"ollama" (and chat.model, e.g. "llama3.2"; chat.base_url if not '
        'http://localhost:11434) or provider = "openai" for any OpenAI-compatible '
        "API (chat.model, chat.base_url, and the key in OPENAI_API_KEY or the variable "
        f"named by chat.api_key_env){where}, then reload openmemoryd (SIGHUP)"
    )


def build_chat(
    settings: ChatSettings,
    environ: Mapping[str, str],
    *,
    config_path: Path | None = None,
    sleep: Callable[[float], None] = time.sleep,
    transport: httpx.BaseTransport | None = None,
) -> ChatModel:
    """The configured chat model, or `ChatNotConfigured` saying what to set."""
    cls = _CLASSES.get(settings.provider)
    if cls is None:
        raise ChatNotConfigured(not_configured_message(config_path))
    base_url = _parse_base_url(settings.base_url.strip() or cls.default_base_url)
    for header, value in settings.headers.items():
        if not header or not _printable(header) or not _printable(value):
            raise ChatNotConfigured(
                f"chat.headers[{header!r}]: name and value must be printable ASCII"
            )
    candidates = [settings.api_key]
    if settings.api_key_env:
        candidates.append(environ.get(settings.api_key_env, ""))
    candidates.extend(environ.get(var, "") for var in cls.key_env_vars)
    key = next((k.strip() for k in candidates if k.strip()), None)
    variables = " or ".join([v for v in (settings.api_key_env, *cls.key_env_vars) if v])
    hint = f"set {variables or 'chat.api_key_env'} or chat.api_key"
    if key is None and any(
        base_url.host == host or base_url.host.endswith("." + host) for host in cls.hosted_hosts
    ):
        raise ChatNotConfigured(f"chat {cls.provider}: no API key for {base_url.host}; {hint}")
    config = RemoteConfig(
        model=settings.model.strip() or cls.default_model,
        base_url=base_url,
        api_key=key,
        headers=dict(settings.headers),
        timeout_s=settings.timeout_s,
        backoff=Backoff(max_retries=settings.max_retries, sleep=sleep),
        key_hint=f" ({hint})",
        transport=transport,
    )
    return cls(config, settings)


def _parse_base_url(text: str) -> httpx.URL:
    import httpx

    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise ChatNotConfigured(f"chat.base_url is not a valid URL ({exc})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ChatNotConfigured("chat.base_url must start with http:// or https:// and name a host")
    return url


def _printable(text: str) -> bool:
    return text.isascii() and all(ch == "\t" or " " <= ch < "\x7f" for ch in text)
