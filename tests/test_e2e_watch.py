"""End to end: the index follows the files with nobody running `sync`.

Everything here goes through a real daemon with a real file watcher on the
real filesystem, and through the real client: a note saved in an editor, a
directory moved away, a transcript an agent is still writing. Searches that
must *not* find something yet are as important as those that must: they show
which mechanism (watcher, debounce, thresholds, fresh barrier) did the work.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw
import pytest

from conftest import KEYWORD_ONLY, Daemon, Env
from omem_client import Client, SearchResult
from omem_protocol import SyncStatus
from openmemoryd.index import index_file
from openmemoryd.store import open_index
from openmemoryd.workspace import PathPolicy

pytestmark = pytest.mark.e2e

# Generous: CI machines are noisy. The latency itself is measured in
# bench/freshness.py, not here.
VISIBLE_WITHIN_S = 10.0


def start(env: Env, sync: str = "", sessions: str = "") -> Daemon:
    """A daemon whose searches never trigger their own checks (search_check_s
    = 0), so whatever becomes visible was brought in by the watcher."""
    env.write_config(
        KEYWORD_ONLY
        + f"[sync]\nsearch_check_s = 0\n{sync}\n"
        + (f"[sessions]\n{sessions}\n" if sessions else "")
    )
    return Daemon(env).start()


# Tests that wait until a change is visible, whatever the debounce, use a
# short one: the default (1.5 s) is what test_a_saved_note_is_found_without_sync
# measures, and everywhere else it would only add its length to every wait.
QUICK = "debounce_ms = 100"


@pytest.fixture
def watched(env: Env) -> Iterator[Daemon]:
    """A fresh daemon with the default debounce."""
    daemon = start(env)
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def shared(module_env: Env) -> Iterator[Daemon]:
    """One daemon, debounce 100 ms, for the module's tests that each use files
    and words of their own and wait until what they changed is visible."""
    daemon = start(module_env, sync=QUICK)
    try:
        yield daemon
    finally:
        daemon.stop()


def sync_status(client: Client) -> SyncStatus:
    sync = client.status().sync
    assert sync is not None
    return sync


def paths_of(result: SearchResult) -> list[str]:
    return [hit.path for hit in result.results]


def wait_until(check: Callable[[], bool], what: str, within: float = VISIBLE_WITHIN_S) -> float:
    """Seconds until *check* held; fails the test after *within*."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        if check():
            return time.monotonic() - started
        time.sleep(0.05)
    pytest.fail(f"not within {within} s: {what}")


def finds(client: Client, query: str, path: str, **kw: object) -> Callable[[], bool]:
    return lambda: path in paths_of(client.search(query, **kw))  # type: ignore[arg-type]


def misses(client: Client, query: str, path: str, **kw: object) -> Callable[[], bool]:
    return lambda: path not in paths_of(client.search(query, **kw))  # type: ignore[arg-type]


# ---------------------------------------------------------------- Markdown


def test_a_saved_note_is_found_without_sync(watched: Daemon) -> None:
    note = watched.env.workspace / "memory" / "tea.md"
    with watched.client() as client:
        assert "memory/tea.md" not in paths_of(client.search("oolong"))
        note.write_text("# Tea\n\nWei prefers oolong tea in the afternoon.\n")
        took = wait_until(finds(client, "oolong", "memory/tea.md"), "the new note is found")
    # the watcher debounces edits (1.5 s) before indexing them
    assert took >= 1.0


def test_a_note_in_a_new_subdirectory_is_found(shared: Daemon) -> None:
    deep = shared.env.workspace / "memory" / "projects" / "atlas"
    deep.mkdir(parents=True)
    (deep / "plan.md").write_text("Atlas ships the quarterly ledger export.\n")
    with shared.client() as client:
        wait_until(
            finds(client, "ledger", "memory/projects/atlas/plan.md"), "a note in a new directory"
        )


def test_vim_write_rename_replaces_the_indexed_text(shared: Daemon) -> None:
    note = shared.env.workspace / "memory" / "vim.md"
    note.write_text("alpha version of the note\n")
    with shared.client() as client:
        wait_until(finds(client, "alpha", "memory/vim.md"), "the first version")
        # vim with backupcopy=no: rename the original to a backup, write a
        # new file under the name, remove the backup (and its 4913 probe)
        probe = note.parent / "4913"
        probe.write_text("")
        probe.unlink()
        backup = note.with_name("vim.md~")
        os.rename(note, backup)
        note.write_text("bravo version of the note\n")
        backup.unlink()
        wait_until(finds(client, "bravo", "memory/vim.md"), "the rewritten note")
        assert "memory/vim.md" not in paths_of(client.search("alpha"))


