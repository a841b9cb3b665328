"""AsyncClient through a real daemon, under trio and under asyncio alike.

Every scenario is a coroutine run once per backend with `anyio.run`, as an
agent's own event loop would run it. A few tests use a scripted fake daemon
for what a healthy daemon never does: stay silent, or hang up mid-call.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import anyio
import pytest

from conftest import Daemon, Env, run_cli
from omem_client import (
    AppendResult,
    AsyncClient,
    BadRequestError,
    Client,
    ConnectError,
    DaemonNotRunning,
    GetResult,
    NoAnswer,
    OmemError,
    Progress,
    SearchResult,
    StatusResult,
)
from omem_protocol import (
    PROTOCOL_VERSION,
    FrameBuffer,
    Hello,
    RawRequest,
    Reply,
    SyncResult,
    Welcome,
    decode_client_frame,
    encode_message,
)
from test_client_light import HEAVY, loaded_modules

Run = Callable[[Callable[[], Awaitable[None]]], None]

ANIMALS = (
    "aardvark bison caribou dingo echidna ferret gazelle hyena ibex jackal "
    "kinkajou lemur marmot narwhal ocelot pangolin quokka raccoon serval tapir"
).split()


@pytest.fixture(params=["trio", "asyncio"])
def run(request: pytest.FixtureRequest) -> Run:
    """Runs a scenario to completion under one anyio backend."""

    def runner(scenario: Callable[[], Awaitable[None]]) -> None:
        anyio.run(scenario, backend=request.param)

    return runner


def write_notes(daemon: Daemon, count: int) -> None:
    memory = daemon.env.workspace / "memory"
    for i in range(count):
        (memory / f"n{i:03d}.md").write_text(f"note {i} about the albatross survey\n")


# ---------------------------------------------------------------- the calls


@pytest.mark.e2e
def test_append_search_get_and_status(daemon: Daemon, run: Run) -> None:
    async def scenario() -> None:
        async with AsyncClient(daemon.env.socket, timeout=30) as client:
            assert client.welcome is not None
            assert client.welcome.protocol == PROTOCOL_VERSION
            appended = await client.append("The heron colony nests on the west island.")
            assert appended.indexed
            found = await client.search("heron colony")
            [hit] = found.results
            assert hit.path == appended.path
            assert hit.start_line <= appended.start_line <= hit.end_line
            assert "The heron colony nests" in hit.snippet
            got = await client.get(appended.path, from_line=appended.start_line, lines=1)
            assert got.text.strip() == "The heron colony nests on the west island."
            status = await client.status()
            assert status.workspace_path == str(daemon.env.workspace)
            assert status.pid == client.welcome.pid
            assert status.chunks >= 1
        assert client.welcome is None

    run(scenario)


@pytest.mark.e2e
def test_twenty_concurrent_calls_share_one_connection(daemon: Daemon, run: Run) -> None:
    async def scenario() -> None:
        async with AsyncClient(daemon.env.socket, timeout=30) as client:
            welcome = client.welcome
            appended: dict[str, AppendResult] = {}
            read: dict[str, GetResult] = {}
            found: dict[str, SearchResult] = {}

            async def append(animal: str) -> None:
                appended[animal] = await client.append(f"A lone {animal} crossed the track.")

            async def get(animal: str) -> None:
                where = appended[animal]
                read[animal] = await client.get(where.path, from_line=where.start_line, lines=1)

            async def search(animal: str) -> None:
                found[animal] = await client.search(animal)

            for call in (append, get, search):
                async with anyio.create_task_group() as tasks:
                    for animal in ANIMALS:
                        tasks.start_soon(call, animal)

            # every task got the reply to its own request, not a neighbour's
            assert len({result.start_line for result in appended.values()}) == len(ANIMALS)
            for animal in ANIMALS:
                assert read[animal].text.strip() == f"A lone {animal} crossed the track."
                assert any(animal in hit.snippet for hit in found[animal].results)
            assert client.welcome is welcome  # no reconnect along the way

    run(scenario)


@pytest.mark.e2e
def test_a_quick_call_is_answered_while_a_long_one_runs(daemon: Daemon, run: Run) -> None:
    write_notes(daemon, 500)

    async def scenario() -> None:
        async with AsyncClient(daemon.env.socket, timeout=30) as client:
            order: list[str] = []
            syncing = anyio.Event()

            async def full_sync() -> None:
                await client.sync(full=True, on_progress=lambda p: syncing.set())
                order.append("sync")

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(full_sync)
                await syncing.wait()
                await client.status()
                order.append("status")
            assert order == ["status", "sync"]

    run(scenario)


@pytest.mark.e2e
def test_full_sync_reports_progress(daemon: Daemon, run: Run) -> None:
    write_notes(daemon, 70)

    async def scenario() -> None:
        frames: list[Progress] = []
        async with AsyncClient(daemon.env.socket, timeout=30) as client:
            result = await client.sync(full=True, on_progress=frames.append)
        assert result.scanned == 73  # the notes and the three templates
        assert {p.total for p in frames} == {73}
        done = [p.done for p in frames]
        assert done == sorted(done)
        assert done[0] < done[-1] == 73

    run(scenario)


@pytest.mark.e2e
def test_recall_capture_and_forget_reach_the_daemon(daemon: Daemon, run: Run) -> None:
    async def scenario() -> None:
        async with AsyncClient(daemon.env.socket, timeout=30) as client:
            captured = await client.capture(
                [
                    {"role": "user", "content": [{"type": "text", "text": "I prefer oolong tea."}]},
                    {"role": "assistant", "content": "Noted."},
                ]
            )
            assert [m.text for m in captured.captured] == ["I prefer oolong tea."]
            recalled = await client.recall("which tea do I prefer", min_score=0.0)
            assert "oolong tea" in recalled.block
            forgotten = await client.forget(citation=captured.captured[0].citation)
            assert forgotten.removed == (captured.captured[0].citation,)
            assert (await client.search("oolong")).results == ()

    run(scenario)


@pytest.mark.e2e
def test_primer_and_flush_check_reach_the_daemon(daemon: Daemon, run: Run) -> None:
    (daemon.env.workspace / "USER.md").write_text("# USER.md\n\n- Name: Wei\n")

    async def scenario() -> None:
        async with AsyncClient(daemon.env.socket, timeout=30) as client:
            primer = await client.primer(budget=200, today=date(2026, 3, 10))
            assert primer.text == "## User (USER.md)\n- Name: Wei"
            session = f"s-{id(scenario)}"  # one per backend run
            check = await client.flush_check(session, tokens=9_000, context_window=32_000)
            assert (check.should_flush, check.threshold) == (True, 8_000)
            assert "NO_REPLY" in check.prompt

    run(scenario)


# ---------------------------------------------------------------- failures


@pytest.mark.e2e
def test_errors_are_those_of_the_blocking_client(daemon: Daemon, run: Run) -> None:
    calls: list[tuple[str, dict[str, object]]] = [
        ("get", {"path": "../outside.md"}),
        ("get", {"path": "memory/missing.md"}),
        ("search", {"query": "x", "limit": 1000}),
        ("log_turns", {"agent": "a", "session_id": "s", "turns": [{"role": "bot"}]}),
        # refused before sending: the wire carries UTF-8 only
        ("search", {"query": "caf\udce9"}),
        ("append", {"text": "x\ud800"}),
        ("get", {"path": "MEMORY.md", "from_line": 10**21}),  # past 64 bits
    ]
    expected: list[OmemError] = []
    with daemon.client() as blocking:
        for method, kwargs in calls:
            with pytest.raises(OmemError) as raised:
                getattr(blocking, method)(**kwargs)
            expected.append(raised.value)
        assert isinstance(blocking.status(), StatusResult)  # still usable
    assert isinstance(expected[2], BadRequestError)
    assert isinstance(expected[4], BadRequestError)
    assert "the byte 0xE9 (not UTF-8)" in str(expected[4])
    assert "a lone surrogate (U+D800)" in str(expected[5])
    assert isinstance(expected[6], BadRequestError)
    assert "out of range" in str(expected[6])

    async def scenario() -> None:
        async with AsyncClient(daemon.env.socket, timeout=30) as client:
            for (method, kwargs), error in zip(calls, expected, strict=True):
                with pytest.raises(type(error)) as raised:
                    await getattr(client, method)(**kwargs)
                assert str(raised.value) == str(error)
                assert getattr(raised.value, "code", None) == getattr(error, "code", None)
            assert isinstance(await client.status(), StatusResult)  # still usable

    run(scenario)


def test_a_timeout_past_what_a_socket_takes_means_no_limit(daemon: Daemon, run: Run) -> None:
    for endless in (math.inf, 1e300):
        with Client(daemon.env.socket, timeout=endless) as client:
            assert client.timeout is None
            assert isinstance(client.status(), StatusResult)

        async def scenario(endless: float = endless) -> None:
            async with AsyncClient(daemon.env.socket, timeout=endless) as client:
                assert client.timeout is None
                assert isinstance(await client.status(), StatusResult)

        run(scenario)
    for wrong in (math.nan, 0.0, -1.0):
        with pytest.raises(ValueError, match="positive number of seconds"):
            Client(daemon.env.socket, timeout=wrong)
        with pytest.raises(ValueError, match="positive number of seconds"):
            AsyncClient(daemon.env.socket, timeout=wrong)


def test_nothing_listening_is_daemon_not_running(env: Env, run: Run) -> None:
    with pytest.raises(DaemonNotRunning) as blocking:
        Client(env.socket).status()

    async def scenario() -> None:
        client = AsyncClient(env.socket)
        with pytest.raises(DaemonNotRunning) as raised:
            await client.status()
        assert str(raised.value) == str(blocking.value)
        with pytest.raises(DaemonNotRunning):
            async with client:
                pass

    run(scenario)


@pytest.mark.e2e
def test_a_cancelled_call_leaves_the_client_usable(daemon: Daemon, run: Run) -> None:
    write_notes(daemon, 200)

    async def scenario() -> None:
        async with AsyncClient(daemon.env.socket, timeout=30) as client:
            welcome = client.welcome
            # cancelled before its request is written
            with anyio.move_on_after(0):
                await client.append("never sent")
            # cancelled in flight: its reply and later progress come back to no one
            with anyio.CancelScope() as in_flight:
                await client.sync(full=True, on_progress=lambda p: in_flight.cancel())
            assert in_flight.cancelled_caught

            read: dict[int, str] = {}

            async def get(i: int) -> None:
                read[i] = (await client.get(f"memory/n{i:03d}.md")).text

            async def cancelled_sync() -> None:
                with anyio.CancelScope() as scope:
                    await client.sync(full=True, on_progress=lambda p: scope.cancel())

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(cancelled_sync)
                for i in range(10):
                    tasks.start_soon(get, i)
            assert read == {i: f"note {i} about the albatross survey\n" for i in range(10)}
            memory = daemon.env.workspace / "memory"
            assert not any("never sent" in note.read_text() for note in memory.glob("*.md"))
            assert isinstance(await client.status(), StatusResult)
            assert client.welcome is welcome

    run(scenario)


# ---------------------------------------------------------------- a scripted daemon

Script = Callable[[socket.socket, RawRequest], None]


@contextmanager
def fake_daemon(path: Path, script: Script) -> Iterator[None]:
    """A daemon that greets every client, then answers requests with *script*."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()

    def serve(conn: socket.socket) -> None:
        frames = FrameBuffer()
        with conn:
            while data := conn.recv(65536):
                for body in frames.feed(data):
                    frame = decode_client_frame(body)
                    if isinstance(frame, Hello):
                        welcome = Welcome(
                            protocol=PROTOCOL_VERSION,
                            daemon_version="fake",
                            pid=0,
                            workspaces=(),
                            capabilities=(),
                        )
                        conn.sendall(encode_message(welcome))
                    else:
                        script(conn, frame)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed: the test is over
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()


