"""Batch-API embedding (`embed.remote.batch`) against fake OpenAI and Gemini
batch services speaking their wire formats (`fake_batch_servers`).

Sleeping is injected and a fake clock advances with it, so polling and the
job timeout cost no wall time.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from fake_batch_servers import FakeBatchServer
from fake_embedding_servers import FakeEmbeddingServer, status
from openmemoryd.config import load_config
from openmemoryd.config.model import BatchSettings, EmbeddingSettings, RemoteSettings
from openmemoryd.embed.remote import RemoteEmbedder, build_remote
from openmemoryd.embed.remote.batch import BatchEmbedder, BatchUnavailable, JobRecord
from openmemoryd.embed.remote.batch_wire import client_for, make_batcher
from openmemoryd.errors import ConfigError

KEY = "sk-test-Batch-Secret-Key-456"
BASES = {"openai": "/v1", "gemini": "/v1beta"}
TEXTS = ["alpha notes", "beta notes", "gamma notes", "delta notes", "epsilon notes"]


class Clock:
    """Monotonic time that moves only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server() -> Iterator[FakeBatchServer]:
    with FakeBatchServer() as fake:
        yield fake


Build = Callable[..., RemoteEmbedder]


@pytest.fixture
def build() -> Iterator[Build]:
    built: list[RemoteEmbedder] = []

    def make(name: str, url: str, *, key: str = KEY, **embedding: Any) -> RemoteEmbedder:
        remote = RemoteSettings(base_url=url + BASES[name], api_key=key)
        settings = msgspec.structs.replace(EmbeddingSettings(**embedding), **{name: remote})
        embedder = build_remote(name, settings, {}, sleep=lambda _: None)
        built.append(embedder)
        return embedder

    yield make
    for embedder in built:
        embedder.close()


def batcher(
    embedder: RemoteEmbedder, clock: Clock, *, job_max_requests: int | None = None, **settings: Any
) -> BatchEmbedder:
    config = BatchSettings(**{"poll_interval_ms": 1000, **settings})
    return BatchEmbedder(
        client_for(embedder),
        config,
        job_max_requests=job_max_requests,
        sleep=clock.sleep,
        clock=clock,
        wall=clock,
    )


