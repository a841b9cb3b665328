"""Writing the wizard's answers into the TOML config without disturbing it.

The config is a file people edit: comments, key order and sections the
wizard does not ask about must survive, so it is edited with tomlkit rather
than re-serialised. The result is decoded as a `FileConfig` before it is
written (a wizard must never leave a config the daemon refuses), the previous
file is kept as ``config.toml.bak``, and the write is atomic with mode 0600
because the file may now hold an API key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec
import tomlkit
from tomlkit.exceptions import TOMLKitError

from openmemoryd.config import FileConfig
from openmemoryd.errors import ConfigError
from openmemoryd.memory.durable import replace_file
from openmemoryd.wizard.questions import EmbeddingAnswers

HEADER: Final = (
    "openmemory configuration, written by `openmemoryd init`.\n"
    "Every key and its default: docs/configuration.md in openmemoryd's repository."
)
CONFIG_MODE: Final = 0o600


@dataclass(frozen=True, slots=True)
class ConfigUpdate:
    """What happened to the config file."""

    path: Path
    changed: bool
    created: bool
    backup: Path | None = None


def update_config(
    path: Path, *, workspace: str | None = None, embedding: EmbeddingAnswers | None = None
) -> ConfigUpdate:
    """Set the workspace and/or the embedding answers in the config at *path*."""
    try:
        before = path.read_text("utf-8")
    except FileNotFoundError:
        before = None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    document = _parse(path, before)
    if workspace is not None:
        document["workspace"] = workspace
    if embedding is not None:
        _set_embedding(document, embedding)
    after = tomlkit.dumps(document)
    try:
        msgspec.toml.decode(after.encode(), type=FileConfig)
    except msgspec.DecodeError as exc:
        raise ConfigError(
            f"the new config would be invalid, {path} left as it was: {exc}"
        ) from None
    if after == before:
        return ConfigUpdate(path, changed=False, created=False)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    backup = None
    if before is not None:
        backup = path.with_name(path.name + ".bak")
        replace_file(backup, before.encode(), mode=CONFIG_MODE, tag="init")
    replace_file(path, after.encode(), mode=CONFIG_MODE, tag="init")
    os.chmod(path, CONFIG_MODE)
    return ConfigUpdate(path, changed=True, created=before is None, backup=backup)


def _parse(path: Path, text: str | None) -> tomlkit.TOMLDocument:
    if text is None:
        document = tomlkit.document()
        for line in HEADER.splitlines():
            document.add(tomlkit.comment(line))
        document.add(tomlkit.nl())
        return document
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(f"invalid config file {path}: {exc}") from None


def _set_embedding(document: tomlkit.TOMLDocument, answers: EmbeddingAnswers) -> None:
    section = _table(document, "embedding")
    section["provider"] = answers.provider
    # [embedding].model overrides every provider's model: it carries only the
    # local model, and must not linger when another provider is chosen.
    if answers.provider == "local" and answers.model:
        section["model"] = answers.model
    elif "model" in section:
        del section["model"]
    if answers.provider in ("local", "auto", "none"):
        return
    remote = _table(section, answers.provider)
    if answers.model:
        remote["model"] = answers.model
    if answers.base_url:
        remote["base_url"] = answers.base_url
    elif "base_url" in remote:
        del remote["base_url"]
    if answers.api_key:
        remote["api_key"] = answers.api_key


def _table(parent: Any, name: str) -> Any:
    """The sub-table *name* of *parent*, created if missing."""
    if name not in parent:
        parent[name] = tomlkit.table()
    return parent[name]
