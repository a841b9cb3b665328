"""The ``doctor`` RPC: the checks run inside the daemon, on what it really uses.

The index is read under the engine's reader slots, the probe goes through
the engine's own query-embedding path (its embedder, its timeout), and the
watcher and indexing state come from the live syncer. So the answer
describes this daemon, not a guess about it from outside. Only the index
check opens a connection of its own (`Engine.read_fresh`): FTS5's check on
a pooled reader reports damage that is not there. Blocking looks at the
disk run in worker threads.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import apsw
import trio

from omem_protocol import PROTOCOL_VERSION, DoctorCheck, DoctorResult, StatusResult
from openmemoryd.config import Config, Overrides, load_config
from openmemoryd.doctor.files import (
    encodings_of_noted,
    files_check,
    noted_files,
    unreadable_paths,
)
from openmemoryd.doctor.index import inspect_index, sqlite_checks
from openmemoryd.doctor.paths import socket_check, state_dir_check, workspace_check
from openmemoryd.doctor.reload import reload_check
from openmemoryd.doctor.report import fail, finish, ok, secrets_of, warn
from openmemoryd.doctor.rerank import (
    FIX,
    PROBE_PASSAGE,
    PROBE_QUERY,
    default_without_model,
    probe_verdict,
)
from openmemoryd.doctor.rerank import NAME as RERANKER
from openmemoryd.doctor.runtime import (
    PROBE_TEXT,
    appends_check,
    embedder_off,
    probe_outcome,
    watcher_check,
)
from openmemoryd.embed import EmbeddingError
from openmemoryd.engine.journal_keeper import missing_report
from openmemoryd.engine.recovery import IndexDamaged
from openmemoryd.engine.status_report import embedding_status, workspace_status
from openmemoryd.errors import ConfigError

if TYPE_CHECKING:
    from openmemoryd.daemon_info import DaemonInfo
    from openmemoryd.engine import Engine


async def diagnose_engine(engine: Engine, info: DaemonInfo) -> DoctorResult:
    """Every check, against this daemon's engine and socket."""
    started = time.perf_counter()
    config = engine.config
    config_check = await trio.to_thread.run_sync(_config_check, config, info.pid)
    checks = [
        config_check,
        await trio.to_thread.run_sync(lambda: workspace_check(config.workspace, served=True)),
        await trio.to_thread.run_sync(state_dir_check, config.state_dir),
        await trio.to_thread.run_sync(socket_check, config.socket),
        ok(
            "daemon",
            f"openmemoryd {info.version} (pid {info.pid}, protocol {PROTOCOL_VERSION}, "
            f"up {time.monotonic() - info.started:.0f} s) answers on {info.socket}",
        ),
        await _index_check(engine),
        *await trio.to_thread.run_sync(sqlite_checks),
    ]
    reload = reload_check(info.config_issues, info.pid, file_loads=config_check.status == "ok")
    if reload is not None:
        checks.insert(1, reload)
    status = await workspace_status(engine, info)
    embedding = status.embedding or await embedding_status(engine)  # always there: not read twice
    checks.append(await _probe_embedder(engine, embedding.reason))
    if embedding.fallback_active:
        checks.append(
            warn(
                "embedding_fallback",
                f"the primary provider failed for good ({embedding.last_error}); "
                "vectors come from the fallback",
                f"fix [embedding.{config.embedding.provider}] and restart openmemoryd",
            )
        )
    if engine.rerank.enabled(config.search.rerank):
        checks.append(await _probe_reranker(engine))
    elif (off := default_without_model(config.search.rerank)) is not None:
        checks.append(off)
    checks.append(watcher_check(engine.syncer.statistics(), config))
    checks.append(await _files_check(engine, status))
    checks.append(appends_check(missing_report(engine)))
    return finish(checks, started, secrets_of(config, os.environ))


def _config_check(config: Config, pid: int) -> DoctorCheck:
    """The daemon runs with the config it last loaded; a file edited since
    then that no longer loads fails: the next start (a reboot, a crash)
    would not come up, however well this daemon serves now."""
    if config.config_path is None:
        return ok("config", "no config file: built-in defaults")
    try:
        load_config(Overrides(config=config.config_path))
    except ConfigError as exc:
        return fail(
            "config",
            f"{exc} (the daemon keeps the configuration it last loaded; "
            "openmemoryd would not start with this file)",
            f"edit {config.config_path}: correct what the message names "
            f"(docs/configuration.md), then reload (kill -HUP {pid} or "
            "systemctl --user reload openmemoryd)",
        )
    return ok("config", str(config.config_path))


async def _index_check(engine: Engine) -> DoctorCheck:
    """`inspect_index` on a connection opened for it, never a pooled one.

    A pooled reader that has run a keyword search keeps FTS5's segment map
    from then; once the writer has written (any append, a keyword merge),
    ``PRAGMA quick_check`` on it says the keyword index is corrupt while it
    is not, and the doctor told users to move a healthy index away. A new
    connection reads the index as it is, so what it reports is real.
    """
    path = engine.config.index_path
    try:
        return await engine.read_fresh(inspect_index, path)
    except IndexDamaged as exc:  # it failed to open: the engine is rebuilding it
        return fail(
            "index", str(exc), "wait for the rebuild (`omem-client status` shows it), then rerun"
        )
    except apsw.Error as exc:  # a reader that cannot even open
        return fail(
            "index",
            f"cannot read {path}: {exc}",
            "restart openmemoryd: an index it cannot open is moved aside and rebuilt",
        )


async def _files_check(engine: Engine, status: StatusResult) -> DoctorCheck:
    """The counts `status` gave, with the files it lists as issues."""
    try:
        noted = await engine.read(noted_files)
    except IndexDamaged:  # the index check says so
        noted = []
    unreadable = await trio.to_thread.run_sync(unreadable_paths, engine.policy)
    encodings = await trio.to_thread.run_sync(encodings_of_noted, engine.policy, noted)
    return files_check(
        status.sources,
        syncing=status.syncing,
        running=True,
        noted=noted,
        unreadable=unreadable,
        encodings=encodings,
    )


async def _probe_reranker(engine: Engine) -> DoctorCheck:
    """The engine's own reranker, built as a search would build it, scores a probe."""
    reranker, error = await engine.rerank.current(engine.config.search.rerank)
    if reranker is None:
        return fail(RERANKER, error or "the reranker could not be built", FIX)
    begun = time.perf_counter()
    try:
        await reranker.rerank(PROBE_QUERY, [PROBE_PASSAGE])
    except Exception as exc:  # whatever stops the probe is this check's finding
        return probe_verdict(reranker, begun, exc)
    return probe_verdict(reranker, begun, None)


async def _probe_embedder(engine: Engine, reason: str | None) -> DoctorCheck:
    if engine.vectors is None:
        return embedder_off(engine.config.embedding, reason or "unknown")
    embedder = engine.vectors.embedder
    begun = time.perf_counter()
    try:
        vector = await engine.embed_query(PROBE_TEXT)
    except EmbeddingError as exc:
        return probe_outcome(embedder, begun, exc)
    return probe_outcome(embedder, begun, vector)
