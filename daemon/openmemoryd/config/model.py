"""The configuration's shape, defaults and limits.

The TOML file is decoded straight into these Structs, so a typo'd key
(``forbid_unknown_fields``) or an out-of-range value is reported with its
location (``$.search.min_score``) instead of being silently ignored. Defaults
are the seeds' numbers unless a measurement here said better. The `[search]`
sections live in `config.search`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from omem_protocol import DEFAULT_MAX_FRAME
from openmemoryd.config.search import SearchSettings
from openmemoryd.config.sections import Section as _Section
from openmemoryd.config.sections import doc

LogLevel = Literal["debug", "info", "warning", "error"]
ProviderName = Literal["auto", "local", "openai", "ollama", "gemini", "voyage", "mistral", "none"]


class IndexSettings(_Section, frozen=True):
    """How files become chunks.

    175/35 rather than the seeds' 400/80. On LoCoMo (bench/locomo.py, 1,535
    questions) hybrid Recall@10 was 0.814 at 400 tokens, 0.879 at 200 and
    0.834 at 120: smaller chunks give sharper vectors. 175 rather than 200
    because a chunk of 175 estimated tokens (a quarter token a character
    outside CJK) is at most 700 characters, the snippet's limit, so every
    hit shows its whole chunk: at 200 tokens a quarter of the chunks were cut
    to fit and the cut hid the evidence often enough to cost 0.013 of
    Recall@10 and 0.025 of recall within 3,000 characters (docs/recall.md).
    """

    chunk_tokens: Annotated[
        int, doc("Chunk size in tokens; a CJK character counts as one.", ge=32, le=8192)
    ] = 175
    chunk_overlap: Annotated[
        int, doc("Tokens a chunk repeats from the one before it.", ge=0, le=4096)
    ] = 35
    max_file_bytes: Annotated[
        int, doc("Larger files are skipped and reported in status.", ge=1024)
    ] = 32 * 1024 * 1024


class ServerSettings(_Section, frozen=True):
    """Socket server limits."""

    max_frame_bytes: Annotated[
        int, doc("Largest request frame accepted.", ge=64 * 1024, le=1 << 30)
    ] = DEFAULT_MAX_FRAME
    max_inflight_per_connection: Annotated[
        int, doc("Requests one connection may have running at once.", ge=1, le=1024)
    ] = 32
    drain_timeout_s: Annotated[
        float, doc("On SIGTERM, in-flight requests get this long to finish.", ge=0.0, le=600.0)
    ] = 10.0


class RemoteSettings(_Section, frozen=True):
    """One remote embedding service. Empty strings mean "the provider's default".

    `api_key` may be left empty and given through the environment instead
    (``OPENAI_API_KEY``, ``GEMINI_API_KEY``, ``VOYAGE_API_KEY``,
    ``MISTRAL_API_KEY``, or the variable named by `api_key_env`). Keys never
    appear in logs, status or errors.
    """

    base_url: Annotated[str, doc("The API's base URL; empty for the provider's own.")] = ""
    api_key: Annotated[str, doc("The API key; empty to take it from the environment.")] = ""
    api_key_env: Annotated[
        str, doc("An environment variable holding the key, instead of the usual one.")
    ] = ""
    model: Annotated[str, doc("The embedding model; empty for the provider's default.")] = ""
    headers: Annotated[dict[str, str], doc("Extra HTTP headers sent with every request.")] = (
        msgspec.field(default_factory=dict)
    )


class LocalSettings(_Section, frozen=True):
    """The bundled multilingual-e5-small embedder's CPU budget."""

    threads: Annotated[
        int, doc("Threads for background indexing (a separate, niced process).", ge=1, le=64)
    ] = 2
    query_threads: Annotated[
        int,
        doc(
            "Threads for each query embedding. More make a lone search faster but"
            " cost CPU, and queries then take turns: under many clients 1 serves twice"
            " the searches (docs/benchmarks.md).",
            ge=1,
            le=64,
        ),
    ] = 1
    batch_size: Annotated[int, doc("Chunks embedded per batch.", ge=1, le=256)] = 16
    nice: Annotated[int, doc("Scheduling niceness of the indexing process.", ge=0, le=19)] = 10
    engine: Annotated[
        Literal["auto", "onnxruntime", "numpy"],
        doc(
            "What runs the model: ONNX Runtime (a query in about 0.4x the time) or numpy;"
            ' "auto" takes ONNX Runtime where it is installed. The vectors are the same'
            " either way, so switching re-embeds nothing.",
        ),
    ] = "auto"


