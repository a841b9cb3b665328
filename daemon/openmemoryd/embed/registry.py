"""Choosing the embedder from the configuration.

``auto`` (the default) prefers the bundled local model, which needs no key
and no network; if it cannot be used (its weights are missing on this
platform), remote services whose API key is set are tried in OpenClaw's
order: openai, gemini, voyage, mistral. Ollama is never chosen automatically
(a local server may or may not be running). ``none`` means keyword search
only. A provider that cannot be built is reported, not fatal: the daemon then
serves keyword search, says why in ``status``, and marks searches degraded.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from openmemoryd.config import EmbeddingSettings
from openmemoryd.embed.provider import Embedder
from openmemoryd.errors import OmemdError

if TYPE_CHECKING:
    from openmemoryd.embed.local import LocalEmbedder

logger = logging.getLogger("openmemoryd.embed")

AUTO_REMOTE_ORDER: Final = ("openai", "gemini", "voyage", "mistral")


@dataclass(frozen=True, slots=True)
class Choice:
    """The embedder to use (None: keyword search only) and why."""

    embedder: Embedder | None
    reason: str


def as_local(embedder: Embedder) -> LocalEmbedder | None:
    """*embedder* if it is the local model, else None.

    Asked without importing the local model's code: `build` imports it
    when it makes a local embedder, so while it has never been imported no
    embedder can be one, and a keyword-only or remote daemon never loads
    it (nor numpy, which a daemon start would otherwise pay ~45 ms for).
    """
    module = sys.modules.get("openmemoryd.embed.local.provider")
    if module is None or not isinstance(embedder, module.LocalEmbedder):
        return None
    local: LocalEmbedder = embedder
    return local


def build(
    name: str, settings: EmbeddingSettings, environ: Mapping[str, str], *, primary: bool
) -> Embedder:
    """Construct provider *name*; raise `OmemdError` if it cannot be used."""
    model = settings.model if primary and settings.model else None
    if name == "local":
        from openmemoryd.embed.local import LocalEmbedder, local_model

        try:
            spec = local_model(model or "")
        except ValueError as exc:
            raise OmemdError(str(exc)) from None
        return LocalEmbedder(settings.local, model=spec)
    from openmemoryd.embed.remote import build_remote

    return build_remote(name, settings, environ, model_override=model)


def choose_embedder(settings: EmbeddingSettings, environ: Mapping[str, str]) -> Choice:
    """The primary embedder for *settings*."""
    if settings.provider == "none":
        return Choice(None, "embedding.provider is 'none': keyword search only")
    if settings.provider != "auto":
        try:
            return Choice(build(settings.provider, settings, environ, primary=True), "configured")
        except (OmemdError, FileNotFoundError) as exc:
            logger.error("embedding provider %s is unusable: %s", settings.provider, exc)
            return Choice(None, f"{settings.provider}: {exc}")
    return _auto(settings, environ)


def choose_fallback(settings: EmbeddingSettings, environ: Mapping[str, str]) -> Embedder | None:
    """The fallback embedder, if one is configured and can be built."""
    if settings.fallback in ("none", "auto") or settings.fallback == settings.provider:
        return None
    try:
        return build(settings.fallback, settings, environ, primary=False)
    except (OmemdError, FileNotFoundError) as exc:
        logger.error("fallback embedding provider %s is unusable: %s", settings.fallback, exc)
        return None


def _auto(settings: EmbeddingSettings, environ: Mapping[str, str]) -> Choice:
    reasons: list[str] = []
    try:
        return Choice(build("local", settings, environ, primary=True), "auto: bundled local model")
    except (OmemdError, FileNotFoundError, ImportError) as exc:
        reasons.append(f"local: {exc}")
    from openmemoryd.embed.remote import api_key_for

    for name in AUTO_REMOTE_ORDER:
        if not api_key_for(name, getattr(settings, name), environ):
            reasons.append(f"{name}: no API key")
            continue
        try:
            return Choice(
                build(name, settings, environ, primary=True), f"auto: {name} (API key set)"
            )
        except OmemdError as exc:
            reasons.append(f"{name}: {exc}")
    return Choice(None, "no embedding provider available (" + "; ".join(reasons) + ")")
