"""Many clients asking for a sync at once, through the real daemon.

A sync request made before a pass starts scanning is answered by that pass;
one made while a pass runs is answered by the next. So a burst of N
explicit syncs costs the running pass plus one more, not N passes in a row,
and every client still gets a complete, successful result.
"""

from __future__ import annotations

import re
import threading

import pytest

from bench.corpus import generate_workspace
from conftest import Daemon, Env
from omem_protocol import SyncResult

pytestmark = pytest.mark.e2e

CLIENTS = 8
PASS_LINE = re.compile(r"sync \(([^)]*explicit[^)]*)\): (\d+) scanned.* for (\d+) request\(s\)")


def test_a_burst_of_sync_requests_coalesces(env: Env) -> None:
    generate_workspace(env.workspace, 400, seed=11, needles=0)
    daemon = Daemon(env).start()
    try:
        with daemon.client() as client:
            client.sync()  # the startup pass is done; what follows is the burst
        log_start = len(daemon.log())
        start = threading.Barrier(CLIENTS)
        results: list[SyncResult] = []
        errors: list[BaseException] = []

        def ask() -> None:
            try:
                with daemon.client() as client:
                    start.wait()
                    results.append(client.sync())
            except BaseException as exc:  # reported below, not lost in the thread
                errors.append(exc)

        threads = [threading.Thread(target=ask) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        assert len(results) == CLIENTS
        files = len(list(env.workspace.rglob("*.md")))
        assert all(result.scanned == files for result in results)
        passes = [
            (int(scanned), int(requests))
            for _, scanned, requests in PASS_LINE.findall(daemon.log()[log_start:])
        ]
    finally:
        daemon.stop()
    assert sum(requests for _, requests in passes) == CLIENTS
    # the first request's pass, one shared pass for those that came while it
    # ran, and at most one more for a straggler the scheduler let in late
    assert len(passes) <= 3, passes
