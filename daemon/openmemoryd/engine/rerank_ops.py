"""The engine's reranker: built on first use, rebuilt when the settings change.

``[search]`` is reloadable (SIGHUP), so the reranker follows
``search.rerank`` as it is at each search rather than as it was at start:
a changed section closes the old client and builds a new one. Building is
done in a worker thread (an httpx client loads the CA bundle, too slow for
the event loop) and at most once at a time.

``auto`` where the local model is not installed is no reranker and no
failure: searches keep the fused order quietly. A reranker that cannot be
built (a hosted API and no key, a bad base URL, ``local`` without its
package) does not fail searches any more than one that fails to answer: each search
keeps its fused order and the reason is the status issue, until a search
reranks again or reranking is turned off.

The local model runs on the daemon's own cores, so it is spent only on a
search that no other search overlaps (`searching` counts them): agents
searching at once get the fused order at once instead of queueing for the
model and slowing each other (docs/benchmarks.md, "The cross-encoder under
load"). A service is asked whatever runs beside it.

What became of each search at the stage is counted (`status`): how many
the model re-ordered, how many the fusion was sure of, how many were held
back for others, how many it does not apply to, how many failed.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import trio

from omem_protocol import RerankStatus
from openmemoryd.config import RerankSettings
from openmemoryd.errors import ConfigError
from openmemoryd.search.candidate import Candidate
from openmemoryd.search.rerank import (
    Reranker,
    RerankNote,
    RerankOutcome,
    build_reranker,
    local_model_installed,
    rerank_candidates,
    reranker_model,
)

logger = logging.getLogger("openmemoryd.rerank")


class RerankSlot:
    """The current reranker of one engine and the last thing it went wrong with."""

    def __init__(self) -> None:
        self._lock = trio.Lock()
        self._settings: RerankSettings | None = None
        self._reranker: Reranker | None = None
        self._build_error: str | None = None
        self.last_error: str | None = None  # the latest search's failure, if it failed
        self._local_installed: bool | None = None
        self._searching = 0  # searches between `searching()`'s enter and exit
        self._outcomes: Counter[RerankOutcome] = Counter()  # since the daemon started

    @contextmanager
    def searching(self) -> Iterator[None]:
        """Count a search in flight for as long as it runs (the local model
        is spent only on a search that has the daemon to itself)."""
        self._searching += 1
        try:
            yield
        finally:
            self._searching -= 1

    def enabled(self, settings: RerankSettings) -> bool:
        """Whether searches go through the rerank stage at all (`auto`: only
        where the local model is installed, looked up once per engine)."""
        if settings.provider == "auto":
            if self._local_installed is None:
                self._local_installed = local_model_installed()
            return self._local_installed
        return settings.provider != "none"

    async def rerank(
        self,
        settings: RerankSettings,
        query: str,
        candidates: Sequence[Candidate],
        *,
        calibrated: bool = False,
    ) -> tuple[list[Candidate], RerankNote]:
        """*candidates* re-ordered by the configured reranker (unchanged if it fails);
        *calibrated*: their scores are calibrated fusion's estimates."""
        reordered, note = await self._rerank(settings, query, candidates, calibrated)
        self._outcomes[note.outcome] += 1
        return reordered, note

    def status(self, settings: RerankSettings) -> RerankStatus:
        """The stage as `status` shows it: what runs, and what became of the searches."""
        if not self.enabled(settings):
            off = (
                "no local reranker is installed"
                if settings.provider == "auto"
                else "search.rerank.provider is none"
            )
            model = None
        else:
            model, off = reranker_model(settings), None
        counts = self._outcomes
        return RerankStatus(
            provider=settings.provider,
            model=model,
            off=off,
            reranked=counts["reranked"],
            confident=counts["confident"],
            held_back=counts["held_back"],
            not_applicable=counts["not_applicable"],
            failed=counts["failed"],
        )

    async def _rerank(
        self,
        settings: RerankSettings,
        query: str,
        candidates: Sequence[Candidate],
        calibrated: bool,
    ) -> tuple[list[Candidate], RerankNote]:
        reranker = await self._current(settings)
        weight = settings.plan().weight
        if reranker is None and self._build_error is None:  # `auto` without the local model
            why = "no local reranker is installed"
            return list(candidates), RerankNote(
                settings.provider, "", 0, weight, error=why, outcome="not_applicable"
            )
        if reranker is None:
            error = self._build_error or "reranking is off"
            logger.warning("reranking skipped: %s", error)
            note = RerankNote(
                settings.provider, settings.model, 0, weight, error=error, outcome="failed"
            )
            self.last_error = error
            return list(candidates), note
        held_back = None
        others = self._searching - 1
        if others > 0 and reranker.in_process:
            # The model takes both cores for a fraction of a second: spent on
            # one search while others run, it slows them all (docs/benchmarks.md,
            # "The cross-encoder under load").
            held_back = f"{others} other search{'es' if others > 1 else ''} running"
        reordered, note = await rerank_candidates(
            reranker, query, candidates, settings, calibrated=calibrated, held_back=held_back
        )
        if not note.skipped:  # a question the model does not read is no failure
            self.last_error = note.error
        return reordered, note

    async def current(self, settings: RerankSettings) -> tuple[Reranker | None, str | None]:
        """The reranker searches use under *settings* (built if need be), or why none."""
        reranker = await self._current(settings)
        return reranker, self._build_error

    def issue(self, settings: RerankSettings) -> str | None:
        """The status line when reranking is configured but not working."""
        if not self.enabled(settings) or self.last_error is None:
            return None
        return f"search reranking failed, results keep the fused order: {self.last_error}"

    async def aclose(self) -> None:
        async with self._lock:
            reranker, self._reranker, self._settings = self._reranker, None, None
        if reranker is not None:
            await trio.to_thread.run_sync(reranker.close)

    async def _current(self, settings: RerankSettings) -> Reranker | None:
        async with self._lock:
            if settings != self._settings:
                old, self._reranker, self._build_error = self._reranker, None, None
                if old is not None:
                    await trio.to_thread.run_sync(old.close)
                try:
                    self._reranker = await trio.to_thread.run_sync(
                        build_reranker, settings, os.environ
                    )
                except ConfigError as exc:
                    self._build_error = str(exc)
                self._settings = settings
            return self._reranker
