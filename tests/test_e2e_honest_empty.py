"""End to end with the real default embedder: unrelated queries return nothing,
and the templates' boilerplate never comes back as memory.

The workspace is what `init` leaves after a few days of use: the three
bootstrap files with their comments, empty fields and italic hints still in
place around real notes, and daily notes in English, Chinese and Russian.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date

import pytest

from conftest import Daemon, Env
from openmemoryd.workspace import template_text
from test_e2e_semantic import serving_with_vectors

pytestmark = pytest.mark.e2e

UNRELATED = (
    "zzzqqq",
    "lattice quantum chromodynamics",
    "如何烹饪北京烤鸭",
    "量子色动力学的格点计算",
    "рецепт борща со сметаной",
    "доказательство великой теоремы Ферма",
    # shares one word ("история") with a note the model finds unrelated
    "история Византийской империи",
    # topics none of the model's reference passages is about
    "bioluminescence of deep-sea anglerfish",
    "巴洛克歌剧的剧本",
    "как сложить журавлика из бумаги",
)

# Every piece of template text that must never be returned as memory.
BOILERPLATE = (
    "<!--",
    "Add user preferences as you learn them",
    "Record decisions that should persist",
    "**Timezone:**",
    "**Preferred name:**",
    "Your curated knowledge base",
    "Information about the person you're helping",
    "The more you know",
    "Describe the current project",
    "What are we trying to achieve",
)

NOTES = {
    "memory/2026-11-20.md": "- Wei switched the team's CI from Jenkins to GitHub Actions",
    "memory/2026-11-21.md": "- 魏决定下周把数据库迁移到 Postgres 16",
    "memory/2026-11-22.md": "- Вэй предпочитает созвоны по утрам, до десяти",
    "memory/2026-11-23.md": "- Встреча с Олегом перенесена на пятницу, обсудим биллинг",
    "memory/notes/tracks.md": "# Проект: хранение треков курьеров\n\n## Зачем\n"
    "- Уйти с Redis: история GPS-треков курьеров не помещается в память, 38 ГБ и растёт.",
    # notes on topics the model's reference passages are about (a car's
    # brakes, a film, the price of petrol)
    "memory/notes/car.md": "# Car\n- Replaced the brake pads on the Skoda at the garage, 180 EUR.",
    "memory/notes/films.md": "# 看过的电影\n- 《流浪地球 3》：特效震撼，故事一般，周航看哭了。",
    "memory/notes/rashody.md": "# Расходы\n"
    "- АИ-95 подорожал до 62 рублей за литр, заправляюсь у дома.",
}


def _filled(name: str, marker: str, addition: str) -> str:
    """The template *name* with *addition* inserted after the line starting *marker*."""
    lines = template_text(name).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(marker))
    return "\n".join([*lines[: at + 1], addition, *lines[at + 1 :]]) + "\n"


@pytest.fixture(scope="module")
def used_workspace(module_env: Env) -> Iterator[Daemon]:
    """One daemon for the module: the tests only search and recall."""
    env = module_env
    env.write_config("")  # the defaults, with the bundled local model
    ws = env.workspace
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(
        _filled("MEMORY.md", "## User Preferences", "- Prefers dark mode in every editor")
    )
    (ws / "USER.md").write_text(_filled("USER.md", "- **Name:**", "- **Role:** backend engineer"))
    (ws / "PROJECT.md").write_text(
        _filled("PROJECT.md", "## Overview", "Migrating the billing service to Postgres 16.")
    )
    for path, text in NOTES.items():
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_text(text + "\n")
    with serving_with_vectors(env) as handle:
        yield handle


def _search(daemon: Daemon, *args: str) -> dict[str, object]:
    result = daemon.cli("search", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _paths(daemon: Daemon, query: str) -> list[str]:
    """The files of a default search's hits, best first."""
    return [hit["path"] for hit in _search(daemon, query)["results"]]  # type: ignore[attr-defined]


