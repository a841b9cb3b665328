"""Remote rerankers against a real local HTTP server speaking each wire format.

Sleeping is injected (recorded, never waited), so retries cost nothing; only
the hang tests wait, for a 0.2 s deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fake_rerank_servers import (
    BAD_INDEX,
    HANG,
    INVALID_JSON,
    MISSING,
    ROUTES,
    WRONG_SHAPE,
    FakeRerankServer,
    Fault,
    status,
)
from openmemoryd.config import RerankSettings
from openmemoryd.errors import ConfigError
from openmemoryd.search.rerank import PROVIDERS, HttpReranker, RerankError, build_reranker

KEY = "rr-test-Very-Secret-Key-456"
ALL = sorted(PROVIDERS)
HOSTED = ["cohere", "jina", "voyage"]
QUERY = "which tea does Wei like"
DOCS = [
    "The staging cluster runs Postgres 16",
    "Wei likes oolong tea in the afternoon",
    "Caroline went hiking in the Alps",
]

Make = Callable[..., HttpReranker]


@pytest.fixture(params=ALL)
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(flavor: str) -> Iterator[FakeRerankServer]:
    with FakeRerankServer(flavor) as fake:
        yield fake


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def make(server: FakeRerankServer, sleeps: list[float]) -> Iterator[Make]:
    """Build rerankers pointed at the fake server; all are closed afterwards."""
    built: list[HttpReranker] = []

    def build(
        *, key: str | None = KEY, environ: dict[str, str] | None = None, **fields: Any
    ) -> HttpReranker:
        settings = RerankSettings(
            provider=server.flavor,  # type: ignore[arg-type]
            base_url=fields.pop("base_url", server.base_url()),
            api_key=key or "",
            **fields,
        )
        reranker = build_reranker(settings, environ or {}, sleep=sleeps.append)
        assert reranker is not None
        built.append(reranker)
        return reranker

    yield build
    for reranker in built:
        reranker.close()


def expected_body(flavor: str, model: str) -> dict[str, Any]:
    n = len(DOCS)
    match flavor:
        case "cohere":
            return {"model": model, "query": QUERY, "documents": DOCS, "top_n": n}
        case "jina":
            return {
                "model": model,
                "query": QUERY,
                "documents": DOCS,
                "top_n": n,
                "return_documents": False,
            }
        case "voyage":
            return {"query": QUERY, "documents": DOCS, "model": model, "top_k": n}
        case "tei":
            return {"query": QUERY, "texts": DOCS, "truncate": True, "raw_scores": False}
        case "llamacpp":
            body: dict[str, Any] = {"query": QUERY, "documents": DOCS, "top_n": n}
            if model:
                body["model"] = model
            return body
    raise AssertionError(flavor)


# ---------------------------------------------------------------- wire formats


async def test_each_provider_sends_its_own_request_and_reads_its_own_reply(
    make: Make, server: FakeRerankServer
) -> None:
    reranker = make()
    scores = await reranker.rerank(QUERY, DOCS)

    [request] = server.requests
    assert request.path == ROUTES[server.flavor]
    assert request.body == expected_body(server.flavor, PROVIDERS[server.flavor].default_model)
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    # the server answers most relevant first; the scores come back in our order
    raw = [server.relevance(QUERY, doc) for doc in DOCS]
    if server.flavor == "llamacpp":
        raw = [8.0 * (s - 0.5) for s in raw]
    assert scores == pytest.approx(raw)
    assert scores.index(max(scores)) == 1


def test_a_service_is_not_held_back_for_other_searches(make: Make) -> None:
    assert not make().in_process  # its cores are not the daemon's


async def test_the_configured_model_is_sent(make: Make, server: FakeRerankServer) -> None:
    await make(model="my-reranker").rerank(QUERY, DOCS)
    body = server.requests[0].body
    if server.flavor == "tei":
        assert "model" not in body  # TEI serves one model and names none
    else:
        assert body["model"] == "my-reranker"


async def test_no_key_sends_no_authorization_to_a_self_hosted_server(
    make: Make, server: FakeRerankServer
) -> None:
    # the fake is on 127.0.0.1: not a hosted API, so no key is fine for every provider
    await make(key=None).rerank(QUERY, DOCS)
    assert "authorization" not in server.requests[0].headers


async def test_the_key_can_come_from_the_named_variable(
    make: Make, server: FakeRerankServer
) -> None:
    await make(key=None, api_key_env="MY_RERANK_KEY", environ={"MY_RERANK_KEY": "from-env"}).rerank(
        QUERY, DOCS
    )
    assert server.requests[0].headers["authorization"] == "Bearer from-env"


async def test_blank_documents_are_sent_as_a_space(make: Make, server: FakeRerankServer) -> None:
    await make().rerank(QUERY, ["", "tea"])
    assert server.documents() == [[" ", "tea"]]


async def test_no_documents_no_request(make: Make, server: FakeRerankServer) -> None:
    assert await make().rerank(QUERY, []) == []
    assert server.requests == []


async def test_the_base_url_path_is_kept(make: Make, server: FakeRerankServer) -> None:
    with pytest.raises(RerankError, match="HTTP 404: unknown model or wrong base_url"):
        await make(base_url=server.url + "/elsewhere").rerank(QUERY, DOCS)
    assert server.requests[0].path == "/elsewhere/rerank"


# ---------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (status(500), "HTTP 500"),
        (INVALID_JSON, "not valid JSON"),
        (WRONG_SHAPE, "unexpected response"),
        (MISSING, "have no score"),
        (BAD_INDEX, "outside"),
    ],
    ids=["500", "invalid-json", "wrong-shape", "missing", "bad-index"],
)
async def test_a_bad_answer_is_a_rerank_error(
    make: Make, server: FakeRerankServer, fault: Fault, message: str
) -> None:
    server.outage(fault)
    with pytest.raises(RerankError, match=message):
        await make().rerank(QUERY, DOCS)


async def test_a_hang_past_timeout_is_a_rerank_error(make: Make, server: FakeRerankServer) -> None:
    server.outage(HANG)
    with pytest.raises(RerankError, match=r"no answer within 0.2 s"):
        await make(timeout_s=0.2).rerank(QUERY, DOCS)


async def test_a_5xx_is_retried_when_asked_and_then_answers(
    make: Make, server: FakeRerankServer, sleeps: list[float]
) -> None:
    server.fail_next(status(503))
    scores = await make(max_retries=1).rerank(QUERY, DOCS)
    assert len(scores) == len(DOCS)
    assert len(server.requests) == 2
    assert len(sleeps) == 1


async def test_no_retry_by_default(make: Make, server: FakeRerankServer) -> None:
    server.fail_next(status(503))
    with pytest.raises(RerankError, match="gave up after 1 attempts"):
        await make().rerank(QUERY, DOCS)
    assert len(server.requests) == 1


async def test_the_key_never_appears_in_an_error(make: Make, server: FakeRerankServer) -> None:
    server.fail_next(status(401, body=f'{{"message": "invalid api key {KEY}"}}'))
    with pytest.raises(RerankError) as raised:
        await make().rerank(QUERY, DOCS)
    assert KEY not in str(raised.value)
    assert "check the API key" in str(raised.value)


# ---------------------------------------------------------------- building


def test_none_builds_nothing() -> None:
    assert build_reranker(RerankSettings(provider="none"), {"COHERE_API_KEY": KEY}) is None


@pytest.mark.parametrize("name", HOSTED)
def test_a_hosted_api_without_a_key_is_a_config_error(name: str) -> None:
    settings = RerankSettings(provider=name, api_key_env="MY_KEY")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"no API key .* set MY_KEY or .*search.rerank.api_key"):
        build_reranker(settings, {})


@pytest.mark.parametrize(
    ("name", "variable"),
    [("cohere", "COHERE_API_KEY"), ("jina", "JINA_API_KEY"), ("voyage", "VOYAGE_API_KEY")],
)
def test_a_hosted_api_takes_its_usual_variable(name: str, variable: str) -> None:
    settings = RerankSettings(provider=name)  # type: ignore[arg-type]
    reranker = build_reranker(settings, {variable: KEY})
    assert reranker is not None
    try:
        assert reranker.model == PROVIDERS[name].default_model
        assert KEY not in reranker.label
    finally:
        reranker.close()


@pytest.mark.parametrize("url", ["ftp://example.com", "not a url", "http://"])
def test_a_bad_base_url_is_a_config_error(url: str) -> None:
    settings = RerankSettings(provider="tei", base_url=url)
    with pytest.raises(ConfigError, match=r"search\.rerank\.base_url"):
        build_reranker(settings, {})
