"""End to end: the real openmemoryd driven by the real omem-client, as a user would."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import date

import pytest

from conftest import KEYWORD_ONLY, Daemon, Env
from omem_client import BadRequestError
from openmemoryd.search.rerank.local import LOCAL_MODEL, local_model_installed

pytestmark = pytest.mark.e2e

HIT_LINE = re.compile(r"^(\d\.\d{3}) (\S+):(\d+)-(\d+)(?: · .+)?$")


def hits(stdout: str) -> list[tuple[float, str, int, int]]:
    found = []
    for line in stdout.splitlines():
        match = HIT_LINE.match(line)
        if match:
            score, path, start, end = match.groups()
            found.append((float(score), path, int(start), int(end)))
    return found


def test_append_then_search_then_get(daemon: Daemon) -> None:
    today = f"memory/{date.today().isoformat()}.md"
    appended = daemon.cli("append", "Wei prefers oolong tea")
    assert appended.returncode == 0, appended.stderr
    assert appended.stdout.strip() == f"Appended to {today}#L3 (indexed, new file)"

    found = daemon.cli("search", "oolong")
    assert found.returncode == 0, found.stderr
    (score, path, start, end), *_ = hits(found.stdout)
    assert path == today
    assert start <= 3 <= end
    assert 0 < score <= 1
    assert "  Wei prefers oolong tea" in found.stdout.splitlines()

    got = daemon.cli("get", today, "--from", "2", "--lines", "3")
    assert got.returncode == 0
    assert got.stdout == "\nWei prefers oolong tea\n"
    # a hit's citation reads back the lines it cites
    cited = json.loads(daemon.cli("search", "oolong", "--json").stdout)["results"][0]["citation"]
    assert cited == (f"{today}#L{start}-L{end}" if start != end else f"{today}#L{start}")
    got = daemon.cli("get", cited)
    assert got.returncode == 0, got.stderr
    assert "Wei prefers oolong tea" in got.stdout.splitlines()
    got = daemon.cli("get", f"{today}#L3", "--json")
    assert json.loads(got.stdout)["text"] == "Wei prefers oolong tea"
    got = daemon.cli("get", today, "--from", "2", "--to", "3")
    assert got.returncode == 0, got.stderr
    assert got.stdout == "\nWei prefers oolong tea\n"
    refused = daemon.cli("get", f"{today}#L3", "--from", "1")
    assert refused.returncode != 0
    assert "names its lines" in refused.stderr
    refused = daemon.cli("get", f"{today}#L3-L2")
    assert refused.returncode != 0
    assert "ends before it starts" in refused.stderr
    assert (daemon.env.workspace / today).read_text() == "# " + date.today().isoformat() + (
        "\n\nWei prefers oolong tea\n"
    )


@pytest.fixture
def unwatched(env: Env) -> Iterator[Daemon]:
    """A daemon that changes its index only when told (`sync`): no watcher
    races the explicit sync to report a change, however slow the machine."""
    env.write_config(KEYWORD_ONLY + '[sync]\nwatch = "off"\n')
    handle = Daemon(env).start()
    try:
        yield handle
    finally:
        handle.stop()


def test_edit_sync_and_delete_keep_the_index_true_to_the_files(unwatched: Daemon) -> None:
    daemon = unwatched
    note = daemon.env.workspace / "memory" / "projects.md"
    note.write_text("# Projects\n\nThe kestrel migration ships in March.\n")
    synced = daemon.cli("sync")
    assert "1 added" in synced.stdout
    assert hits(daemon.cli("search", "kestrel").stdout)[0][1] == "memory/projects.md"

    note.write_text("# Projects\n\nThe falcon migration ships in April.\n")
    synced = daemon.cli("sync")
    assert "1 updated" in synced.stdout
    assert daemon.cli("search", "kestrel").stdout.strip() == "No matches."
    assert hits(daemon.cli("search", "falcon").stdout)[0][1] == "memory/projects.md"

    again = daemon.cli("sync")
    assert "0 added, 0 updated" in again.stdout

    note.unlink()
    synced = daemon.cli("sync")
    assert "1 removed" in synced.stdout
    gone = daemon.cli("search", "falcon")
    assert gone.stdout.strip() == "No matches."
    # only the untouched templates remain, and they hold no memory
    assert "the index is empty" in gone.stderr


def test_chinese_and_mixed_search(daemon: Daemon) -> None:
    notes = daemon.env.workspace / "memory" / "tech.md"
    notes.write_text(
        "# 技术笔记\n\n我们讨论了缓存方案，决定用 Redis 做二级缓存。\n\n"
        "## 例会\n\n每周一上午开周会，会后更新项目文档。\n"
    )
    (daemon.env.workspace / "memory" / "other.md").write_text("# Other\n\n周末去爬山，天气很好。\n")
    daemon.cli("sync")
    for query in ("缓存方案", "周会", "Redis 缓存", "二级缓存 Postgres"):
        result = daemon.cli("search", query)
        assert result.returncode == 0
        assert hits(result.stdout), query
        assert hits(result.stdout)[0][1] == "memory/tech.md", query
    assert "每周一上午开周会" in daemon.cli("search", "周会").stdout


def test_a_chinese_question_is_searched_by_its_words(daemon: Daemon) -> None:
    family = daemon.env.workspace / "memory" / "family.md"
    family.write_text("# 家里\n\n我女儿叫小雨，今年七岁，对花生过敏。\n")
    daemon.cli("sync")
    explained = daemon.cli("search", "小雨对什么过敏", "--explain")
    # no pair straddling 什么 (雨对 stays: 对 is a word of its own)
    assert "# terms: 小雨 雨对 过敏;" in explained.stdout
    found = daemon.cli("search", "女儿过敏")
    assert found.returncode == 0, found.stderr
    assert hits(found.stdout)[0][1] == "memory/family.md", found.stdout + found.stderr


def test_search_json_has_the_documented_shape(daemon: Daemon) -> None:
    daemon.cli("append", "Wei prefers oolong tea")
    result = daemon.cli("search", "oolong", "--json")
    payload = json.loads(result.stdout)
    for key in ("results", "provider", "model", "degraded", "stale", "empty_reason"):
        assert key in payload
    hit = payload["results"][0]
    for key in (
        "path",
        "start_line",
        "end_line",
        "snippet",
        "score",
        "text_score",
        "vector_score",
        "source",
        "citation",
    ):
        assert key in hit
    assert hit["citation"] == f"{hit['path']}#L{hit['start_line']}" or hit["citation"].endswith(
        f"-L{hit['end_line']}"
    )
    empty = json.loads(daemon.cli("search", "zzzunfindable", "--json").stdout)
    assert empty["results"] == []
    assert empty["empty_reason"] == "no_match"


def test_status_shows_workspace_index_counts_and_version(daemon: Daemon) -> None:
    daemon.cli("sync")
    status = daemon.cli("status")
    assert status.returncode == 0
    text = status.stdout
    assert str(daemon.env.workspace) in text
    assert str(daemon.env.state_dir / "index" / "default.sqlite") in text
    assert "Files:      3 indexed / 3 on disk" in text
    assert re.search(r"^openmemoryd \d+\.\d+\.\d+ ", text, re.M)
    installed = local_model_installed()
    if installed:
        assert f"Rerank:     {LOCAL_MODEL} · no search has reached it yet" in text
    else:
        assert "Rerank:     off (no local reranker is installed)" in text
    payload = json.loads(daemon.cli("status", "--json").stdout)
    assert payload["files_on_disk"] == payload["files_indexed"] == 3
    assert payload["rerank"]["provider"] == "auto"
    assert payload["rerank"]["model"] == (LOCAL_MODEL if installed else None)
    assert payload["chunks"] == 0  # untouched templates are not memory
    daemon.cli("append", "first real note")
    payload = json.loads(daemon.cli("status", "--json").stdout)
    assert (payload["files_indexed"], payload["chunks"]) == (4, 1)


def test_status_counts_a_skipped_file_apart_from_the_indexed_ones(daemon: Daemon) -> None:
    """A binary file in memory/ is recorded but holds nothing searchable:
    `status` counts it as skipped, not as indexed, and names it under Issues;
    a Latin-1 note is indexed (read as Latin-1) and only noted. The
    JSON keeps ``files_indexed`` as before and adds ``files_skipped``."""
    memory = daemon.env.workspace / "memory"
    memory.mkdir(exist_ok=True)
    (memory / "export.md").write_bytes(b"\x1f\x8b\x08\x00archive\x00bytes")
    (memory / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve cr\xe8me\n".encode("latin-1"))
    daemon.cli("sync")
    text = daemon.cli("status").stdout
    assert "Files:      4 indexed, 1 skipped (see Issues) / 5 on disk" in text
    assert "  memory: 4/5 files, 1 chunks, 1 skipped" in text
    assert "  ! memory/export.md: skipped: binary file (contains NUL bytes)" in text
    assert "  ! memory/latin1.md: not UTF-8: read as latin1" in text
    payload = json.loads(daemon.cli("status", "--json").stdout)
    assert (payload["files_on_disk"], payload["files_indexed"]) == (5, 5)
    assert payload["files_skipped"] == 1
    assert payload["sources"][0]["files_skipped"] == 1
    doctor = daemon.cli("doctor").stdout
    assert "indexed/on disk: memory 4/5 (1 chunks, 1 skipped)" in doctor  # the same count
    (memory / "export.md").unlink()
    daemon.cli("sync")
    assert "Files:      4 indexed / 4 on disk" in daemon.cli("status").stdout


def test_refused_paths_exit_4_with_the_reason(daemon: Daemon) -> None:
    outside = daemon.env.root / "secret.md"
    outside.write_text("secret")
    (daemon.env.workspace / "memory" / "link.md").symlink_to(outside)
    cases = {
        "../secret.md": "'..'",
        str(outside): "not a memory file",
        "memory/link.md": "symlink",
        "memory/none.md": "no such memory file",
        "notes.txt": ".md",
    }
    for path, reason in cases.items():
        result = daemon.cli("get", path)
        assert result.returncode == 4, path
        assert reason in result.stderr, (path, result.stderr)
        assert "Traceback" not in result.stderr
    before = sorted(daemon.env.workspace.rglob("*"))
    too_long = f"memory/{'a' * 300}.md"  # a name over the file system's 255 bytes
    for args in (("get", too_long), ("append", "--path", too_long, "a note")):
        result = daemon.cli(*args)
        assert result.returncode == 4, args
        assert "error (bad_request): a name in the path is longer than" in result.stderr
    assert sorted(daemon.env.workspace.rglob("*")) == before


def test_append_reads_stdin_and_targets_a_path(daemon: Daemon) -> None:
    result = daemon.cli("append", "--path", "MEMORY.md", stdin="- Prefers dark roast\n")
    assert result.returncode == 0
    assert "MEMORY.md#L" in result.stdout
    assert "- Prefers dark roast\n" in (daemon.env.workspace / "MEMORY.md").read_text()
    assert hits(daemon.cli("search", "dark roast").stdout)[0][1] == "MEMORY.md"
    empty = daemon.cli("append", "   ")
    assert empty.returncode == 4
    assert "empty" in empty.stderr


def test_a_request_outside_its_bounds_says_which_field_and_why(daemon: Daemon) -> None:
    empty = daemon.cli("search", "")
    assert empty.returncode == 4, empty.stderr
    assert empty.stderr == "omem-client: error (bad_request): query is empty\n"
    long = daemon.cli("search", "x" * 9000)
    assert "`query` must be at most 8192 characters long" in long.stderr
    too_many = pytest.raises(BadRequestError, match="`limit` must be at most 100")
    with daemon.client() as client, too_many:
        client.search("tea", limit=1000)


def test_text_that_is_not_utf8_is_refused_saying_what_to_do(daemon: Daemon) -> None:
    """A Latin-1 byte in an argument (Python keeps it as U+DCE9) or on stdin
    gets a message naming the byte, not a traceback, and nothing is written."""
    memory = daemon.env.workspace / "MEMORY.md"
    before = memory.read_bytes()
    for args in (("append", "--path", "MEMORY.md", "caf\udce9 au lait"), ("search", "caf\udce9")):
        result = daemon.cli(*args)
        assert result.returncode == 4, result.stderr
        assert "the byte 0xE9 (not UTF-8)" in result.stderr
        assert 'in "caf\\xe9' in result.stderr
        assert "iconv" in result.stderr
        assert "Traceback" not in result.stderr
    as_json = daemon.cli("search", "caf\udce9", "--json")
    assert json.loads(as_json.stdout)["error"]["code"] == "bad_request"
    # stdin is read in the locale's encoding, strictly or (as in the C
    # locale) keeping such bytes as surrogates: a usage error either way.
    turns = b'[{"role": "user", "content": "caf\xe9"}]'
    for errors, command, given in (
        ("strict", ("append", "--path", "MEMORY.md", "-"), b"- caf\xe9 au lait\n"),
        ("surrogateescape", ("append", "--path", "MEMORY.md", "-"), b"- caf\xe9 au lait\n"),
        ("surrogateescape", ("log-turns", "--agent", "a", "--session", "s"), turns),
    ):
        piped = subprocess.run(
            [sys.executable, "-m", "omem_client", *command],
            env={**daemon.env.vars, "PYTHONIOENCODING": f"utf-8:{errors}"},
            input=given,
            capture_output=True,
            timeout=60,
            check=False,
        )
        stderr = piped.stderr.decode()
        assert piped.returncode == 2, stderr
        assert "stdin is not utf-8 text (the byte 0xE9)" in stderr
        assert "Traceback" not in stderr
    assert memory.read_bytes() == before
    assert daemon.cli("append", "--path", "MEMORY.md", "café au lait").returncode == 0


def test_numbers_out_of_range_are_refused_not_a_traceback(daemon: Daemon) -> None:
    huge = daemon.cli("get", "MEMORY.md", "--from", "999999999999999999999")
    assert huge.returncode == 4, huge.stderr
    assert "a number in the request is out of range" in huge.stderr
    assert "Traceback" not in huge.stderr
    nan = daemon.cli("--timeout", "nan", "status", "--json")  # passes any range check
    assert nan.returncode == 2, nan.stderr
    error = json.loads(nan.stdout)["error"]
    assert error["code"] == "usage"
    assert "nan is not a number of seconds of at least 0.1" in error["message"]


def test_full_sync_reports_every_file(daemon: Daemon) -> None:
    daemon.cli("sync")
    full = daemon.cli("sync", "--full", "--json")
    payload = json.loads(full.stdout)
    assert payload["updated"] == 3
    assert payload["scanned"] == 3


def test_daemon_not_running_exits_3(daemon: Daemon) -> None:
    daemon.stop()
    result = daemon.cli("status")
    assert result.returncode == 3
    assert "openmemoryd start" in result.stderr


def test_full_sync_streams_progress_to_the_end(daemon: Daemon) -> None:
    memory = daemon.env.workspace / "memory"
    for i in range(70):
        (memory / f"n{i:02d}.md").write_text(f"note {i} about the albatross survey\n")
    frames: list[tuple[int, int, str]] = []
    with daemon.client() as client:
        result = client.sync(
            full=True, on_progress=lambda p: frames.append((p.done, p.total, p.phase))
        )
    assert result.scanned == 73  # the notes and the three templates
    totals = {total for _, total, _ in frames}
    assert totals == {73}
    done = [d for d, _, _ in frames]
    assert done == sorted(done)
    assert done[0] < done[-1] == 73
    assert len(frames) >= 3  # more than a start and an end: a bar that moves