SYNCED = SyncResult(
    scanned=1, added=0, updated=0, removed=0, unchanged=1, skipped=0, chunks=0, took_ms=1.0
)


def test_a_silent_daemon_times_out_like_the_blocking_client(env: Env, run: Run) -> None:
    path = env.socket_dir / "silent.sock"
    with fake_daemon(path, lambda conn, request: None):
        with pytest.raises(ConnectError) as blocking:
            Client(path, timeout=0.3).status()

        async def scenario() -> None:
            async with AsyncClient(path, timeout=0.3) as client:
                with pytest.raises(ConnectError) as raised:
                    await client.status()
                assert str(raised.value) == str(blocking.value)
                assert str(raised.value) == (
                    "openmemoryd did not answer within 0.3 s; it may still have done what "
                    "was asked: look (search, get) before sending a write again"
                )
                assert isinstance(raised.value, NoAnswer)

        run(scenario)
        assert isinstance(blocking.value, NoAnswer)


def test_the_cli_says_a_sent_request_went_unanswered_not_that_the_daemon_is_down(
    env: Env,
) -> None:
    """A client-side timeout said "unreachable" with exit 3 and the advice to
    start the daemon, though it ran and had done the write: retried, an
    append was written twice (found by dogfooding)."""
    with fake_daemon(env.socket, lambda conn, request: None):
        done = run_cli(env, "--timeout", "0.3", "--json", "append", "x")
    assert done.returncode == 4, (done.stdout, done.stderr)
    error = json.loads(done.stdout or done.stderr)["error"]
    assert error["code"] == "timeout"
    assert "start the daemon" not in json.dumps(error)


