"""Configuration: TOML file, ``OPENMEMORY_*`` environment, command-line flags."""

from __future__ import annotations

from openmemoryd.config.http_token import check_http_token
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
    ChatSettings,
    Config,
    EmbeddingSettings,
    FileConfig,
    FlushSettings,
    HttpSettings,
    IndexSettings,
    LocalSettings,
    LogLevel,
    PrimerSettings,
    ProviderName,
    RecallSettings,
    RemoteSettings,
    ServerSettings,
    SessionSettings,
    SyncSettings,
)
from openmemoryd.config.search import (
    DecaySettings,
    MmrSettings,
    RerankProvider,
    RerankSettings,
    SalienceSettings,
    SearchSettings,
)

__all__ = [
    "LOG_LEVEL_ENV",
    "STATE_DIR_ENV",
    "WORKSPACE_ENV",
    "CaptureSettings",
    "ChatSettings",
    "Config",
    "DecaySettings",
    "EmbeddingSettings",
    "FileConfig",
    "FlushSettings",
    "HttpSettings",
    "IndexSettings",
    "LocalSettings",
    "LogLevel",
    "MmrSettings",
    "Overrides",
    "PrimerSettings",
    "ProviderName",
    "RecallSettings",
    "RemoteSettings",
    "RerankProvider",
    "RerankSettings",
    "SalienceSettings",
    "SearchSettings",
    "ServerSettings",
    "SessionSettings",
    "SyncSettings",
    "check_http_token",
    "load_config",
    "normalize_extra_paths",
]
