"""End to end: `omem-client log` of a changed fact through the real daemon keeps the new fact.

Found by dogfooding in Chinese: "每 90 天" then "每 30 天", and "Neovim"
then "Emacs" in an otherwise identical sentence, were reinforced as repeats
(word overlap 0.96 and 0.94) and the new number or editor was dropped. Now
they are possible conflicts: nothing is written until the user says which
version holds, the old line is untouched, the reply names what changed and
how to swap it, and a true repeat is still counted.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import Daemon
from test_e2e_mcp_replies import bridge, ok

pytestmark = pytest.mark.e2e

TLS_90 = "我们决定 TLS 证书每 90 天轮换一次"
TLS_30 = "我们决定 TLS 证书每 30 天轮换一次"
NEOVIM = "我喜欢用 Neovim 写代码，不喜欢 VS Code"
EMACS = "我喜欢用 Emacs 写代码，不喜欢 VS Code"


def memory_md(daemon: Daemon) -> str:
    return (daemon.env.workspace / "MEMORY.md").read_text("utf-8")


def log_json(daemon: Daemon, *args: str) -> dict[str, Any]:
    result = daemon.cli("log", "--json", *args)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_a_changed_number_is_a_conflict_then_replaced(daemon: Daemon) -> None:
    written = daemon.cli("log", TLS_90)
    assert written.returncode == 0, written.stderr
    assert written.stdout.startswith("Written to MEMORY.md#L")
    before = memory_md(daemon)

    conflict = daemon.cli("log", TLS_30)
    assert conflict.returncode == 1
    out = conflict.stdout
    assert out.startswith("Not written: a possible conflict with MEMORY.md#L"), out
    assert out.splitlines()[0].endswith(f": {TLS_90}")
    assert "differing in 90 → 30: a possible conflict, nothing written" in out
    assert out.rstrip().endswith("Swap it with --replace, or keep both with --force.")
    assert "Reinforced" not in out
    assert memory_md(daemon) == before  # no ×2 on the old line
    reply = log_json(daemon, TLS_30, "--dry-run")
    assert (reply["status"], reply["text"]) == ("conflict", TLS_30)  # the new fact comes back

    replaced = daemon.cli("log", TLS_30, "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert f"{TLS_90} → {TLS_30}" in replaced.stdout
    after = memory_md(daemon)
    assert after == before.replace(f"- {TLS_90}\n", f"- {TLS_30}\n")
    found = json.loads(daemon.cli("search", "TLS 证书 轮换", "--json").stdout)["results"]
    assert TLS_30 in found[0]["snippet"]

    # True repeats of the new fact: punctuation and spacing, the subject left out.
    again = daemon.cli("log", "我们决定：TLS证书每30天轮换一次。")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("Reinforced MEMORY.md#L"), again.stdout
    assert "(now ×2)" in again.stdout.splitlines()[0]
    subjectless = log_json(daemon, "决定 TLS 证书每 30 天轮换一次")
    assert subjectless["status"] == "reinforced"
    assert f"- {TLS_30} (×3)\n" in memory_md(daemon)
    assert "90 天" not in memory_md(daemon)


def test_a_changed_name_is_a_conflict_and_force_keeps_both(daemon: Daemon) -> None:
    assert daemon.cli("log", NEOVIM).returncode == 0
    before = memory_md(daemon)
    conflict = daemon.cli("log", EMACS)
    assert conflict.returncode == 1
    assert "differing in Neovim → Emacs" in conflict.stdout
    assert memory_md(daemon) == before

    negated = daemon.cli("log", "我喜欢用 Neovim 写代码，喜欢 VS Code")
    assert negated.returncode == 1
    assert "differing in a negation (only in the old one)" in negated.stdout

    kept = daemon.cli("log", EMACS, "--force")
    assert kept.returncode == 0, kept.stderr
    assert "written alongside it (force)" in kept.stdout
    text = memory_md(daemon)
    assert f"- {NEOVIM}\n" in text
    assert f"- {EMACS}\n" in text
    hits = json.loads(daemon.cli("search", "Emacs", "--json").stdout)["results"]
    assert any(EMACS in hit["snippet"] for hit in hits)

    repeat = log_json(daemon, "我喜欢用 neovim 写代码, 不喜欢 vs code")
    assert repeat["status"] == "reinforced"
    assert f"- {NEOVIM} (×2)\n" in memory_md(daemon)


def test_english_and_russian_changed_facts(daemon: Daemon) -> None:
    rotate = "We decided to rotate the TLS certificates of the staging cluster every 90 days"
    assert log_json(daemon, rotate)["status"] == "written"
    changed = log_json(daemon, rotate.replace("90", "30"))
    assert changed["status"] == "conflict"
    assert changed["similar"]["lexical"] >= 0.92  # a repeat by words alone
    assert any("differing in 90 → 30" in r for r in changed["reasons"])
    assert log_json(daemon, rotate.lower() + ".")["status"] == "reinforced"

    assert log_json(daemon, "I prefer Neovim for writing code")["status"] == "written"
    editor = log_json(daemon, "I prefer Emacs for writing code")
    assert editor["status"] == "conflict"  # 0.71 in words: one fact in two versions
    assert any("differing in Neovim → Emacs" in r for r in editor["reasons"])

    kafka = "Мы решили хранить логи Kafka в кластере стейджинга 7 дней"
    assert log_json(daemon, kafka)["status"] == "written"
    days = log_json(daemon, kafka.replace("7 дней", "3 дня"))
    assert days["status"] == "conflict"
    assert any("differing in 7 → 3" in r for r in days["reasons"])
    again = log_json(daemon, "Решили хранить логи Kafka в кластере стейджинга 7 дней.")
    assert again["status"] == "reinforced"
    text = memory_md(daemon)  # every conflict left the file as it was
    for changed_fact in ("every 30 days", "3 дня", "Emacs"):
        assert changed_fact not in text


async def test_the_mcp_reply_calls_it_one_fact_in_two_versions(daemon: Daemon) -> None:
    async with bridge(daemon.env) as session:
        await ok(session, "memory_log", content="I prefer Neovim for writing code")
        text, conflict = await ok(session, "memory_log", content="I prefer Emacs for writing code")
        assert conflict["status"] == "conflict"
        assert "differing in Neovim → Emacs" in text
        last = text.splitlines()[-1]
        assert last.startswith("The two differ in a detail: ask the user which version is right.")
        assert "call memory_log again with replace=true" in last
        _, replaced = await ok(
            session, "memory_log", content="I prefer Emacs for writing code", replace=True
        )
        assert replaced["status"] == "replaced"
    text = memory_md(daemon)
    assert "- I prefer Emacs for writing code\n" in text
    assert "Neovim for writing" not in text
