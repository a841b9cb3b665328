"""From ``[search.rerank]`` to a ready reranker.

``auto`` (the default) is the local model where its package is installed
(a dependency wherever ONNX Runtime publishes wheels) and no reranker
elsewhere, quietly: the default must not turn into an error on a platform
without the model. ``local`` asks for the model by name, so its absence is
a `ConfigError` naming the install command.

The key is `api_key`, else the variable named by `api_key_env`, else the
provider's usual variables (``COHERE_API_KEY``, ``JINA_API_KEY``,
``VOYAGE_API_KEY``); blank means none. A hosted API without a key is a
`ConfigError` saying what to set, found when the reranker is first built
(the first search), never a 401 per search; a self-hosted server (TEI,
llama.cpp) needs no key. Building never touches the network.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from openmemoryd.config import RerankSettings
from openmemoryd.errors import ConfigError
from openmemoryd.http_session import Backoff, RemoteConfig
from openmemoryd.search.rerank.base import Reranker
from openmemoryd.search.rerank.local import (
    LOCAL_MODEL,
    LocalReranker,
    default_model_dir,
    local_model_installed,
)
from openmemoryd.search.rerank.providers import PROVIDERS

if TYPE_CHECKING:
    import httpx  # imported where used (see openmemoryd.http_session)


def build_reranker(
    settings: RerankSettings,
    environ: Mapping[str, str],
    *,
    sleep: Callable[[float], None] = time.sleep,
    transport: httpx.BaseTransport | None = None,
) -> Reranker | None:
    """The configured reranker, or None when ``provider = "none"``, or
    ``"auto"`` where the local model's package is not installed.

    Raises:
        ConfigError: a bad base URL, or a hosted API and no key anywhere; the
            local model asked for by another name, or its package missing
            when asked for by name (``"local"``).
    """
    if settings.provider == "auto" and not local_model_installed():
        return None
    if settings.provider in ("local", "auto"):
        return _local(settings)
    cls = PROVIDERS.get(settings.provider)
    if cls is None:
        return None
    base_url = _parse_base_url(settings.base_url.strip() or cls.default_base_url)
    candidates = [settings.api_key]
    if settings.api_key_env:
        candidates.append(environ.get(settings.api_key_env, ""))
    candidates.extend(environ.get(var, "") for var in cls.key_env_vars)
    key = next((k.strip() for k in candidates if k.strip()), None)
    variables = [v for v in (settings.api_key_env, *cls.key_env_vars) if v]
    hint = "set " + " or ".join([*variables, "search.rerank.api_key"])
    if key is None and any(
        base_url.host == host or base_url.host.endswith("." + host) for host in cls.hosted_hosts
    ):
        raise ConfigError(f"search.rerank {cls.provider}: no API key for {base_url.host}; {hint}")
    config = RemoteConfig(
        model=settings.model.strip() or cls.default_model,
        base_url=base_url,
        api_key=key,
        timeout_s=settings.timeout_s,
        backoff=Backoff(max_retries=settings.max_retries, sleep=sleep),
        key_hint=f" ({hint})",
        transport=transport,
    )
    return cls(config)


def reranker_model(settings: RerankSettings) -> str | None:
    """The model *settings* rerank with where reranking is on (``auto`` where
    the local model is installed: the caller knows, `RerankSlot.enabled`),
    named without building anything (`status` must not load a client); None
    for ``none``."""
    if settings.provider in ("local", "auto"):
        return LOCAL_MODEL
    cls = PROVIDERS.get(settings.provider)
    return None if cls is None else settings.model.strip() or cls.default_model


def _local(settings: RerankSettings) -> LocalReranker:
    """The in-daemon cross-encoder; its files are found now, loaded at the first search."""
    if settings.model.strip() not in ("", LOCAL_MODEL):
        raise ConfigError(
            f"search.rerank.model {settings.model!r} is not a local reranker;"
            f" the local provider runs {LOCAL_MODEL!r} (leave model empty)"
        )
    try:
        return LocalReranker(default_model_dir(), timeout_s=settings.timeout_s)
    except FileNotFoundError as exc:
        raise ConfigError(str(exc)) from None


def _parse_base_url(text: str) -> httpx.URL:
    """Validated now, so a typo is one clear error rather than one per search."""
    import httpx

    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"search.rerank.base_url is not a valid URL ({exc})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            "search.rerank.base_url must start with http:// or https:// and name a host"
        )
    return url
