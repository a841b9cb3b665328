"""Batch jobs that outlive an indexing pass (``[embedding.batch] wait = false``).

With ``wait = false`` the vector indexer submits batch jobs for a large
backlog and goes on; later passes (every ``poll_interval_ms`` while jobs
run, or whenever there is new work) poll them and put the vectors of
finished ones in the embedding cache, where the ordinary pass finds them
and stores them without embedding anything. Meanwhile the chunks a job
holds are left to it, and every other chunk (new notes) embeds
synchronously as usual.

Invariants:

- The jobs are kept in the index's ``meta`` table (key `META_KEY`) with the
  identity they embed for, written before the next job is submitted, so a
  restarted daemon collects them instead of paying for them twice. Jobs of
  another identity (the model changed) are forgotten, not collected.
- A job that fails, expires, runs past ``timeout_minutes`` or cannot be
  polled is dropped with a warning: its texts are no longer held, and the
  synchronous path embeds them on the same pass.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

import apsw
import msgspec
import trio

from openmemoryd.embed import EmbeddingError, Vectors, to_blob
from openmemoryd.embed.remote.batch import BatchEmbedder, JobRecord
from openmemoryd.store.db import get_meta, set_meta
from openmemoryd.store.vectors import PendingChunk, cache_put

logger = logging.getLogger("openmemoryd.vectors")

T = TypeVar("T")

META_KEY: Final = "embedding_batch_jobs"


class _Lanes(Protocol):
    async def write(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def read(self, fn: Callable[..., T], *args: Any) -> T: ...


class _Saved(msgspec.Struct, frozen=True):
    identity: str
    jobs: list[JobRecord]


class BatchJobs:
    """The running jobs of one batcher, and the text hashes they hold."""

    def __init__(
        self, lanes: _Lanes, batcher: BatchEmbedder, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._lanes = lanes
        self._batcher = batcher
        self._clock = clock
        self.poll_interval_s = batcher.poll_interval_s
        self._loaded = False
        self._last_poll = -float("inf")
        self.identity = ""
        self.jobs: list[JobRecord] = []

    @property
    def held(self) -> frozenset[str]:
        """Text hashes some running job will embed."""
        return frozenset(digest for job in self.jobs for digest in job.hashes)

    def held_for(self, identity: str) -> frozenset[str]:
        """`held`, if the jobs embed for *identity* (a fallback is not held up)."""
        return self.held if identity == self.identity else frozenset()

    @property
    def slots(self) -> int:
        """Jobs that may be submitted now."""
        if not self._batcher.available:
            return 0
        return max(0, self._batcher.concurrency - len(self.jobs))

    async def collect_due(self, identity: str) -> None:
        """Poll the jobs (at most once per poll interval); cache what finished."""
        if not self._loaded:
            await self._load(identity)
        if self.jobs and self._clock() - self._last_poll >= self.poll_interval_s:
            self._last_poll = self._clock()
            await self._collect(identity)

    async def submit(self, identity: str, pending: Sequence[PendingChunk]) -> None:
        """Submit jobs for *pending* (chunks with no cached vector) while
        enough of them are not held by a job and a job slot is free."""
        held = self.held
        todo = [(p.hash, p.text) for p in _distinct(pending) if p.hash not in held]
        while len(todo) >= self._batcher.min_chunks and self.slots:
            try:
                record = await trio.to_thread.run_sync(
                    self._batcher.start_job, todo, abandon_on_cancel=True
                )
            except EmbeddingError as exc:
                logger.warning("batch job not submitted (%s); embedding synchronously", exc)
                return
            self.jobs.append(record)
            await self._save(identity)
            todo = todo[len(record.hashes) :]

    async def _collect(self, identity: str) -> None:
        for record in list(self.jobs):
            try:
                done, found, failures = await trio.to_thread.run_sync(
                    self._batcher.check_job, record, abandon_on_cancel=True
                )
            except EmbeddingError as exc:
                done, found, failures = True, {}, [f"its results are unusable: {exc}"]
            if not done:
                continue
            if found:
                await self._lanes.write(_cache_vectors, identity, found)
            if failures:
                logger.warning(
                    "batch job %s: %d of %d texts not embedded (%s); embedding them synchronously",
                    record.job,
                    len(record.hashes) - len(found),
                    len(record.hashes),
                    "; ".join(failures[:3]),
                )
            self.jobs.remove(record)
            await self._save(identity)

    async def _load(self, identity: str) -> None:
        text = await self._lanes.read(get_meta, META_KEY)
        self._loaded = True
        self.identity = identity
        if not text:
            return
        try:
            saved = msgspec.json.decode(text, type=_Saved)
        except msgspec.DecodeError as exc:
            logger.warning("forgetting unreadable batch job records: %s", exc)
            await self._save(identity)
            return
        if saved.identity != identity:
            logger.info("forgetting %d batch jobs of %s", len(saved.jobs), saved.identity)
            await self._save(identity)
            return
        self.jobs = list(saved.jobs)
        if self.jobs:
            logger.info("collecting %d batch jobs submitted before a restart", len(self.jobs))

    async def _save(self, identity: str) -> None:
        self.identity = identity
        text = msgspec.json.encode(_Saved(identity, self.jobs)).decode()
        await self._lanes.write(set_meta, META_KEY, text)


def _distinct(chunks: Sequence[PendingChunk]) -> list[PendingChunk]:
    return list({p.hash: p for p in chunks}.values())


def _cache_vectors(conn: apsw.Connection, identity: str, found: dict[str, Vectors]) -> None:
    """Put a finished job's vectors in the cache, where the next pass takes them."""
    dims = len(next(iter(found.values())))
    with conn:
        cache_put(conn, identity, dims, ((digest, to_blob(v)) for digest, v in found.items()))
