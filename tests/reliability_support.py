"""Helpers for the reliability suite (``tests/test_reliability_*.py``).

The suite drives the real daemon process: kill -9 at random points, damaged
index files, fuzzed frames on a raw socket, many clients at once, bad paths
and files. What the files share lives here: scale knobs read from the
environment, isolated environments that outlive one test (for module-scoped
daemons), a raw-socket peer that speaks frames without the client library's
safety nets, and snapshots of the workspace and of the index to compare
before and after a fault.

Randomness in the suite is always seeded (``random.Random(seed)``, or
hypothesis with ``derandomize=True``), so a CI failure reproduces.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw
import pytest

from conftest import Daemon, Env
from omem_client import Client
from omem_protocol import (
    DEFAULT_MAX_FRAME,
    PROTOCOL_VERSION,
    DaemonFrame,
    FrameBuffer,
    Hello,
    encode_message,
)
from omem_protocol import decode_daemon_frame as _decode

__all__ = [
    "HangError",
    "IndexSnapshot",
    "RawPeer",
    "index_snapshot",
    "isolated_env",
    "knob",
    "letters",
    "rss_kib",
    "tree_digest",
    "wait_until",
]


def knob(name: str, default: int) -> int:
    """An integer scale setting from the environment (CI uses the default)."""
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


# Consonants that no Porter stemming rule removes or rewrites (no vowels, no
# s, y or l), so two words made of them never stem to the same term.
_STEM_PROOF = "bcdfghjkmnpqrtvwxz"


def letters(number: int, prefix: str = "zq", width: int = 4) -> str:
    """A unique lowercase word for *number*: one keyword-searchable term that
    no generated corpus text contains (``zq`` starts no word there) and that
    shares its stem with no other word made here."""
    digits = []
    for _ in range(width):
        number, rest = divmod(number, len(_STEM_PROOF))
        digits.append(_STEM_PROOF[rest])
    if number:
        raise ValueError(f"number too large for {width} letters")
    return prefix + "".join(reversed(digits))


@contextlib.contextmanager
def isolated_env(root: Path) -> Iterator[Env]:
    """An `Env` under *root* with its own short socket directory, for
    fixtures wider than one test (conftest's `env` is function-scoped)."""
    socket_dir = Path(tempfile.mkdtemp(prefix="om-", dir="/tmp"))
    os.chmod(socket_dir, 0o700)
    try:
        yield Env(root=root, socket_dir=socket_dir)
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)


def wait_until(check: Callable[[], bool], what: str, within: float = 20.0) -> float:
    """Seconds until *check* held; fails the test after *within*."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        if check():
            return time.monotonic() - started
        time.sleep(0.02)
    pytest.fail(f"not within {within} s: {what}")


def wait_for_vectors(client: Client, within: float = 20.0) -> float:
    """Seconds until every chunk the daemon knows has its vector and the
    embedder is idle (a search is then hybrid, with calibrated estimates)."""

    def complete() -> bool:
        embedding = client.status().embedding
        return (
            embedding is not None
            and embedding.state == "idle"
            and embedding.total > 0
            and embedding.embedded == embedding.total
        )

    return wait_until(complete, "the vectors are complete", within)


@contextlib.contextmanager
def fake_vectors_daemon(
    env: Env, notes: dict[str, str], config: Callable[[str], str]
) -> Iterator[Daemon]:
    """A daemon over *notes* (path -> one line each) whose vectors come from
    the OpenAI-style fake embedder, every chunk embedded (searches are then
    hybrid, with calibrated estimates); *config* makes the config file's
    text from the fake's base URL. Stopped on the way out."""
    from fake_embedding_servers import FakeEmbeddingServer

    with FakeEmbeddingServer() as embedder:
        env.write_config(config(f"{embedder.url}/v1"))
        (env.workspace / "memory").mkdir(parents=True)
        for path, text in notes.items():
            (env.workspace / path).write_text(text + "\n")
        daemon = Daemon(env).start()
        try:
            with daemon.client() as client:
                client.sync()
                wait_for_vectors(client)
            yield daemon
        finally:
            daemon.stop()


