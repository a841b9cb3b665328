"""A query that only names a kind of memory is answered from its section."""

from __future__ import annotations

from pathlib import Path

import pytest

from openmemoryd.engine.section_ops import read_section
from openmemoryd.search.asked import asked_section
from openmemoryd.workspace import SECTIONS, PathPolicy, init_workspace, template_text


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("preferences", "preference"),
        ("What are my preferences?", "preference"),
        ("user preferences", "preference"),
        ("我的偏好", "preference"),
        ("предпочтения", "preference"),
        ("important decisions", "decision"),
        ("重要决定", "decision"),
        ("важные решения", "decision"),
        ("lessons learned", "lesson"),
        ("经验教训", "lesson"),
        ("уроки", "lesson"),
        ("open tasks", "task"),
        ("show me my open tasks", "task"),
        ("有哪些任务", "task"),
        ("какие у меня задачи", "task"),
        ("about me", "user"),
        ("用户资料", "user"),
        ("обо мне", "user"),
        ("the project", "project"),
        ("项目背景", "project"),
    ],
)
def test_kinds_named_alone_in_three_languages(query: str, kind: str) -> None:
    assert asked_section(query) == kind


@pytest.mark.parametrize(
    "query",
    [
        "my preferences about tea",
        "which editor theme does the user like",
        "what did we decide about the migration",
        "偏好的茶",
        "задачи на завтра по миграции",
        "tasks for the billing rollout",
        "what is the project about",
    ],
)
def test_anything_more_is_an_ordinary_search(query: str) -> None:
    assert asked_section(query) is None


@pytest.fixture
def policy(tmp_path: Path) -> PathPolicy:
    init_workspace(tmp_path)
    return PathPolicy(tmp_path)


def test_the_section_is_read_without_its_boilerplate(policy: PathPolicy) -> None:
    memory = template_text("MEMORY.md").replace(
        "<!-- Add user preferences as you learn them -->",
        "<!-- Add user preferences as you learn them -->\n- Dark mode everywhere\n- Oolong tea",
    )
    (policy.workspace / "MEMORY.md").write_text(memory)
    file, titles = SECTIONS["preference"]
    (hit,) = read_section(policy, file, titles, 700, 1 << 20)
    assert hit.snippet == "- Dark mode everywhere\n- Oolong tea"
    lines = memory.split("\n")
    assert lines[hit.start_line - 1 : hit.end_line] == ["- Dark mode everywhere", "- Oolong tea"]
    assert hit.citation == f"MEMORY.md#L{hit.start_line}-L{hit.end_line}"
    assert hit.heading == "User Preferences"
    # sections holding only their template comment are no answer
    assert read_section(policy, file, SECTIONS["decision"][1], 700, 1 << 20) == []


def test_a_long_section_comes_in_snippets_of_whole_lines(policy: PathPolicy) -> None:
    bullets = [f"- preference number {n}: " + "detail " * 8 for n in range(40)]
    (policy.workspace / "MEMORY.md").write_text(
        "# Memory\n\n## preferences\n\n" + "\n".join(bullets) + "\n\n## Decisions\n\n- x\n"
    )
    hits = read_section(policy, "MEMORY.md", SECTIONS["preference"][1], 300, 1 << 20)
    assert len(hits) > 5
    assert all(len(h.snippet) <= 300 for h in hits)
    assert "\n".join(h.snippet for h in hits) == "\n".join(bullets)
    assert [h.start_line for h in hits] == sorted(h.start_line for h in hits)
    # named as the file writes it, not as the query's kind is known
    assert {h.heading for h in hits} == {"preferences"}


def test_a_missing_file_is_no_answer(policy: PathPolicy) -> None:
    assert read_section(policy, "memory/TASKS.md", ("Open",), 700, 1 << 20) == []


@pytest.mark.parametrize(
    ("kind", "heading", "bullet"),
    [
        ("preference", "## Предпочтения", "- Пьёт улун по утрам"),
        ("decision", "## 重要决定", "- 新项目一律用 PostgreSQL"),
        ("lesson", "## Извлеченные уроки", "- Не катить миграции в пятницу"),
    ],
)
def test_a_section_named_in_chinese_or_russian_is_the_kinds_section(
    policy: PathPolicy, kind: str, heading: str, bullet: str
) -> None:
    (policy.workspace / "MEMORY.md").write_text(f"# Память\n\n{heading}\n{bullet}\n")
    file, titles = SECTIONS[kind]
    (hit,) = read_section(policy, file, titles, 700, 1 << 20)
    assert (hit.snippet, hit.start_line, hit.heading) == (bullet, 4, heading.removeprefix("## "))


def test_a_section_in_a_legacy_encoding_is_read_as_its_text(policy: PathPolicy) -> None:
    """MEMORY.md saved as cp1251: the section answer shows the Russian the
    search index holds, not U+FFFD, on the file's own line numbers."""
    memory = template_text("MEMORY.md").replace(
        "<!-- Add user preferences as you learn them -->",
        "<!-- Add user preferences as you learn them -->\n- Тёмная тема во всех редакторах",
    )
    (policy.workspace / "MEMORY.md").write_bytes(memory.encode("cp1251"))
    file, titles = SECTIONS["preference"]
    (hit,) = read_section(policy, file, titles, 700, 1 << 20)
    assert hit.snippet == "- Тёмная тема во всех редакторах"
    assert memory.split("\n")[hit.start_line - 1] == hit.snippet
