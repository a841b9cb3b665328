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
    CaptureSettings,
    Config,
    DecaySettings,
    EmbeddingSettings,
    FileConfig,
    FlushSettings,
    IndexSettings,
    LocalSettings,
    LogLevel,
    MmrSettings,
    PrimerSettings,
    ProviderName,
    RecallSettings,
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
    "CaptureSettings",
    "Config",
    "DecaySettings",
    "EmbeddingSettings",
    "FileConfig",
    "FlushSettings",
    "IndexSettings",
    "LocalSettings",
    "LogLevel",
    "MmrSettings",
    "Overrides",
    "PrimerSettings",
    "ProviderName",
    "RecallSettings",
    "RemoteSettings",
    "SearchSettings",
    "ServerSettings",
    "SessionSettings",
    "SyncSettings",
    "load_config",
    "normalize_extra_paths",
]
