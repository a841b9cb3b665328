"""The session primer: the right files, no boilerplate, within the budget."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from openmemoryd.memory.primer import Primer, build_primer
from openmemoryd.memory.tasks_file import TasksFile
from openmemoryd.text.tokens import estimate_tokens
from openmemoryd.workspace import PathPolicy, init_workspace, template_text

TODAY = date(2026, 11, 23)


@pytest.fixture
def policy(tmp_path: Path) -> PathPolicy:
    ws = tmp_path / "ws"
    init_workspace(ws)
    return PathPolicy(ws)


def write(policy: PathPolicy, key: str, text: str) -> None:
    path = policy.workspace / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def prime(policy: PathPolicy, budget: int = 1000, private: bool = False) -> Primer:
    return build_primer(policy, today=TODAY, budget=budget, private=private, max_file_bytes=1 << 20)


def test_a_fresh_workspace_primes_nothing_and_says_why(policy: PathPolicy) -> None:
    primer = prime(policy)
    assert primer.text == ""
    assert primer.omitted == (
        "USER.md: still the template",
        "PROJECT.md: still the template",
        "memory/TASKS.md: missing",
        "memory/2026-11-23.md: missing",
        "memory/2026-11-22.md: missing",
    )


def test_files_in_order_with_template_noise_removed(policy: PathPolicy) -> None:
    user = template_text("USER.md").replace("- **Name:** ", "- **Name:** Wei Zhang")
    user = user.replace("<!-- What do they care about? What are their habits? -->", "Likes tea.")
    write(policy, "USER.md", user)
    write(policy, "PROJECT.md", "# PROJECT.md\n\n## Overview\nA memory daemon in Python.\n")
    write(policy, "memory/2026-11-23.md", "# 2026-11-23\n\n- Deploy moved to Friday\n")
    write(policy, "memory/2026-11-22.md", "# 2026-11-22\n\n周会改到周三\n")
    write(policy, "memory/2026-11-21.md", "# 2026-11-21\n\nToo old for the primer\n")
    primer = prime(policy)
    assert [s.label for s in primer.sections] == ["user", "project", "today", "yesterday"]
    text = primer.text
    assert text.index("## User (USER.md)") < text.index("## Project (PROJECT.md)")
    assert text.index("## Project") < text.index("## Today, 2026-11-23 (memory/2026-11-23.md)")
    assert "Wei Zhang" in text
    assert "Likes tea." in text
    assert "周会改到周三" in text
    assert "### Notes" in text
    assert "### Overview" in text
    for noise in ("**Timezone:**", "<!--", "*Information about", "---", "Too old", "# 2026"):
        assert noise not in text
    user_section = primer.sections[0]
    assert (user_section.start_line, user_section.truncated) == (5, False)


def test_memory_md_only_in_private_sessions(policy: PathPolicy) -> None:
    write(policy, "MEMORY.md", "# MEMORY.md\n\n## User Preferences\n- Private: salary talks\n")
    assert "salary" not in prime(policy).text
    private = prime(policy, private=True)
    assert "## Long-term memory (MEMORY.md)" in private.text
    assert "salary" in private.text


def test_the_budget_is_kept_and_shared_fairly(policy: PathPolicy) -> None:
    write(policy, "USER.md", "# USER.md\n\n- **Name:** Wei\n- Timezone Asia/Shanghai\n")
    long_day = "\n".join(
        f"- entry {i}: shipped change number {i} to the indexer" for i in range(400)
    )
    write(policy, "memory/2026-11-23.md", "# 2026-11-23\n\n" + long_day + "\n")
    write(policy, "memory/2026-11-22.md", "# 2026-11-22\n\n" + "很长的中文日志。" * 300 + "\n")
    for budget in (120, 300, 1000):
        primer = prime(policy, budget=budget)
        assert primer.tokens == estimate_tokens(primer.text) <= budget
        # the short USER.md is never starved by the long logs
        assert "Asia/Shanghai" in primer.text
    primer = prime(policy, budget=300)
    today = next(s for s in primer.sections if s.label == "today")
    assert today.truncated
    assert today.end_line == 402
    assert "entry 399" in primer.text
    assert "entry 0:" not in primer.text
    assert "earlier lines: omem-client get memory/2026-11-23.md" in primer.text
    assert any(
        o.startswith("memory/2026-11-22.md: no room in a 300-token budget; a budget of ")
        for o in primer.omitted
    )


def test_a_symlinked_or_huge_file_is_left_out_not_fatal(policy: PathPolicy, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("secret\n")
    (policy.workspace / "USER.md").unlink()
    (policy.workspace / "USER.md").symlink_to(secret)
    write(policy, "PROJECT.md", "# P\n\n" + "x" * 5000 + "\n")
    primer = build_primer(policy, today=TODAY, budget=1000, private=False, max_file_bytes=1000)
    assert "secret" not in primer.text
    assert primer.omitted[0].startswith("USER.md: unreadable")
    assert primer.omitted[1].startswith("PROJECT.md: unreadable")


def test_open_tasks_are_primed_with_their_ids_and_done_ones_are_not(policy: PathPolicy) -> None:
    write(
        policy,
        "memory/TASKS.md",
        "# Tasks\n\nPlanning notes for people.\n\n## Open\n\n"
        "- [ ] Benchmark the kestrel cache ➕ 2026-11-20\n  - with 10k entries\n\n"
        "## Done\n\n- [x] Write the cache ADR ➕ 2026-11-19 ✅ 2026-11-21\n",
    )
    primer = prime(policy)
    [section] = [s for s in primer.sections if s.label == "tasks"]
    assert (section.start_line, section.end_line) == (7, 7)
    task_id = TasksFile(policy.workspace.joinpath("memory/TASKS.md").read_text()).tasks()[0].id
    assert f"## Open tasks (memory/TASKS.md)\n- [ ] Benchmark the kestrel cache (id {task_id})" in (
        primer.text
    )
    assert "cache ADR" not in primer.text
    assert "Planning notes" not in primer.text

    write(policy, "memory/TASKS.md", "# Tasks\n\n## Open\n\n## Done\n\n- [x] Old ✅ 2026-11-01\n")
    assert "memory/TASKS.md: no open tasks" in prime(policy).omitted


def test_daily_files_in_legacy_encodings_show_their_words(policy: PathPolicy) -> None:
    """A daily log saved as GBK and one in KOI8-R are shown as the indexer
    reads them; lines no encoding reads are left out, not shown as U+FFFD."""
    today = "# 2026-11-23\n\n- 老王说数据库备份脚本放在 /opt/backup，每天凌晨三点运行。\n"
    (policy.workspace / "memory/2026-11-23.md").write_bytes(today.encode("gbk"))
    yesterday = "# 2026-11-22\n\n- Ключ от серверной у Ивана, стойка три, пароль сменили.\n"
    (policy.workspace / "memory/2026-11-22.md").write_bytes(yesterday.encode("koi8-r"))
    text = prime(policy).text
    assert "- 老王说数据库备份脚本放在 /opt/backup，每天凌晨三点运行。" in text
    assert "- Ключ от серверной у Ивана, стойка три, пароль сменили." in text
    mixed = "- Deploy moved to Friday\n" + "- Ключ от серверной\n".encode("cp1251").decode("latin1")
    (policy.workspace / "memory/2026-11-23.md").write_bytes(
        mixed.encode("latin1") + "- 老王说\n".encode("gbk")
    )
    text = prime(policy).text
    assert "- Deploy moved to Friday" in text
    assert "\ufffd" not in text
