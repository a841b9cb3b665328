"""``openmemoryd doctor``: the checks from outside, daemon or no daemon.

The configuration is loaded exactly as ``openmemoryd run`` would load it
(same flags, same environment), so a config that would stop the daemon from
starting fails here with the loader's own message. When a daemon answers on
the socket, its ``status`` supplies what only it knows (the watcher, the
indexing progress); the rest is looked at directly, read-only, and the
embedder is built afresh with retries off, so a dead endpoint fails the probe
in seconds rather than after the daemon's backoff schedule.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import apsw
import msgspec

from omem_client import Client, DaemonNotRunning, OmemError
from omem_protocol import DoctorCheck, DoctorResult, StatusResult, __version__, default_config_path
from openmemoryd.config import Config, Overrides, load_config, locate_socket
from openmemoryd.doctor.files import (
    encodings_of_noted,
    files_check,
    noted_files,
    unreadable_paths,
)
from openmemoryd.doctor.index import open_index_check, sqlite_checks
from openmemoryd.doctor.paths import socket_check, state_dir_check, workspace_check
from openmemoryd.doctor.reload import reload_check
from openmemoryd.doctor.report import fail, finish, ok, secrets_of, warn
from openmemoryd.doctor.rerank import reranker_check
from openmemoryd.doctor.runtime import (
    PROBE_TEXT,
    appends_check,
    embedder_off,
    inotify_check,
    probe_outcome,
    watcher_check,
)
from openmemoryd.embed.registry import choose_embedder
from openmemoryd.engine.counts import count_sources
from openmemoryd.errors import ConfigError
from openmemoryd.store import IndexedFile, source_totals
from openmemoryd.workspace import PathPolicy, SessionLocator, scan_memory_files

PROBE_TIMEOUT_S = 10.0
STATUS_TIMEOUT_S = 10.0
_START = "openmemoryd run (or systemctl --user start openmemoryd)"


def diagnose(overrides: Overrides, environ: Mapping[str, str]) -> DoctorResult:
    """Run every check; only the configuration's failure stops the rest,
    since every other check needs the paths it names."""
    started = time.perf_counter()
    try:
        config = load_config(overrides, environ)
    except ConfigError as exc:
        return finish(_broken_config(overrides, environ, exc), started, [])
    where = config.config_path or "no config file: built-in defaults"
    daemon, status = _daemon_check(config)  # first: a served workspace is judged apart
    reload = None if status is None else reload_check(status.issues, status.pid, file_loads=True)
    checks = [
        ok("config", str(where)),
        *([] if reload is None else [reload]),
        workspace_check(config.workspace, served=status is not None),
        state_dir_check(config.state_dir),
        socket_check(config.socket),
        daemon,
    ]
    index, conn = open_index_check(config.index_path)
    checks.append(index)
    try:
        checks.extend(sqlite_checks())
        checks.append(_probe_embedder(config, environ))
        reranker = reranker_check(config.search.rerank, environ, PROBE_TIMEOUT_S)
        if reranker is not None:
            checks.append(reranker)
        if status is not None:
            if status.sync is not None:
                checks.append(watcher_check(status.sync, config))
            noted = _noted(conn)
            checks.append(
                files_check(
                    status.sources,
                    syncing=status.syncing,
                    running=True,
                    noted=noted,
                    unreadable=unreadable_paths(_policy(config)),
                    encodings=encodings_of_noted(_policy(config), noted),
                )
            )
            checks.append(appends_check(status.issues))
        else:
            checks.append(inotify_check(config))
            if conn is not None:
                checks.append(_files_on_disk(config, conn))
    finally:
        if conn is not None:
            conn.close()
    return finish(checks, started, secrets_of(config, environ))


def _broken_config(
    overrides: Overrides, environ: Mapping[str, str], error: ConfigError
) -> list[DoctorCheck]:
    """The config does not load: that check fails, and the others need its
    paths. A daemon may still run with the config it loaded before the file
    broke (a reload keeps it), found on the socket as `openmemoryd stop`
    finds it: then say so, and what its last reload left to tell."""
    path = overrides.config or default_config_path(environ)
    fix = f"edit {path}: correct the setting the message names (docs/configuration.md); "
    socket = locate_socket(overrides, environ).path
    try:
        with Client(socket, timeout=STATUS_TIMEOUT_S, name="openmemoryd-doctor") as client:
            status = client.status()
    except OmemError:  # none there, or not one to trust: nothing more to say
        return [
            fail("config", str(error), fix + "the other checks need a configuration that loads")
        ]
    reload = f"kill -HUP {status.pid} or systemctl --user reload openmemoryd"
    checks = [
        fail("config", str(error), f"{fix}then reload the daemon ({reload})"),
        ok(
            "daemon",
            f"openmemoryd {status.daemon_version} (pid {status.pid}) answers on {status.socket}"
            ", with the config it loaded before the file broke; it would not start again "
            "with this file (openmemoryd stop still stops it)",
        ),
    ]
    seen = reload_check(status.issues, status.pid, file_loads=False)
    return checks if seen is None else [*checks, seen]


def _daemon_check(config: Config) -> tuple[DoctorCheck, StatusResult | None]:
    """Does a daemon answer on the socket, and is it the one this config runs?"""
    name = "daemon"
    try:
        with Client(config.socket, timeout=STATUS_TIMEOUT_S, name="openmemoryd-doctor") as client:
            status = client.status()
    except DaemonNotRunning:
        return warn(name, f"not running (nothing answers on {config.socket})", _START), None
    except OmemError as exc:  # refused, wrong protocol, or an error reply
        return fail(name, f"{config.socket}: {exc}", f"restart openmemoryd: {_START}"), None
    running = f"openmemoryd {status.daemon_version} (pid {status.pid}) answers on {status.socket}"
    if status.workspace_path != str(config.workspace):
        return warn(
            name,
            f"{running}, serving {status.workspace_path}, not {config.workspace}",
            "check OPENMEMORY_WORKSPACE / --workspace: this shell and the daemon disagree",
        ), status
    if status.daemon_version != __version__:
        return warn(
            name,
            f"{running}; the installed version is {__version__}",
            "restart openmemoryd to run the installed version",
        ), status
    return ok(name, running), status


def _probe_embedder(config: Config, environ: Mapping[str, str]) -> DoctorCheck:
    quick = msgspec.structs.replace(
        config.embedding,
        max_retries=0,
        timeout_s=min(config.embedding.timeout_s, PROBE_TIMEOUT_S),
    )
    choice = choose_embedder(quick, environ)
    embedder = choice.embedder
    if embedder is None:
        return embedder_off(config.embedding, choice.reason)
    begun = time.perf_counter()
    try:
        return probe_outcome(embedder, begun, embedder.embed_query(PROBE_TEXT))
    except Exception as exc:  # whatever stops the probe is this check's finding
        return probe_outcome(embedder, begun, exc)
    finally:
        embedder.close()


def _policy(config: Config) -> PathPolicy:
    return PathPolicy(config.workspace, config.extra_paths)


def _noted(conn: apsw.Connection | None) -> list[IndexedFile]:
    """The index's noted files; none when it cannot be read (its check says why)."""
    if conn is None:
        return []
    try:
        return noted_files(conn)
    except apsw.Error:
        return []


def _files_on_disk(config: Config, conn: apsw.Connection) -> DoctorCheck:
    """No daemon to ask: scan the disk and read the index's totals."""
    scan = scan_memory_files(_policy(config))
    sessions = (
        SessionLocator(config.sessions_dir, config.session_paths).scan()
        if config.sessions.enabled
        else {}
    )
    try:
        totals = source_totals(conn)
    except apsw.Error as exc:
        return fail("files", f"cannot read the index: {exc}", "see the index check above")
    noted = _noted(conn)
    return files_check(
        count_sources(scan, sessions, totals),
        syncing=False,
        running=False,
        noted=noted,
        unreadable=scan.issues,
        encodings=encodings_of_noted(_policy(config), noted),
    )
