"""The configuration's shape, defaults and limits.

The TOML file is decoded straight into these Structs, so a typo'd key
(``forbid_unknown_fields``) or an out-of-range value is reported with its
location (``$.search.min_score``) instead of being silently ignored. Defaults
are the seeds' numbers unless a measurement here said better.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from omem_protocol import DEFAULT_MAX_FRAME, MAX_LIMIT

LogLevel = Literal["debug", "info", "warning", "error"]
ProviderName = Literal["auto", "local", "openai", "ollama", "gemini", "voyage", "mistral", "none"]


class _Section(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    pass


class IndexSettings(_Section, frozen=True):
    """How files become chunks.

    200/40 rather than the seeds' 400/80: on LoCoMo (bench/locomo.py, 1,535
    questions) hybrid Recall@10 was 0.814 at 400 tokens, 0.879 at 200 and
    0.834 at 120; smaller chunks give sharper vectors and snippets that show
    what matched.
    """

    chunk_tokens: Annotated[int, msgspec.Meta(ge=32, le=8192)] = 200
    chunk_overlap: Annotated[int, msgspec.Meta(ge=0, le=4096)] = 40
    max_file_bytes: Annotated[int, msgspec.Meta(ge=1024)] = 32 * 1024 * 1024


class MmrSettings(_Section, frozen=True):
    """Maximal marginal relevance: trade a little relevance for less repetition."""

    enabled: bool = False
    lambda_: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = msgspec.field(
        default=0.7, name="lambda"
    )


class DecaySettings(_Section, frozen=True):
    """Temporal decay of dated notes. Off by default: LoCoMo showed OpenClaw's
    always-on decay hiding year-old memories (recall 0.61 -> 0.23). When on,
    a note never loses more than ``1 - floor`` of its score, so decay
    re-orders relevant results instead of pushing them under min_score."""

    enabled: bool = False
    half_life_days: Annotated[float, msgspec.Meta(ge=1.0, le=36_500.0)] = 30.0
    floor: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.5


class SearchSettings(_Section, frozen=True):
    """Defaults for a search request that does not say otherwise."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_LIMIT)] = 6
    min_score: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.35
    candidate_multiplier: Annotated[int, msgspec.Meta(ge=1, le=20)] = 4
    snippet_chars: Annotated[int, msgspec.Meta(ge=80, le=10_000)] = 700
    # 0.3/0.7 measured best on LoCoMo at 200- and 400-token chunks (R@10
    # 0.879 vs 0.874 for 0.5/0.5 and 0.867 for keywords alone); the vector
    # leg still carries paraphrases and cross-language questions.
    vector_weight: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.3
    text_weight: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.7
    fusion: Literal["weighted", "rrf"] = "weighted"
    rrf_k: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 60
    query_timeout_s: Annotated[float, msgspec.Meta(gt=0.0, le=120.0)] = 10.0
    mmr: MmrSettings = msgspec.field(default_factory=MmrSettings)
    decay: DecaySettings = msgspec.field(default_factory=DecaySettings)


class ServerSettings(_Section, frozen=True):
    """Socket server limits."""

    max_frame_bytes: Annotated[int, msgspec.Meta(ge=64 * 1024, le=1 << 30)] = DEFAULT_MAX_FRAME
    max_inflight_per_connection: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 32
    drain_timeout_s: Annotated[float, msgspec.Meta(ge=0.0, le=600.0)] = 10.0


class RemoteSettings(_Section, frozen=True):
    """One remote embedding service. Empty strings mean "the provider's default".

    `api_key` may be left empty and given through the environment instead
    (``OPENAI_API_KEY``, ``GEMINI_API_KEY``, ``VOYAGE_API_KEY``,
    ``MISTRAL_API_KEY``, or the variable named by `api_key_env`). Keys never
    appear in logs, status or errors.
    """

    base_url: str = ""
    api_key: str = ""
    api_key_env: str = ""
    model: str = ""
    headers: dict[str, str] = msgspec.field(default_factory=dict)


class LocalSettings(_Section, frozen=True):
    """The bundled multilingual-e5-small embedder's CPU budget."""

    threads: Annotated[int, msgspec.Meta(ge=1, le=64)] = 2
    query_threads: Annotated[int, msgspec.Meta(ge=1, le=64)] = 1
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=256)] = 16
    nice: Annotated[int, msgspec.Meta(ge=0, le=19)] = 10


class EmbeddingSettings(_Section, frozen=True):
    """Which embedder turns chunks into vectors, and how hard it may work.

    ``auto`` tries local first, then remote services whose API key is set
    (openai, gemini, voyage, mistral); ``none`` means keyword search only.
    `fallback` names a provider used while the primary one fails.
    """

    provider: ProviderName = "auto"
    model: str = ""
    fallback: ProviderName = "none"
    dimensions: Annotated[int, msgspec.Meta(ge=0, le=8192)] = 0
    timeout_s: Annotated[float, msgspec.Meta(gt=0.0, le=600.0)] = 60.0
    max_retries: Annotated[int, msgspec.Meta(ge=0, le=10)] = 3
    batch_max_bytes: Annotated[int, msgspec.Meta(ge=1024, le=1 << 24)] = 64 * 1024
    cache_max_entries: Annotated[int, msgspec.Meta(ge=0)] = 50_000
    local: LocalSettings = msgspec.field(default_factory=LocalSettings)
    openai: RemoteSettings = msgspec.field(default_factory=RemoteSettings)
    ollama: RemoteSettings = msgspec.field(default_factory=RemoteSettings)
    gemini: RemoteSettings = msgspec.field(default_factory=RemoteSettings)
    voyage: RemoteSettings = msgspec.field(default_factory=RemoteSettings)
    mistral: RemoteSettings = msgspec.field(default_factory=RemoteSettings)