class BatchSettings(_Section, frozen=True):
    """Batch-API indexing for the openai and gemini providers (OpenClaw's
    ``remote.batch``).

    A large backlog (a first index, a model change) is sent as a few
    asynchronous batch jobs instead of many synchronous requests: the
    providers bill batch work at about half price and take it off the
    request rate limits. Searches never wait for a batch: query vectors and
    small backlogs (under `min_chunks`) keep the synchronous API, and a
    failed or timed-out job falls back to it, so indexing never stalls.
    """

    enabled: Annotated[bool, doc("Send large backlogs as batch jobs (openai and gemini only).")] = (
        True
    )
    wait: Annotated[
        bool,
        doc(
            "Wait for the jobs before embedding anything else; false: submit, "
            "embed new chunks meanwhile, collect the jobs later (also after a restart)."
        ),
    ] = True
    poll_interval_ms: Annotated[
        int, doc("How often a running job is asked how it is doing.", ge=10, le=600_000)
    ] = 2000
    timeout_minutes: Annotated[
        float,
        doc(
            "A job unfinished after this is cancelled; its chunks embed synchronously.",
            gt=0.0,
            le=1440.0,
        ),
    ] = 60.0
    concurrency: Annotated[int, doc("Batch jobs running at once.", ge=1, le=64)] = 2
    min_chunks: Annotated[
        int,
        doc(
            "Backlogs smaller than this many chunks use the synchronous API "
            "(they finish in seconds; a batch job may take minutes).",
            ge=1,
        ),
    ] = 500


class EmbeddingSettings(_Section, frozen=True):
    """Which embedder turns chunks into vectors, and how hard it may work.

    ``auto`` tries local first, then remote services whose API key is set
    (openai, gemini, voyage, mistral); ``none`` means keyword search only.
    `fallback` names a provider used while the primary one fails.
    """

    provider: Annotated[
        ProviderName, doc("Which embedder; auto = local, else a remote with a key set.")
    ] = "auto"
    model: Annotated[
        str,
        doc(
            "Overrides the provider's model; empty for its default. "
            'local: "all-minilm-l6-v2" is the faster, English-only option.'
        ),
    ] = ""
    fallback: Annotated[
        ProviderName, doc("The provider used after the primary fails for good.")
    ] = "none"
    dimensions: Annotated[
        int, doc("Ask for smaller vectors where the API supports it; 0 = native.", ge=0, le=8192)
    ] = 0
    timeout_s: Annotated[
        float, doc("Timeout of one remote embedding request.", gt=0.0, le=600.0)
    ] = 60.0
    max_retries: Annotated[
        int, doc("Retries of a failed remote request (with backoff).", ge=0, le=10)
    ] = 3
    batch_max_bytes: Annotated[
        int, doc("Largest batch of text sent in one remote request.", ge=1024, le=1 << 24)
    ] = 64 * 1024
    cache_max_entries: Annotated[
        int, doc("Embeddings kept for reuse, so unchanged text is never embedded twice.", ge=0)
    ] = 50_000
    local: LocalSettings = msgspec.field(default_factory=LocalSettings)
    batch: BatchSettings = msgspec.field(default_factory=BatchSettings)
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

    watch: Annotated[
        Literal["native", "polling", "off"],
        doc("native (falls back to polling), polling (network filesystems) or off."),
    ] = "native"
    debounce_ms: Annotated[
        int, doc("A changed file is indexed this long after its last write.", ge=0, le=60_000)
    ] = 1500
    poll_interval_ms: Annotated[
        int, doc("How often the polling watcher looks.", ge=50, le=60_000)
    ] = 300
    interval_minutes: Annotated[
        float, doc("Full check against the disk; 0 = never.", ge=0.0, le=1440.0)
    ] = 5.0
    probe_interval_s: Annotated[
        float, doc("How often a silent watcher is probed (and restarted).", ge=1.0, le=3600.0)
    ] = 60.0
    search_check_s: Annotated[
        float, doc("A search may trigger a cheap check at most this often.", ge=0.0, le=3600.0)
    ] = 30.0
    fresh_timeout_s: Annotated[
        float, doc("--fresh gives up (and says stale) after this.", gt=0.0, le=600.0)
    ] = 5.0
    journal_settle_s: Annotated[
        float,
        doc(
            "An appended line seen on disk this long is settled: deleting it is on purpose.",
            ge=1.0,
            le=86_400.0,
        ),
    ] = 30.0
    journal_max_age_s: Annotated[
        float,
        doc("A journalled append still missing after this is given up.", ge=60.0, le=31_536_000.0),
    ] = 604_800.0


