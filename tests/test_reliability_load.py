"""Reliability under load: many clients at once, and one that never reads.

The daemon serves every agent of a machine, so one misbehaving client (a
stuck agent that keeps sending requests but never reads a reply) must only
slow itself down, and a crowd of well-behaved ones must all be served,
without errors, in bounded time and memory.

Scale with ``OMEM_LOAD_CLIENTS`` × ``OMEM_LOAD_REQUESTS`` (the issue's figure
is 64 × 500; CI runs 64 × 60).
"""

from __future__ import annotations

import random
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.corpus import generate_workspace, sample_queries
from conftest import Daemon, Env
from omem_client import Client, OmemError
from omem_protocol import (
    PROTOCOL_VERSION,
    GetParams,
    Hello,
    Request,
    SearchParams,
    SyncParams,
    encode_message,
)
from reliability_support import knob, letters, rss_kib

pytestmark = pytest.mark.e2e

CLIENTS = knob("OMEM_LOAD_CLIENTS", 64)
REQUESTS = knob("OMEM_LOAD_REQUESTS", 60)
WARMUP = 10  # requests per client before the memory baseline is taken
SHARED_FILES = 8  # appends of all clients land in this many files


def fill_unread_replies(env: Env, big: str, gets: int) -> socket.socket:
    """A client that asks for *gets* copies of a large file and reads none:
    the socket's buffers fill up and the daemon's sends to it block."""
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.connect(str(env.socket))
    stuck.sendall(encode_message(Hello(protocol=PROTOCOL_VERSION)))
    for request_id in range(1, gets + 1):
        stuck.sendall(encode_message(Request(id=request_id, body=GetParams(path=big))))
    return stuck


def test_a_client_that_never_reads_does_not_stall_other_clients_syncs(daemon: Daemon) -> None:
    # A full sync reports progress while it holds the index's sync lock. If
    # sending that progress to a client that does not read blocks, the lock
    # is never released, and every other sync (explicit, watcher, interval)
    # waits forever behind it.
    big = "memory/big.md"
    (daemon.env.workspace / big).write_text("a long note about nothing in particular\n" * 3000)
    with daemon.client() as client:
        client.sync()
    stuck = fill_unread_replies(daemon.env, big, gets=6)  # ~700 KB of replies nobody reads
    try:
        time.sleep(0.3)
        stuck.sendall(encode_message(Request(id=100, body=SyncParams(full=True))))
        time.sleep(0.3)
        (daemon.env.workspace / "memory" / "later.md").write_text("the heron count was 41\n")
        with daemon.client(timeout=15) as other:
            started = time.monotonic()
            result = other.sync()
            took = time.monotonic() - started
            assert result.added == 1
            assert took < 10, f"another client's sync waited {took:.1f} s"
            assert other.search("heron").results[0].path == "memory/later.md"
    finally:
        stuck.close()


# ---------------------------------------------------------------- the crowd


@dataclass
class Tally:
    """What the crowd saw; lists are appended to from many threads (atomic in CPython)."""

    latencies: list[tuple[str, float]] = field(default_factory=list)  # kind, seconds
    errors: list[str] = field(default_factory=list)
    acked: list[tuple[str, str]] = field(default_factory=list)  # path, marker
    misses: list[str] = field(default_factory=list)


class Agent(threading.Thread):
    """One well-behaved client: a seeded mix of search, append, get, status, sync."""

    def __init__(
        self,
        number: int,
        socket_path: Path,
        files: list[str],
        tally: Tally,
        warm: threading.Barrier,
    ) -> None:
        super().__init__(name=f"agent-{number}", daemon=True)
        self.number = number
        self.socket_path = socket_path
        self.files = files
        self.tally = tally
        self.warm = warm
        self.rng = random.Random(number)
        self.queries = sample_queries(20, seed=number)

    def run(self) -> None:
        try:
            with Client(self.socket_path, timeout=60) as client:
                for i in range(REQUESTS):
                    if i == WARMUP:
                        self.warm.wait(timeout=120)
                    self.one_request(client, i)
        except (OmemError, AssertionError, threading.BrokenBarrierError) as exc:
            self.tally.errors.append(f"{self.name}: {type(exc).__name__}: {exc}")
            self.warm.abort()

    def one_request(self, client: Client, i: int) -> None:
        rng = self.rng
        (kind,) = rng.choices(
            ["search", "append", "get", "status", "sync"], weights=[45, 25, 15, 12, 3]
        )
        started = time.perf_counter()
        if kind == "search":
            client.search(rng.choice(self.queries))
        elif kind == "append":
            path = f"memory/load-{self.number % SHARED_FILES}.md"
            marker = letters(self.number * 100_000 + i, prefix="zqload", width=6)
            result = client.append(f"agent {self.number} step {i} {marker}", path=path)
            assert result.indexed
            self.tally.acked.append((path, marker))
        elif kind == "get":
            got = client.get(rng.choice(self.files), from_line=1, lines=20)
            assert got.text
        elif kind == "status":
            assert client.status().files_on_disk >= len(self.files)
        else:
            client.sync()
        self.tally.latencies.append((kind, time.perf_counter() - started))
        if kind == "append" and rng.random() < 0.3:  # read-your-writes under load
            hits = client.search(marker).results
            if not any(marker in hit.snippet for hit in hits):
                self.tally.misses.append(marker)


