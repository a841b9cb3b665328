"""An embedding provider that fails and comes back, through the real daemon.

The provider is the fake OpenAI-style service (`fake_embedding_servers`),
taken down with every fault a real one shows: 429, 500, a garbled body and
a request that hangs past the client's timeout. Meanwhile notes keep
arriving. What must hold: requests are retried, searches answer from the
keyword index at once and say they are degraded, ``status`` shows the
provider failing and the backlog of chunks without vectors; once the
provider is back the backlog drains to zero and a match only the vector leg
can find is found. Timeouts are small (config), so the test takes seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from conftest import Daemon, Env
from fake_embedding_servers import HANG, INVALID_JSON, FakeEmbeddingServer, status
from omem_client import Client
from reliability_support import wait_until

pytestmark = pytest.mark.e2e

TIMEOUT_S = 0.4
QUERY_TIMEOUT_S = 1.5


@pytest.fixture
def provider() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(hang_s=5.0) as server:
        yield server


@pytest.fixture
def daemon_with_provider(env: Env, provider: FakeEmbeddingServer) -> Iterator[Daemon]:
    env.write_config(
        "[embedding]\n"
        'provider = "openai"\n'
        f"timeout_s = {TIMEOUT_S}\n"
        "max_retries = 1\n"
        "[embedding.openai]\n"
        f'base_url = "{provider.url}/v1"\n'
        "[search]\n"
        f"query_timeout_s = {QUERY_TIMEOUT_S}\n"
    )
    (env.workspace / "memory").mkdir(parents=True)
    for number, topic in enumerate(("gardening", "sailing", "pottery")):
        (env.workspace / f"memory/{topic}.md").write_text(
            f"# {topic.title()}\n\nNotes on {topic}, entry {number}.\n"
        )
    daemon = Daemon(env).start()
    try:
        yield daemon
    finally:
        daemon.stop()


def backlog(client: Client) -> int:
    embedding = client.status().embedding
    return embedding.total - embedding.embedded


def test_provider_faults_degrade_to_keywords_and_vectors_catch_up(
    daemon_with_provider: Daemon, provider: FakeEmbeddingServer
) -> None:
    with daemon_with_provider.client() as client:
        client.sync()
        wait_until(
            lambda: client.status().embedding.state == "idle" and backlog(client) == 0,
            "the first vectors are complete",
        )
        healthy = client.search("sailing notes")
        assert not healthy.degraded
        assert healthy.results[0].vector_score is not None

        provider.outage(status(429), status(500), INVALID_JSON, HANG)
        served_before = len(provider.requests)
        late = {}
        for number, word in enumerate(("zqlatebb", "zqlatecc", "zqlatedd")):
            appended = client.append(f"Late note {number} about {word}.", path=f"memory/{word}.md")
            assert appended.indexed  # keywords do not wait for the provider
            late[word] = appended.path
        wait_until(
            lambda: client.status().embedding.state == "failing",
            "status shows the provider failing",
        )
        during = client.status()
        assert during.embedding.last_error
        assert any(i.startswith("embedding provider error") for i in during.issues)
        assert backlog(client) >= len(late)

        for word, path in late.items():
            started = time.monotonic()
            result = client.search(f"{word} please")  # a new query: not in the query cache
            took = time.monotonic() - started
            assert result.degraded
            assert result.degraded_reason is not None
            assert "query embedding failed" in result.degraded_reason
            assert result.results[0].path == path  # answered from the keyword index
            assert result.results[0].vector_score is None
            assert took < QUERY_TIMEOUT_S + 2.0  # a hung provider does not hold a search
        outage_requests = len(provider.requests) - served_before
        assert outage_requests >= 4  # every fault was served, failures were retried

        # The text a late note's chunk is embedded as (failed requests are
        # recorded too); a query made of other words embeds like it.
        chunk_text = next(
            text
            for texts in provider.inputs()
            for text in texts
            if "zqlatecc" in text and "please" not in text  # not the query
        )
        provider.aliases["zqsynonym wording"] = chunk_text
        provider.recover()

        # The first search that embeds its query again ends the backoff.
        client.search("pottery entry")
        drained = [backlog(client)]
        wait_until(
            lambda: drained.append(backlog(client)) or drained[-1] == 0,
            "the backlog drains to zero",
            within=30.0,
        )
        assert drained == sorted(drained, reverse=True)  # never grows while it drains
        after = client.status()
        assert after.embedding.state == "idle"
        assert after.embedding.last_error is None
        assert not any(i.startswith("embedding provider error") for i in after.issues)

        found = client.search("zqsynonym wording")
        assert not found.degraded
        (hit,) = [h for h in found.results if h.path == late["zqlatecc"]]
        assert not hit.text_score  # no shared word: only the vector leg found it
        assert hit.vector_score is not None
        assert hit.vector_score > 0.9
