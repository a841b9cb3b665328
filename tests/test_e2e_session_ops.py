"""End to end: primer and flush-check through the real daemon and client."""

from __future__ import annotations

import json
import threading
from datetime import date, timedelta

import pytest

from conftest import Daemon
from openmemoryd.workspace import template_text

pytestmark = pytest.mark.e2e

DAY = date(2026, 3, 10)


def write(daemon: Daemon, key: str, text: str) -> None:
    path = daemon.env.workspace / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# ---------------------------------------------------------------- primer


def test_primer_cli_prints_user_project_and_recent_days(daemon: Daemon) -> None:
    write(daemon, "USER.md", template_text("USER.md").replace("**Name:** ", "**Name:** Wei"))
    write(daemon, "PROJECT.md", "# PROJECT.md\n\n## Overview\nopenmemory, a memory daemon\n")
    write(daemon, "MEMORY.md", "# MEMORY.md\n\n## Lessons Learned\n- private lesson\n")
    write(daemon, f"memory/{DAY}.md", f"# {DAY}\n\n- released 0.4\n")
    write(daemon, f"memory/{DAY - timedelta(days=1)}.md", "# y\n\n周会改到周三\n")
    result = daemon.cli("primer", "--date", DAY.isoformat())
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("## User (USER.md)") < out.index("## Project (PROJECT.md)")
    assert "- **Name:** Wei" in out
    assert "## Today, 2026-03-10 (memory/2026-03-10.md)\n- released 0.4" in out
    assert "## Yesterday, 2026-03-09 (memory/2026-03-09.md)\n周会改到周三" in out
    assert "private lesson" not in out  # MEMORY.md stays out of group contexts
    private = daemon.cli("primer", "--private", "--date", DAY.isoformat())
    assert (
        "## Long-term memory (MEMORY.md)\n### Lessons Learned\n- private lesson" in private.stdout
    )


def test_primer_keeps_to_its_budget(daemon: Daemon) -> None:
    write(daemon, "USER.md", "# USER.md\n\n- Name: Wei\n")
    body = "\n".join(f"- {i}: note about the indexer and its queue" for i in range(500))
    write(daemon, f"memory/{DAY}.md", f"# {DAY}\n\n{body}\n")
    with daemon.client() as client:
        for budget in (100, 400, 1000):
            primer = client.primer(budget=budget, today=DAY)
            assert primer.budget == budget
            assert 0 < primer.tokens <= budget
            assert "Name: Wei" in primer.text
        default = client.primer(today=DAY)
    assert default.budget == 1000
    today = next(s for s in default.sections if s.label == "today")
    assert today.truncated
    assert today.end_line == 502
    assert "- 499: note" in default.text
    tiny = daemon.cli("primer", "--budget", "5")
    assert tiny.returncode == 2  # a budget under 50 is a usage error, not an empty primer
    as_json = json.loads(daemon.cli("primer", "--json", "--date", DAY.isoformat()).stdout)
    assert as_json["type"] == "primer_result"
    assert [s["label"] for s in as_json["sections"]] == ["user", "today"]
    assert "PROJECT.md: still the template" in as_json["omitted"]


def test_a_primer_that_holds_nothing_says_why_on_stderr(daemon: Daemon) -> None:
    """``primer --budget 50`` printed nothing and exited 0: empty files and a
    budget too small read alike. The reasons only --json gave now go to
    stderr, with the budget that shows something; stdout stays the primer."""
    line = "Alexei lives in Novosibirsk and writes the billing service in Go " * 3
    write(daemon, "USER.md", f"# USER.md\n\n- {line}\n")
    write(daemon, f"memory/{DAY}.md", f"# {DAY}\n\n- {line}\n")
    small = daemon.cli("primer", "--budget", "50", "--date", DAY.isoformat())
    assert (small.returncode, small.stdout) == (0, "")
    notes = small.stderr.splitlines()
    omitted = json.loads(
        daemon.cli("primer", "--budget", "50", "--date", DAY.isoformat(), "--json").stdout
    )["omitted"]
    needed = min(
        int(reason.split("a budget of ")[1].split()[0]) for reason in omitted if "no room" in reason
    )
    assert notes[0] == (
        "(nothing fitted in a 50-token budget, but the memory files are not empty: "
        f"--budget {needed} shows the first of them)"
    )
    assert "(PROJECT.md left out: still the template)" in notes
    user = next(n for n in notes if n.startswith("(USER.md left out: "))
    assert user.startswith("(USER.md left out: no room in a 50-token budget; a budget of ")
    assert len(notes) == 1 + len(omitted)  # every reason --json gives
    enough = daemon.cli("primer", "--budget", str(needed), "--date", DAY.isoformat())
    assert "Alexei lives in Novosibirsk" in enough.stdout
    assert not enough.stderr.startswith("(nothing")

    write(daemon, "USER.md", template_text("USER.md"))
    write(daemon, f"memory/{DAY}.md", "")
    empty = daemon.cli("primer", "--date", DAY.isoformat())
    assert (empty.returncode, empty.stdout) == (0, "")
    assert empty.stderr.splitlines()[0] == (
        "(nothing to start with: the memory files hold no memories yet)"
    )


