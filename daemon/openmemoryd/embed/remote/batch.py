"""Batch-API indexing: a large backlog embedded by the provider's batch jobs.

OpenAI and Gemini take asynchronous batch jobs at about half the price of
their synchronous embedding endpoints, outside its rate limits. For a first
index or a model change that is most of the cost, so (as in OpenClaw's
``remote.batch``) the background indexer sends backlogs of at least
``[embedding.batch] min_chunks`` chunks this way. Queries and small backlogs
never wait for a batch: they keep the synchronous path.

`BatchEmbedder.embed_documents` runs in a worker thread: it splits texts as
the synchronous path does (`RemoteEmbedder.split_texts`), cuts the pieces
into jobs within the provider's limits, keeps at most ``concurrency`` jobs
running, polls them every ``poll_interval_ms``, cancels any still running
after ``timeout_minutes``, and merges the pieces' vectors per text.

Invariants:

- A failed, expired, cancelled or timed-out job, a failed request inside a
  job, or a job that could not be submitted costs only its own texts: they
  come back as None (with the reason in `BatchResult.failures`) and the
  caller embeds them synchronously, so indexing never stalls on a batch.
- An endpoint that does not exist at the configured base URL (HTTP 404, 405
  or 501: a self-hosted OpenAI-compatible server) raises `BatchUnavailable`
  after cancelling this call's running jobs; the caller stops batching.
- Vectors from a batch pass the same checks as synchronous ones (count,
  width, requested dimensions) and are normalised the same way.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Final

import msgspec

from openmemoryd.config.model import BatchSettings
from openmemoryd.embed.provider import EmbeddingError, Vectors
from openmemoryd.embed.remote.http import RemoteEmbedder, _batches

logger = logging.getLogger("openmemoryd.embed.batch")

PASS_MAX_TEXTS: Final = 20_000
"""Texts handed to one `embed_documents` call: bounds the memory a pass holds."""

_UNAVAILABLE_STATUSES: Final = frozenset({404, 405, 501})


class BatchUnavailable(EmbeddingError):
    """The batch endpoints do not exist at this base URL: stop batching."""


Collected = tuple[list[object | None], list[str]]
"""A finished job's raw vector per text (None where it failed), and what failed."""


@dataclass(frozen=True, slots=True)
class JobState:
    """One poll's answer: `done` once the job will not change any more.

    `error` says why a finished job has nothing to collect (failed); a job
    that expired or was cancelled may still hold some results. `payload` is
    the provider's answer, for `BatchClient.collect`.
    """

    done: bool
    state: str
    error: str | None = None
    payload: object = None


class JobRecord(msgspec.Struct, frozen=True):
    """A submitted job as kept in the index (``wait = false``), so results
    are collected on later passes and after a restart instead of paying for
    the job twice."""

    job: str
    hashes: list[str]  # the text hash of each text, in job order
    owners: list[int]  # for each piece sent, the index of its text
    sizes: list[int]  # for each piece sent, its UTF-8 bytes (the merge weights)
    deadline: float  # wall-clock time after which the job is cancelled


@dataclass(slots=True)
class BatchResult:
    """One vector per text, None where the batch could not provide one."""

    vectors: list[Vectors | None]
    failures: list[str] = field(default_factory=list)
    jobs: int = 0


class BatchClient(ABC):
    """One provider's batch wire format (`embed.remote.batch_wire`).

    Submitting, polling and collecting use the embedder's own HTTP session,
    so retries, redirects, redaction and the key are handled as for every
    other request.
    """

    max_requests: ClassVar[int]
    max_bytes: ClassVar[int]

    def __init__(self, embedder: RemoteEmbedder) -> None:
        self.embedder = embedder

    @abstractmethod
    def submit(self, texts: list[str]) -> str:
        """Start a job embedding *texts*; its id."""

    @abstractmethod
    def poll(self, job: str) -> JobState:
        """Where job *job* stands."""

    @abstractmethod
    def collect(self, job: str, state: JobState, count: int) -> Collected:
        """The raw vector of each of the job's *count* texts (None where it
        failed), and what failed."""

    @abstractmethod
    def cancel(self, job: str) -> None:
        """Ask the provider to stop *job* (best effort)."""

    @abstractmethod
    def cleanup(self, job: str, state: JobState) -> None:
        """Delete what the job left at the provider (best effort)."""


