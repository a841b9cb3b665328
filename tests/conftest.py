"""Shared fixtures: isolated environments, a real daemon, an in-process engine.

Test kinds (markers, applied here by `pytest_collection_modifyitems`):

* ``reliability``: tests/test_reliability_*.py (kill loops, fuzzing, load);
* ``e2e``: starts the real daemon and drives it with the real client
  (tests/test_e2e_*.py, a test marked so in its file, a test of the reliability
  files, any test using the ``daemon`` fixture);
* ``unit``: everything else. A unit test that starts ``openmemoryd run`` or
  ``start`` fails (see `_no_daemon_in_unit_tests`): mark it e2e instead.

Every test runs with its own workspace, state dir, socket and config home, so
nothing touches the user's real memory and tests never see each other's
daemons. Socket paths live in short /tmp directories because pytest's
tmp_path can exceed the 107-byte limit of Unix socket addresses.
"""

from __future__ import annotations

import contextlib
import os

# One BLAS thread for the models loaded in test processes (and inherited by
# the daemons they start): the suite already runs a worker per core, and
# OpenBLAS threads waiting for a core spin instead of sleeping. test_e5.py
# took 58 CPU-seconds with two threads beside another worker, 18 with one.
# Set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import compileall
import json
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from fake_rerank_servers import GatedReranker
from file_order import order_by_expected_duration
from omem_client import Client, ConnectError
from omem_protocol import SearchHit, SearchResult
from openmemoryd.config import Config, Overrides, SyncSettings, load_config
from openmemoryd.engine import Engine, open_engine

START_TIMEOUT_S = 20.0
KEYWORD_ONLY = '[embedding]\nprovider = "none"\n'

# Fixtures that start a real daemon: a test using one is end-to-end.
DAEMON_FIXTURES = frozenset({"daemon"})


@pytest.hookimpl(optionalhook=True)  # an xdist hook: without xdist it is not called
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the cores this process may use.

    Most of the suite's time is end-to-end tests, whose worker waits while
    its daemon or CLI subprocess works (and sleeps through watcher windows),
    so a worker per core leaves a core idle much of the time. Measured on
    the 2-core machine, the whole suite: 223 s with 2 workers, 197 s with
    3, 196 s with 4 (at more CPU); one extra worker takes the gain.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