def test_atomic_replace_replaces_the_indexed_text(shared: Daemon) -> None:
    note = shared.env.workspace / "memory" / "atomic.md"
    note.write_text("charlie draft\n")
    with shared.client() as client:
        wait_until(finds(client, "charlie", "memory/atomic.md"), "the first version")
        temp = note.with_name(".atomic.md.tmp")
        temp.write_text("delta final\n")
        os.replace(temp, note)
        wait_until(finds(client, "delta", "memory/atomic.md"), "the replaced note")
        assert "memory/atomic.md" not in paths_of(client.search("charlie"))
        # the temporary file never became a note of its own
        assert client.status().files_indexed == client.status().files_on_disk


def test_a_deleted_note_disappears(shared: Daemon) -> None:
    note = shared.env.workspace / "memory" / "gone.md"
    note.write_text("the zeppelin hangar closes in March\n")
    with shared.client() as client:
        wait_until(finds(client, "zeppelin", "memory/gone.md"), "the note")
        note.unlink()
        wait_until(misses(client, "zeppelin", "memory/gone.md"), "the deleted note leaves")


def test_moving_a_directory_away_takes_its_notes_out(shared: Daemon) -> None:
    project = shared.env.workspace / "memory" / "kestrel"
    project.mkdir()
    (project / "a.md").write_text("kestrel telemetry budget\n")
    (project / "b.md").write_text("kestrel launch window\n")
    with shared.client() as client:
        wait_until(finds(client, "kestrel", "memory/kestrel/b.md"), "the project notes")
        shutil.move(project, shared.env.root / "archived-kestrel")
        wait_until(lambda: not client.search("kestrel").results, "notes of a moved directory leave")


def test_tool_directories_and_other_files_are_never_indexed(shared: Daemon) -> None:
    memory = shared.env.workspace / "memory"
    for rel in ("node_modules/pkg/README.md", ".git/notes.md", ".venv/lib/x.md", "notes.txt"):
        target = memory / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("the ocelot sentinel\n")
    (memory / "real.md").write_text("the ocelot sentinel, for real\n")
    with shared.client() as client:
        result = client.search("ocelot", fresh=True)
        assert paths_of(result) == ["memory/real.md"]
        assert client.status().files_indexed == client.status().files_on_disk


def test_extra_paths_are_watched(env: Env, tmp_path: Path) -> None:
    extra = tmp_path / "shared-notes"
    extra.mkdir()
    env.write_config(f'extra_paths = ["{extra}"]\n' + KEYWORD_ONLY + "[sync]\nsearch_check_s = 0\n")
    daemon = Daemon(env).start()
    try:
        with daemon.client() as client:
            (extra / "team.md").write_text("the heron rota starts Monday\n")
            wait_until(
                lambda: any(p.endswith("team.md") for p in paths_of(client.search("heron"))),
                "a note in an extra path",
            )
    finally:
        daemon.stop()


# ---------------------------------------------------------------- freshness


def test_fresh_search_sees_a_file_written_just_before(env: Env) -> None:
    # a 20 s debounce: only the fresh barrier can make the note visible now
    daemon = start(env, sync="debounce_ms = 20000")
    try:
        note = env.workspace / "memory" / "fresh.md"
        with daemon.client() as client:
            note.write_text("the quokka census is due Friday\n")
            assert "memory/fresh.md" not in paths_of(client.search("quokka"))
        started = time.monotonic()
        result = daemon.cli("search", "--fresh", "quokka")
        took = time.monotonic() - started
        assert result.returncode == 0, result.stderr
        assert "memory/fresh.md:1-1" in result.stdout
        assert "results may lag" not in result.stderr
        assert took < 5.0  # well inside fresh_timeout_s, nowhere near the debounce
        # an edit right before a fresh search is seen too (read-your-writes)
        with daemon.client() as client:
            note.write_text("the quokka census moved to Monday\n")
            fresh = client.search("quokka", fresh=True)
            assert not fresh.stale
            assert "Monday" in fresh.results[0].snippet
    finally:
        daemon.stop()


def test_fresh_search_works_without_a_watcher(env: Env) -> None:
    daemon = start(env, sync='watch = "off"')
    try:
        (env.workspace / "memory" / "nowatch.md").write_text("wombat shelter inventory\n")
        with daemon.client() as client:
            assert sync_status(client).watcher == "off"
            assert "memory/nowatch.md" not in paths_of(client.search("wombat"))
            result = client.search("wombat", fresh=True)
            assert paths_of(result) == ["memory/nowatch.md"]
            assert not result.stale
    finally:
        daemon.stop()


def test_status_shows_the_watcher_and_the_queue(watched: Daemon) -> None:
    with watched.client() as client:
        sync = sync_status(client)
    assert sync.watcher == "native"
    assert sync.watcher_healthy
    assert sync.queue_depth == 0
    shown = watched.cli("status").stdout
    assert "Watcher:    native, healthy" in shown
    assert "Changes:    queue 0" in shown


