"""A damaged index file, through the real daemon: detected, set aside, rebuilt.

The index is derived data, so a file SQLite cannot read (cut short by a full
disk, its header overwritten) is renamed to ``*.corrupt-<time>`` (kept for
forensics, never deleted) and rebuilt from the Markdown before the socket
opens, and `status` says so. An index written by a newer openmemoryd is not
damaged, only not ours to read: the daemon refuses to start, says why, and
leaves the file exactly as it was. (`tests/test_store.py` checks the same
rules on `open_index` alone; these check what a user of the daemon sees.)
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from bench.corpus import generate_workspace
from conftest import Daemon, Env
from openmemoryd.store import SCHEMA_VERSION
from reliability_support import letters, tree_digest

pytestmark = pytest.mark.e2e


def index_path(env: Env) -> Path:
    return env.state_dir / "index" / "default.sqlite"


def build_index(env: Env) -> tuple[dict[str, str], tuple[int, int]]:
    """A workspace with a sentinel word per file, indexed and cleanly stopped.
    Returns the sentinels and the clean (files, chunks) counts."""
    generate_workspace(env.workspace, 300, seed=3, needles=0)
    sentinels = {}
    for number, path in enumerate(sorted(env.workspace.rglob("*.md"))):
        key = path.relative_to(env.workspace).as_posix()
        sentinels[key] = letters(number, prefix="zqcorr")
        with path.open("a", encoding="utf-8") as note:
            note.write(f"\nSentinel {sentinels[key]}.\n")
    daemon = Daemon(env).start()
    try:
        with daemon.client() as client:
            client.sync()
            status = client.status()
            counts = (status.files_indexed, status.chunks)
    finally:
        assert daemon.stop() == 0
    assert not Path(f"{index_path(env)}-wal").exists()  # a clean stop checkpoints
    return sentinels, counts


def truncate(data: bytes) -> bytes:
    """What a full disk or a cut-short copy leaves: the first 60%."""
    return data[: len(data) * 6 // 10]


def scramble_header(data: bytes) -> bytes:
    """The 100-byte database header overwritten with noise."""
    noise = random.Random(5).randbytes(100)
    return noise + data[100:]


@pytest.mark.parametrize("damage", [truncate, scramble_header])
def test_a_damaged_index_is_set_aside_and_rebuilt_from_the_markdown(
    env: Env, damage: Callable[[bytes], bytes]
) -> None:
    sentinels, clean_counts = build_index(env)
    markdown = tree_digest(env.workspace)
    damaged = damage(index_path(env).read_bytes())
    index_path(env).write_bytes(damaged)

    daemon = Daemon(env).start()
    try:
        with daemon.client() as client:
            client.sync()
            status = client.status()
            (notice,) = [i for i in status.issues if "index was unreadable" in i]
            assert (status.files_indexed, status.chunks) == clean_counts
            for key, word in sentinels.items():
                assert client.search(word).results[0].path == key
        human = daemon.cli("status")
        assert human.returncode == 0
        assert f"! {notice}" in human.stdout
    finally:
        daemon.stop()
    kept = Path(notice.rsplit(" ", 1)[1])
    assert kept.parent == index_path(env).parent
    assert kept.name.startswith("default.sqlite.corrupt-")
    assert kept.read_bytes() == damaged  # set aside as found, not deleted or "repaired"
    assert tree_digest(env.workspace) == markdown
    assert "moved it to" in daemon.log()


def test_an_index_from_a_newer_openmemoryd_is_refused_untouched(env: Env) -> None:
    build_index(env)
    raw = apsw.Connection(str(index_path(env)))
    raw.pragma("user_version", SCHEMA_VERSION + 1)
    raw.close()
    index_dir = sorted(p.name for p in index_path(env).parent.iterdir())
    before = index_path(env).read_bytes()
    markdown = tree_digest(env.workspace)

    result = subprocess.run(
        [sys.executable, "-m", "openmemoryd", "run"],
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert str(index_path(env)) in message
    assert f"newer openmemoryd (schema {SCHEMA_VERSION + 1}" in message
    assert "upgrade openmemoryd or move the file away" in message
    assert "Traceback" not in result.stderr
    assert index_path(env).read_bytes() == before
    assert sorted(p.name for p in index_path(env).parent.iterdir()) == index_dir
    assert tree_digest(env.workspace) == markdown
    assert not env.socket.exists()  # refused before serving anyone


def test_damaged_pages_inside_the_index_are_detected_and_rebuilt(env: Env) -> None:
    _, clean_counts = build_index(env)
    data = bytearray(index_path(env).read_bytes())
    middle = len(data) // 4096 // 2 * 4096
    data[middle : middle + 8192] = random.Random(9).randbytes(8192)
    index_path(env).write_bytes(bytes(data))

    daemon = Daemon(env).start()
    try:
        with daemon.client() as client:
            full = client.sync(full=True)
            status = client.status()
    finally:
        daemon.stop()
    assert full.issues == ()
    assert any("index was unreadable" in issue for issue in status.issues)
    assert (status.files_indexed, status.chunks) == clean_counts