def pytest_configure(config: pytest.Config) -> None:
    """Compile the three packages' bytecode once, in the controller, before
    any worker starts.

    The suite starts ~230 daemons and ~500 CLI processes. With
    ``PYTHONDONTWRITEBYTECODE`` set (CI images and this project's machines
    set it) no process writes the bytecode of what it imports, so from an
    editable checkout every one of them compiled every module it imported
    again: ~0.1 CPU-second a daemon start. An installed package has its
    bytecode compiled at install; this gives the checkout the same. Files
    already compiled are only checked (a few milliseconds).
    """
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did it
        return
    import omem_client
    import omem_protocol
    import openmemoryd

    for package in (openmemoryd, omem_client, omem_protocol):
        compileall.compile_dir(Path(package.__path__[0]), quiet=1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with its kind: reliability, e2e or unit; queue the
    longest files first (tests/file_order.py says why)."""
    items[:] = order_by_expected_duration(items)
    for item in items:
        name = item.path.name
        if name.startswith("test_reliability_"):
            item.add_marker(pytest.mark.reliability)
            item.add_marker(pytest.mark.e2e)
        elif name.startswith("test_e2e_") or DAEMON_FIXTURES.intersection(
            getattr(item, "fixturenames", ())
        ):
            item.add_marker(pytest.mark.e2e)
        if item.get_closest_marker("e2e") is None:
            item.add_marker(pytest.mark.unit)


def _starts_daemon(args: object) -> bool:
    """Whether a command line runs `openmemoryd run` or `openmemoryd start`."""
    if isinstance(args, (str, bytes, os.PathLike)):
        argv = shlex.split(os.fsdecode(args))
    elif isinstance(args, Sequence):
        argv = [os.fsdecode(a) if isinstance(a, (str, bytes, os.PathLike)) else "" for a in args]
    else:
        return False
    for i, arg in enumerate(argv[:-1]):
        if os.path.basename(arg) == "openmemoryd" and argv[i + 1] in ("run", "start"):
            return not {"-h", "--help"}.intersection(argv[i + 2 :])
    return False


_daemon_starts: list[str] = []
_popen_init = subprocess.Popen.__init__


def _watching_popen_init(
    self: subprocess.Popen[bytes], args: object, *a: object, **kw: object
) -> None:
    if _starts_daemon(args):
        _daemon_starts.append(str(args))
    _popen_init(self, args, *a, **kw)  # type: ignore[arg-type]


subprocess.Popen.__init__ = _watching_popen_init  # type: ignore[assignment,method-assign]


@pytest.fixture(autouse=True)
def _no_daemon_in_unit_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked unit must not start the daemon (it would be e2e). Its
    starts are those since the last test ended, module fixtures' included."""
    yield
    started = _daemon_starts[:]
    _daemon_starts.clear()
    if started and request.node.get_closest_marker("unit") is not None:
        pytest.fail(f"a unit test started openmemoryd (mark it e2e): {started}")


@pytest.fixture(autouse=True)
def _same_day_as_the_module(request: pytest.FixtureRequest) -> None:
    """An end-to-end module that dates its notes from ``TODAY``, the day it
    was loaded, expects the daemon's today to be that day: once midnight has
    passed while it runs, every day it expects is one off, so its tests are
    skipped, not failed (a run that straddles midnight, as CI's can)."""
    today = getattr(request.module, "TODAY", None)
    if (
        isinstance(today, date)
        and request.node.get_closest_marker("e2e") is not None
        and date.today() != today
    ):
        pytest.skip(f"midnight passed while the module ran: its notes are dated from {today}")


@dataclass
class Env:
    """Paths and environment variables of one isolated openmemory setup."""

    root: Path
    socket_dir: Path
    workspace: Path = field(init=False)
    state_dir: Path = field(init=False)
    socket: Path = field(init=False)
    config_home: Path = field(init=False)

    def __post_init__(self) -> None:
        self.workspace = self.root / "ws"
        self.state_dir = self.root / "state"
        self.config_home = self.root / "config"
        self.socket = self.socket_dir / "d.sock"
        # Keyword search only unless a test asks for embeddings: most tests
        # are about other things and should not load a model.
        self.write_config(KEYWORD_ONLY)

    @property
    def config_file(self) -> Path:
        return self.config_home / "openmemory" / "config.toml"

    def write_config(self, text: str) -> None:
        self.config_file.parent.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(text)

    @property
    def vars(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENMEMORY_")}
        env.update(
            OPENMEMORY_WORKSPACE=str(self.workspace),
            OPENMEMORY_STATE_DIR=str(self.state_dir),
            OPENMEMORY_SOCKET=str(self.socket),
            XDG_CONFIG_HOME=str(self.config_home),
            PYTHONUNBUFFERED="1",
        )
        return env

    def config(self, **changes: object) -> Config:
        config = load_config(Overrides(), environ=self.vars)
        return config if not changes else _replace(config, changes)


def _replace(config: Config, changes: dict[str, object]) -> Config:
    from dataclasses import replace

    return replace(config, **changes)  # type: ignore[arg-type]


@contextlib.contextmanager
def isolated_env(root: Path) -> Iterator[Env]:
    """An `Env` rooted at *root*, its socket in a fresh private directory
    (removed after): for a fixture that needs more than one daemon."""
    socket_dir = Path(tempfile.mkdtemp(prefix="om-", dir="/tmp"))
    os.chmod(socket_dir, 0o700)
    try:
        yield Env(root=root, socket_dir=socket_dir)
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    with isolated_env(tmp_path) as env:
        yield env


@pytest.fixture(scope="module")
def module_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """One `Env` for all the tests of a module, for a daemon they share
    (starting one, and embedding its notes, is most of an e2e test's time)."""
    with isolated_env(tmp_path_factory.mktemp("module")) as env:
        yield env


class Daemon:
    """A real `openmemoryd run` subprocess plus helpers to drive it."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.log_path = env.root / "daemon.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *extra: str) -> Daemon:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "openmemoryd", "run", *extra],
            env=self.env.vars,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        try:
            self.wait_ready()
        except BaseException:
            # a daemon that never became ready (or answered wrongly) must not
            # outlive the test: nothing else holds its handle
            self.proc.kill()
            self.proc.wait()
            raise
        return self

    def wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"openmemoryd exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with Client(self.env.socket, timeout=5) as client:
                    client.status()
                return
            except ConnectError:  # not up yet, or starting for longer than the client waits
                time.sleep(0.05)
        pytest.fail(f"openmemoryd did not become ready:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text("utf-8", errors="replace") if self.log_path.exists() else ""

    def client(self, timeout: float = 30.0) -> Client:
        return Client(self.env.socket, timeout=timeout)

    def cli(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return run_cli(self.env, *args, stdin=stdin)

    def cli_json(self, *args: str) -> Any:
        """The reply of `omem-client ARGS --json`, which must succeed."""
        result = run_cli(self.env, *args, "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                pytest.fail(f"openmemoryd ignored signal {sig}:\n{self.log()}")
        return self.proc.returncode


def run_cli(env: Env, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `omem-client` in a subprocess, as a shell script would."""
    return subprocess.run(
        [sys.executable, "-m", "omem_client", *args],
        env=env.vars,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def run_openmemoryd(env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `openmemoryd ARGS` to completion (commands that exit, or fail to start)."""
    return subprocess.run(
        [sys.executable, "-m", "openmemoryd", *args],
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def daemon(env: Env) -> Iterator[Daemon]:
    handle = Daemon(env).start()
    try:
        yield handle
    finally:
        if handle.proc is not None and handle.proc.poll() is None:
            handle.stop()


@pytest.fixture
def launched() -> Iterator[list[Daemon]]:
    """Daemons a test started itself; any still running at its end (a failed
    assertion before the stop) is killed, so none outlives the test."""
    daemons: list[Daemon] = []
    yield daemons
    for daemon in daemons:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait()


@pytest.fixture
def reranker() -> Iterator[GatedReranker]:
    """A Cohere-style fake reranker that holds each request until its `gate`
    is set: the stop tests (socket and HTTP) keep a search in flight with it."""
    with GatedReranker() as server:
        yield server


@pytest.fixture
async def engine(env: Env) -> AsyncIterator[Engine]:
    """An in-process engine over a fresh workspace (no socket)."""
    from openmemoryd.workspace import init_workspace

    # No watcher: these tests count what each explicit sync does, so nothing
    # may index behind their backs (the watcher has end-to-end tests).
    config = env.config(sync=SyncSettings(watch="off", interval_minutes=0))
    init_workspace(config.workspace)
    async with open_engine(config) as opened:
        await opened.syncer.queue.wait_applied()  # the start-up reconcile
        yield opened


def search_result(hits: Sequence[SearchHit], mode: str = "hybrid") -> SearchResult:
    """A daemon's reply holding *hits*, for tests of what is done with one."""
    return SearchResult(
        results=tuple(hits),
        mode=mode,
        provider="none",
        model=None,
        degraded=False,
        degraded_reason=None,
        fallback=False,
        stale=False,
        empty_reason=None,
        best_score=None,
        min_score=0.35,
        threshold_relaxed=False,
        took_ms=1.0,
    )