def _assert_no_boilerplate(text: str) -> None:
    for piece in BOILERPLATE:
        assert piece not in text, f"template text {piece!r} returned as memory:\n{text}"


def test_unrelated_queries_in_three_languages_return_nothing(used_workspace: Daemon) -> None:
    for query in UNRELATED:
        reply = _search(used_workspace, query)
        assert reply["mode"] == "hybrid", reply
        shown = [(h["path"], h["score"], h["vector_score"]) for h in reply["results"]]
        assert reply["results"] == [], (query, shown)
        assert reply["empty_reason"] in {"below_min_score", "no_match"}, reply
        if reply["empty_reason"] == "below_min_score":
            # the reply says how close the nearest memory came
            assert 0.0 <= reply["best_score"] < reply["min_score"], reply
        assert not reply["threshold_relaxed"]


def test_an_empty_answer_says_how_close_it_came_and_how_to_see_it(used_workspace: Daemon) -> None:
    result = used_workspace.cli("search", "lattice quantum chromodynamics")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "No matches."
    assert "no match reached the minimum score (0.35, the closest 0." in result.stderr
    assert "a minimum score of 0 shows the closest matches anyway" in result.stderr


def test_asking_for_the_closest_matches_still_shows_them(used_workspace: Daemon) -> None:
    reply = _search(used_workspace, "lattice quantum chromodynamics", "--min-score", "0")
    assert reply["results"], "an explicit --min-score 0 must show the closest memories"


def test_related_queries_still_find_memories_in_each_language(used_workspace: Daemon) -> None:
    expected = {
        "which editor theme does the user like": "MEMORY.md",
        "what CI system does the team use": "memory/2026-11-20.md",
        "数据库迁移": "memory/2026-11-21.md",
        "когда Вэй предпочитает созвоны": "memory/2026-11-22.md",
    }
    for query, path in expected.items():
        found = _paths(used_workspace, query)
        assert path in found[:2], (query, found)


def test_a_note_on_a_reference_passages_topic_is_still_an_answer(used_workspace: Daemon) -> None:
    """A query's baseline is its mean cosine with the five reference passages
    nearest to it, so the one passage on its topic (brake pads, a film,
    petrol prices) does not by itself raise the bar over the note that
    answers it."""
    expected = {
        "how much did the brake pads cost?": "memory/notes/car.md",
        "我们看的那部电影怎么样": "memory/notes/films.md",
        "сколько стоит литр бензина": "memory/notes/rashody.md",
    }
    for query, path in expected.items():
        found = _paths(used_workspace, query)
        assert found[:1] == [path], (query, found)


def test_russian_questions_find_other_forms_of_the_notes_words(used_workspace: Daemon) -> None:
    """The keyword leg reads Russian words by their stems: "встречу" finds the
    note's "Встреча" (it found nothing of it before, leaving the note to the
    vector leg alone), "биллингом" its "биллинг"."""
    for query in ("Когда перенесли встречу?", "что с биллингом"):
        reply = _search(used_workspace, query)
        hits = reply["results"]
        assert hits, (query, reply)
        top = hits[0]  # type: ignore[index]
        assert top["path"] == "memory/2026-11-23.md", (query, hits)
        assert top["text_score"], (query, top)


def test_a_note_of_the_day_a_question_names_is_an_answer(used_workspace: Daemon) -> None:
    """No word of the question is in the day's note and the model is not sure
    of it, but the question is about that day: its note is the answer. A
    whole month is not that precise and gives no such pass."""
    for query in ("what did I buy on 21 November 2026?", "что я купил 21 ноября 2026"):
        reply = _search(used_workspace, query)
        assert reply["mode"] == "hybrid", reply
        paths = [hit["path"] for hit in reply["results"]]  # type: ignore[attr-defined]
        assert paths[:1] == ["memory/2026-11-21.md"], (query, reply)
    reply = _search(used_workspace, "zzzqqq in November 2026")
    assert reply["results"] == [], reply