class BatchEmbedder:
    """Embeds many documents through batch jobs of one remote embedder."""

    def __init__(
        self,
        client: BatchClient,
        settings: BatchSettings,
        *,
        job_max_requests: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self.embedder: RemoteEmbedder = client.embedder
        self.min_chunks = settings.min_chunks
        self._concurrency = settings.concurrency
        self._poll_s = settings.poll_interval_ms / 1000.0
        self._timeout_s = settings.timeout_minutes * 60.0
        self._job_max = min(job_max_requests or client.max_requests, client.max_requests)
        self._sleep = sleep
        self._clock = clock
        self._wall = wall
        self.wait = settings.wait
        self.concurrency = settings.concurrency
        self.poll_interval_s = self._poll_s
        self.available = True
        self.jobs_running = 0

    def embed_documents(self, texts: Sequence[str]) -> BatchResult:
        """Vectors for *texts* (None for those to embed synchronously).

        Raises `BatchUnavailable` when the provider has no batch endpoint
        here (and marks this batcher unavailable), or `EmbeddingError` when
        the answers are malformed.
        """
        pieces = self.embedder.split_texts(texts)
        sizes = [len(piece.encode("utf-8")) for piece, _ in pieces]
        jobs = deque(_batches(sizes, self._client.max_bytes, self._job_max))
        result = BatchResult(vectors=[None] * len(texts), jobs=len(jobs))
        raw: list[object | None] = [None] * len(pieces)
        running: dict[str, tuple[int, int, float]] = {}
        try:
            while jobs or running:
                while jobs and len(running) < self._concurrency:
                    start, end = jobs.popleft()
                    job = self._submit([piece for piece, _ in pieces[start:end]], result)
                    if job is not None:
                        running[job] = (start, end, self._clock() + self._timeout_s)
                    self.jobs_running = len(running)
                for job, (start, end, deadline) in list(running.items()):
                    if self._advance(job, raw, start, end, deadline, result):
                        del running[job]
                self.jobs_running = len(running)
                if running:
                    self._sleep(self._poll_s)
        except BatchUnavailable:
            self.available = False
            for job in running:
                self._quietly(self._client.cancel, job)
            raise
        finally:
            self.jobs_running = 0
        owners = [owner for _, owner in pieces]
        result.vectors = self._complete(raw, sizes, owners, len(texts))
        return result

    # ------------------------------------------------------------ wait = false

    def start_job(self, items: Sequence[tuple[str, str]]) -> JobRecord:
        """Submit one job for the leading (hash, text) *items* that fit in it.

        For ``wait = false``: the caller persists the record and checks it
        on later passes (`check_job`), across restarts. Raises
        `BatchUnavailable` (see `embed_documents`) or `EmbeddingError`.
        """
        pieces = self.embedder.split_texts([text for _, text in items])
        sizes = [len(piece.encode("utf-8")) for piece, _ in pieces]
        _, end = next(_batches(sizes, self._client.max_bytes, self._job_max), (0, 0))
        texts = pieces[end][1] if end < len(pieces) else len(items)  # whole texts only,
        texts = max(texts, 1)  # but at least one
        end = sum(1 for _, owner in pieces if owner < texts)
        result = BatchResult(vectors=[])
        job = self._submit([piece for piece, _ in pieces[:end]], result)
        if job is None:
            raise EmbeddingError(result.failures[0], retryable=True)
        return JobRecord(
            job=job,
            hashes=[digest for digest, _ in items[:texts]],
            owners=[owner for _, owner in pieces[:end]],
            sizes=sizes[:end],
            deadline=self._wall() + self._timeout_s,
        )

    def check_job(self, record: JobRecord) -> tuple[bool, dict[str, Vectors], list[str]]:
        """(done, vector per text hash, what failed) for a job `start_job` made.

        Polls once: a job still running is (False, {}, []), unless past its
        deadline, when it is cancelled and reported failed.
        """
        result = BatchResult(vectors=[])
        raw: list[object | None] = [None] * len(record.owners)
        deadline = self._clock() + (record.deadline - self._wall())
        if not self._advance(record.job, raw, 0, len(raw), deadline, result, patient=True):
            return False, {}, []
        vectors = self._complete(raw, record.sizes, record.owners, len(record.hashes))
        found = {
            digest: vector
            for digest, vector in zip(record.hashes, vectors, strict=True)
            if vector is not None
        }
        return True, found, result.failures

    def _submit(self, texts: list[str], result: BatchResult) -> str | None:
        try:
            job = self._client.submit(texts)
        except EmbeddingError as exc:
            if not exc.retryable and exc.status in _UNAVAILABLE_STATUSES:
                self.available = False
                raise BatchUnavailable(
                    f"{self.embedder.name}: no batch API at this base_url ({exc}); "
                    "embedding synchronously from now on",
                    retryable=False,
                    status=exc.status,
                ) from exc
            result.failures.append(f"submitting a job of {len(texts)} texts failed: {exc}")
            return None
        logger.info("%s batch job %s submitted: %d texts", self.embedder.name, job, len(texts))
        return job

    def _advance(
        self,
        job: str,
        raw: list[object | None],
        start: int,
        end: int,
        deadline: float,
        result: BatchResult,
        *,
        patient: bool = False,
    ) -> bool:
        """Poll *job*; collect it if done. True once it needs no more polling.

        A *patient* caller (a job kept across passes) keeps a job whose poll
        failed for a passing reason until its deadline; a waiting one gives
        up at once, since its texts are better embedded synchronously now.
        """
        try:
            state = self._client.poll(job)
        except EmbeddingError as exc:
            if patient and exc.retryable and self._clock() < deadline:
                logger.info("polling batch job %s failed (%s); trying again later", job, exc)
                return False
            result.failures.append(f"job {job}: polling failed: {exc}")
            self._quietly(self._client.cancel, job)
            return True
        if not state.done:
            if self._clock() < deadline:
                return False
            minutes = self._timeout_s / 60.0
            result.failures.append(f"job {job}: still {state.state} after {minutes:g} minutes")
            self._quietly(self._client.cancel, job)
            return True
        if state.error is not None:
            result.failures.append(f"job {job}: {state.error}")
        else:
            try:
                vectors, errors = self._client.collect(job, state, end - start)
            except EmbeddingError as exc:
                vectors, errors = [None] * (end - start), [f"downloading the results failed: {exc}"]
            raw[start:end] = vectors
            result.failures.extend(f"job {job}: {error}" for error in errors)
            logger.info(
                "%s batch job %s %s: %d of %d texts embedded",
                self.embedder.name,
                job,
                state.state,
                sum(vector is not None for vector in vectors),
                end - start,
            )
        self._quietly(self._client.cleanup, job, state)
        return True

    def _complete(
        self, raw: list[object | None], sizes: Sequence[int], owners: Sequence[int], count: int
    ) -> list[Vectors | None]:
        """A vector for each of *count* texts all of whose pieces came back."""
        vectors: list[Vectors | None] = [None] * count
        missing = {owner for owner, vector in zip(owners, raw, strict=True) if vector is None}
        complete = sorted(set(owners) - missing)
        if not complete:
            return vectors
        position = {owner: index for index, owner in enumerate(complete)}
        chosen = [k for k, owner in enumerate(owners) if owner in position]
        matrix = self.embedder.check_vectors([raw[k] for k in chosen], len(chosen))
        merged = self.embedder.merge_pieces(
            matrix, [sizes[k] for k in chosen], [position[owners[k]] for k in chosen], len(complete)
        )
        for index, owner in enumerate(complete):
            vectors[owner] = merged[index]
        return vectors

    @staticmethod
    def _quietly(action: Callable[..., None], *args: object) -> None:
        """Housekeeping (cancel, delete) must not turn results into a failure."""
        try:
            action(*args)
        except EmbeddingError as exc:
            logger.info("batch housekeeping failed (ignored): %s", exc)
