"""A real ``openmemoryd run`` in a throw-away directory, for benchmarks.

Benchmarks must measure the daemon users run, so this starts the real
console entry point (``python -m openmemoryd run``) in a subprocess and talks
to it only through the public client. Everything it uses lives in one
``tempfile.mkdtemp(prefix="omb-", dir="/tmp")`` directory, removed on exit
unless ``keep=True``::

    /tmp/omb-XXXXXXXX/
        ws/          OPENMEMORY_WORKSPACE (empty until the caller fills it)
        state/       OPENMEMORY_STATE_DIR (index, locks)
        config/      XDG_CONFIG_HOME (openmemory/config.toml from ``config_toml=``
                     or `write_config`; none: built-in defaults)
        d.sock       OPENMEMORY_SOCKET
        daemon.log   the daemon's stdout and stderr

`use_workspace` points a later start at another directory with the same
state dir, so a benchmark can compare layouts of one corpus on one index.

The directory is short and fixed under /tmp because Unix socket addresses are
limited to 107 bytes and pytest or macOS temp paths can exceed that. Every
inherited ``OPENMEMORY_*`` variable is dropped and the config home replaced,
so neither the user's real workspace nor their config file can leak in.

Usage::

    with BenchDaemon() as daemon:
        generate_workspace(daemon.workspace, 1000)  # before start(): see start()
        daemon.start()
        daemon.wait_indexed()
        with daemon.client() as client:
            client.search("deploy pipeline")
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Final

from omem_client import Client, ConnectError, StatusResult, SyncResult

__all__ = ["BenchDaemon", "BenchDaemonError", "embedder_toml", "isolated_env"]

LOG_TAIL_CHARS: Final = 4000
POLL_INTERVAL_S: Final = 0.05
# Each status request scans the workspace, so polling during a long index
# pass is kept sparse to leave the CPU to the indexer being timed.
INDEX_POLL_INTERVAL_S: Final = 0.2


def embedder_toml(
    provider: str,
    *,
    nice: int | None = None,
    query_threads: int | None = None,
    engine: str | None = None,
    rerank: str | None = None,
) -> str:
    """An ``[embedding]`` config choosing *provider*, and optionally the local
    embedder's niceness, query threads and engine, and the reranker
    (``[search.rerank] provider``; None: the daemon's defaults).

    The daemon runs its embedding worker at nice 10 so it yields to whatever
    else the user runs. On a machine shared with other people's test runs that
    measures their load, not the embedder, so benchmarks may pass ``nice=0``
    and say so in their settings.
    """
    text = f'[embedding]\nprovider = "{provider}"\n'
    local = [f"nice = {nice}"] if nice is not None else []
    if query_threads is not None:
        local.append(f"query_threads = {query_threads}")
    if engine is not None:
        local.append(f'engine = "{engine}"')
    if local:
        text += "\n[embedding.local]\n" + "\n".join(local) + "\n"
    if rerank is not None:
        text += f'\n[search.rerank]\nprovider = "{rerank}"\n'
    return text


class BenchDaemonError(RuntimeError):
    """The daemon failed to start, died, or would not stop; the message ends with its log."""


def isolated_env(
    *, workspace: Path, state_dir: Path, socket: Path, config_home: Path
) -> dict[str, str]:
    """The current environment with every openmemory setting pinned to the given paths.

    Shared by the daemon and every client process of a benchmark, so both
    sides agree on the socket without any discovery.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENMEMORY_")}
    env.update(
        OPENMEMORY_WORKSPACE=str(workspace),
        OPENMEMORY_STATE_DIR=str(state_dir),
        OPENMEMORY_SOCKET=str(socket),
        XDG_CONFIG_HOME=str(config_home),
    )
    return env


class BenchDaemon:
    """One isolated daemon; a context manager that owns its temp directory.

    Entering creates the directory but does not start the daemon: the caller
    writes the workspace first, because the daemon fills an empty workspace
    with its templates (and `bench.corpus` refuses a non-empty one), and
    because the startup sync is what a benchmark wants to time.

    Args:
        keep: leave the directory (index, log) in place on exit, for a post-mortem.
        log_level: ``OPENMEMORY_LOG_LEVEL`` for the daemon; None keeps its default.
        extra_env: more variables for the daemon and `env`; ``OPENMEMORY_*``
            keys here are honoured, so a benchmark can vary a setting on purpose.
        config_toml: the daemon's config file (e.g. ``[embedding] provider =
            "none"`` for keyword-only runs); empty means the defaults.
        root: use this directory (created if absent, kept on exit) instead of
            a new temp one, so a benchmark can build a large index once and
            start daemons on it again (`bench.scale_build`). It must be short,
            like the temp ones, for the socket address.
    """

    def __init__(
        self,
        *,
        keep: bool = False,
        log_level: str | None = None,
        extra_env: Mapping[str, str] | None = None,
        config_toml: str = "",
        root: Path | None = None,
    ) -> None:
        self.keep = keep or root is not None
        self._given_root = root
        self._config_toml = config_toml
        self._log_level = log_level
        self._extra_env = dict(extra_env or {})
        self._root: Path | None = None
        self._workspace: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> BenchDaemon:
        if self._root is not None:
            raise RuntimeError("BenchDaemon is not re-entrant")
        # mkdtemp makes the directory 0700, which the daemon requires of the
        # socket's directory.
        if self._given_root is not None:
            self._root = self._given_root
            self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
        else:
            self._root = Path(tempfile.mkdtemp(prefix="omb-", dir="/tmp"))
        self.workspace.mkdir(exist_ok=self._given_root is not None)
        self.config_home.mkdir(exist_ok=self._given_root is not None)
        if self._config_toml:
            self.write_config(self._config_toml)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self.running:
                self.stop()
        finally:
            if self._root is not None and not self.keep:
                shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
            self._workspace = None

    def start(self, timeout: float = 30.0, status_timeout: float = 5.0) -> float:
        """Spawn the daemon and return the seconds until it answered `status`.

        Raises `BenchDaemonError` with the daemon's log if it exits or does not
        answer within *timeout*. The startup sync may still be running on
        return; see `wait_indexed`. A status request scans the workspace, so
        one of a hundred thousand files needs a longer *status_timeout*.
        """
        if self.running:
            raise RuntimeError("the daemon is already running")
        started = time.perf_counter()
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "openmemoryd", "run"],
                env=self.env,
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = started + timeout
        while True:
            self._check_alive()
            try:
                with Client(self.socket, timeout=status_timeout) as client:
                    client.status()
                return time.perf_counter() - started
            except ConnectError:  # not up yet, or starting for longer than the client waits
                pass
            if time.perf_counter() > deadline:
                self._kill()
                raise self._error(f"openmemoryd did not answer within {timeout:g} s")
            time.sleep(POLL_INTERVAL_S)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait, as systemd would; return the exit code (0 is a clean stop).

        A daemon still alive after *timeout* is killed and reported, because a
        shutdown that hangs is a bug a benchmark must not hide.
        """
        proc = self._proc
        if proc is None:
            raise RuntimeError("the daemon was never started")
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._kill()
                raise self._error(f"openmemoryd ignored SIGTERM for {timeout:g} s") from None
        return proc.returncode

    # ------------------------------------------------------------ between runs

    def write_config(self, text: str) -> None:
        """Replace the daemon's config file; empty *text* removes it (built-in defaults).

        The daemon reads its config only at start, so this refuses while it
        runs: a benchmark that compares settings restarts the daemon between
        them, and a silently ignored change would mislabel every number after it.
        """
        if self.running:
            raise RuntimeError("stop the daemon before changing its config")
        config = self.config_path
        if not text:
            config.unlink(missing_ok=True)
            return
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(text, encoding="utf-8")

    def reload_config(self, text: str) -> None:
        """Replace the running daemon's config file and make it reload (SIGHUP),
        as a user editing the config of a live daemon does."""
        if self._proc is None or not self.running:
            raise RuntimeError("the daemon is not running")
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(text, encoding="utf-8")
        self._proc.send_signal(signal.SIGHUP)

    def use_workspace(self, path: Path | None) -> None:
        """Point the next start at another workspace (``OPENMEMORY_WORKSPACE``); None: ``ws/``.

        The state dir stays the same, so the index and its embedding cache
        carry over: the first sync drops the old workspace's files and adds
        the new ones, and chunks with the same text reuse cached vectors. That
        is how one benchmark compares file layouts of the same content without
        embedding it twice. Refused while the daemon runs, for the same reason
        as `write_config`.
        """
        if self.running:
            raise RuntimeError("stop the daemon before changing its workspace")
        self._workspace = None if path is None else Path(path).resolve()

    # ------------------------------------------------------------ talking to it

    def client(self, timeout: float = 60.0) -> Client:
        """A new client on this daemon's socket (use it as a context manager)."""
        return Client(self.socket, timeout=timeout)

    def status(self) -> StatusResult:
        self._check_alive()
        with self.client() as client:
            return client.status()

    def sync(self, *, full: bool = False, timeout: float = 600.0) -> SyncResult:
        """Run a sync pass and return when it is done.

        The daemon serialises sync passes, so this also waits for a startup
        sync still in progress; the pass it then runs finds every file
        unchanged.
        """
        self._check_alive()
        with self.client(timeout) as client:
            return client.sync(full=full)

    def wait_indexed(self, timeout: float = 600.0) -> StatusResult:
        """Wait for the startup sync to finish and return the status right after it.

        Unlike `sync`, this leaves ``status().last_sync`` describing the
        startup pass, so its ``took_ms`` is the daemon's own indexing time.
        """
        deadline = time.perf_counter() + timeout
        while True:
            status = self.status()
            last = status.last_sync
            if last is not None and not status.syncing:
                if last.error is not None:
                    raise self._error(f"the {last.reason} sync failed: {last.error}")
                return status
            if time.perf_counter() > deadline:
                raise self._error(f"indexing did not finish within {timeout:g} s")
            time.sleep(INDEX_POLL_INTERVAL_S)

    def wait_keywords_merged(
        self, timeout: float = 3600.0, status_timeout: float = 60.0
    ) -> StatusResult:
        """Wait until the daemon says its keyword index is merged (it merges
        a freshly indexed one in the background; a search timed meanwhile
        would race the merge). A daemon that does not report it returns at once."""
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive()
            with self.client(status_timeout) as client:
                status = client.status()
            keywords = status.keyword_index
            if keywords is None or (keywords.state == "merged" and not status.syncing):
                return status
            if time.monotonic() > deadline:
                raise self._error(f"the keyword index was not merged after {timeout:.0f} s")
            time.sleep(1.0)

    def wait_vectors(self, timeout: float = 7200.0) -> StatusResult:
        """Wait until every chunk has a vector and the embedder is idle."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status()
            emb = status.embedding
            if emb is not None and emb.state == "off":
                raise self._error(f"vector search is off: {emb.reason}")
            if emb is not None and emb.total and emb.embedded == emb.total and emb.state == "idle":
                return status
            if time.monotonic() > deadline:
                raise self._error(f"vectors incomplete after {timeout:.0f} s: {emb}")
            time.sleep(0.5)

    def log(self) -> str:
        try:
            return self.log_path.read_text("utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    # ------------------------------------------------------------ paths

    @property
    def root(self) -> Path:
        if self._root is None:
            raise RuntimeError("use BenchDaemon as a context manager first")
        return self._root

    @property
    def workspace(self) -> Path:
        """``ws/`` in the temp directory, unless `use_workspace` chose another."""
        return self._workspace if self._workspace is not None else self.root / "ws"

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def config_home(self) -> Path:
        return self.root / "config"

    @property
    def config_path(self) -> Path:
        """The config file the daemon reads (absent: built-in defaults)."""
        return self.config_home / "openmemory" / "config.toml"

    @property
    def socket(self) -> Path:
        return self.root / "d.sock"

    @property
    def log_path(self) -> Path:
        return self.root / "daemon.log"

    @property
    def env(self) -> dict[str, str]:
        """Environment for the daemon and for any client process of the benchmark."""
        env = isolated_env(
            workspace=self.workspace,
            state_dir=self.state_dir,
            socket=self.socket,
            config_home=self.config_home,
        )
        if self._log_level is not None:
            env["OPENMEMORY_LOG_LEVEL"] = self._log_level
        env.update(self._extra_env)
        return env

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ------------------------------------------------------------ internals

    def _check_alive(self) -> None:
        if self._proc is None:
            raise RuntimeError("the daemon was never started")
        code = self._proc.poll()
        if code is not None:
            raise self._error(f"openmemoryd exited with code {code}")

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def _error(self, message: str) -> BenchDaemonError:
        tail = self.log()[-LOG_TAIL_CHARS:]
        return BenchDaemonError(f"{message}\n--- {self.log_path} (tail) ---\n{tail}")