def same_rows(got: list[Any], want: np.ndarray[Any, Any]) -> None:
    assert all(row is not None for row in got)
    np.testing.assert_allclose(np.stack(got), want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- wire formats


def test_openai_batch_uploads_jsonl_polls_downloads_and_cleans_up(
    server: FakeBatchServer, build: Build
) -> None:
    embedder = build("openai", server.url, dimensions=8)
    clock = Clock()
    result = batcher(embedder, clock).embed_documents(TEXTS)

    same_rows(result.vectors, embedder.embed_documents(TEXTS))
    assert result.failures == []
    upload, create = server.requests[0], server.requests[1]
    assert (upload.method, upload.path) == ("POST", "/v1/files")
    assert upload.headers["authorization"] == f"Bearer {KEY}"
    assert upload.body["fields"] == {"purpose": "batch"}
    lines = [json.loads(line) for line in upload.body["files"]["file"].splitlines()]
    assert lines[1] == {
        "custom_id": "1",
        "method": "POST",
        "url": "/v1/embeddings",
        "body": {
            "model": "text-embedding-3-small",
            "input": "beta notes",
            "encoding_format": "float",
            "dimensions": 8,
        },
    }
    assert (create.path, create.body["input_file_id"]) == ("/v1/batches", "file-1")
    assert create.body["endpoint"] == "/v1/embeddings"
    assert create.body["completion_window"] == "24h"
    polls = [r for r in server.requests if r.method == "GET" and r.path == "/v1/batches/batch_1"]
    assert len(polls) == 2  # in_progress once, then completed
    assert clock.sleeps == [1.0]
    # the memory text does not stay in the account's storage
    assert sorted(server.deleted) == ["file-1", "file-2"]


def test_gemini_batch_sends_inline_requests_and_reads_inline_results(
    server: FakeBatchServer, build: Build
) -> None:
    embedder = build("gemini", server.url)
    result = batcher(embedder, Clock()).embed_documents(TEXTS)

    same_rows(result.vectors, embedder.embed_documents(TEXTS))
    create = server.requests[0]
    assert create.path == "/v1beta/models/gemini-embedding-001:asyncBatchEmbedContent"
    assert create.headers["x-goog-api-key"] == KEY
    batch = create.body["batch"]
    assert batch["model"] == "models/gemini-embedding-001"
    assert batch["inputConfig"]["requests"]["requests"][2] == {
        "request": {
            "model": "models/gemini-embedding-001",
            "content": {"parts": [{"text": "gamma notes"}]},
            "taskType": "RETRIEVAL_DOCUMENT",
        },
        "metadata": {"key": "2"},
    }
    assert [r.path for r in server.requests[1:3]] == ["/v1beta/batches/g1"] * 2


@pytest.mark.parametrize("name", ["openai", "gemini"])
def test_no_synchronous_embedding_request_is_made(
    server: FakeBatchServer, build: Build, name: str
) -> None:
    batcher(build(name, server.url), Clock()).embed_documents(TEXTS)
    assert server.sync_texts() == []


def test_a_text_over_the_input_limit_is_split_and_merged_as_synchronously(
    server: FakeBatchServer, build: Build
) -> None:
    embedder = build("openai", server.url)
    texts = ["word " * 3000, "short"]
    result = batcher(embedder, Clock()).embed_documents(texts)
    same_rows(result.vectors, embedder.embed_documents(texts))
    [upload] = [r for r in server.requests if r.path == "/v1/files"]
    assert len(upload.body["files"]["file"].splitlines()) == 3  # two pieces and "short"


# ---------------------------------------------------------------- failures


@pytest.mark.parametrize("name", ["openai", "gemini"])
def test_a_failed_batch_leaves_every_text_to_the_synchronous_path(
    server: FakeBatchServer, build: Build, name: str
) -> None:
    server.outcome = "failed"
    result = batcher(build(name, server.url), Clock()).embed_documents(TEXTS)
    assert result.vectors == [None] * len(TEXTS)
    [failure] = result.failures
    assert "fake" in failure
    assert "failure" in failure


@pytest.mark.parametrize("name", ["openai", "gemini"])
def test_a_batch_running_past_the_timeout_is_cancelled(
    server: FakeBatchServer, build: Build, name: str
) -> None:
    server.outcome = "never"
    clock = Clock()
    result = batcher(build(name, server.url), clock, timeout_minutes=0.5).embed_documents(TEXTS)
    assert result.vectors == [None] * len(TEXTS)
    [failure] = result.failures
    assert "after 0.5 minutes" in failure
    assert server.cancelled == server.batches_created
    assert 30.0 <= clock.now <= 31.0


@pytest.mark.parametrize("name", ["openai", "gemini"])
def test_requests_failing_inside_a_job_cost_only_their_own_texts(
    server: FakeBatchServer, build: Build, name: str
) -> None:
    server.fail_texts = {"beta notes", "delta notes"}
    embedder = build(name, server.url)
    result = batcher(embedder, Clock()).embed_documents(TEXTS)
    assert [v is None for v in result.vectors] == [False, True, False, True, False]
    kept = [TEXTS[0], TEXTS[2], TEXTS[4]]
    same_rows([result.vectors[i] for i in (0, 2, 4)], embedder.embed_documents(kept))
    assert len(result.failures) == 2
    assert all("fake request failure" in failure for failure in result.failures)


def test_a_failed_download_costs_only_that_job(server: FakeBatchServer, build: Build) -> None:
    embedder = build("openai", server.url, max_retries=0)
    original = server._openai

    def no_downloads(method: str, route: str, body: Any) -> tuple[int, Any]:
        if route.endswith("/content"):
            return 500, {"error": {"message": "storage is down"}}
        return original(method, route, body)

    server._openai = no_downloads  # type: ignore[method-assign]
    result = batcher(embedder, Clock()).embed_documents(TEXTS)
    assert result.vectors == [None] * len(TEXTS)
    assert "downloading the results failed" in result.failures[0]


def test_an_expired_openai_batch_keeps_what_was_answered(
    server: FakeBatchServer, build: Build
) -> None:
    server.outcome = "expired"
    result = batcher(build("openai", server.url), Clock()).embed_documents(TEXTS)
    assert [v is None for v in result.vectors] == [False, False, True, True, True]
    assert result.failures == ["job batch_1: 3 texts without an answer (job expired)"]


def test_no_batch_api_at_the_base_url_turns_batching_off(build: Build) -> None:
    with FakeEmbeddingServer() as plain:  # answers /v1/embeddings only
        one = batcher(build("openai", plain.url), Clock())
        with pytest.raises(BatchUnavailable, match="no batch API at this base_url"):
            one.embed_documents(TEXTS)
        assert one.available is False


def test_a_malformed_job_id_is_not_used_in_a_url(server: FakeBatchServer, build: Build) -> None:
    embedder = build("openai", server.url)
    original = server._create_openai

    def evil(body: dict[str, Any]) -> tuple[int, Any]:
        code, payload = original(body)
        return code, {**payload, "id": "../../files/x"}

    server._create_openai = evil  # type: ignore[method-assign]
    result = batcher(embedder, Clock()).embed_documents(TEXTS)
    assert result.vectors == [None] * len(TEXTS)
    assert "'id' is not an identifier" in result.failures[0]


# ---------------------------------------------------------------- concurrency


@pytest.mark.parametrize("name", ["openai", "gemini"])
def test_no_more_jobs_run_at_once_than_the_concurrency(
    build: Build, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeBatchServer(polls_before_done=2) as server:
        embedder = build(name, server.url)
        texts = [f"note number {i}" for i in range(10)]
        caplog.set_level(logging.INFO, "openmemoryd.embed.batch")
        one = batcher(embedder, Clock(), job_max_requests=2, concurrency=2)
        result = one.embed_documents(texts)
        same_rows(result.vectors, embedder.embed_documents(texts))
        assert result.jobs == 5
        assert len(server.batches_created) == 5
        assert server.max_running == 2
        assert one.jobs_running == 0
        assert KEY not in caplog.text


# ---------------------------------------------------------------- wait = false


@pytest.mark.parametrize("name", ["openai", "gemini"])
def test_a_started_job_is_checked_later_and_answers_by_text_hash(
    server: FakeBatchServer, build: Build, name: str
) -> None:
    embedder = build(name, server.url)
    one = batcher(embedder, Clock())
    items = [(f"hash-{i}", text) for i, text in enumerate(TEXTS)]
    record = one.start_job(items)
    assert record.hashes == [digest for digest, _ in items]
    # the record survives a round trip through the index's meta table
    record = msgspec.json.decode(msgspec.json.encode(record), type=JobRecord)
    assert one.check_job(record) == (False, {}, [])  # still running
    done, found, failures = one.check_job(record)
    assert done
    assert failures == []
    want = embedder.embed_documents(TEXTS)
    same_rows([found[f"hash-{i}"] for i in range(len(TEXTS))], want)


def test_a_started_job_takes_whole_texts_up_to_the_job_limit(
    server: FakeBatchServer, build: Build
) -> None:
    one = batcher(build("openai", server.url), Clock(), job_max_requests=3)
    items = [("h0", "short"), ("h1", "tail"), ("h2", "word " * 3000)]
    record = one.start_job(items)
    assert record.hashes == ["h0", "h1"]  # h2's two pieces would cross the limit of 3
    assert record.owners == [0, 1]
    record = one.start_job(items[2:])
    assert record.hashes == ["h2"]
    assert record.owners == [0, 0]


def test_a_started_job_survives_a_passing_polling_failure(
    server: FakeBatchServer, build: Build
) -> None:
    one = batcher(build("openai", server.url, max_retries=0), Clock())
    record = one.start_job([("h", "text")])
    server.fail_next(status(503))
    assert one.check_job(record) == (False, {}, [])  # kept, not given up
    assert one.check_job(record)[0] is False  # in_progress
    done, found, failures = one.check_job(record)
    assert (done, list(found), failures) == (True, ["h"], [])


def test_a_started_job_past_its_deadline_is_cancelled(
    server: FakeBatchServer, build: Build
) -> None:
    server.outcome = "never"
    clock = Clock()
    one = batcher(build("openai", server.url), clock, timeout_minutes=1)
    record = one.start_job([("h", "text")])
    assert one.check_job(record)[0] is False
    clock.now += 61
    done, found, failures = one.check_job(record)
    assert (done, found) == (True, {})
    assert "after 1 minutes" in failures[0]
    assert server.cancelled == ["batch_1"]


# ---------------------------------------------------------------- configuration


def test_batching_applies_to_openai_and_gemini_with_a_key_when_enabled(
    server: FakeBatchServer, build: Build
) -> None:
    on = BatchSettings()
    assert make_batcher(build("openai", server.url), on) is not None
    assert make_batcher(build("gemini", server.url), on) is not None
    assert make_batcher(build("openai", server.url, key=""), on) is None
    assert make_batcher(build("openai", server.url), BatchSettings(enabled=False)) is None
    assert make_batcher(object(), on) is None


def test_the_batch_section_is_validated_with_its_location(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    env = {"OPENMEMORY_CONFIG": str(path)}
    path.write_text("[embedding.batch]\nconcurrency = 0\n")
    with pytest.raises(ConfigError, match=r"embedding\.batch\.concurrency"):
        load_config(environ=env)
    path.write_text("[embedding.batch]\npollIntervalMs = 100\n")
    with pytest.raises(ConfigError, match="pollIntervalMs"):
        load_config(environ=env)
    text = "[embedding.batch]\nenabled = false\nwait = false\npoll_interval_ms = 500\n"
    path.write_text(text + "timeout_minutes = 5\nconcurrency = 4\nmin_chunks = 50\n")
    batch = load_config(environ=env).embedding.batch
    assert batch == BatchSettings(
        enabled=False,
        wait=False,
        poll_interval_ms=500,
        timeout_minutes=5.0,
        concurrency=4,
        min_chunks=50,
    )
