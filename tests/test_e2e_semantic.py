"""End to end with the real default embedder: search by meaning, offline.

The daemon runs with no embedding configuration at all (``auto`` picks the
bundled multilingual-e5-small), exactly as the README's quick start does.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator

import pytest

from conftest import Daemon, Env

pytestmark = pytest.mark.e2e

NOTES = {
    "memory/tea.md": "魏喜欢喝乌龙茶",
    "memory/infra.md": "The staging cluster runs Postgres 16 with nightly backups to S3",
    "memory/travel.md": "Caroline went hiking in the Alps last summer and loved it",
    "memory/people.md": "Wei is allergic to peanuts and prefers window seats on flights",
    "memory/meetings.md": "每周一上午开周会，会后更新项目文档",
}


def append_notes(daemon: Daemon, notes: dict[str, str]) -> None:
    """Append each note to its file through the real CLI."""
    for path, text in notes.items():
        assert daemon.cli("append", "--path", path, text).returncode == 0


def wait_for_vectors(daemon: Daemon, timeout: float = 120.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = json.loads(daemon.cli("status", "--json").stdout)
        emb = status["embedding"]
        if emb["state"] == "idle" and emb["total"] and emb["embedded"] == emb["total"]:
            return status  # type: ignore[no-any-return]
        time.sleep(0.25)
    pytest.fail(f"vectors not complete after {timeout} s:\n{daemon.log()[-3000:]}")


@contextlib.contextmanager
def serving_with_vectors(env: Env) -> Iterator[Daemon]:
    """A daemon on *env*'s workspace as it stands, once every chunk has its
    vector; stopped on the way out."""
    handle = Daemon(env).start()
    try:
        wait_for_vectors(handle)
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def semantic(module_env: Env) -> Iterator[Daemon]:
    """One daemon for the module: every test only reads, but the last, which
    restarts it."""
    env = module_env
    env.write_config("")  # defaults: embedding provider "auto" -> the local model
    handle = Daemon(env).start()
    try:
        append_notes(handle, NOTES)
        wait_for_vectors(handle)
        yield handle
    finally:
        handle.stop()


def search(daemon: Daemon, query: str, *args: str) -> dict[str, object]:
    result = daemon.cli("search", query, *args, "--json", "--explain")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def paths(result: dict[str, object]) -> list[str]:
    return [hit["path"] for hit in result["results"]]  # type: ignore[attr-defined, index]


def test_an_english_question_finds_a_chinese_note_by_meaning(semantic: Daemon) -> None:
    result = search(semantic, "what drink does Wei like")
    assert result["mode"] == "hybrid"
    assert result["provider"] == "local"
    assert not result["degraded"]
    found = paths(result)
    assert "memory/tea.md" in found
    if "memory/infra.md" in found:
        assert found.index("memory/tea.md") < found.index("memory/infra.md")
    tea = next(h for h in result["results"] if h["path"] == "memory/tea.md")  # type: ignore[attr-defined]
    assert tea["text_score"] is None  # no shared word: found by meaning alone
    assert tea["vector_score"] >= 0.35


def test_chinese_queries_find_chinese_notes(semantic: Daemon) -> None:
    assert paths(search(semantic, "魏喜欢喝什么"))[0] == "memory/tea.md"
    assert paths(search(semantic, "例会是什么时候"))[0] == "memory/meetings.md"


def test_english_paraphrases_match_by_meaning(semantic: Daemon) -> None:
    # Two-word paraphrases sit at the small model's noise level (cosine
    # 0.80-0.82, as high as nonsense queries score against short notes), so
    # by default they are not evidence; asked for the closest matches, the
    # model still ranks the right note first.
    for query, path in (
        ("database snapshots", "memory/infra.md"),
        ("mountain trip", "memory/travel.md"),
    ):
        assert paths(search(semantic, query, "--min-score", "0"))[0] == path


def test_explain_shows_the_parts_of_each_score(semantic: Daemon) -> None:
    shown = semantic.cli("search", "what drink does Wei like", "--explain")
    assert "score = calibrated estimate from both ranks" in shown.stdout
    assert "[vector " in shown.stdout
    assert "decay 1.000" in shown.stdout


def test_status_reports_the_local_model_and_progress(semantic: Daemon) -> None:
    status = json.loads(semantic.cli("status", "--json").stdout)
    emb = status["embedding"]
    assert emb["provider"] == "local"
    assert emb["model"] == "multilingual-e5-small-q4"
    assert emb["dims"] == 384
    assert status["vector"] is True
    text = semantic.cli("status").stdout
    assert "Vectors:    idle · local multilingual-e5-small-q4, 384 dims" in text


def test_vectors_survive_a_restart_without_re_embedding(semantic: Daemon) -> None:
    before = json.loads(semantic.cli("status", "--json").stdout)["embedding"]
    semantic.stop()
    semantic.start()
    after = json.loads(semantic.cli("status", "--json").stdout)["embedding"]
    assert after["embedded"] == after["total"] == before["embedded"]  # nothing to redo
    assert after["cache_entries"] == before["cache_entries"]
    assert "memory/tea.md" in paths(search(semantic, "what drink does Wei like"))
