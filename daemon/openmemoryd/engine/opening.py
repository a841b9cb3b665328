"""Opening an engine on a workspace: its index, its embedder, and the
background work (vector indexing, the watcher and sync queue, the append
journal's keeper, the keyword index's merger, a rebuild for new chunking)
that runs while it is open."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import trio

from openmemoryd.config import Config
from openmemoryd.embed import Embedder
from openmemoryd.embed.registry import Choice, choose_embedder, choose_fallback
from openmemoryd.engine.engine import Engine
from openmemoryd.engine.journal_keeper import keep_journal
from openmemoryd.engine.rebuild import needs_rebuild
from openmemoryd.engine.recovery import IndexDamaged
from openmemoryd.store import open_index
from openmemoryd.store.vectors import warm_active_sign_bits

__all__ = ["open_engine"]

logger = logging.getLogger("openmemoryd.engine")


@asynccontextmanager
async def open_engine(
    config: Config,
    environ: Mapping[str, str] | None = None,
    *,
    choice: Choice | None = None,
    fallback: Embedder | None = None,
) -> AsyncIterator[Engine]:
    """Open the workspace's index and its embedder; vector indexing and the
    file watcher run in the background while the engine is open. Everything
    is closed (shielded) on exit.

    The embedder comes from the configuration unless *choice* (and
    *fallback*) are given, e.g. by a program embedding the engine with a
    provider of its own.
    """
    opened = await trio.to_thread.run_sync(
        lambda: open_index(config.index_path, workspace=config.workspace)
    )
    if config.sessions.enabled:
        config.sessions_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = os.environ if environ is None else environ
    if choice is None:
        choice = choose_embedder(config.embedding, env)
        if choice.embedder is not None:
            fallback = choose_fallback(config.embedding, env)
    engine = Engine(config, opened, choice, fallback)
    try:
        async with trio.open_nursery() as background:
            await background.start(engine.health.serve)
            if engine.vectors is not None:
                await background.start(engine.vectors.serve)
            try:
                rebuild = await engine.write(needs_rebuild, config.index)
            except IndexDamaged:
                rebuild = False  # the repair rebuilds it with the current chunking anyway
            if rebuild:
                logger.info("the chunking changed: rebuilding the index in the background")
                background.start_soon(engine.rebuild_in_background)
            await background.start(engine.syncer.serve)
            background.start_soon(keep_journal, engine)
            background.start_soon(engine.access.serve, engine.write)
            background.start_soon(engine.keyword_merger.serve, engine)
            if engine.vectors is not None:
                background.start_soon(_warm_sign_bits, engine)
            yield engine
            engine.syncer.stop()
            background.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(30):
            await engine.aclose()
        for embedder in (choice.embedder, fallback):
            if embedder is not None:
                await trio.to_thread.run_sync(embedder.close)


async def _warm_sign_bits(engine: Engine) -> None:
    """Load the sign bits the quantised vector leg scans in memory now, in
    the background, rather than in the first search (seconds at 1M chunks)."""
    try:
        if await engine.read(warm_active_sign_bits, engine.config.search.quantised_above):
            logger.info("sign bits of the vector table loaded for quantised search")
    except Exception:  # the first search loads them, and reports any error
        logger.exception("loading the sign bits for quantised search failed")
