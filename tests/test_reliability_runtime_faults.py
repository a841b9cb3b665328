"""Faults of the index file while the daemon runs, through the real daemon.

Damaged pages found by a query or a write, and a disk that fills up while
the index is written. The faults come from the test VFS in
`tests/fault_vfs.py` (switched on with ``OPENMEMORYD_FAULTS_DIR``):
real damage written into a live file hides behind SQLite's page cache, and
CI cannot always mount a small tmpfs (`test_a_real_full_tmpfs...` does when
it can). What must hold: the daemon never crashes or loops, says what is
wrong in ``status``, answers what it can, never loses Markdown, and is whole
again once the cause is gone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from conftest import Daemon, Env
from fake_embedding_servers import FakeEmbeddingServer, status
from fault_vfs import FAULTS_ENV, SITE_DIR
from omem_client import Client, UnavailableError
from openmemoryd.engine.recovery import MAX_RECOVERIES
from reliability_support import index_snapshot, letters, tree_digest, wait_until

pytestmark = pytest.mark.e2e

NOTES = 12


def index_path(env: Env) -> Path:
    return env.state_dir / "index" / "default.sqlite"


@pytest.fixture
def faults(env: Env, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fault switches directory; daemons started afterwards use it."""
    switches = env.root / "faults"
    switches.mkdir()
    monkeypatch.setenv(FAULTS_ENV, str(switches))
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", str(SITE_DIR) + (os.pathsep + path if path else ""))
    return switches


@pytest.fixture
def running(env: Env, faults: Path) -> Iterator[tuple[Daemon, dict[str, str]]]:
    """A daemon over a few notes, each with a sentinel word, all indexed."""
    sentinels = {}
    (env.workspace / "memory").mkdir(parents=True)
    for number in range(NOTES):
        key = f"memory/topic-{number}.md"
        sentinels[key] = letters(number, prefix="zqrun")
        (env.workspace / key).write_text(f"# Topic {number}\n\nSentinel {sentinels[key]}.\n")
    daemon = Daemon(env).start()
    try:
        with daemon.client() as client:
            client.sync()
        yield daemon, sentinels
    finally:
        daemon.stop()


def damage(faults: Path, env: Env) -> int:
    """Make every read of the live index file fail as damaged pages do, and
    make the daemon's connections read it again: a write from another
    connection changes the WAL, so each of them drops its page cache."""
    inode = index_path(env).stat().st_ino
    wal = Path(f"{index_path(env)}-wal")  # recent pages live in the WAL until a checkpoint
    with (faults / "corrupt").open("a") as listed:
        listed.write(f"{inode}\n{wal.stat().st_ino}\n")
    poke = apsw.Connection(str(index_path(env)))
    try:
        poke.set_busy_timeout(5000)
        with poke:
            poke.execute(
                "INSERT INTO meta(key, value) VALUES ('test-poke', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(inode),),
            )
    finally:
        poke.close()
    return inode


def damage_issues(client: Client) -> list[str]:
    """What status says about damage found while running (not the notice
    that it was repaired, which stays)."""
    return [i for i in client.status().issues if "index is damaged" in i or "CorruptError" in i]


def test_damage_found_by_an_append_is_repaired_and_the_text_kept(
    env: Env, faults: Path, running: tuple[Daemon, dict[str, str]]
) -> None:
    daemon, sentinels = running
    damaged_inode = damage(faults, env)
    with daemon.client() as client:
        appended = client.append("Damage drill note zqdamappend.", path="memory/drill.md")
        assert not appended.indexed  # written to the Markdown, not (yet) to the index
        wait_until(lambda: not damage_issues(client), "the damaged index is rebuilt")
        status = client.status()
        (notice,) = [i for i in status.issues if "index was unreadable" in i]
        assert status.files_indexed == status.files_on_disk
        assert client.search("zqdamappend").results[0].path == "memory/drill.md"
        for key, word in sentinels.items():
            assert client.search(word).results[0].path == key
        assert client.append("After the repair zqdamafter.").indexed
    kept = Path(notice.rsplit(" ", 1)[1])
    assert kept.stat().st_ino == damaged_inode  # set aside as found
    assert index_path(env).stat().st_ino != damaged_inode
    assert "Damage drill note zqdamappend." in (env.workspace / "memory/drill.md").read_text()
    assert index_snapshot(index_path(env)).integrity == "ok"
    assert "Traceback" not in daemon.log().split("rebuilding the damaged index failed")[0]


