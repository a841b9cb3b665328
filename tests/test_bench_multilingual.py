"""The Russian, Chinese and English notes sets must stay valid, and their part must run.

The shipped sets are checked as data (every evidence line where it says,
every kind known). A tiny set then goes through the same `main` as the real
run, keyword-only (the model is never loaded), against a real daemon and the
real client; the assertions check bookkeeping and an obvious hit, never speed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.locomo_scoring import budget_ranks
from bench.multilingual import (
    DATA_DIR,
    KINDS,
    SETS,
    DataError,
    EvalQuestion,
    EvalSet,
    Outcome,
    interleaved,
    load_set,
    main,
    moved,
    summarize,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", SETS)
def test_shipped_sets_hold_what_they_claim(name: str) -> None:
    eval_set = load_set(DATA_DIR / f"{name}.json")
    assert len(eval_set.questions) == 60
    assert len(eval_set.unrelated) == 16
    assert {q.kind for q in eval_set.questions} == set(KINDS)
    for q in eval_set.questions:
        for path, line in q.evidence:
            assert eval_set.files[path].split("\n")[line - 1].strip()
    # asked in the other languages too, with unrelated queries in each
    expected = {"ru": {"en"}, "zh": {"en"}, "en": {"zh", "ru"}}[name]
    assert {t.language for t in eval_set.translated} == expected
    for translated in eval_set.translated:
        assert len(translated.questions) >= 30
        assert len(translated.unrelated) == 6
        assert len({q.text for q in translated.questions}) == len(translated.questions)


def _tiny(tmp_path: Path, evidence_line: str) -> Path:
    data = {
        "language": "ru",
        "files": {
            "memory/2026-05-04.md": "# 2026-05-04\n\n- Встреча с Олегом перенесена на пятницу\n",
            "memory/notes/tea.md": "# Чай\n\n- Пуэр покупаю только в «Чайном доме»\n",
        },
        "questions": [
            {
                "q": "Когда встреча с Олегом?",
                "kind": "person",
                "evidence": [{"path": "memory/2026-05-04.md", "line": evidence_line}],
            },
            {
                "q": "где я беру пуэр",
                "kind": "fact",
                "evidence": [
                    {"path": "memory/notes/tea.md", "line": "- Пуэр покупаю только в «Чайном доме»"}
                ],
            },
        ],
        "unrelated": ["zzzqqq", "квантовая хромодинамика"],
        "translated": {
            "en": {
                "questions": [{"of": 0, "q": "When is the meeting with Oleg?"}],
                "unrelated": ["ostrich farming"],
            }
        },
    }
    folder = tmp_path / "sets"
    folder.mkdir()
    (folder / "ru.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return folder


def test_a_line_not_in_its_file_is_a_data_error(tmp_path: Path) -> None:
    folder = _tiny(tmp_path, "- Встреча с Олегом в четверг")
    with pytest.raises(DataError, match="occurs 0"):
        load_set(folder / "ru.json")


def test_a_translation_of_a_question_the_set_lacks_is_a_data_error(tmp_path: Path) -> None:
    folder = _tiny(tmp_path, "- Встреча с Олегом перенесена на пятницу")
    data = json.loads((folder / "ru.json").read_text(encoding="utf-8"))
    data["translated"]["en"]["questions"].append({"of": 2, "q": "Which tea?"})
    (folder / "ru.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError, match="translated to en: no question 2"):
        load_set(folder / "ru.json")


def test_a_translation_keeps_its_questions_kind_and_evidence(tmp_path: Path) -> None:
    eval_set = load_set(_tiny(tmp_path, "- Встреча с Олегом перенесена на пятницу") / "ru.json")
    (translated,) = eval_set.translated
    assert translated.language == "en"
    assert translated.unrelated == ("ostrich farming",)
    (question,) = translated.questions
    assert question.text == "When is the meeting with Oleg?"
    assert (question.kind, question.evidence) == ("person", eval_set.questions[0].evidence)


def test_moved_sets_share_a_workspace_with_their_evidence(tmp_path: Path) -> None:
    eval_set = load_set(_tiny(tmp_path, "- Встреча с Олегом перенесена на пятницу") / "ru.json")
    shared = moved(eval_set)
    assert set(shared.files) == {"memory/ru/2026-05-04.md", "memory/ru/notes/tea.md"}
    assert shared.questions[0].evidence == (("memory/ru/2026-05-04.md", 3),)
    assert shared.translated[0].questions[0].evidence == (("memory/ru/2026-05-04.md", 3),)
    assert (shared.unrelated, shared.translated[0].unrelated) == (
        eval_set.unrelated,
        eval_set.translated[0].unrelated,
    )


def test_interleaved_sets_share_each_file_line_by_line_with_their_evidence() -> None:
    zh = EvalSet(
        "zh",
        {"USER.md": "# 关于我\n- 对芒果过敏\n", "memory/2026-03-02.md": "- 周会改到周一\n"},
        (EvalQuestion("我对什么过敏？", "fact", (("USER.md", 2),)),),
        ("如何养殖鸵鸟",),
    )
    en = EvalSet(
        "en",
        {
            "USER.md": "# USER\n- Name: Sam\n- Allergic to penicillin\n",
            "memory/2026-04-01.md": "- Biscuit to the vet\n",
            "memory/2026-04-09.md": "- Ruby's party\n",
        },
        (EvalQuestion("What am I allergic to?", "fact", (("USER.md", 3),)),),
    )
    first, second = interleaved([zh, en])
    assert first.files == {
        "USER.md": "# 关于我\n# USER\n- 对芒果过敏\n- Name: Sam\n- Allergic to penicillin\n",
        "memory/2026-03-02.md": "- 周会改到周一\n- Biscuit to the vet\n",
        "memory/2026-04-09.md": "- Ruby's party\n",  # no Chinese note of its rank
    }
    assert second.files == {}
    assert first.questions[0].evidence == (("USER.md", 3),)
    assert second.questions[0].evidence == (("USER.md", 5),)
    assert (first.unrelated, second.unrelated) == (("如何养殖鸵鸟",), ())


def test_an_interleaved_file_never_takes_a_name_another_holds() -> None:
    one = EvalSet("ru", {"memory/a.md": "- раз\n"}, ())
    two = EvalSet("en", {"memory/0.md": "- zero\n", "memory/a.md": "- one\n"}, ())
    (merged, _) = interleaved([one, two])
    assert merged.files == {"memory/a.md": "- раз\n- zero\n", "memory/en/a.md": "- one\n"}


@pytest.mark.e2e
def test_a_file_the_daemon_would_not_index_is_a_data_error(tmp_path: Path) -> None:
    folder = _tiny(tmp_path, "- Встреча с Олегом перенесена на пятницу")
    data = json.loads((folder / "ru.json").read_text(encoding="utf-8"))
    data["files"]["notes/x.md"] = "- x"
    (folder / "ru.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError, match="not memory files"):
        load_set(folder / "ru.json")


def _keyword_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> list[dict[str, Any]]:
    """`main` on the tiny set, keyword-only: the results it wrote."""
    folder = _tiny(tmp_path, "- Встреча с Олегом перенесена на пятницу")
    out = tmp_path / "r.json"
    argv = ["--sets", "ru", "--methods", "bm25", "--data", str(folder), *extra]
    assert main([*argv, "--json", str(out)]) == 0, capsys.readouterr().err
    return json.loads(out.read_text(encoding="utf-8"))["results"]  # type: ignore[no-any-return]


@pytest.mark.e2e
def test_tiny_keyword_run_scores_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result, translated = _keyword_run(tmp_path, capsys)
    assert (result["set"], result["method"], result["questions"]) == ("ru", "bm25", 2)
    assert result["r1_any"] == 1.0
    assert result["answered_with_evidence"] == 1.0
    assert result["questions_by_kind"] == {"fact": 1, "person": 1}
    assert (result["unrelated"], result["unrelated_answered"]) == (2, 0)
    assert result["unrelated_hits"] == [0, 0]
    # the same notes asked in English: no shared keyword, so no answer
    assert (translated["asked_in"], translated["questions"]) == ("en", 1)
    assert translated["questions_by_kind"] == {"person": 1}
    assert (translated["r10_any"], translated["unrelated"]) == (0.0, 1)
    printed = capsys.readouterr().out
    assert "| ru | bm25 | 2 | 1.000 |" in printed
    assert "| ru, asked in en | bm25 | 1 | 0.000 |" in printed


@pytest.mark.e2e
def test_tiny_mixed_run_labels_each_sets_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own, translated = _keyword_run(tmp_path, capsys, "--mixed")
    assert (own["set"], own["asked_in"], own["r1_any"]) == ("ru, mixed", None, 1.0)
    assert (translated["set"], translated["asked_in"]) == ("ru, mixed", "en")
    assert "| ru, mixed, asked in en | bm25 | 1 |" in capsys.readouterr().out


@pytest.mark.e2e
def test_tiny_interleaved_run_labels_each_sets_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own, translated = _keyword_run(tmp_path, capsys, "--interleaved")
    assert (own["set"], own["asked_in"], own["r1_any"]) == ("ru, interleaved", None, 1.0)
    assert translated["set"] == "ru, interleaved"


def test_a_set_reports_characters_a_hit_and_recall_within_a_budget() -> None:
    evidence = (("memory/a.md", 3),)
    # the evidence in the second hit: within 3,000 characters only if the
    # first hit leaves room for it
    found = [frozenset[tuple[str, int]](), frozenset(evidence)]
    short = Outcome(
        "fact", 2, 2, True, True, 1.0, budget_ranks(found, (500, 400), evidence), (500, 400)
    )
    long = Outcome(
        "fact", 2, 2, True, True, 1.0, budget_ranks(found, (2800, 400), evidence), (2800, 400)
    )
    row = summarize("en", "calibrated", [short, long])
    assert (row["b3000_any"], row["b6000_any"], row["r10_any"]) == (0.5, 1.0, 1.0)
    assert row["chars_per_hit"] == round((500 + 400 + 2800 + 400) / 4)
