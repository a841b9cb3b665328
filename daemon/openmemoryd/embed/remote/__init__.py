"""Remote embedding providers: OpenAI-compatible, Ollama, Gemini, Voyage, Mistral.

`build_remote` turns the settings into a ready `RemoteEmbedder`; `api_key_for`
resolves a provider's key: the configured ``api_key``, else the variable named
by ``api_key_env``, else the standard variables (``OPENAI_API_KEY``,
``GEMINI_API_KEY`` then ``GOOGLE_API_KEY``, ``VOYAGE_API_KEY``,
``MISTRAL_API_KEY``); blank means none.

Invariants: building never touches the network; keys come only from the
settings and the *environ* passed in; a provider pointed at its vendor's own
host without a key raises `MissingApiKey` (a `ConfigError`), which lets
``auto`` selection tell "not configured" from "broken" and move on, while a
self-hosted OpenAI-compatible server needs no key at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from openmemoryd import errors as _errors
from openmemoryd.config import model as _config
from openmemoryd.embed.remote.gemini import GeminiEmbedder
from openmemoryd.embed.remote.http import Backoff, RemoteConfig, RemoteEmbedder, public_endpoint
from openmemoryd.embed.remote.mistral import MistralEmbedder
from openmemoryd.embed.remote.ollama import OllamaEmbedder
from openmemoryd.embed.remote.openai import OpenAIEmbedder
from openmemoryd.embed.remote.voyage import VoyageEmbedder

if TYPE_CHECKING:
    import httpx  # imported where used (see openmemoryd.http_session)

_CLASSES: dict[str, type[RemoteEmbedder]] = {
    cls.provider: cls
    for cls in (OpenAIEmbedder, GeminiEmbedder, VoyageEmbedder, MistralEmbedder, OllamaEmbedder)
}

REMOTE_PROVIDERS: tuple[str, ...] = tuple(_CLASSES)
"""Remote provider names; the first four in ``auto`` order (ollama is never auto)."""


class MissingApiKey(_errors.ConfigError):
    """A hosted API was selected but no key is configured or in the environment."""


def remote_settings(name: str, embedding: _config.EmbeddingSettings) -> _config.RemoteSettings:
    """The ``[embedding.<name>]`` section of a remote provider."""
    match name:
        case "openai":
            return embedding.openai
        case "ollama":
            return embedding.ollama
        case "gemini":
            return embedding.gemini
        case "voyage":
            return embedding.voyage
        case "mistral":
            return embedding.mistral
    raise ValueError(f"not a remote embedding provider: {name!r}")


def api_key_for(
    name: str,
    settings: _config.EmbeddingSettings | _config.RemoteSettings,
    environ: Mapping[str, str],
) -> str | None:
    """The API key for provider *name*, or None when none is set anywhere.

    Accepts the whole embedding section or just the provider's own, so
    ``auto`` selection can ask before building anything.
    """
    cls = provider_class(name)
    remote = (
        settings
        if isinstance(settings, _config.RemoteSettings)
        else remote_settings(name, settings)
    )
    candidates = [remote.api_key]
    if remote.api_key_env:
        candidates.append(environ.get(remote.api_key_env, ""))
    candidates.extend(environ.get(var, "") for var in cls.key_env_vars)
    return next((key.strip() for key in candidates if key.strip()), None)


def build_remote(
    name: str,
    embedding: _config.EmbeddingSettings,
    environ: Mapping[str, str],
    *,
    model_override: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
    transport: httpx.BaseTransport | None = None,
) -> RemoteEmbedder:
    """A ready embedder for provider *name*; raises `ConfigError` if misconfigured.

    The model is *model_override*, else ``[embedding.<name>].model``, else the
    provider's default. *sleep* and *transport* exist for tests.
    """
    cls = provider_class(name)
    remote = remote_settings(name, embedding)
    base_url = _parse_base_url(name, remote.base_url.strip() or cls.default_base_url)
    _check_headers(name, remote.headers)
    key = api_key_for(name, remote, environ)
    variables = [var for var in (remote.api_key_env, *cls.key_env_vars) if var]
    if key is None and _is_hosted(base_url, cls.hosted_hosts):
        raise MissingApiKey(
            f"{name}: no API key for {base_url.host}; set "
            + " or ".join([*variables, f"embedding.{name}.api_key"])
        )
    config = RemoteConfig(
        model=model_override or remote.model.strip() or cls.default_model,
        base_url=base_url,
        api_key=key,
        headers=dict(remote.headers),
        dimensions=embedding.dimensions,
        timeout_s=embedding.timeout_s,
        batch_max_bytes=embedding.batch_max_bytes,
        backoff=Backoff(max_retries=embedding.max_retries, sleep=sleep),
        key_hint=f" (set {' or '.join([*variables, f'embedding.{name}.api_key'])})",
        transport=transport,
    )
    return cls(config)


def provider_class(name: str) -> type[RemoteEmbedder]:
    """The embedder class of remote provider *name*: its defaults (base URL,
    model, key variables) are what `openmemoryd init` offers."""
    try:
        return _CLASSES[name]
    except KeyError:
        raise ValueError(f"not a remote embedding provider: {name!r}") from None


def _parse_base_url(name: str, text: str) -> httpx.URL:
    """Validate base_url now, so a typo is a config error, not a retried failure."""
    import httpx

    where = f"embedding.{name}.base_url"
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise _errors.ConfigError(f"{where} is not a valid URL ({exc})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise _errors.ConfigError(f"{where} must start with http:// or https:// and name a host")
    return url


def _check_headers(name: str, headers: Mapping[str, str]) -> None:
    """Header names and values must be printable ASCII on one line."""
    for header, value in headers.items():
        if not header or not _printable(header) or not _printable(value):
            raise _errors.ConfigError(
                f"embedding.{name}.headers[{header!r}]: name and value must be printable ASCII"
            )


def _printable(text: str) -> bool:
    return text.isascii() and all(ch == "\t" or " " <= ch < "\x7f" for ch in text)


def _is_hosted(url: httpx.URL, hosts: tuple[str, ...]) -> bool:
    return any(url.host == host or url.host.endswith("." + host) for host in hosts)


__all__ = [
    "REMOTE_PROVIDERS",
    "Backoff",
    "GeminiEmbedder",
    "MissingApiKey",
    "MistralEmbedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "RemoteConfig",
    "RemoteEmbedder",
    "VoyageEmbedder",
    "api_key_for",
    "build_remote",
    "provider_class",
    "public_endpoint",
    "remote_settings",
]
