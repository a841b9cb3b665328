"""What `status` answers: the daemon, its workspace and each part's state."""

from __future__ import annotations

from omem_protocol._base import Msg


class SourceCounts(Msg, tag="source_counts", frozen=True):
    """Files on disk and in the index for one source (memory, sessions, ...).

    ``files_indexed`` counts every file the index has a record of, the
    skipped ones included (it did so before ``files_skipped`` existed, and a
    script waiting for it to reach ``files_on_disk`` must not wait forever
    for a binary file); ``files_skipped`` says how many of those the
    indexer left out (binary, too large): searchable are the difference.
    """

    source: str
    files_on_disk: int
    files_indexed: int
    chunks: int
    files_skipped: int = 0


class LastSync(Msg, tag="last_sync", frozen=True):
    """The most recent completed (or failed) sync pass."""

    finished_at: float
    reason: str
    took_ms: float
    error: str | None = None


class EmbeddingStatus(Msg, tag="embedding_status", frozen=True):
    """Where vector indexing stands.

    `state` is ``off`` (no provider; `reason` says why), ``idle``,
    ``embedding`` (vectors being added), ``rebuilding`` (vectors for a new
    provider or model are being built; searches use keywords until done) or
    ``failing`` (the provider errs; `last_error` says how; retried).
    `batch_jobs` counts the provider batch jobs running now
    (``[embedding.batch]``): a large backlog waits on them.
    """

    state: str
    provider: str
    model: str | None
    dims: int | None
    embedded: int
    total: int
    fallback_active: bool = False
    reason: str | None = None
    last_error: str | None = None
    last_error_at: float | None = None
    cache_entries: int = 0
    batch_jobs: int = 0


class PendingSession(Msg, tag="pending_session", frozen=True):
    """A transcript with lines not indexed yet (below the delta thresholds)."""

    path: str
    pending_bytes: int


class SyncStatus(Msg, tag="sync_status", frozen=True):
    """How the index follows the files: queue, watcher, pending transcripts.

    `watcher` is ``native``, ``polling`` or ``off``; an unhealthy watcher is
    restarted (and falls back to polling), and the periodic check catches
    what it missed meanwhile.
    """

    queue_depth: int
    running: bool
    last_reason: str | None
    last_finished_at: float | None
    last_error: str | None
    watcher: str
    watcher_healthy: bool
    watcher_last_event_at: float | None = None
    watcher_restarts: int = 0
    watcher_error: str | None = None
    pending_sessions: tuple[PendingSession, ...] = ()


class KeywordIndexStatus(Msg, tag="keyword_index_status", frozen=True):
    """The keyword (FTS5) index's b-trees: fewer is faster to search.

    `state` is ``merged`` (nothing worth merging), ``merging`` (folding the
    segments into one, a small step at a time between writes), ``waiting``
    (worth merging once indexing settles) or ``unknown`` (not looked at
    yet, or a format this daemon cannot read). `segments` is None when unknown.
    """

    state: str
    segments: int | None = None


class RerankStatus(Msg, tag="rerank_status", frozen=True):
    """What the rerank stage made of the searches since the daemon started.

    `provider` is the configured one (``auto``, ``local``, ``cohere``, ...),
    `model` the model it runs, or None when reranking is off (`off` says
    why). Each search that reached the stage counts once: `reranked` (the
    model re-ordered its best candidates), `confident` (calibrated fusion
    was sure of its first hit; the fused order kept at no cost),
    `held_back` (the local model, which takes the daemon's cores, was kept
    for a search no other search ran beside, or was scoring another one),
    `not_applicable` (a question or candidate in a language the model does
    not read, a single candidate, or, with ``auto``, no calibrated estimate
    to judge by: a keyword-only search) and
    `failed` (the provider failed; the fused order kept, `issues` says how).
    Many `held_back` mean agents search at once often enough that the local
    model seldom gets its turn.
    """

    provider: str
    model: str | None
    off: str | None = None
    reranked: int = 0
    confident: int = 0
    held_back: int = 0
    not_applicable: int = 0
    failed: int = 0


class StatusResult(Msg, tag="status_result", frozen=True):
    """The daemon and its workspace, as `omem-client status` shows them."""

    daemon_version: str
    protocol: int
    pid: int
    uptime_s: float
    socket: str
    workspace: str
    workspace_path: str
    index_path: str
    index_bytes: int
    files_on_disk: int
    files_indexed: int  # recorded in the index, skipped ones included (`SourceCounts`)
    chunks: int
    sources: tuple[SourceCounts, ...]
    fts: bool
    vector: bool
    provider: str
    model: str | None
    syncing: bool
    last_sync: LastSync | None
    issues: tuple[str, ...] = ()
    embedding: EmbeddingStatus | None = None
    rebuild: str | None = None
    sync: SyncStatus | None = None
    workspaces: tuple[str, ...] = ()  # every workspace this daemon serves
    http: str | None = None  # the HTTP API's base URL when it is on (`[http]`)
    keyword_index: KeywordIndexStatus | None = None
    rerank: RerankStatus | None = None
    files_skipped: int = 0  # of files_indexed, left out (binary, too large): see `issues`