class SessionSettings(_Section, frozen=True):
    """Agent session transcripts (JSONL) as a second, searchable source.

    Transcripts live in ``<state_dir>/sessions/<agent>/*.jsonl`` and in any
    directory listed in ``paths`` (its first-level subdirectories name the
    agents). New lines are indexed once ``delta_bytes`` or ``delta_messages``
    accumulate, or the file has been quiet for ``idle_s``.
    """

    enabled: Annotated[bool, doc("Index agents' session transcripts.")] = True
    paths: Annotated[
        tuple[str, ...], doc("More transcript directories; subdirectories name the agents.")
    ] = ()
    delta_bytes: Annotated[
        int, doc("Index new transcript lines once this many bytes are pending.", ge=0)
    ] = 100_000
    delta_messages: Annotated[int, doc("... or once this many lines are pending.", ge=0)] = 50
    idle_s: Annotated[
        float, doc("... or once the file has been quiet this long.", ge=0.0, le=86_400.0)
    ] = 60.0


class RecallSettings(_Section, frozen=True):
    """`recall`: OpenClaw's auto-recall takes the top 3 at score 0.3."""

    limit: Annotated[int, doc("Memories in a recall block.", ge=1, le=100)] = 3
    min_score: Annotated[float, doc("Memories scoring lower are not recalled.", ge=0.0, le=1.0)] = (
        0.3
    )


class CaptureSettings(_Section, frozen=True):
    """`capture`: OpenClaw's auto-capture limits (10-500 characters, 3 a call)."""

    min_chars: Annotated[int, doc("Shorter user messages are not captured.", ge=1, le=10_000)] = 10
    max_chars: Annotated[int, doc("Longer user messages are not captured.", ge=10, le=10_000)] = 500
    max_per_call: Annotated[int, doc("Memories captured per call at most.", ge=1, le=20)] = 3


class PrimerSettings(_Section, frozen=True):
    """`primer`: a session starts from roughly 500-1000 tokens of context (as
    the Python MCP memory server's primer)."""

    budget: Annotated[int, doc("Token budget when the caller gives none.", ge=50, le=200_000)] = (
        1000
    )


class FlushSettings(_Section, frozen=True):
    """`flush`: OpenClaw's pre-compaction memory flush (`compaction.memoryFlush`).

    The prompts are OpenClaw's; ``YYYY-MM-DD`` in them becomes the agent's
    today, so the model writes to the right daily file.
    """

    enabled: Annotated[bool, doc("Answer flush-check at all (false: always no).")] = True
    reserve_tokens_floor: Annotated[
        int, doc("Tokens kept free for the compaction itself.", ge=0)
    ] = 20_000
    soft_threshold_tokens: Annotated[
        int, doc("Flush this many tokens before the reserve is reached.", ge=0)
    ] = 4_000
    system_prompt: Annotated[
        str, doc("System prompt of the flush turn.", min_length=1, max_length=10_000)
    ] = "Session nearing compaction. Store durable memories now."
    prompt: Annotated[
        str,
        doc(
            "User prompt of the flush turn; YYYY-MM-DD becomes today.",
            min_length=1,
            max_length=10_000,
        ),
    ] = "Write any lasting notes to memory/YYYY-MM-DD.md; reply with NO_REPLY if nothing to store."