# ---------------------------------------------------------------- sessions


def record(role: str, text: str) -> str:
    return json.dumps({"type": "message", "message": {"role": role, "content": text}}) + "\n"


def transcript_dir(env: Env, agent: str) -> Path:
    directory = env.state_dir / "sessions" / agent
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def test_transcript_lines_wait_for_a_threshold_then_cite_jsonl_lines(env: Env) -> None:
    daemon = start(env, sync=QUICK, sessions="delta_messages = 3\nidle_s = 600")
    try:
        log = transcript_dir(env, "coder") / "s1.jsonl"
        key = "sessions/coder/s1.jsonl"
        with daemon.client() as client:
            log.write_text(record("user", "which narwhal dataset?") + record("assistant", "v2"))
            # below the threshold and far from idle: noticed, not indexed
            wait_until(lambda: sync_status(client).pending_sessions, "the transcript is waiting")
            # a waiting transcript is not an index falling behind: searches are
            # not stale while it waits (one may be, while a periodic check runs)
            wait_until(
                lambda: not client.search("narwhal", sources=["sessions"]).stale,
                "a search that is not stale while the transcript waits",
            )
            waiting = client.search("narwhal", sources=["sessions"])
            assert key not in paths_of(waiting)
            assert sync_status(client).pending_sessions
            with log.open("a") as out:
                out.write(record("user", "and the walrus dataset?"))
                out.write(record("assistant", "walrus lives in bucket seven"))
                out.write(record("user", "thanks"))
            wait_until(finds(client, "walrus", key, sources=["sessions"]), "past the threshold")
            hits = {
                h.start_line: h
                for h in client.search("narwhal walrus", sources=["sessions"]).results
            }
            assert 1 in hits
            assert hits[1].source == "sessions"
            assert hits[1].agent == "coder"
            assert "User: which narwhal dataset?" in hits[1].snippet
            # memory-only searches do not see transcripts
            assert key not in paths_of(client.search("walrus", sources=["memory"]))
        cited = daemon.cli("search", "--source", "sessions", "bucket seven").stdout
        assert f"{key}:" in cited
    finally:
        daemon.stop()


def test_a_quiet_short_transcript_is_indexed_after_idle(env: Env) -> None:
    daemon = start(env, sync=QUICK, sessions="idle_s = 1")
    try:
        log = transcript_dir(env, "helper") / "short.jsonl"
        log.write_text(record("user", "remember the pelican password hint"))
        with daemon.client() as client:
            wait_until(
                finds(client, "pelican", "sessions/helper/short.jsonl", sources=["sessions"]),
                "a short transcript after its idle time",
            )
    finally:
        daemon.stop()


def test_truncated_and_rotated_transcripts_are_reread(env: Env) -> None:
    daemon = start(env, sync=QUICK, sessions="idle_s = 0.5")
    try:
        log = transcript_dir(env, "ops") / "run.jsonl"
        key = "sessions/ops/run.jsonl"
        log.write_text(record("user", "first gannet note") + record("assistant", "ok"))
        with daemon.client() as client:
            wait_until(finds(client, "gannet", key, sources=["sessions"]), "the first version")
            log.write_text(record("user", "second osprey note"))  # truncated, rewritten
            wait_until(finds(client, "osprey", key, sources=["sessions"]), "after truncation")
            assert key not in paths_of(client.search("gannet", sources=["sessions"]))
            rotated = log.with_name("run.jsonl.new")
            rotated.write_text(record("user", "third puffin note"))
            os.replace(rotated, log)  # a new inode under the same name
            wait_until(finds(client, "puffin", key, sources=["sessions"]), "after rotation")
            assert key not in paths_of(client.search("osprey", sources=["sessions"]))
            log.unlink()
            wait_until(misses(client, "puffin", key, sources=["sessions"]), "after deletion")
    finally:
        daemon.stop()


def test_session_start_indexes_pending_lines_and_agent_filters(env: Env) -> None:
    daemon = start(env, sync=QUICK, sessions="delta_messages = 100\nidle_s = 600")
    try:
        (transcript_dir(env, "alice") / "a1.jsonl").write_text(record("user", "ibis migration"))
        (transcript_dir(env, "alice") / "a2.jsonl").write_text(record("user", "ibis feeding"))
        (transcript_dir(env, "bob") / "b1.jsonl").write_text(record("user", "ibis nesting"))
        with daemon.client() as client:
            wait_until(lambda: len(sync_status(client).pending_sessions) == 3, "all three waiting")
            started = daemon.cli("session-start", "--agent", "alice", "--session", "a1")
            assert started.returncode == 0, started.stderr
            assert "alice: 1 transcript(s)" in started.stdout
            found = paths_of(client.search("ibis", sources=["sessions"]))
            assert found == ["sessions/alice/a1.jsonl"]
            assert client.session_start("bob").transcripts == 1
            both = paths_of(client.search("ibis", sources=["sessions"]))
            assert set(both) == {"sessions/alice/a1.jsonl", "sessions/bob/b1.jsonl"}
            only_bob = client.search("ibis", sources=["sessions"], agent="bob")
            assert paths_of(only_bob) == ["sessions/bob/b1.jsonl"]
    finally:
        daemon.stop()


