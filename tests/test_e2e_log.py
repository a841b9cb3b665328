"""End to end: `omem-client log` through the real daemon, as a shell script uses it.

The daemon runs keyword-only (the conftest default), so dedupe compares
words and every reply says so; `test_e2e_log_semantic.py` runs the same
pipeline with the real local embedder.
"""

from __future__ import annotations

import json
from datetime import date

import pytest

from conftest import Daemon
from omem_client import DaemonError

pytestmark = pytest.mark.e2e

DARK = "I prefer dark mode in every editor"
LIGHT = "I prefer light mode in every editor"


def memory_md(daemon: Daemon) -> str:
    return (daemon.env.workspace / "MEMORY.md").read_text("utf-8")


def test_written_then_searchable_then_reinforced(daemon: Daemon) -> None:
    before = memory_md(daemon)
    written = daemon.cli("log", DARK)
    assert written.returncode == 0, written.stderr
    first = written.stdout.splitlines()
    assert first[0].startswith("Written to MEMORY.md#L")
    assert first[0].endswith(f"(§ User Preferences): {DARK}")
    assert "  - type preference (keyword 'prefer')" in first
    assert "  - route: preference → MEMORY.md § User Preferences (preferences)" in first
    assert any("word overlap only (no embedding provider)" in line for line in first)
    after = memory_md(daemon)
    assert after.count(DARK) == 1
    assert after.replace(f"- {DARK}\n", "", 1) == before  # nothing else changed

    found = daemon.cli("search", "dark mode editor", "--json")
    hits = json.loads(found.stdout)["results"]
    assert hits[0]["path"] == "MEMORY.md"
    assert DARK in hits[0]["snippet"]

    again = daemon.cli("log", DARK, "--json")
    assert again.returncode == 0, again.stderr
    reply = json.loads(again.stdout)
    assert reply["status"] == "reinforced"
    assert reply["similar"]["lexical"] == 1.0
    assert reply["similarity_method"] == "lexical"
    assert memory_md(daemon).count(DARK) == 1
    assert f"- {DARK} (×2)\n" in memory_md(daemon)
    shown = daemon.cli("log", DARK)
    assert shown.stdout.startswith(f"Reinforced {reply['citation']} (now ×3): {DARK}")


def test_rejected_filler_writes_nothing(daemon: Daemon) -> None:
    workspace = daemon.env.workspace
    before = {p: p.read_bytes() for p in workspace.rglob("*.md")}
    for text, rule in [
        ("好的，我记住了你喜欢乌龙茶", "filler"),
        ("Sure, noted that you like tea", "filler"),
        ("```\nrm -rf build/\n```", "pure_code"),
        ("maybe we should move staging to Hetzner", "speculative"),
    ]:
        result = daemon.cli("log", text)
        assert result.returncode == 1, text
        assert result.stdout.startswith(f"Rejected ({rule}): nothing written"), result.stdout
    assert {p: p.read_bytes() for p in workspace.rglob("*.md")} == before
    forced = daemon.cli("log", "maybe we should move staging to Hetzner", "--force")
    assert forced.returncode == 0
    assert "quality gate skipped (force)" in forced.stdout


def test_conflict_is_shown_and_replaced_only_when_asked(daemon: Daemon) -> None:
    assert daemon.cli("log", DARK).returncode == 0
    before = memory_md(daemon)
    conflict = daemon.cli("log", LIGHT)
    assert conflict.returncode == 1
    assert conflict.stdout.startswith("Not written: a possible conflict with MEMORY.md#L")
    assert conflict.stdout.rstrip().endswith("Swap it with --replace, or keep both with --force.")
    assert memory_md(daemon) == before
    dry = daemon.cli("log", LIGHT, "--replace", "--dry-run")
    assert dry.returncode == 0
    assert dry.stdout.startswith("Dry run, nothing changed. Would replace MEMORY.md#L")
    assert memory_md(daemon) == before
    replaced = daemon.cli("log", LIGHT, "--replace")
    assert replaced.returncode == 0
    assert f"{DARK} → {LIGHT}" in replaced.stdout
    assert memory_md(daemon) == before.replace(DARK, LIGHT)


def test_types_route_and_secrets_are_masked(daemon: Daemon) -> None:
    fact = json.loads(daemon.cli("log", "--json", "My name is Wei and I live in Lisbon").stdout)
    assert (fact["path"], fact["section"], fact["memory_type"]) == ("USER.md", "Notes", "fact")
    heron = "The heron colony nests on the west island"
    note = daemon.cli("log", "--type", "note", "--json", heron)
    assert json.loads(note.stdout)["path"] == f"memory/{date.today().isoformat()}.md"
    token = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"
    masked = daemon.cli("log", f"We decided the release bot authenticates with {token}")
    assert masked.returncode == 0
    assert "  masked: ghp_…" in masked.stdout.splitlines()
    assert token not in memory_md(daemon)
    assert "Important Decisions" in masked.stdout


def test_bad_input_is_a_clear_error(daemon: Daemon) -> None:
    unknown = daemon.cli("log", "--type", "mood", DARK)
    assert unknown.returncode == 4
    assert "unknown memory type 'mood'; choose one of: preference, decision" in unknown.stderr
    empty = daemon.cli("log", "   ")
    assert empty.returncode == 4
    assert "nothing to log: text is empty" in empty.stderr
    too_long = daemon.cli("log", "word " * 500)
    assert too_long.returncode == 4
    assert "2000" in too_long.stderr
    assert "Traceback" not in unknown.stderr + empty.stderr + too_long.stderr
    piped = daemon.cli("log", "-", stdin="We decided to release on Tuesdays\n")
    assert piped.returncode == 0
    assert "Important Decisions" in piped.stdout


def test_the_python_client(daemon: Daemon) -> None:
    with daemon.client() as client:
        written = client.log(DARK, type="preference", agent="tester")
        assert written.status == "written"
        assert "type preference (given)" in written.reasons
        assert client.log(DARK).status == "reinforced"
        assert client.log(LIGHT, dry_run=True).status == "conflict"
        with pytest.raises(DaemonError, match="unknown memory type"):
            client.log(DARK, type="mood")
        assert client.status().pid  # the daemon is still serving