class HttpSettings(_Section, frozen=True):
    """`[http]`: the optional JSON HTTP API for agents not written in Python.

    Off unless enabled here or by ``openmemoryd run --http HOST:PORT``. It binds
    loopback only; any other address also needs ``allow_remote = true`` and a
    token. The bearer token is `token`, else the variable named by
    `token_env`, else ``OPENMEMORY_HTTP_TOKEN``; it never appears in logs,
    status or errors.
    """

    enabled: Annotated[bool, doc("Serve the HTTP API beside the Unix socket.")] = False
    listen: Annotated[
        str, doc("HOST:PORT to listen on (an IP address or localhost; [::1]:PORT for IPv6).")
    ] = "127.0.0.1:8787"
    allow_remote: Annotated[
        bool, doc("Allow a non-loopback listen address (then a token is required).")
    ] = False
    allowed_hosts: Annotated[
        tuple[str, ...], doc("Host names accepted besides loopback ones (remote setups only).")
    ] = ()
    token: Annotated[
        str,
        doc(
            "Bearer token clients must send: visible ASCII, no spaces; empty: none (loopback only)."
        ),
    ] = ""
    token_env: Annotated[
        str, doc("An environment variable holding the token, instead of OPENMEMORY_HTTP_TOKEN.")
    ] = ""
    max_inflight: Annotated[
        int, doc("Requests handled at once; more get 429 Too Many Requests.", ge=1, le=4096)
    ] = 64


class ChatSettings(_Section, frozen=True):
    """The chat model `compact` uses to summarise a conversation (the
    openmemory design's compaction).

    Off until ``provider`` is set: ``openai`` speaks the OpenAI-compatible
    ``/chat/completions`` API (OpenAI, vLLM, LM Studio, llama.cpp,
    OpenRouter), ``ollama`` Ollama's ``/api/chat``. The key comes from
    `api_key`, else the variable named by `api_key_env`, else
    ``OPENAI_API_KEY`` (openai only); it never appears in logs or errors.
    """

    provider: Annotated[
        Literal["none", "openai", "ollama"],
        doc("The chat API: openai (OpenAI-compatible), ollama, or none (compact is off)."),
    ] = "none"
    base_url: Annotated[
        str,
        doc("The API's base URL; empty for https://api.openai.com/v1 or http://localhost:11434."),
    ] = ""
    model: Annotated[
        str, doc("The chat model; empty for gpt-4o-mini (openai) or llama3.2 (ollama).")
    ] = ""
    api_key: Annotated[str, doc("The API key; empty to take it from the environment.")] = ""
    api_key_env: Annotated[
        str, doc("An environment variable holding the key, instead of OPENAI_API_KEY.")
    ] = ""
    headers: Annotated[dict[str, str], doc("Extra HTTP headers sent with every request.")] = (
        msgspec.field(default_factory=dict)
    )
    timeout_s: Annotated[float, doc("Timeout of one chat request.", gt=0.0, le=3600.0)] = 120.0
    max_retries: Annotated[
        int, doc("Retries of a failed chat request (with backoff).", ge=0, le=10)
    ] = 3
    max_input_tokens: Annotated[
        int,
        doc("Conversation tokens sent in one summarising request (one stage).", ge=256),
    ] = 4000
    max_output_tokens: Annotated[
        int, doc("Longest summary the model may write per request.", ge=64, le=32_768)
    ] = 800
    temperature: Annotated[float, doc("Sampling temperature of the summary.", ge=0.0, le=2.0)] = 0.2
    keep_last: Annotated[
        int, doc("Most recent messages compact keeps verbatim (not summarised).", ge=0, le=1000)
    ] = 5
    flush_before: Annotated[
        bool, doc("Capture durable memories from the messages before summarising them.")
    ] = True
    compact_threshold: Annotated[
        float,
        doc(
            "compact_check says to compact once the context holds this share of the window.",
            gt=0.0,
            le=1.0,
        ),
    ] = 0.6
    compact_budget: Annotated[
        float,
        doc(
            "What compacting aims for: this share of the window (below compact_threshold).",
            gt=0.0,
            lt=1.0,
        ),
    ] = 0.4
    prompt: Annotated[
        str,
        doc("Instructions for summarising one stage; empty for the built-in.", max_length=10_000),
    ] = ""
    merge_prompt: Annotated[
        str,
        doc(
            "Instructions for merging the stages' summaries; empty for the built-in.",
            max_length=10_000,
        ),
    ] = ""