def test_no_search_or_recall_result_holds_template_boilerplate(used_workspace: Daemon) -> None:
    queries = (
        "user preferences",
        "what does the user prefer",
        "important decisions",
        "lessons learned",
        "timezone",
        "preferred name",
        "what are we working on",
        "project goals and constraints",
        "用户偏好",
        "предпочтения пользователя",
    )
    for query in queries:
        reply = _search(used_workspace, query, "--min-score", "0", "-n", "20")
        for hit in reply["results"]:  # type: ignore[attr-defined]
            _assert_no_boilerplate(hit["snippet"])
        recalled = used_workspace.cli("recall", query)
        assert recalled.returncode == 0, recalled.stderr
        _assert_no_boilerplate(recalled.stdout)


def test_a_hit_ends_on_its_real_line_not_on_the_templates_empty_sections(
    used_workspace: Daemon,
) -> None:
    reply = _search(used_workspace, "billing service migration to Postgres")
    (project,) = [h for h in reply["results"] if h["path"] == "PROJECT.md"]  # type: ignore[attr-defined]
    assert project["snippet"].splitlines()[-1] == "Migrating the billing service to Postgres 16."
    assert project["end_line"] == 6, project  # not the empty ## Goals, ## Constraints, ---


def test_a_query_for_days_alone_returns_those_days_notes(used_workspace: Daemon) -> None:
    """The timeline path through the daemon and the CLI, in three languages;
    a day with no notes answers nothing, and says why."""
    expected = {
        "2026-11-21": ["memory/2026-11-21.md"],
        "what happened on 20 November 2026?": ["memory/2026-11-20.md"],
        "2026年11月22日的笔记": ["memory/2026-11-22.md"],
        "что было 21 ноября 2026": ["memory/2026-11-21.md"],
        # a third of a month: days 21 to 30, newest first; days 11 to 20
        "notes from late November 2026": [
            "memory/2026-11-23.md",
            "memory/2026-11-22.md",
            "memory/2026-11-21.md",
        ],
        "что было в конце ноября 2026 года": [
            "memory/2026-11-23.md",
            "memory/2026-11-22.md",
            "memory/2026-11-21.md",
        ],
        "2026年11月中旬": ["memory/2026-11-20.md"],
    }
    # so many weeks ago: the calendar week of 2026-11-21 (Monday 16th to Sunday 22nd)
    weeks = (date.today() - date(2026, 11, 16)).days // 7
    week = ["memory/2026-11-22.md", "memory/2026-11-21.md", "memory/2026-11-20.md"]
    for query in (
        f"what did I do {weeks} weeks ago",
        f"{weeks}周前做了什么",
        f"что я делал {weeks} недель назад",
    ):
        expected[query] = week
    for query, paths in expected.items():
        reply = _search(used_workspace, query)
        assert reply["mode"] == "timeline", reply
        assert [hit["path"] for hit in reply["results"]] == paths, (query, reply)  # type: ignore[attr-defined]
    reply = _search(used_workspace, "today")
    assert (reply["mode"], reply["results"], reply["empty_reason"]) == (
        "timeline",
        [],
        "nothing_dated",
    )


def test_a_query_naming_a_kind_of_memory_reads_its_section(used_workspace: Daemon) -> None:
    """ "my preferences" in three languages: the section as it is on disk,
    its template comment left out; a section with nothing in it is no
    answer, and the query is searched as usual."""
    for query in ("user preferences", "我的偏好", "мои предпочтения"):
        reply = _search(used_workspace, query)
        assert reply["mode"] == "section", reply
        hits = reply["results"]
        assert [(h["path"], h["snippet"]) for h in hits] == [  # type: ignore[attr-defined]
            ("MEMORY.md", "- Prefers dark mode in every editor")
        ]
    assert _search(used_workspace, "important decisions")["mode"] == "hybrid"
