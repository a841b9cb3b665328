"""The client side of `bench.load`: who does what, and running them all at once.

`plan_ops` deals a fixed, seeded list of operations to N clients. Each client
(`run_ops`) opens its own `Client` connection and handshakes, waits at a
barrier, then runs its ops one at a time, timing each on the system-wide
monotonic clock so that processes can be compared; a failed op is recorded,
never raised. `run_clients` runs every client as a process (``spawn``, so the
clients' Python never shares a GIL) or as a thread of this process, and
returns their outcomes and the moment the barrier released them.
"""

from __future__ import annotations

import multiprocessing
import queue
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from bench.corpus import sample_queries
from omem_client import Client, OmemError

__all__ = ["APPEND", "SEARCH", "Op", "WorkerOutcome", "plan_ops", "run_clients", "run_ops"]

QUERY_POOL: Final = 500
BARRIER_TIMEOUT_S: Final = 120.0
RESULT_TIMEOUT_S: Final = 900.0
CLIENT_TIMEOUT_S: Final = 120.0
SEARCH, APPEND = 0, 1

# One op: (kind, text); kind SEARCH with a query or APPEND with a note.
Op = tuple[int, str]


def _word(rng: random.Random) -> str:
    """A token no corpus text contains (the corpus has no 'zq' pairs)."""
    return "zq" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(10))


def plan_ops(ops: int, clients: int, append_share: float, seed: int) -> list[list[Op]]:
    """Each client's op list: exactly ``round(ops * append_share)`` appends in all,
    shuffled with *seed* and dealt round-robin."""
    rng = random.Random(f"openmemory-bench-load:{seed}")
    appends = round(ops * append_share)
    kinds = [APPEND] * appends + [SEARCH] * (ops - appends)
    rng.shuffle(kinds)
    queries = sample_queries(QUERY_POOL, seed=seed)
    plans: list[list[Op]] = [[] for _ in range(clients)]
    for i, kind in enumerate(kinds):
        if kind == SEARCH:
            op: Op = (SEARCH, rng.choice(queries))
        else:
            op = (APPEND, f"- load bench note {i}: deploy checklist reviewed, {_word(rng)}")
        plans[i % clients].append(op)
    return plans


@dataclass
class WorkerOutcome:
    """One client's timings: (kind, start ns, duration ns, ok) per op, on the
    system-wide monotonic clock so processes can be compared."""

    records: list[tuple[int, int, int, bool]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cpu_s: float = 0.0
    keyword_replies: int = 0
    setup_error: str | None = None


def run_ops(
    socket: str, ops: Sequence[Op], append_path: str, wait: Callable[[], object], cpu: str
) -> WorkerOutcome:
    """Connect, pass the barrier, run *ops* one by one; never raises for a failed op."""
    clock = time.process_time if cpu == "process" else time.thread_time
    outcome = WorkerOutcome()
    try:
        client = Client(socket, timeout=CLIENT_TIMEOUT_S, name="bench-load")
        client.connect()
    except OmemError as exc:
        outcome.setup_error = f"{type(exc).__name__}: {exc}"
        wait()
        return outcome
    with client:
        wait()
        cpu_start = clock()
        for kind, text in ops:
            started = time.monotonic_ns()
            try:
                if kind == SEARCH:
                    reply = client.search(text)
                    outcome.keyword_replies += reply.mode != "hybrid" or reply.degraded
                else:
                    client.append(text, path=append_path)
            except OmemError as exc:
                outcome.records.append((kind, started, time.monotonic_ns() - started, False))
                outcome.errors.append(f"{type(exc).__name__}: {exc}")
                continue
            outcome.records.append((kind, started, time.monotonic_ns() - started, True))
        outcome.cpu_s = clock() - cpu_start
    return outcome


def _process_main(
    socket: str,
    ops: Sequence[Op],
    append_path: str,
    barrier: Any,
    results: Any,
) -> None:
    """Entry point of one client process: its outcome goes back through *results*."""
    outcome = run_ops(
        socket, ops, append_path, lambda: barrier.wait(BARRIER_TIMEOUT_S), cpu="process"
    )
    results.put(outcome)


def run_clients(
    workers: str, socket: str, plans: Sequence[Sequence[Op]], append_path: str
) -> tuple[list[WorkerOutcome], int]:
    """Run every client; returns their outcomes and the monotonic ns at the barrier."""
    clients = len(plans)
    if workers == "threads":
        barrier = threading.Barrier(clients + 1)
        outcomes: list[WorkerOutcome | None] = [None] * clients

        def one(i: int) -> None:
            outcomes[i] = run_ops(
                socket, plans[i], append_path, lambda: barrier.wait(BARRIER_TIMEOUT_S), "thread"
            )

        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(clients)]
        for thread in threads:
            thread.start()
        barrier.wait(BARRIER_TIMEOUT_S)
        released = time.monotonic_ns()
        for thread in threads:
            thread.join(RESULT_TIMEOUT_S)
        if any(o is None for o in outcomes):
            raise RuntimeError("a client thread did not finish")
        return [o for o in outcomes if o is not None], released

    ctx = multiprocessing.get_context("spawn")
    pbarrier = ctx.Barrier(clients + 1)
    results: Any = ctx.Queue()
    procs = [
        ctx.Process(
            target=_process_main,
            args=(socket, plans[i], append_path, pbarrier, results),
            daemon=True,
        )
        for i in range(clients)
    ]
    for proc in procs:
        proc.start()
    try:
        pbarrier.wait(BARRIER_TIMEOUT_S)
        released = time.monotonic_ns()
        gathered: list[WorkerOutcome] = []
        for _ in procs:
            gathered.append(results.get(timeout=RESULT_TIMEOUT_S))
    except (queue.Empty, threading.BrokenBarrierError):
        raise RuntimeError("client processes did not all start or finish in time") from None
    finally:
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join()
        results.close()
        results.join_thread()
    return gathered, released
