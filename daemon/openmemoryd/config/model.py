"""The configuration's shape, defaults and limits.

The TOML file is decoded straight into these Structs, so a typo'd key
(``forbid_unknown_fields``) or an out-of-range value is reported with its
location (``$.search.min_score``) instead of being silently ignored. Defaults
are the seeds' numbers unless a measurement here said better.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from omem_protocol import DEFAULT_MAX_FRAME, MAX_LIMIT

LogLevel = Literal["debug", "info", "warning", "error"]


class _Section(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    pass


class IndexSettings(_Section, frozen=True):
    """How files become chunks."""

    chunk_tokens: Annotated[int, msgspec.Meta(ge=32, le=8192)] = 400
    chunk_overlap: Annotated[int, msgspec.Meta(ge=0, le=4096)] = 80
    max_file_bytes: Annotated[int, msgspec.Meta(ge=1024)] = 32 * 1024 * 1024


class SearchSettings(_Section, frozen=True):
    """Defaults for a search request that does not say otherwise."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_LIMIT)] = 6
    min_score: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.35
    candidate_multiplier: Annotated[int, msgspec.Meta(ge=1, le=20)] = 4
    snippet_chars: Annotated[int, msgspec.Meta(ge=80, le=10_000)] = 700


class ServerSettings(_Section, frozen=True):
    """Socket server limits."""

    max_frame_bytes: Annotated[int, msgspec.Meta(ge=64 * 1024, le=1 << 30)] = DEFAULT_MAX_FRAME
    max_inflight_per_connection: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 32
    drain_timeout_s: Annotated[float, msgspec.Meta(ge=0.0, le=600.0)] = 10.0


class FileConfig(_Section, frozen=True):
    """The config file as written; paths are still strings."""

    workspace: str | None = None
    state_dir: str | None = None
    socket: str | None = None
    extra_paths: tuple[str, ...] = ()
    log_level: LogLevel = "info"
    index: IndexSettings = msgspec.field(default_factory=IndexSettings)
    search: SearchSettings = msgspec.field(default_factory=SearchSettings)
    server: ServerSettings = msgspec.field(default_factory=ServerSettings)


@dataclass(frozen=True, slots=True)
class Config:
    """The resolved configuration the daemon runs with; every path absolute."""

    config_path: Path | None
    workspace: Path
    state_dir: Path
    socket: Path
    extra_paths: tuple[Path, ...]
    log_level: LogLevel
    index: IndexSettings
    search: SearchSettings
    server: ServerSettings

    @property
    def index_path(self) -> Path:
        """The default workspace's index database."""
        return self.state_dir / "index" / "default.sqlite"
