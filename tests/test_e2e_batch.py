"""Batch-API indexing through the real daemon and client.

The provider is openai pointed at the fake Files + Batches service
(`fake_batch_servers`), with ``[embedding.batch] min_chunks`` low enough
for a workspace of 60 notes. What must hold: the backlog goes up as one
batch job (no chunk text reaches the synchronous ``/v1/embeddings``), the
vectors it returns serve search (a note found by meaning alone), and a
batch that fails falls back to the synchronous path with a warning, so
every chunk still gets its vector. With ``wait = false`` notes written
while a job runs embed at once, and a restarted daemon collects the job it
had submitted instead of submitting it again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from conftest import Daemon, Env
from fake_batch_servers import FakeBatchServer
from omem_client import Client
from reliability_support import wait_until

pytestmark = pytest.mark.e2e

KEY = "sk-test-Batch-E2E-Key-789"
NOTES = 60
TARGET = "memory/note-41.md"


def note(number: int) -> str:
    if f"memory/note-{number:02d}.md" == TARGET:
        return "# Boat\n\nThe zqketch needs new sails before the regatta in June.\n"
    return f"# Note {number}\n\nEntry {number}: topic{number} detail{number} remark{number}.\n"


@pytest.fixture
def provider() -> Iterator[FakeBatchServer]:
    with FakeBatchServer(polls_before_done=2) as server:
        yield server


def start(env: Env, provider: FakeBatchServer, extra: str = "", name: str = "openai") -> Daemon:
    """A daemon embedding 60 notes with *name* at the fake, batches on."""
    base = "/v1" if name == "openai" else "/v1beta"
    env.write_config(
        "[embedding]\n"
        f'provider = "{name}"\n'
        f"[embedding.{name}]\n"
        f'base_url = "{provider.url}{base}"\n'
        f'api_key = "{KEY}"\n'
        "[embedding.batch]\n"
        "poll_interval_ms = 50\n"
        "min_chunks = 20\n" + extra
    )
    (env.workspace / "memory").mkdir(parents=True)
    for number in range(NOTES):
        (env.workspace / f"memory/note-{number:02d}.md").write_text(note(number))
    return Daemon(env).start()


@pytest.fixture
def daemon(env: Env, provider: FakeBatchServer) -> Iterator[Daemon]:
    started = start(env, provider)
    try:
        yield started
    finally:
        started.stop()


def vectors_complete(client: Client) -> bool:
    embedding = client.status().embedding
    return (
        embedding is not None
        and embedding.state == "idle"
        and embedding.total >= NOTES
        and embedding.embedded == embedding.total
    )


def batch_texts(provider: FakeBatchServer) -> list[str]:
    """Every text sent in a batch job (an OpenAI input file, Gemini's inline requests)."""
    openai = [
        json.loads(line)["body"]["input"]
        for request in provider.requests
        if request.path == "/v1/files"
        for line in request.body["files"]["file"].splitlines()
    ]
    gemini = [
        item["request"]["content"]["parts"][0]["text"]
        for request in provider.requests
        if request.path.endswith(":asyncBatchEmbedContent")
        for item in request.body["batch"]["inputConfig"]["requests"]["requests"]
    ]
    return openai + gemini


def test_a_backlog_is_embedded_by_one_batch_job_and_serves_search(
    daemon: Daemon, provider: FakeBatchServer
) -> None:
    with daemon.client() as client:
        client.sync()
        wait_until(lambda: vectors_complete(client), "the vectors are complete", within=60.0)

        assert provider.batches_created == ["batch_1"]
        uploaded = batch_texts(provider)
        assert len(uploaded) >= NOTES
        # only the warm-up query went to the synchronous endpoint
        assert provider.sync_texts() == ["warm up"]
        # input and output files are deleted afterwards
        assert sorted(provider.deleted) == ["file-1", "file-2"]

        # a query sharing no word with the note embeds like it: only its
        # batch-made vector can find it
        chunk = next(text for text in uploaded if "zqketch" in text)
        provider.aliases["vessel upkeep agenda"] = chunk
        found = client.search("vessel upkeep agenda")
        assert not found.degraded
        (hit,) = [h for h in found.results if h.path == TARGET]
        assert not hit.text_score
        assert hit.vector_score is not None
        assert hit.vector_score > 0.9
        assert KEY not in daemon.log()


def test_gemini_backlogs_go_through_its_async_batch_too(
    env: Env, provider: FakeBatchServer
) -> None:
    daemon = start(env, provider, name="gemini")
    try:
        with daemon.client() as client:
            client.sync()
            wait_until(lambda: vectors_complete(client), "the vectors are complete", within=60.0)
            assert provider.batches_created == ["batches/g1"]
            uploaded = batch_texts(provider)
            assert len(uploaded) >= NOTES
            assert provider.sync_texts() == ["warm up"]
            chunk = next(text for text in uploaded if "zqketch" in text)
            provider.aliases["vessel upkeep agenda"] = chunk
            (hit,) = [h for h in client.search("vessel upkeep agenda").results if h.path == TARGET]
            assert hit.vector_score is not None
            assert hit.vector_score > 0.9
    finally:
        daemon.stop()


def test_a_failed_batch_falls_back_to_synchronous_embedding(
    env: Env, provider: FakeBatchServer
) -> None:
    provider.outcome = "failed"
    daemon = start(env, provider)
    try:
        with daemon.client() as client:
            client.sync()
            wait_until(lambda: vectors_complete(client), "the vectors are complete", within=60.0)
        assert len(provider.batches_created) == 1
        synced = set(provider.sync_texts())
        assert set(batch_texts(provider)) <= synced  # every chunk, synchronously
        log = daemon.log()
        assert "batch embedding:" in log
        assert "not embedded (job batch_1: failed: fake failure)" in log
        assert "embedding them synchronously" in log
    finally:
        daemon.stop()


def test_with_wait_false_new_notes_embed_meanwhile_and_a_restart_collects_the_job(
    env: Env, provider: FakeBatchServer
) -> None:
    provider.outcome = "never"
    daemon = start(env, provider, extra="wait = false\n")
    try:
        with daemon.client() as client:
            client.sync()
            wait_until(lambda: client.status().embedding.batch_jobs == 1, "a batch job runs")
            client.append("The zqlighthouse keeper logs every storm.", path="memory/late.md")
            wait_until(
                lambda: any("zqlighthouse" in text for text in provider.sync_texts()),
                "the new note embeds while the job runs",
            )
            embedding = client.status().embedding
            assert embedding.state == "embedding"
            # The job's chunks wait, and only they (and the new note, if its
            # vector is not stored yet). Under load the first notes can be
            # embedded synchronously before the backlog reaches min_chunks,
            # so the job need not hold all of them.
            held = len(set(batch_texts(provider)))
            assert held >= 20
            assert held <= embedding.total - embedding.embedded <= held + 1
            assert "1 batch jobs running" in daemon.cli("status").stdout
    finally:
        daemon.stop()

    provider.outcome = "completed"
    again = Daemon(env).start()
    try:
        with again.client() as client:
            wait_until(lambda: vectors_complete(client), "the vectors are complete", within=60.0)
            assert client.status().embedding.batch_jobs == 0
        assert provider.batches_created == ["batch_1"]  # collected, not paid for twice
        assert "collecting 1 batch jobs submitted before a restart" in again.log()
        batched = set(batch_texts(provider))
        assert not batched & set(provider.sync_texts())
    finally:
        again.stop()
