"""End to end with the real default embedder: a hit names the section of the
lines it shows (a list item of MEMORY.md under its own heading, not the
file's title), in English, Russian and Chinese; the text output prints it
beside the location, without a title that only names the file (the
templates', a daily note's date); a packed answer's best lines name their
own section."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conftest import Daemon, Env
from test_e2e_semantic import serving_with_vectors

pytestmark = pytest.mark.e2e

MEMORY = """# MEMORY.md - Long-term Memory

## Lessons learned
- Never run migrations on Friday afternoons; the rollback script is untested.
- The staging database password rotates every 30 days; check the vault first.
- Keep pull requests under 400 lines, reviewers skim anything longer.

## Предпочтения
- Пьёт улун по утрам, кофе не любит.
- Пишет код в Neovim с менеджером плагинов lazy.nvim.
- Отпуск всегда берёт в сентябре, на Алтае.

## 决定
- 数据库迁移只在周二上午做，需要两人在场。
- 新项目一律用 PostgreSQL，不再用 MySQL。
"""
DAY = """# 2026-11-25

## Work
- Ordered a standing desk (Flexispot E7) for 420 EUR
- Rotated the Stripe API keys after the leak report
- Alice suggested we switch CI runners to ARM
"""


@pytest.fixture(scope="module")
def notes(module_env: Env) -> Iterator[Daemon]:
    """One daemon for the module, default settings: the tests only read."""
    module_env.write_config("")
    (module_env.workspace / "memory").mkdir(parents=True)
    (module_env.workspace / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    (module_env.workspace / "memory/2026-11-25.md").write_text(DAY, encoding="utf-8")
    with serving_with_vectors(module_env) as handle:
        yield handle


@pytest.mark.parametrize(
    ("query", "lines", "section"),
    [
        ("staging database password", (4, 6), "MEMORY.md - Long-term Memory > Lessons learned"),
        ("менеджер плагинов Neovim", (9, 11), "MEMORY.md - Long-term Memory > Предпочтения"),
        ("数据库迁移", (14, 15), "MEMORY.md - Long-term Memory > 决定"),
    ],
)
def test_a_list_item_names_its_own_section(
    notes: Daemon, query: str, lines: tuple[int, int], section: str
) -> None:
    hit = notes.cli_json("search", query)["results"][0]
    assert (hit["path"], hit["start_line"], hit["end_line"]) == ("MEMORY.md", *lines)
    assert hit["heading"] == section
    assert hit["inner_headings"] == []
    printed = notes.cli("search", query)
    assert printed.returncode == 0, printed.stderr
    first, second = printed.stdout.splitlines()[:2]
    # the title only names the file: the text output leaves it out
    shown = section.removeprefix("MEMORY.md - Long-term Memory > ")
    assert first.endswith(f" MEMORY.md:{lines[0]}-{lines[1]} · {shown}")
    assert second.startswith("  - ")


def test_a_daily_notes_date_title_is_not_repeated_beside_its_file(notes: Daemon) -> None:
    query = "how much was the standing desk"
    hit = notes.cli_json("search", query)["results"][0]
    assert (hit["path"], hit["heading"]) == ("memory/2026-11-25.md", "2026-11-25 > Work")
    printed = notes.cli("search", query)
    assert printed.stdout.splitlines()[0].endswith(" memory/2026-11-25.md:4-5 · Work")


def test_a_packed_answers_best_lines_name_their_section(notes: Daemon) -> None:
    # words in two sections keep the whole chunk (under its first section);
    # a budget too small for it shows the lines around its best line
    query = "PostgreSQL MySQL Neovim"
    whole = notes.cli_json("search", query)["results"][0]
    assert (whole["start_line"], whole["end_line"]) == (8, 15)
    assert whole["heading"] == "MEMORY.md - Long-term Memory > Предпочтения"
    assert whole["inner_headings"] == [[13, "MEMORY.md - Long-term Memory > 决定"]]
    hit = notes.cli_json("search", query, "--max-tokens", "40")["results"][0]
    assert hit["path"] == "MEMORY.md"
    assert 13 <= hit["start_line"] <= 15 <= hit["end_line"]
    assert hit["heading"] == "MEMORY.md - Long-term Memory > 决定"