def test_primer_bad_date_is_a_usage_error(daemon: Daemon) -> None:
    result = daemon.cli("primer", "--date", "2026-02-30")
    assert result.returncode == 2
    assert "YYYY-MM-DD" in result.stderr


# ---------------------------------------------------------------- flush-check


def flush(daemon: Daemon, tokens: int, *extra: str) -> tuple[int, str]:
    result = daemon.cli(
        "flush-check",
        "--session",
        "s1",
        "--agent",
        "coder",
        "--tokens",
        str(tokens),
        "--context-window",
        "200000",
        "--date",
        DAY.isoformat(),
        *extra,
    )
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, result.stdout


def test_flush_check_once_per_cycle_with_the_seed_prompts(daemon: Daemon) -> None:
    code, out = flush(daemon, 175_000)
    assert (code, out) == (1, "flush: no (175000 tokens < threshold 176000)\n")
    code, out = flush(daemon, 176_000)
    assert code == 0
    assert out.startswith("flush: yes (176000 tokens >= threshold 176000)")
    assert "Session nearing compaction. Store durable memories now." in out
    assert (
        "Write any lasting notes to memory/2026-03-10.md; reply with NO_REPLY if nothing to store."
        in out
    )
    assert flush(daemon, 190_000) == (1, "flush: no (already flushed in compaction cycle 0)\n")
    assert flush(daemon, 30_000)[0] == 1  # compacted: a new cycle starts
    assert flush(daemon, 180_000)[0] == 0
    assert flush(daemon, 180_000, "--compaction-count", "5")[0] == 0
    assert flush(daemon, 180_000, "--compaction-count", "5")[0] == 1


def test_flush_once_per_cycle_across_daemon_restarts(daemon: Daemon) -> None:
    assert flush(daemon, 180_000, "--compaction-count", "1")[0] == 0
    daemon.stop()
    daemon.start()
    code, out = flush(daemon, 185_000, "--compaction-count", "1")
    assert (code, out) == (1, "flush: no (already flushed in compaction cycle 1)\n")
    assert flush(daemon, 185_000, "--compaction-count", "2")[0] == 0


def test_flush_is_skipped_for_read_only_sandboxes(daemon: Daemon) -> None:
    code, out = flush(daemon, 199_000, "--read-only")
    assert (code, out) == (1, "flush: no (the workspace is read-only)\n")
    with daemon.client() as client:
        result = client.flush_check(
            "s1", agent="coder", tokens=199_000, context_window=200_000, read_only=True
        )
    assert (result.should_flush, result.prompt) == (False, "")


def test_concurrent_checks_of_one_session_flush_once(daemon: Daemon) -> None:
    answers: list[bool] = []

    def ask() -> None:
        with daemon.client() as client:
            result = client.flush_check("busy", tokens=120_000, context_window=128_000)
            answers.append(result.should_flush)

    threads = [threading.Thread(target=ask) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == [False] * 11 + [True]


def test_flush_check_bad_input_is_refused(daemon: Daemon) -> None:
    result = daemon.cli(
        "flush-check", "--session", "../x", "--tokens", "1", "--context-window", "9"
    )
    assert result.returncode == 4
    assert "session" in result.stderr
    result = daemon.cli("flush-check", "--session", "s", "--tokens", "-1", "--context-window", "9")
    assert result.returncode == 2
