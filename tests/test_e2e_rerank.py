"""Reranking through the real daemon and client, against fake services.

The daemon embeds with the fake OpenAI-style service (`fake_embedding_servers`)
and reranks with the fake Cohere one (`fake_rerank_servers`), whose key comes
from the variable named by ``search.rerank.api_key_env``. What must hold: a
failing reranker leaves the fused order and status says so; a working one
reorders the hits (never their set), with the key and the configured model
on the wire; turning it off by SIGHUP brings the fused order back.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from conftest import Daemon, Env
from fake_embedding_servers import FakeEmbeddingServer
from fake_rerank_servers import FakeRerankServer, status
from omem_client import Client
from reliability_support import wait_for_vectors
from test_reload import wait_for_log

pytestmark = pytest.mark.e2e

KEY = "co-test-Very-Secret-Key-789"
NOTES = {
    "memory/a.md": "Wei drinks tea every morning, mostly green tea",
    "memory/b.md": "The tea shop on Main Street closed; tea prices went up",
    "memory/c.md": "Wei's favourite tea is oolong from Taiwan",
}


def config(embedder: FakeEmbeddingServer, reranker: FakeRerankServer | None) -> str:
    text = f'[embedding]\nprovider = "openai"\n[embedding.openai]\nbase_url = "{embedder.url}/v1"\n'
    if reranker is not None:
        text += (
            "[search.rerank]\n"
            'provider = "cohere"\n'
            'model = "rerank-test"\n'
            f'base_url = "{reranker.base_url()}"\n'
            'api_key_env = "OMEM_TEST_RERANK_KEY"\n'
            "top_n = 10\n"
            "weight = 0.9\n"
            "timeout_s = 2\n"
        )
    else:
        text += '[search.rerank]\nprovider = "none"\n'
    return text


@pytest.fixture
def services() -> Iterator[tuple[FakeEmbeddingServer, FakeRerankServer]]:
    with FakeEmbeddingServer() as embedder, FakeRerankServer("cohere") as reranker:
        yield embedder, reranker


@pytest.fixture
def daemon_with_reranker(
    env: Env,
    services: tuple[FakeEmbeddingServer, FakeRerankServer],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Daemon]:
    monkeypatch.setenv("OMEM_TEST_RERANK_KEY", KEY)
    env.write_config(config(*services))
    (env.workspace / "memory").mkdir(parents=True)
    for path, text in NOTES.items():
        (env.workspace / path).write_text(text + "\n")
    daemon = Daemon(env).start()
    try:
        yield daemon
    finally:
        daemon.stop()


def paths(client: Client, query: str) -> list[str]:
    return [hit.path for hit in client.search(query).results]


def rerank_issues(client: Client) -> list[str]:
    return [issue for issue in client.status().issues if "rerank" in issue]


def test_a_reranker_reorders_hits_and_a_failing_one_changes_nothing(
    daemon_with_reranker: Daemon,
    services: tuple[FakeEmbeddingServer, FakeRerankServer],
) -> None:
    embedder, reranker = services
    with daemon_with_reranker.client() as client:
        client.sync()
        wait_for_vectors(client)

        reranker.outage(status(500))
        failed = client.search("tea", explain=True)
        assert failed.explain is not None
        assert failed.explain.rerank is not None
        assert failed.explain.rerank.error is not None
        assert all(hit.rerank_score is None for hit in failed.results)
        assert failed.mode == "hybrid"
        fused = [hit.path for hit in failed.results]
        assert len(fused) == len(NOTES)
        [issue] = rerank_issues(client)
        assert "search reranking failed, results keep the fused order" in issue
        assert "HTTP 500" in issue
        assert KEY not in issue
        log = daemon_with_reranker.log()
        assert "(gave up after 1 attempts); keeping the fused order" in log
        assert KEY not in log

        # the reranker prefers what fusion ranked last
        target = fused[-1]
        reranker.boost = {NOTES[target]: 0.99}
        reranker.recover()
        reranked = client.search("tea")
        assert reranked.results[0].path == target
        assert sorted(hit.path for hit in reranked.results) == sorted(fused)
        assert [h.score for h in reranked.results] == sorted(
            (h.score for h in reranked.results), reverse=True
        )
        assert rerank_issues(client) == []
        assert all(hit.rerank_score is not None for hit in reranked.results)
        explained = client.search("tea", explain=True)
        assert explained.explain is not None
        rerank = explained.explain.rerank
        assert rerank is not None
        assert (rerank.provider, rerank.model, rerank.error) == ("cohere", "rerank-test", None)
        assert rerank.sent == len(fused)
        shown = daemon_with_reranker.cli("search", "tea", "--explain")
        assert "# reranked by cohere rerank-test: the best" in shown.stdout
        assert " · rerank 0.990 · " in shown.stdout

        # a fusion sure of its first hit (any estimate is at least 0.01) asks nothing
        daemon_with_reranker.env.write_config(config(embedder, reranker) + "confident_at = 0.01\n")
        assert daemon_with_reranker.proc is not None
        daemon_with_reranker.proc.send_signal(signal.SIGHUP)
        wait_for_log(daemon_with_reranker, "search.rerank.confident_at (unset) -> 0.01")
        asked = len(reranker.requests)
        confident = client.search("tea", explain=True)
        assert [hit.path for hit in confident.results] == fused
        assert confident.explain is not None
        assert confident.explain.rerank is not None
        assert confident.explain.rerank.skipped
        assert "is at least 0.01" in (confident.explain.rerank.error or "")
        assert len(reranker.requests) == asked
        assert rerank_issues(client) == []
        daemon_with_reranker.env.write_config(config(embedder, reranker))
        daemon_with_reranker.proc.send_signal(signal.SIGHUP)
        wait_for_log(daemon_with_reranker, "search.rerank.confident_at 0.01 -> (unset)")

        request = reranker.requests[-1]
        assert request.path == "/v2/rerank"
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert request.body["model"] == "rerank-test"
        assert request.body["query"] == "tea"
        assert request.body["top_n"] == len(request.body["documents"]) == len(fused)
        assert any(NOTES[target] in doc for doc in request.body["documents"])

        # status counts what became of each search that reached the stage
        counted = client.status().rerank
        assert counted is not None
        assert (counted.provider, counted.model, counted.off) == ("cohere", "rerank-test", None)
        assert (counted.reranked, counted.confident, counted.failed) == (3, 1, 1)
        assert (counted.held_back, counted.not_applicable) == (0, 0)  # a service runs beside others
        shown = daemon_with_reranker.cli("status").stdout
        assert (
            "Rerank:     cohere rerank-test · 5 searches: 3 reranked,"
            " 1 the fusion was sure of, 1 failed" in shown
        )

        # off again without a restart: the fused order, no more requests
        daemon_with_reranker.env.write_config(config(embedder, None))
        assert daemon_with_reranker.proc is not None
        daemon_with_reranker.proc.send_signal(signal.SIGHUP)
        wait_for_log(daemon_with_reranker, "search.rerank.provider 'cohere' -> 'none'")
        served = len(reranker.requests)
        assert paths(client, "tea") == fused
        assert len(reranker.requests) == served
        off = client.status().rerank
        assert off is not None
        assert (off.model, off.off, off.reranked) == (None, "search.rerank.provider is none", 3)
        assert "Rerank:     off (search.rerank.provider is none)" in (
            daemon_with_reranker.cli("status").stdout
        )


CODED = {
    f"memory/{code}.md": f"- parcel {code} shipped to the Leeds warehouse on Tuesday"
    for code in ("zqhand008", "zqhand009", "zqhand010", "zqhand011")
}


def test_the_note_naming_a_code_keeps_its_lead_over_the_rerankers_order(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cross-encoder reads ``zqhand009`` as near enough ``zqhand010``: the
    local one put four neighbours' notes first (0.997 against 0.83), and a
    search for three hits lost the one note naming the code. The notes
    holding every code of the query stay ahead; the reranker orders the rest."""
    monkeypatch.setenv("OMEM_TEST_RERANK_KEY", KEY)
    with FakeEmbeddingServer() as embedder, FakeRerankServer("cohere") as reranker:
        env.write_config(config(embedder, reranker))
        (env.workspace / "memory").mkdir(parents=True)
        for path, text in CODED.items():
            (env.workspace / path).write_text(text + "\n")
        reranker.boost = {"zqhand010": 0.997, "zqhand011": 0.997, "zqhand008": 0.993}
        daemon = Daemon(env).start()
        try:
            with daemon.client() as client:
                client.sync()
                wait_for_vectors(client)
                found = client.search("zqhand009", explain=True, min_score=0.0, limit=3)
                assert found.explain is not None
                assert found.explain.rerank is not None
                assert found.explain.rerank.error is None  # reranked, not skipped
                assert found.results[0].path == "memory/zqhand009.md", found.results
                scores = [hit.score for hit in found.results]
                assert scores == sorted(scores, reverse=True)
                # a query naming no code is the reranker's to order
                plain = client.search("Leeds warehouse parcel", min_score=0.0)
                assert plain.results[0].path != "memory/zqhand009.md"
        finally:
            daemon.stop()