class SyncSettings(_Section, frozen=True):
    """How the index follows the files without anyone running `sync`.

    ``watch``: ``native`` (inotify/FSEvents, falling back to polling if the
    system refuses, e.g. at the inotify watch limit), ``polling`` (for network
    filesystems where native events never arrive) or ``off``.
    """

    watch: Literal["native", "polling", "off"] = "native"
    debounce_ms: Annotated[int, msgspec.Meta(ge=0, le=60_000)] = 1500
    poll_interval_ms: Annotated[int, msgspec.Meta(ge=50, le=60_000)] = 300
    interval_minutes: Annotated[float, msgspec.Meta(ge=0.0, le=1440.0)] = 5.0
    probe_interval_s: Annotated[float, msgspec.Meta(ge=1.0, le=3600.0)] = 60.0
    search_check_s: Annotated[float, msgspec.Meta(ge=0.0, le=3600.0)] = 30.0
    fresh_timeout_s: Annotated[float, msgspec.Meta(gt=0.0, le=600.0)] = 5.0


class SessionSettings(_Section, frozen=True):
    """Agent session transcripts (JSONL) as a second, searchable source.

    Transcripts live in ``<state_dir>/sessions/<agent>/*.jsonl`` and in any
    directory listed in ``paths`` (its first-level subdirectories name the
    agents). New lines are indexed once ``delta_bytes`` or ``delta_messages``
    accumulate, or the file has been quiet for ``idle_s``.
    """

    enabled: bool = True
    paths: tuple[str, ...] = ()
    delta_bytes: Annotated[int, msgspec.Meta(ge=0)] = 100_000
    delta_messages: Annotated[int, msgspec.Meta(ge=0)] = 50
    idle_s: Annotated[float, msgspec.Meta(ge=0.0, le=86_400.0)] = 60.0


class RecallSettings(_Section, frozen=True):
    """`recall`: OpenClaw's auto-recall takes the top 3 at score 0.3."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 3
    min_score: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.3


class CaptureSettings(_Section, frozen=True):
    """`capture`: OpenClaw's auto-capture limits (10-500 characters, 3 a call)."""

    min_chars: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 10
    max_chars: Annotated[int, msgspec.Meta(ge=10, le=10_000)] = 500
    max_per_call: Annotated[int, msgspec.Meta(ge=1, le=20)] = 3


class PrimerSettings(_Section, frozen=True):
    """`primer`: seed 003 bootstraps a session with roughly 500-1000 tokens."""

    budget: Annotated[int, msgspec.Meta(ge=50, le=200_000)] = 1000


class FlushSettings(_Section, frozen=True):
    """`flush`: OpenClaw's pre-compaction memory flush (`compaction.memoryFlush`).

    The prompts are OpenClaw's; ``YYYY-MM-DD`` in them becomes the agent's
    today, so the model writes to the right daily file.
    """

    enabled: bool = True
    reserve_tokens_floor: Annotated[int, msgspec.Meta(ge=0)] = 20_000
    soft_threshold_tokens: Annotated[int, msgspec.Meta(ge=0)] = 4_000
    system_prompt: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)] = (
        "Session nearing compaction. Store durable memories now."
    )
    prompt: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)] = (
        "Write any lasting notes to memory/YYYY-MM-DD.md; reply with NO_REPLY if nothing to store."
    )


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
    embedding: EmbeddingSettings = msgspec.field(default_factory=EmbeddingSettings)
    sync: SyncSettings = msgspec.field(default_factory=SyncSettings)
    sessions: SessionSettings = msgspec.field(default_factory=SessionSettings)
    recall: RecallSettings = msgspec.field(default_factory=RecallSettings)
    capture: CaptureSettings = msgspec.field(default_factory=CaptureSettings)
    primer: PrimerSettings = msgspec.field(default_factory=PrimerSettings)
    flush: FlushSettings = msgspec.field(default_factory=FlushSettings)


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
    embedding: EmbeddingSettings
    sync: SyncSettings
    sessions: SessionSettings
    session_paths: tuple[Path, ...]
    recall: RecallSettings = field(default_factory=RecallSettings)
    capture: CaptureSettings = field(default_factory=CaptureSettings)
    primer: PrimerSettings = field(default_factory=PrimerSettings)
    flush: FlushSettings = field(default_factory=FlushSettings)

    @property
    def index_path(self) -> Path:
        """The default workspace's index database."""
        return self.state_dir / "index" / "default.sqlite"

    @property
    def sessions_dir(self) -> Path:
        """Where agents' transcripts are kept: ``sessions/<agent>/*.jsonl``."""
        return self.state_dir / "sessions"
