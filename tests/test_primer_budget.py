"""A primer budget too small for anything says which budget would show something.

Six sources share the budget fairly, so 50 tokens (the MCP schema's and the
CLI's minimum) left every file out; the reply then read as if the files
were empty. Each file left out for want of room now names the smallest
budget that shows some of it, and that number must be exact: one token less
shows nothing of it.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest

from openmemoryd.memory.primer import Primer, build_primer
from openmemoryd.workspace import PathPolicy, init_workspace

TODAY = date(2026, 11, 28)
SHOWN_FROM = re.compile(
    r"^(?P<path>\S+): no room in a (?P<given>\d+)-token budget; "
    r"a budget of (?P<n>\d+) tokens shows some of it$"
)


@pytest.fixture
def policy(tmp_path: Path) -> PathPolicy:
    ws = tmp_path / "ws"
    init_workspace(ws)
    files = {
        "USER.md": "# USER.md\n\n- Alexei lives in Novosibirsk and writes backend code\n"
        "- The user's timezone is Asia/Novosibirsk (UTC+7)\n",
        "PROJECT.md": "# PROJECT.md\n\n## Overview\n\n- The billing service moves to gRPC in Q1\n",
        "MEMORY.md": "# MEMORY.md\n\n## Lessons Learned\n\n- Check the env files before a deploy\n",
        "memory/2026-11-28.md": "# 2026-11-28\n\n" + "- 昨天和李雷开会，讨论了 Q1 的路线图。\n" * 3,
        "memory/2026-11-27.md": "# 2026-11-27\n\n- Встреча с Иваном: миграция на gRPC\n",
    }
    for key, text in files.items():
        (ws / key).parent.mkdir(parents=True, exist_ok=True)
        (ws / key).write_text(text, "utf-8")
    return PathPolicy(ws)


def prime(policy: PathPolicy, budget: int) -> Primer:
    return build_primer(policy, today=TODAY, budget=budget, private=True, max_file_bytes=1 << 20)


def shown_from(primer: Primer) -> dict[str, int]:
    found = (SHOWN_FROM.match(reason) for reason in primer.omitted)
    return {m["path"]: int(m["n"]) for m in found if m is not None}


def test_a_budget_that_holds_nothing_names_the_budget_that_would(policy: PathPolicy) -> None:
    primer = prime(policy, 50)
    assert primer.text == ""
    needed = shown_from(primer)
    # every file with memories in it is named with a number, none as empty
    assert set(needed) == {
        "USER.md",
        "PROJECT.md",
        "MEMORY.md",
        "memory/2026-11-28.md",
        "memory/2026-11-27.md",
    }
    assert all(n > 50 for n in needed.values())
    smallest = min(needed.values())
    assert prime(policy, smallest).text != ""
    assert prime(policy, smallest - 1).text == ""


def test_the_reason_names_the_budget_given_and_the_one_that_shows(policy: PathPolicy) -> None:
    """Said plainly: "shown from a budget of 76 tokens" read as the size of
    the file. Both numbers are budgets, the one given first."""
    reasons = [r for r in prime(policy, 50).omitted if r.startswith("USER.md: ")]
    assert len(reasons) == 1
    found = SHOWN_FROM.match(reasons[0])
    assert found is not None, reasons
    assert found["given"] == "50"
    assert reasons[0] == (
        f"USER.md: no room in a 50-token budget; a budget of {found['n']} tokens shows some of it"
    )


def test_each_file_shows_from_the_budget_it_was_named_with(policy: PathPolicy) -> None:
    for path, budget in shown_from(prime(policy, 50)).items():
        assert path in {s.path for s in prime(policy, budget).sections}, (path, budget)
        assert path not in {s.path for s in prime(policy, budget - 1).sections}, (path, budget)
