"""Configuration: TOML file, ``OPENMEMORY_*`` environment, command-line flags."""

from __future__ import annotations

from openmemoryd.config.load import (
    LOG_LEVEL_ENV,
    STATE_DIR_ENV,
    WORKSPACE_ENV,
    Overrides,
    load_config,
    normalize_extra_paths,
)
from openmemoryd.config.model import (
    Config,
    DecaySettings,
    EmbeddingSettings,
    FileConfig,
    IndexSettings,
    LocalSettings,
    LogLevel,
    MmrSettings,
    ProviderName,
    RemoteSettings,
    SearchSettings,
    ServerSettings,
    SessionSettings,
    SyncSettings,
)

__all__ = [
    "LOG_LEVEL_ENV",
    "STATE_DIR_ENV",
    "WORKSPACE_ENV",
    "Config",
    "DecaySettings",
    "EmbeddingSettings",
    "FileConfig",
    "IndexSettings",
    "LocalSettings",
    "LogLevel",
    "MmrSettings",
    "Overrides",
    "ProviderName",
    "RemoteSettings",
    "SearchSettings",
    "ServerSettings",
    "SessionSettings",
    "SyncSettings",
    "load_config",
    "normalize_extra_paths",
]
