"""Remote embedders against a real local HTTP server speaking each wire format.

Sleeping is injected (recorded, never waited), so retries cost nothing; only
the hang tests wait, for a 0.2 s client timeout.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import numpy as np
import pytest

from fake_embedding_servers import (
    HANG,
    INVALID_JSON,
    NONFINITE,
    WRONG_COUNT,
    WRONG_DIMS,
    FakeEmbeddingServer,
    fake_vector,
    status,
)
from openmemoryd.config.model import EmbeddingSettings, RemoteSettings
from openmemoryd.embed import Embedder, EmbeddingError, sanitize
from openmemoryd.embed.remote import (
    REMOTE_PROVIDERS,
    Backoff,
    MissingApiKey,
    RemoteEmbedder,
    api_key_for,
    build_remote,
)
from openmemoryd.errors import ConfigError

KEY = "sk-test-Very-Secret-Key-123"
BASE_PATHS = {"openai": "/v1", "ollama": "", "gemini": "/v1beta", "voyage": "/v1", "mistral": "/v1"}
DOC_PATHS = {
    "openai": "/v1/embeddings",
    "ollama": "/api/embed",
    "gemini": "/v1beta/models/gemini-embedding-001:batchEmbedContents",
    "voyage": "/v1/embeddings",
    "mistral": "/v1/embeddings",
}
MODELS = {
    "openai": "text-embedding-3-small",
    "ollama": "nomic-embed-text",
    "gemini": "gemini-embedding-001",
    "voyage": "voyage-3.5",
    "mistral": "mistral-embed",
}
ALL = list(REMOTE_PROVIDERS)
WITH_DIMENSIONS = ["openai", "gemini", "voyage"]

Make = Callable[..., RemoteEmbedder]


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer() as fake:
        yield fake


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def make(server: FakeEmbeddingServer, sleeps: list[float]) -> Iterator[Make]:
    """Build embedders pointed at the fake server; all are closed afterwards."""
    built: list[RemoteEmbedder] = []

    def build(
        name: str,
        *,
        key: str | None = KEY,
        headers: dict[str, str] | None = None,
        base_url: str | None = None,
        model: str = "",
        **embedding: Any,
    ) -> RemoteEmbedder:
        remote = RemoteSettings(
            base_url=base_url if base_url is not None else server.url + BASE_PATHS[name],
            api_key=key or "",
            model=model,
            headers=headers or {},
        )
        settings = msgspec.structs.replace(EmbeddingSettings(**embedding), **{name: remote})
        embedder = build_remote(name, settings, {}, sleep=sleeps.append)
        built.append(embedder)
        return embedder

    yield build
    for embedder in built:
        embedder.close()


def expected(text: str, dims: int = 8) -> np.ndarray[Any, Any]:
    return sanitize(fake_vector(text, dims))


def doc_body(name: str, texts: list[str], dims: int = 0) -> dict[str, Any]:
    model = MODELS[name]
    if name == "openai":
        body: dict[str, Any] = {"model": model, "input": texts, "encoding_format": "float"}
        return {**body, "dimensions": dims} if dims else body
    if name == "gemini":
        extra = {"outputDimensionality": dims} if dims else {}
        return {
            "requests": [
                {
                    "model": f"models/{model}",
                    "content": {"parts": [{"text": text}]},
                    "taskType": "RETRIEVAL_DOCUMENT",
                    **extra,
                }
                for text in texts
            ]
        }
    if name == "voyage":
        body = {"input": texts, "model": model, "input_type": "document"}
        return {**body, "output_dimension": dims} if dims else body
    return {"model": model, "input": texts}


# ---------------------------------------------------------------- wire formats


@pytest.mark.parametrize("name", ALL)
def test_document_request_is_exactly_the_wire_format(
    make: Make, server: FakeEmbeddingServer, name: str
) -> None:
    embedder = make(name, headers={"X-Team": "memory"})
    embedder.embed_documents(["alpha", "beta"])
    [request] = server.requests
    assert request.path == DOC_PATHS[name]
    assert request.body == doc_body(name, ["alpha", "beta"])
    assert request.headers["x-team"] == "memory"
    if name == "gemini":
        assert request.headers["x-goog-api-key"] == KEY
        assert "authorization" not in request.headers
    else:
        assert request.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in request.path


@pytest.mark.parametrize("name", WITH_DIMENSIONS)
def test_dimensions_are_sent_only_when_set(
    make: Make, server: FakeEmbeddingServer, name: str
) -> None:
    vectors = make(name, dimensions=4).embed_documents(["alpha"])
    assert vectors.shape == (1, 4)
    assert server.requests[0].body == doc_body(name, ["alpha"], dims=4)
    make(name).embed_documents(["alpha"])
    assert server.requests[1].body == doc_body(name, ["alpha"])


@pytest.mark.parametrize("name", ["ollama", "mistral"])
def test_providers_without_a_dimensions_parameter_ignore_it(
    make: Make, server: FakeEmbeddingServer, name: str
) -> None:
    embedder = make(name, dimensions=4)
    assert embedder.embed_documents(["alpha"]).shape == (1, 8)
    assert server.requests[0].body == doc_body(name, ["alpha"])
    assert ":d" not in embedder.identity()


@pytest.mark.parametrize("name", ["openai", "ollama"])
def test_no_authorization_header_without_a_key(
    make: Make, server: FakeEmbeddingServer, name: str
) -> None:
    make(name, key=None).embed_documents(["alpha"])
    assert "authorization" not in server.requests[0].headers


def test_gemini_query_uses_embed_content_with_retrieval_query(
    make: Make, server: FakeEmbeddingServer
) -> None:
    vector = make("gemini", dimensions=4).embed_query("where is it?")
    [request] = server.requests
    assert request.path == "/v1beta/models/gemini-embedding-001:embedContent"
    assert request.body == {
        "model": "models/gemini-embedding-001",
        "content": {"parts": [{"text": "where is it?"}]},
        "taskType": "RETRIEVAL_QUERY",
        "outputDimensionality": 4,
    }
    np.testing.assert_allclose(vector, expected("where is it?", 4), rtol=1e-5)


def test_gemini_accepts_a_models_prefixed_name(make: Make, server: FakeEmbeddingServer) -> None:
    embedder = make("gemini", model="models/gemini-embedding-001")
    embedder.embed_documents(["alpha"])
    assert server.requests[0].path == DOC_PATHS["gemini"]
    assert embedder.model == "gemini-embedding-001"


def test_voyage_input_type_follows_documents_and_queries(
    make: Make, server: FakeEmbeddingServer
) -> None:
    embedder = make("voyage")
    embedder.embed_documents(["alpha"])
    embedder.embed_query("alpha?")
    assert [r.body["input_type"] for r in server.requests] == ["document", "query"]


@pytest.mark.parametrize("name", ["openai", "ollama", "mistral"])
def test_queries_without_a_query_mode_use_the_document_call(
    make: Make, server: FakeEmbeddingServer, name: str
) -> None:
    vector = make(name).embed_query("question")
    [request] = server.requests
    assert request.path == DOC_PATHS[name]
    assert request.body == doc_body(name, ["question"])
    assert vector.shape == (8,)
    np.testing.assert_allclose(vector, expected("question"), rtol=1e-5)


# ---------------------------------------------------------------- vectors


@pytest.mark.parametrize("name", ALL)
def test_vectors_are_normalised_and_in_input_order(make: Make, name: str) -> None:
    texts = ["one", "two", "three", "four", "five"]
    embedder = make(name)
    assert embedder.dims is None
    vectors = embedder.embed_documents(texts)
    assert vectors.dtype == np.float32
    assert vectors.shape == (5, 8)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, expected(text), rtol=1e-5)
    assert embedder.dims == 8


def test_openai_style_data_is_shuffled_by_the_fake(server: FakeEmbeddingServer) -> None:
    """Guards the order test above: the fake really answers out of order."""
    _, payload = server.answer("/v1/embeddings", {"input": ["a", "b", "c"]}, None)
    assert [item["index"] for item in payload["data"]] != [0, 1, 2]


def test_non_finite_values_are_zeroed_and_the_rest_normalised(
    make: Make, server: FakeEmbeddingServer
) -> None:
    server.fail_next(NONFINITE)
    vectors = make("mistral").embed_documents(["alpha", "beta"])
    raw = fake_vector("alpha", 8)
    raw[:2] = 0.0
    np.testing.assert_allclose(vectors[0], sanitize(raw), rtol=1e-5)
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(vectors[1], expected("beta"), rtol=1e-5)


def test_empty_list_makes_no_request(make: Make, server: FakeEmbeddingServer) -> None:
    assert make("openai").embed_documents([]).shape == (0, 0)
    assert server.requests == []


def test_blank_texts_are_sent_as_a_single_space(make: Make, server: FakeEmbeddingServer) -> None:
    vectors = make("openai").embed_documents(["", " \n\t", "x"])
    assert server.inputs() == [[" ", " ", "x"]]
    assert vectors.shape == (3, 8)


def test_dims_are_fixed_by_the_first_response(make: Make, server: FakeEmbeddingServer) -> None:
    embedder = make("openai")
    embedder.embed_documents(["alpha"])
    server.fail_next(WRONG_DIMS)
    with pytest.raises(EmbeddingError, match="width changed from 8 to 9") as caught:
        embedder.embed_documents(["beta"])
    assert caught.value.retryable is False
    assert embedder.dims == 8


def test_requested_dimensions_must_be_honoured(make: Make, server: FakeEmbeddingServer) -> None:
    server.fail_next(WRONG_DIMS)
    with pytest.raises(EmbeddingError, match="asked for 4 dimensions, got 5") as caught:
        make("openai", dimensions=4).embed_documents(["alpha"])
    assert caught.value.retryable is False


# ---------------------------------------------------------------- batching


@pytest.mark.parametrize(("name", "limit"), [("gemini", 100), ("mistral", 128), ("ollama", 128)])
def test_batches_respect_the_count_limit(
    make: Make, server: FakeEmbeddingServer, name: str, limit: int
) -> None:
    texts = [f"t{i}" for i in range(2 * limit + 5)]
    vectors = make(name).embed_documents(texts)
    assert [len(batch) for batch in server.inputs()] == [limit, limit, 5]
    assert [text for batch in server.inputs() for text in batch] == texts
    np.testing.assert_allclose(vectors[-1], expected(texts[-1]), rtol=1e-5)


def test_batches_respect_the_byte_budget(make: Make, server: FakeEmbeddingServer) -> None:
    texts = [f"{i:03d}" + "é" * 150 for i in range(10)]  # 303 bytes each
    big = "b" * 2000
    vectors = make("openai", batch_max_bytes=1024).embed_documents([*texts, big, "tail"])
    batches = server.inputs()
    assert [len(batch) for batch in batches] == [3, 3, 3, 1, 1, 1]
    assert batches[-2] == [big]
    for batch in batches[:-2]:
        assert sum(len(text.encode()) for text in batch) <= 1024
    assert vectors.shape == (12, 8)


def test_mistral_caps_the_byte_budget(make: Make, server: FakeEmbeddingServer) -> None:
    texts = ["m" * 7000 for _ in range(10)]
    make("mistral", batch_max_bytes=1 << 20).embed_documents(texts)
    assert [len(batch) for batch in server.inputs()] == [4, 4, 2]


@pytest.mark.parametrize(("name", "limit"), [("openai", 8000), ("gemini", 6000), ("ollama", 6000)])
def test_over_long_input_is_split_and_averaged(
    make: Make, server: FakeEmbeddingServer, name: str, limit: int
) -> None:
    long_text = "lorem ipsum dolor sit amet " * 1000  # 27,000 bytes
    embedder = make(name)
    assert embedder.max_input_bytes == limit
    vectors = embedder.embed_documents(["short", long_text])
    sent = [text for batch in server.inputs() for text in batch]
    assert sent[0] == "short"
    pieces = sent[1:]
    assert len(pieces) >= 4
    assert "".join(pieces) == long_text
    assert all(len(piece.encode()) <= limit for piece in pieces)
    assert vectors.shape == (2, 8)
    weighted = sum(len(piece.encode()) * expected(piece) for piece in pieces)
    np.testing.assert_allclose(vectors[1], sanitize(weighted), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(vectors[0], expected("short"), rtol=1e-5)


def test_over_long_query_is_split_too(make: Make, server: FakeEmbeddingServer) -> None:
    vector = make("gemini").embed_query("word " * 2000)
    assert len(server.requests) == 2
    assert all(r.path.endswith(":embedContent") for r in server.requests)
    assert vector.shape == (8,)
    assert np.linalg.norm(vector) == pytest.approx(1.0, rel=1e-5)


# ---------------------------------------------------------------- retries


def test_rate_limit_then_bad_gateway_then_success(
    make: Make, server: FakeEmbeddingServer, sleeps: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    """OpenClaw case 39: a 429 and a 502 are retried; the third call succeeds."""
    server.fail_next(status(429), status(502, body="Bad Gateway (cloudflare)"))
    with caplog.at_level(logging.INFO, logger="openmemoryd.embed"):
        vectors = make("openai").embed_documents(["alpha"])
    np.testing.assert_allclose(vectors[0], expected("alpha"), rtol=1e-5)
    assert len(server.requests) == 3
    assert len(sleeps) == 2
    assert 0.5 <= sleeps[0] <= 0.6
    assert 1.0 <= sleeps[1] <= 1.2
    assert "HTTP 429" in caplog.text
    assert KEY not in caplog.text


@pytest.mark.parametrize(("header", "slept"), [("3", 3.0), ("0.25", 0.25), ("120", 8.0)])
def test_retry_after_is_honoured_and_capped(
    make: Make, server: FakeEmbeddingServer, sleeps: list[float], header: str, slept: float
) -> None:
    server.fail_next(status(429, retry_after=header))
    make("voyage").embed_documents(["alpha"])
    assert sleeps == [slept]


def test_backoff_doubles_with_jitter_and_caps() -> None:
    low = Backoff(max_retries=9, rand=lambda: 0.0)
    high = Backoff(max_retries=9, rand=lambda: 1.0)
    assert [low.delay(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert high.delay(0) == pytest.approx(0.6)
    assert high.delay(3) == pytest.approx(4.8)
    assert high.delay(4) == 8.0


@pytest.mark.parametrize("name", ALL)
def test_exhausted_retries_are_retryable(
    make: Make, server: FakeEmbeddingServer, sleeps: list[float], name: str
) -> None:
    server.fail_next(status(500), status(503), status(500))
    with pytest.raises(EmbeddingError, match="gave up after 3 attempts") as caught:
        make(name, max_retries=2).embed_documents(["alpha"])
    assert caught.value.retryable is True
    assert caught.value.status == 500
    assert len(server.requests) == 3
    assert len(sleeps) == 2
    assert sleeps[1] > sleeps[0]


def test_a_hang_times_out_and_is_retried(
    make: Make, server: FakeEmbeddingServer, sleeps: list[float]
) -> None:
    server.fail_next(HANG)
    vectors = make("openai", timeout_s=0.2, max_retries=1).embed_documents(["alpha"])
    np.testing.assert_allclose(vectors[0], expected("alpha"), rtol=1e-5)
    assert len(server.requests) == 2
    assert len(sleeps) == 1


def test_hanging_until_retries_run_out_is_retryable(
    make: Make, server: FakeEmbeddingServer
) -> None:
    server.fail_next(HANG, HANG)
    with pytest.raises(EmbeddingError, match=r"no answer within 0\.2 s") as caught:
        make("ollama", timeout_s=0.2, max_retries=1).embed_documents(["alpha"])
    assert caught.value.retryable is True
    assert len(server.requests) == 2


def test_connection_refused_is_retryable(make: Make, sleeps: list[float]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = make("openai", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(EmbeddingError, match="ConnectError") as caught:
        embedder.embed_documents(["alpha"])
    assert caught.value.retryable is True
    assert len(sleeps) == 1


# ---------------------------------------------------------------- permanent errors


@pytest.mark.parametrize("name", ["openai", "voyage", "mistral", "ollama"])
@pytest.mark.parametrize("code", [401, 403])
def test_a_rejected_key_is_not_retried_and_not_shown(
    make: Make, server: FakeEmbeddingServer, sleeps: list[float], name: str, code: int
) -> None:
    server.fail_next(status(code, body=f'{{"error": {{"message": "Incorrect API key: {KEY}"}}}}'))
    with pytest.raises(EmbeddingError) as caught:
        make(name).embed_documents(["alpha"])
    message = str(caught.value)
    assert f"check the API key for {name}" in message
    assert KEY not in message
    assert "***" in message
    assert caught.value.retryable is False
    assert caught.value.status == code
    assert len(server.requests) == 1
    assert sleeps == []


def test_gemini_invalid_key_400_reads_as_a_key_problem(
    make: Make, server: FakeEmbeddingServer
) -> None:
    body = '{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key."}}'
    server.fail_next(status(400, body=body))
    with pytest.raises(EmbeddingError, match="check the API key for gemini") as caught:
        make("gemini").embed_documents(["alpha"])
    assert "GEMINI_API_KEY" in str(caught.value)
    assert caught.value.retryable is False


def test_the_key_hint_names_the_environment_variable(
    make: Make, server: FakeEmbeddingServer
) -> None:
    server.fail_next(status(401))
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        make("openai").embed_documents(["alpha"])


@pytest.mark.parametrize("name", ALL)
def test_not_found_means_model_or_base_url(
    make: Make, server: FakeEmbeddingServer, name: str
) -> None:
    server.fail_next(status(404), status(404))
    with pytest.raises(EmbeddingError, match="unknown model or wrong base_url") as caught:
        make(name).embed_documents(["alpha"])
    assert caught.value.retryable is False
    assert caught.value.status == 404


@pytest.mark.parametrize("fault", [INVALID_JSON, WRONG_COUNT], ids=["garbage", "count"])
@pytest.mark.parametrize("name", ALL)
def test_malformed_responses_are_not_retried(
    make: Make, server: FakeEmbeddingServer, sleeps: list[float], name: str, fault: Any
) -> None:
    server.fail_next(fault)
    with pytest.raises(EmbeddingError) as caught:
        make(name).embed_documents(["alpha", "beta"])
    assert caught.value.retryable is False
    assert len(server.requests) == 1
    assert sleeps == []


def test_a_wrong_shape_is_reported(make: Make, server: FakeEmbeddingServer) -> None:
    server.fail_next(status(200, body='{"data": [{"embedding": "nope", "index": 0}]}'))
    with pytest.raises(EmbeddingError, match="not lists of numbers") as caught:
        make("openai").embed_documents(["alpha"])
    assert caught.value.retryable is False
    server.fail_next(status(200, body='{"result": []}'))
    with pytest.raises(EmbeddingError, match="no 'data' field"):
        make("openai").embed_documents(["alpha"])


def test_duplicate_indexes_are_rejected(make: Make, server: FakeEmbeddingServer) -> None:
    body = '{"data": [{"embedding": [1, 0], "index": 0}, {"embedding": [0, 1], "index": 0}]}'
    server.fail_next(status(200, body=body))
    with pytest.raises(EmbeddingError, match="'index' values"):
        make("openai").embed_documents(["alpha", "beta"])


# ---------------------------------------------------------------- ollama legacy


def test_ollama_falls_back_to_the_legacy_endpoint() -> None:
    with FakeEmbeddingServer(legacy_ollama=True) as server:
        settings = EmbeddingSettings(ollama=RemoteSettings(base_url=server.url))
        with build_remote("ollama", settings, {}) as embedder:
            vectors = embedder.embed_documents(["alpha", "beta"])
            embedder.embed_documents(["gamma"])
        paths = [request.path for request in server.requests]
        assert paths == ["/api/embed", "/api/embeddings", "/api/embeddings", "/api/embeddings"]
        assert server.requests[1].body == {"model": "nomic-embed-text", "prompt": "alpha"}
        np.testing.assert_allclose(vectors[1], expected("beta"), rtol=1e-5)


# ---------------------------------------------------------------- redirects


def test_same_origin_307_is_followed(make: Make, server: FakeEmbeddingServer) -> None:
    server.fail_next(status(307, location="/v2/embeddings"))
    make("openai").embed_documents(["alpha"])
    assert [r.path for r in server.requests] == ["/v1/embeddings", "/v2/embeddings"]
    assert server.requests[1].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("code", "location"), [(307, "http://127.0.0.2:9/v1/embeddings"), (302, "/v2/embeddings")]
)
def test_other_redirects_are_refused(
    make: Make, server: FakeEmbeddingServer, code: int, location: str
) -> None:
    server.fail_next(status(code, location=location))
    with pytest.raises(EmbeddingError, match="set base_url") as caught:
        make("openai").embed_documents(["alpha"])
    assert caught.value.retryable is False
    assert len(server.requests) == 1


# ---------------------------------------------------------------- keys and config


def test_missing_key_for_hosted_openai_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY") as caught:
        build_remote("openai", EmbeddingSettings(), {})
    assert isinstance(caught.value, MissingApiKey)
    openrouter = EmbeddingSettings(openai=RemoteSettings(base_url="https://openrouter.ai/api/v1"))
    with pytest.raises(MissingApiKey):
        build_remote("openai", openrouter, {})


@pytest.mark.parametrize(
    ("name", "variable"),
    [("gemini", "GEMINI_API_KEY"), ("voyage", "VOYAGE_API_KEY"), ("mistral", "MISTRAL_API_KEY")],
)
def test_missing_key_for_other_hosted_apis(name: str, variable: str) -> None:
    with pytest.raises(MissingApiKey, match=variable):
        build_remote(name, EmbeddingSettings(), {})
    with build_remote(name, EmbeddingSettings(), {variable: "k"}) as embedder:
        assert embedder.name == name


def test_local_servers_need_no_key() -> None:
    local = EmbeddingSettings(openai=RemoteSettings(base_url="http://localhost:8080/v1"))
    with build_remote("openai", local, {}) as embedder:
        assert embedder.identity() == "openai:text-embedding-3-small@http://localhost:8080/v1"
    with build_remote("ollama", EmbeddingSettings(), {}) as embedder:
        assert embedder.identity() == "ollama:nomic-embed-text@http://localhost:11434"


def test_api_key_resolution_order() -> None:
    env = {
        "MY_KEY": "from-my-var",
        "OPENAI_API_KEY": "from-standard",
        "GOOGLE_API_KEY": "google",
    }
    configured = RemoteSettings(api_key=" direct ", api_key_env="MY_KEY")
    assert api_key_for("openai", configured, env) == "direct"
    assert api_key_for("openai", RemoteSettings(api_key_env="MY_KEY"), env) == "from-my-var"
    assert api_key_for("openai", RemoteSettings(api_key_env="UNSET"), env) == "from-standard"
    assert api_key_for("openai", EmbeddingSettings(), env) == "from-standard"
    assert api_key_for("gemini", EmbeddingSettings(), env) == "google"
    assert api_key_for("gemini", EmbeddingSettings(), {**env, "GEMINI_API_KEY": "g"}) == "g"
    assert api_key_for("voyage", EmbeddingSettings(), {"VOYAGE_API_KEY": "  "}) is None
    assert api_key_for("ollama", EmbeddingSettings(), env) is None


@pytest.mark.parametrize(
    "base_url",
    ["localhost:11434", "ftp://example.com/v1", "http://", "http://a:b:c/", "https://:80/x"],
)
def test_a_bad_base_url_is_a_config_error(base_url: str) -> None:
    settings = EmbeddingSettings(ollama=RemoteSettings(base_url=base_url))
    with pytest.raises(ConfigError, match=r"embedding\.ollama\.base_url"):
        build_remote("ollama", settings, {})


def test_a_header_value_with_a_newline_is_a_config_error() -> None:
    settings = EmbeddingSettings(ollama=RemoteSettings(headers={"X-A": "b\r\nX-Evil: 1"}))
    with pytest.raises(ConfigError, match="printable ASCII"):
        build_remote("ollama", settings, {})


def test_unknown_provider_names_are_refused() -> None:
    with pytest.raises(ValueError, match="not a remote"):
        build_remote("local", EmbeddingSettings(), {})


# ---------------------------------------------------------------- identity


def test_identity_names_the_source_without_secrets() -> None:
    def identity(**changes: Any) -> str:
        remote = RemoteSettings(
            base_url=changes.pop("base_url", "https://user:hunter22@api.example.com/v1/?t=tok99"),
            api_key=KEY,
            headers={"X-Secret": "header-secret-77"},
            model=changes.pop("model", ""),
        )
        with build_remote("openai", EmbeddingSettings(openai=remote, **changes), {}) as e:
            return e.identity()

    base = identity()
    assert base == "openai:text-embedding-3-small@https://api.example.com/v1"
    for secret in (KEY, "hunter22", "user", "tok99", "header-secret-77"):
        assert secret not in base
    assert identity(dimensions=256) == base + ":d256"
    assert identity(model="text-embedding-3-large") != base
    assert identity(base_url="https://api.example.com/v2") != base
    assert identity(base_url="https://api.example.com/v1/") == base


def test_model_override_wins() -> None:
    settings = EmbeddingSettings(
        openai=RemoteSettings(base_url="http://127.0.0.1:1/v1", model="configured")
    )
    with build_remote("openai", settings, {}, model_override="override") as embedder:
        assert embedder.model == "override"
    with build_remote("openai", settings, {}) as embedder:
        assert embedder.model == "configured"


@pytest.mark.parametrize("name", ALL)
def test_every_provider_is_an_embedder(make: Make, name: str) -> None:
    embedder = make(name)
    assert isinstance(embedder, Embedder)
    assert embedder.score_floor == 0.0
    assert embedder.score_ceiling == 1.0
    assert embedder.name == name
    assert embedder.model == MODELS[name]
    assert KEY not in repr(embedder.__dict__)