def test_log_turns_makes_a_conversation_searchable_at_once(env: Env, tmp_path: Path) -> None:
    daemon = start(env)  # default thresholds: only log_turns' own indexing can explain a hit
    try:
        messages = tmp_path / "turns.json"
        messages.write_text(
            json.dumps(
                [
                    {"role": "user", "content": "we pinned postgres to version 16.4"},
                    {"role": "assistant", "content": "noted: postgres 16.4"},
                ]
            )
        )
        logged = daemon.cli(
            "log-turns", "--agent", "coder", "--session", "s9", "--messages", str(messages)
        )
        assert logged.returncode == 0, logged.stderr
        assert "sessions/coder/s9.jsonl#L1-L2" in logged.stdout
        assert "(indexed)" in logged.stdout
        shown = daemon.cli("search", "--source", "sessions", "postgres").stdout
        assert "sessions/coder/s9.jsonl:1-2" in shown
        lines = (env.state_dir / "sessions" / "coder" / "s9.jsonl").read_text().splitlines()
        assert [json.loads(line)["message"]["role"] for line in lines] == ["user", "assistant"]
    finally:
        daemon.stop()


def test_configured_session_paths_are_searched(env: Env, tmp_path: Path) -> None:
    other = tmp_path / "agent-logs"
    (other / "claude").mkdir(parents=True)
    daemon = start(env, sync=QUICK, sessions=f'paths = ["{other}"]\nidle_s = 0.5')
    try:
        log = other / "claude" / "x.jsonl"
        log.write_text(
            json.dumps({"type": "user", "message": {"role": "user", "content": "cormorant"}}) + "\n"
        )
        with daemon.client() as client:
            wait_until(
                finds(client, "cormorant", str(log), sources=["sessions"]),
                "a transcript in a configured session path",
            )
            hit = client.search("cormorant", sources=["sessions"]).results[0]
            assert hit.agent == "claude"
    finally:
        daemon.stop()


def test_appends_made_outside_the_daemon_leave_the_rows_a_fresh_index_has(
    env: Env, tmp_path: Path
) -> None:
    """A long file grown by another program (`>>`) is re-chunked from its end
    by the watcher's pass; the index must hold what indexing it whole gives."""
    env.write_config(KEYWORD_ONLY + f"[sync]\nsearch_check_s = 0\n{QUICK}\n")
    shared = Daemon(env).start("--log-level", "debug")
    try:
        _grow_outside(shared, tmp_path)
    finally:
        shared.stop()
    assert "indexed memory/grown-outside.md from line" in shared.log()  # from its end


def _grow_outside(shared: Daemon, tmp_path: Path) -> None:
    key = "memory/grown-outside.md"
    path = shared.env.workspace / key
    lines = ["# Grown outside"]
    for i in range(1, 400):
        lines.append(
            f"## Part {i // 20}" if i % 20 == 0 else f"- shelf {i} holds the atlas volume {i}"
        )
    path.write_text("\n".join(lines) + "\n", "utf-8")
    with shared.client() as client:
        wait_until(finds(client, "atlas", key), "the long file indexed")
        for word in ("quokka", "pangolin", "axolotl"):
            with path.open("a", encoding="utf-8") as f:
                f.write(f"- a {word} moved in\n## Later {word}\n- still about the {word}\n")
            wait_until(finds(client, word, key), f"the appended {word}")

    def stored(conn: apsw.Connection) -> list[tuple[object, ...]]:
        return sorted(
            conn.execute(
                "SELECT start_line, end_line, heading, hash FROM chunks WHERE path = ?", (key,)
            )
        )

    live = apsw.Connection(
        str(shared.env.state_dir / "index" / "default.sqlite"), flags=apsw.SQLITE_OPEN_READONLY
    )
    try:
        indexed = stored(live)
    finally:
        live.close()
    fresh = open_index(tmp_path / "fresh.sqlite", workspace=tmp_path).conn
    try:
        index_file(
            fresh, key, PathPolicy(shared.env.workspace).resolve(key), shared.env.config().index
        )
        assert indexed == stored(fresh)
    finally:
        fresh.close()