def test_a_search_on_a_damaged_index_gets_a_clear_error_then_answers(
    env: Env, faults: Path, running: tuple[Daemon, dict[str, str]]
) -> None:
    daemon, sentinels = running
    word = next(iter(sentinels.values()))
    damage(faults, env)
    with daemon.client() as client:
        with pytest.raises(UnavailableError, match=r"damaged .* rebuilt from the Markdown"):
            client.search(word)
        wait_until(lambda: not damage_issues(client), "the damaged index is rebuilt")
        assert client.search(word).results


def test_repeated_damage_is_repaired_a_bounded_number_of_times(
    env: Env, faults: Path, running: tuple[Daemon, dict[str, str]]
) -> None:
    daemon, sentinels = running
    word = next(iter(sentinels.values()))
    markdown = tree_digest(env.workspace)
    with daemon.client() as client:
        for _ in range(MAX_RECOVERIES):
            damage(faults, env)
            with pytest.raises(UnavailableError):
                client.search(word)
            wait_until(lambda: not damage_issues(client), "the damaged index is rebuilt")
            assert client.search(word).results
        damage(faults, env)
        with pytest.raises(UnavailableError, match="restart openmemoryd"):
            client.search(word)
        wait_until(
            lambda: any("not rebuilt again" in i for i in damage_issues(client)),
            "status says it gave up",
        )
        # still serving what does not need the index, and not rebuilding
        assert client.get("memory/topic-0.md").text.startswith("# Topic 0")
        assert not client.append("Kept while damaged zqdamkept.").indexed
    rebuilds = daemon.log().count("the damaged index was rebuilt from the Markdown")
    assert rebuilds == MAX_RECOVERIES
    assert daemon.stop() == 0
    # a restart finds the damage when it opens the file, and rebuilds
    again = Daemon(env).start()
    try:
        with again.client() as client:
            client.sync()
            assert client.search("zqdamkept").results[0].path.startswith("memory/")
            assert not damage_issues(client)
    finally:
        again.stop()
    kept = sorted(index_path(env).parent.glob("default.sqlite.corrupt-*[0-9]"))
    assert len(kept) == MAX_RECOVERIES + 1  # every damaged file kept, none overwritten
    markdown_now = tree_digest(env.workspace)
    assert {key: markdown_now[key] for key in markdown} == markdown


# ---------------------------------------------------------------- a full disk


def disk_issues(client: Client) -> list[str]:
    return [i for i in client.status().issues if "full" in i or "failed" in i]


def test_a_full_disk_keeps_reads_going_and_recovers_when_space_returns(
    env: Env, faults: Path, running: tuple[Daemon, dict[str, str]]
) -> None:
    daemon, sentinels = running
    (faults / "enospc").touch()
    with daemon.client() as client:
        appended = client.append("Written on a full disk zqfullnote.", path="memory/full.md")
        assert not appended.indexed
        logged = client.log_turns(
            "coder", "s1", [{"role": "user", "content": "we pinned zqfullturn to 16.4"}]
        )
        assert not logged.indexed  # written to the transcript; no error to invite a retry
        (issue,) = [i for i in client.status().issues if i.startswith("writing the index failed")]
        assert "disk is full" in issue
        for key, word in sentinels.items():  # reads go on from the index as it was
            assert client.search(word).results[0].path == key
        assert not client.search("zqfullnote").results
        assert "zqfullnote" in client.get("memory/full.md").text
        with pytest.raises(UnavailableError, match="disk holding the index is full"):
            client.sync()
    snapshot = index_snapshot(index_path(env))  # what a full disk left behind
    assert snapshot.integrity == "ok"
    assert snapshot.fts_matches_chunks
    assert "memory/full.md" not in {path for path, *_ in snapshot.files}

    (faults / "enospc").unlink()
    with daemon.client() as client:
        client.sync()  # succeeds (the queue's retry may have indexed the note already)
        wait_until(lambda: not disk_issues(client), "status clears")
        assert client.search("zqfullnote").results[0].path == "memory/full.md"
        wait_until(lambda: bool(client.search("zqfullturn").results), "the turn is indexed")
        assert client.search("zqfullturn").results[0].path == logged.path
        assert client.append("Room again zqroomagain.").indexed
    assert index_snapshot(index_path(env)).integrity == "ok"
    assert daemon.proc is not None
    assert daemon.proc.poll() is None