def test_progress_keeps_a_long_call_within_its_timeout(env: Env, run: Run) -> None:
    # The call takes twice the timeout, its frames come every third of
    # it. (Timeout 0.3 s with frames every 0.1 s failed to connect within
    # 0.3 s on a machine at load 8.)
    def slow_sync(conn: socket.socket, request: RawRequest) -> None:
        for done in range(6):  # 1.5 s in all, 0.25 s between frames
            time.sleep(0.25)
            conn.sendall(encode_message(Progress(id=request.id, done=done, total=6)))
        conn.sendall(encode_message(Reply(id=request.id, body=SYNCED)))

    path = env.socket_dir / "slow.sock"
    with fake_daemon(path, slow_sync):

        async def scenario() -> None:
            async with AsyncClient(path, timeout=0.75) as client:
                seen: list[int] = []
                result = await client.sync(on_progress=lambda p: seen.append(p.done))
                assert result == SYNCED
                assert seen == list(range(6))

        run(scenario)


def test_a_lost_connection_fails_every_waiting_call(env: Env, run: Run) -> None:
    requests: list[RawRequest] = []

    def hang_up_at_the_third(conn: socket.socket, request: RawRequest) -> None:
        requests.append(request)
        if len(requests) == 3:
            conn.shutdown(socket.SHUT_RDWR)

    path = env.socket_dir / "flaky.sock"
    with fake_daemon(path, hang_up_at_the_third):

        async def scenario() -> None:
            errors: list[OmemError] = []

            async def call(client: AsyncClient) -> None:
                try:
                    await client.status()
                except OmemError as exc:
                    errors.append(exc)

            async with AsyncClient(path, timeout=5) as client:
                async with anyio.create_task_group() as tasks:
                    for _ in range(3):
                        tasks.start_soon(call, client)
                assert [str(e) for e in errors] == ["openmemoryd closed the connection"] * 3
                assert len({id(e) for e in errors}) == 3  # one exception object per task
                assert client.welcome is None
                await client.connect()  # and the next call connects afresh
                assert client.welcome is not None

        run(scenario)


# ---------------------------------------------------------------- import cost


def test_the_async_client_is_imported_on_first_use_only() -> None:
    assert "anyio" not in loaded_modules("import omem_client")
    loaded = loaded_modules("from omem_client import AsyncClient")
    assert "anyio" in loaded
    assert loaded.isdisjoint(set(HEAVY) - {"anyio"})


@pytest.mark.e2e
def test_log_reaches_the_daemon(daemon: Daemon, run: Run) -> None:
    async def scenario() -> None:
        async with AsyncClient(daemon.env.socket, timeout=30) as client:
            written = await client.log("We decided to deploy on Tuesdays", agent="async-agent")
            assert (written.status, written.section) == ("written", "Important Decisions")
            again = await client.log("we decided to deploy on tuesdays")
            assert (again.status, again.citation) == ("reinforced", written.citation)
            dry = await client.log("The user prefers short answers", type="fact", dry_run=True)
            assert (dry.status, dry.path, dry.line) == ("written", "USER.md", None)

    run(scenario)
