"""``openmemoryd index``: bring the index up to date now, daemon running or not.

With a daemon answering on the socket, the index is its to change: the
command asks it to sync (``omem-client sync``'s call) and prints the result.
Without one, it opens the workspace's index itself, syncs the Markdown into
it, waits until every chunk has its vector (with the configured embedder;
the wait is shown on a terminal), and closes it: the next daemon starts
from a complete index. Both paths print the same summary.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import trio

from omem_client import Client, DaemonNotRunning, OmemError
from omem_protocol import SyncResult
from openmemoryd.config import Config
from openmemoryd.engine import open_engine
from openmemoryd.errors import OmemdError

POLL_S = 0.5


def index_now(config: Config, *, full: bool) -> tuple[int, list[str]]:
    """(exit code, lines to print) after syncing through the daemon or alone."""
    done = index_by_daemon(config.socket, full=full)
    if done is not None:
        return done
    if not config.workspace.is_dir():
        return 1, [
            f"openmemoryd index: there is no workspace at {config.workspace}; "
            "openmemoryd init creates one (or openmemoryd start, on first start)"
        ]
    try:
        result, vectors = trio.run(_index_alone, config, full, _reporter())
    except OmemdError as exc:
        return 1, [f"openmemoryd index: {exc}"]
    return 0, [*summary(result, "with no daemon running"), vectors]


def index_by_daemon(socket: Path, *, full: bool) -> tuple[int, list[str]] | None:
    """(exit code, lines to print) from the daemon on *socket*; None when
    none runs. Needs no config: the daemon syncs with its own, so this works
    while the config file is broken."""
    try:
        with Client(socket, timeout=None) as client:
            result = client.sync(full=full)
        return 0, summary(result, "by the running daemon")
    except DaemonNotRunning:
        return None
    except OmemError as exc:
        return 1, [f"openmemoryd index: {exc}"]


def summary(result: SyncResult, how: str) -> list[str]:
    lines = [
        f"Indexed {how}: {_count(result.scanned, 'file')} scanned, {result.added} added, "
        f"{result.updated} updated, {result.removed} removed, {result.unchanged} unchanged; "
        f"{_count(result.chunks, 'chunk')} written in {result.took_ms / 1000:.1f} s"
    ]
    lines += [f"  {issue}" for issue in result.issues]
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


async def _index_alone(
    config: Config, full: bool, report: Callable[[int, int], None]
) -> tuple[SyncResult, str]:
    async with open_engine(config) as engine:
        result = await engine.sync(full=full, reason="index")
        if engine.vectors is None:
            return result, "Vectors: off (keyword search only)"
        started = time.monotonic()
        while True:
            status = await engine.vectors.status()
            report(status.embedded, status.total)
            if status.state == "failing":
                return result, f"Vectors: {status.embedded}/{status.total}, failing: " + (
                    status.last_error or "unknown error"
                )
            if status.embedded >= status.total and status.state == "idle":
                took = time.monotonic() - started
                return result, f"Vectors: {status.total} chunks embedded ({took:.1f} s)"
            await trio.sleep(POLL_S)


def _reporter() -> Callable[[int, int], None]:
    """Progress on stderr when it is a terminal; nothing otherwise (scripts, logs)."""
    if not sys.stderr.isatty():
        return lambda done, total: None

    def report(done: int, total: int) -> None:
        sys.stderr.write(f"\rembedding {done}/{total} chunks")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return report