def test_log_session_end_and_tasks_on_a_full_disk_write_once_and_say_so(
    env: Env, faults: Path, running: tuple[Daemon, dict[str, str]]
) -> None:
    """The agent writes answer like append: the Markdown is written, the reply
    says it is not indexed yet (an error would invite a retry, and so a second
    copy), and the index catches up when space returns."""
    daemon, _ = running
    (faults / "enospc").touch()
    with daemon.client() as client:
        logged = client.log("We decided to keep zqfulldecision in PostgreSQL 16", type="decision")
        assert logged.status == "written"
        assert any(reason.startswith("index: not updated now") for reason in logged.reasons)
        ended = client.session_end(request="zqfullrequest", next_steps=["Ship zqfulltask"])
        assert not ended.indexed
        listed = client.tasks("done", ["zqfulltask"])
        assert not listed.indexed
        assert [task.done for task in listed.changed] == [True]
    memory = (env.workspace / "MEMORY.md").read_text()
    assert memory.count("zqfulldecision") == 1
    assert "Ship zqfulltask" in (env.workspace / "memory" / "TASKS.md").read_text()

    (faults / "enospc").unlink()
    with daemon.client() as client:
        client.sync()
        wait_until(lambda: not disk_issues(client), "status clears")
        assert client.search("zqfulldecision").results[0].path == "MEMORY.md"
        assert client.search("zqfullrequest").results[0].path == ended.path
        assert client.search("zqfulltask").results


# ---------------------------------------------------------------- a real full tmpfs


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, if this machine lets us mount one (root, no sandbox)."""
    if shutil.which("mount") is None:
        pytest.skip("no mount command here")
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_a_real_full_tmpfs_under_the_index_is_survived(tmp_path: Path, small_tmpfs: Path) -> None:
    socket_dir = Path(tempfile.mkdtemp(prefix="om-", dir="/tmp"))
    os.chmod(socket_dir, 0o700)
    env = Env(root=tmp_path / "setup", socket_dir=socket_dir)
    env.state_dir = small_tmpfs / "state"
    daemon = Daemon(env).start()
    try:
        with daemon.client() as client:
            client.sync()
            assert client.append("Before the disk filled zqbefore.").indexed
            ballast = small_tmpfs / "ballast"
            with ballast.open("wb") as fill:
                try:
                    while True:
                        fill.write(b"\0" * 65536)
                        fill.flush()
                except OSError:
                    pass
            big = " ".join(letters(n, prefix="zqbig", width=5) for n in range(30000))
            appended = client.append(f"A large note zqlarge {big}", path="memory/large.md")
            assert not appended.indexed
            assert any(i.startswith("writing the index failed") for i in client.status().issues)
            assert client.search("zqbefore").results
            ballast.unlink()
            client.sync()
            wait_until(lambda: not disk_issues(client), "status clears")
            assert client.search("zqlarge").results[0].path == "memory/large.md"
        assert index_snapshot(env.state_dir / "index" / "default.sqlite").integrity == "ok"
    finally:
        daemon.stop()
        shutil.rmtree(socket_dir, ignore_errors=True)


def test_vectors_that_could_not_be_stored_on_a_full_disk_catch_up(env: Env, faults: Path) -> None:
    with FakeEmbeddingServer() as provider:
        env.write_config(
            '[embedding]\nprovider = "openai"\n'
            f'[embedding.openai]\nbase_url = "{provider.url}/v1"\n'
        )
        daemon = Daemon(env).start()
        try:
            with daemon.client() as client:

                def vectors_complete() -> bool:
                    embedding = client.status().embedding
                    return embedding.state == "idle" and embedding.embedded == embedding.total

                def issues_with(text: str) -> list[str]:
                    return [i for i in client.status().issues if text in i]

                client.append("Before the disk filled: osprey survey.")
                wait_until(vectors_complete, "the first vectors are stored")
                provider.outage(status(503))  # keywords now, vectors later
                assert client.append("Kestrel migration window.").indexed
                wait_until(lambda: client.status().embedding.state == "failing", "vectors wait")
                (faults / "enospc").touch()
                provider.recover()
                client.search("osprey survey please")  # the provider answers: retry now
                wait_until(
                    lambda: bool(issues_with("writing the index failed")),
                    "storing the vectors fails on the full disk",
                )
                assert client.search("kestrel").results  # reads go on
                (faults / "enospc").unlink()
                wait_until(vectors_complete, "the vectors catch up", within=15.0)
                wait_until(lambda: not issues_with("full"), "status clears")
                hit = client.search("kestrel migration").results[0]
                assert hit.vector_score is not None
        finally:
            daemon.stop()
    assert index_snapshot(index_path(env)).integrity == "ok"