class NeverReads(threading.Thread):
    """Sends searches and syncs as fast as the socket takes them; reads nothing."""

    def __init__(self, socket_path: Path) -> None:
        super().__init__(name="never-reads", daemon=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(socket_path))
        self.sent = 0
        self.last_progress = time.monotonic()

    def run(self) -> None:
        query = " ".join(sample_queries(40, seed=999))  # long queries: replies fill buffers fast
        try:
            self.sock.sendall(encode_message(Hello(protocol=PROTOCOL_VERSION)))
            while True:
                self.sent += 1
                body = SyncParams() if self.sent % 10 == 0 else SearchParams(query=query, limit=20)
                self.sock.sendall(encode_message(Request(id=self.sent, body=body)))
                self.last_progress = time.monotonic()
        except OSError:
            return  # closed by the test at the end

    def stuck_for(self) -> float:
        return time.monotonic() - self.last_progress


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def ms(values: list[float], share: float) -> str:
    return f"{percentile(values, share) * 1000:.0f} ms"


@pytest.fixture
def corpus_daemon(env: Env) -> Iterator[tuple[Daemon, list[str]]]:
    stats = generate_workspace(env.workspace, 300, seed=7)
    files = sorted(p.relative_to(env.workspace).as_posix() for p in env.workspace.rglob("*.md"))
    assert len(files) == stats.files
    daemon = Daemon(env).start()
    try:
        yield daemon, files
    finally:
        daemon.stop()


@pytest.mark.slow
def test_many_clients_and_one_that_never_reads(
    corpus_daemon: tuple[Daemon, list[str]],
) -> None:
    daemon, files = corpus_daemon
    assert daemon.proc is not None
    pid = daemon.proc.pid
    with daemon.client() as client:
        client.sync()
    slow = NeverReads(daemon.env.socket)
    tally = Tally()
    warm = threading.Barrier(CLIENTS + 1)
    agents = [Agent(n, daemon.env.socket, files, tally, warm) for n in range(CLIENTS)]
    started = time.monotonic()
    slow.start()
    for agent in agents:
        agent.start()
    try:
        warm.wait(timeout=120)
        rss_warm = rss_kib(pid)
        rss_peak = rss_warm
        while any(agent.is_alive() for agent in agents):
            rss_peak = max(rss_peak, rss_kib(pid))
            time.sleep(0.1)
        took = time.monotonic() - started
        rss_end = rss_kib(pid)
        stuck_for = slow.stuck_for()
    except threading.BrokenBarrierError:
        pass  # an agent failed during warm-up: its error is asserted below
    finally:
        slow.sock.shutdown(socket.SHUT_RDWR)  # wakes its blocked sendall (close alone would not)
        slow.join(10)
        slow.sock.close()
        for agent in agents:
            agent.join(120)

    assert tally.errors == []
    assert tally.misses == []
    assert len(tally.latencies) == CLIENTS * REQUESTS
    seconds = [s for _, s in tally.latencies]
    interactive = [s for kind, s in tally.latencies if kind != "sync"]
    syncs = [s for kind, s in tally.latencies if kind == "sync"]
    print(
        f"\nload: {CLIENTS}x{REQUESTS} requests in {took:.1f} s; p50 {ms(seconds, 0.5)},"
        f" p99 {ms(seconds, 0.99)}; without syncs p99 {ms(interactive, 0.99)},"
        f" max {ms(interactive, 1)}; syncs p99 {ms(syncs, 0.99)}; RSS KiB warm {rss_warm}"
        f" peak {rss_peak} end {rss_end}; the slow client sent {slow.sent} requests and"
        f" was blocked for the last {stuck_for:.1f} s"
    )
    # Fair service. Searches, gets, statuses and appends measured p99 0.1-0.5 s
    # here (2 cores, 64 clients; appends fsync); 2 s leaves 4x headroom, while
    # a starved client would wait out its 60 s timeout. Syncs are serialised
    # by design (one pass at a time), so they queue behind each other: the
    # bound for them, and for the overall p99 they dominate, is that of a
    # queue of every client's sync, not of one request (measured p99 4.4 s
    # at 64 x 60, 11 s at 64 x 500).
    assert percentile(interactive, 0.99) < 2.0
    assert percentile(seconds, 0.99) < 30.0
    # Backpressure: the daemon stopped reading the slow client (its sends
    # blocked for good) instead of reading on and buffering its replies.
    assert stuck_for > 1.0
    # Bounded memory. After warm-up the daemon may still grow the page caches
    # of its five SQLite connections (2 MiB each by default) and its
    # allocator pools; measured +2.4 MiB at 64 x 60 and +7.5 MiB at 64 x 500.
    # 32 MiB catches a leak per request (3,840 of them) of 8 KiB or more.
    assert rss_end - rss_warm < 32 * 1024
    assert rss_peak - rss_warm < 48 * 1024

    # Nothing acknowledged was lost or doubled.
    contents = {
        path: (daemon.env.workspace / path).read_text()
        for path in {path for path, _ in tally.acked}
    }
    for path, marker in tally.acked:
        assert len(re.findall(rf"\b{marker}\b", contents[path])) == 1, marker
    with daemon.client() as client:
        assert client.status().files_indexed == len(files) + len(contents)
