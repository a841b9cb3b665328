"""Shared fixtures: isolated environments, a real daemon, an in-process engine.

Every test runs with its own workspace, state dir, socket and config home, so
nothing touches the user's real memory and tests never see each other's
daemons. Socket paths live in short /tmp directories because pytest's
tmp_path can exceed the 107-byte limit of Unix socket addresses.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from omem_client import Client, DaemonNotRunning
from openmemoryd.config import Config, Overrides, SyncSettings, load_config
from openmemoryd.engine import Engine, open_engine

START_TIMEOUT_S = 20.0
KEYWORD_ONLY = '[embedding]\nprovider = "none"\n'


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


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    socket_dir = Path(tempfile.mkdtemp(prefix="om-", dir="/tmp"))
    os.chmod(socket_dir, 0o700)
    try:
        yield Env(root=tmp_path, socket_dir=socket_dir)
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)


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
            except DaemonNotRunning:
                time.sleep(0.05)
        pytest.fail(f"openmemoryd did not become ready:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text("utf-8", errors="replace") if self.log_path.exists() else ""

    def client(self, timeout: float = 30.0) -> Client:
        return Client(self.env.socket, timeout=timeout)

    def cli(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return run_cli(self.env, *args, stdin=stdin)

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