def rss_kib(pid: int) -> int:
    """Resident memory of process *pid* in KiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every regular file under *root*, by relative path."""
    digests = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            digests[path.relative_to(root).as_posix()] = hashlib.sha256(
                path.read_bytes()
            ).hexdigest()
    return digests


# ---------------------------------------------------------------- the index


@dataclass(frozen=True)
class IndexSnapshot:
    """What an index holds, independent of row ids and timestamps."""

    files: frozenset[tuple[str, str, int, str | None]]  # path, hash, chunks, note
    chunks: Counter[tuple[str, int, int, str, str]]  # path, lines, heading, text hash
    integrity: str
    fts_matches_chunks: bool


def index_snapshot(db: Path) -> IndexSnapshot:
    """Read *db* (live or not) on a read-only connection.

    `fts_matches_chunks` says the keyword index holds exactly one entry per
    chunk (plus the BM25 padding rows, which have negative ids): a crash
    between writing a chunk and its keyword entry would break it.
    """
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.set_busy_timeout(5000)
        files = frozenset(
            (str(p), str(h), int(n), None if note is None else str(note))
            for p, h, n, note in conn.execute(
                "SELECT path, hash, chunks, note FROM files WHERE source = 'memory'"
            )
        )
        chunks = Counter(
            (str(p), int(a), int(b), str(head), str(h))
            for p, a, b, head, h in conn.execute(
                "SELECT path, start_line, end_line, heading, hash FROM chunks "
                "WHERE source = 'memory'"
            )
        )
        integrity = str(conn.execute("PRAGMA quick_check").fetchall()[0][0])
        chunk_ids = {int(r[0]) for r in conn.execute("SELECT id FROM chunks")}
        fts_ids = {int(r[0]) for r in conn.execute("SELECT rowid FROM chunks_fts WHERE rowid > 0")}
    finally:
        conn.close()
    return IndexSnapshot(files, chunks, integrity, chunk_ids == fts_ids)


# ---------------------------------------------------------------- raw frames


class RawPeer:
    """A client socket that sends whatever bytes it is given.

    Unlike `omem_client.Client` it never closes on an error reply, never
    checks what it sends, and reads with a hard deadline, so a test can tell
    "the daemon answered", "the daemon closed" and "the daemon hung" apart.
    """

    def __init__(self, path: Path, timeout: float) -> None:
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self._frames = FrameBuffer(DEFAULT_MAX_FRAME)
        self.frames: list[DaemonFrame] = []
        self.closed = False

    def __enter__(self) -> RawPeer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, data: bytes) -> bool:
        """Send *data*; False if the daemon had already closed the connection
        (what it sent before closing can still be read)."""
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True

    def hello(self) -> None:
        self.send(encode_message(Hello(protocol=PROTOCOL_VERSION, client="reliability")))

    def _receive_once(self, deadline: float) -> None:
        self.sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        except TimeoutError:
            raise HangError(f"no frame and no close within {self.timeout} s") from None
        if not data:
            self.closed = True
            return
        self.frames.extend(_decode(body) for body in self._frames.feed(data))

    def wait_frames(self, count: int) -> None:
        """Read until *count* frames arrived in all or the daemon closed.

        Raises:
            HangError: neither happened within the timeout.
        """
        deadline = time.monotonic() + self.timeout
        while len(self.frames) < count and not self.closed:
            self._receive_once(deadline)

    def finish(self) -> None:
        """Half-close (no more requests), then read every frame until the
        daemon closes the connection. Raises `HangError` if it never does."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + self.timeout
        while not self.closed:
            self._receive_once(deadline)


class HangError(AssertionError):
    """The daemon neither answered nor closed within the deadline."""