WorkspaceName = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")]


class WorkspaceSettings(_Section, frozen=True):
    """`workspaces.<name>`: another workspace this daemon serves, with its own
    Markdown and its own index; clients pick it with ``--workspace NAME``."""

    path: Annotated[str, doc("Its Markdown directory; ~ is expanded.", min_length=1)]
    extra_paths: Annotated[
        tuple[str, ...], doc("More .md for this workspace, as the top-level key.")
    ] = ()


class FileConfig(_Section, frozen=True):
    """The config file as written; paths are still strings."""

    workspace: Annotated[
        str | None, doc("The Markdown memory (the source of truth); ~ is expanded.")
    ] = None
    state_dir: Annotated[str | None, doc("Index, transcripts and daemon state; ~ is expanded.")] = (
        None
    )
    socket: Annotated[
        str | None,
        doc("The socket; default `$XDG_RUNTIME_DIR/openmemory/`, else `/tmp/openmemory-<uid>/`."),
    ] = None
    extra_paths: Annotated[
        tuple[str, ...],
        doc("More .md to index: directories (recursive) or files; symlinks are ignored."),
    ] = ()
    log_level: Annotated[LogLevel, doc("How much the daemon logs (to stderr or the journal).")] = (
        "info"
    )
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
    chat: ChatSettings = msgspec.field(default_factory=ChatSettings)
    workspaces: dict[WorkspaceName, WorkspaceSettings] = msgspec.field(default_factory=dict)
    http: HttpSettings = msgspec.field(default_factory=HttpSettings)


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
    name: str = "default"  # which workspace of the daemon this is
    others: tuple[tuple[str, Path, tuple[Path, ...]], ...] = ()  # (name, path, extra_paths)
    http: HttpSettings = field(default_factory=HttpSettings)
    chat: ChatSettings = field(default_factory=ChatSettings)

    @property
    def index_path(self) -> Path:
        """This workspace's index database."""
        return self.state_dir / "index" / f"{self.name}.sqlite"

    @property
    def sessions_dir(self) -> Path:
        """Where agents' transcripts are kept: ``sessions/<agent>/*.jsonl``
        (``workspaces/<name>/sessions/`` for a named workspace)."""
        if self.name == "default":
            return self.state_dir / "sessions"
        return self.state_dir / "workspaces" / self.name / "sessions"

    @property
    def flush_state_path(self) -> Path:
        """The per-session memory-flush record (see `memory.flush_state`)."""
        return self.state_dir / "flush" / f"{self.name}.json"

    @property
    def forgotten_path(self) -> Path:
        """What was forgotten, for imports to hold back (see `memory.forgotten`)."""
        return self.state_dir / "forgotten" / f"{self.name}.json"

    def workspace_configs(self) -> tuple[Config, ...]:
        """This config and one per ``[workspaces.<name>]``: everything shared
        but the Markdown, the index and the transcripts."""
        derived = tuple(
            replace(
                self,
                name=name,
                workspace=path,
                extra_paths=extra,
                session_paths=(),
                others=(),
            )
            for name, path, extra in self.others
        )
        return (self, *derived)
