"""The chat clients against a local fake speaking OpenAI's and Ollama's real wire formats."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fake_chat_servers import EMPTY, HANG, INVALID_JSON, WRONG_SHAPE, FakeChatServer, status
from openmemoryd.chat import ChatError, ChatModel, ChatNotConfigured, build_chat
from openmemoryd.config import ChatSettings

KEY = "sk-test-abcdefghijklmnopqrstuvwxyz0123"


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    with FakeChatServer(hang_s=3.0) as fake:
        yield fake


@pytest.fixture
def sleeps() -> list[float]:
    return []


def make(
    server: FakeChatServer, sleeps: list[float], provider: str = "openai", **settings: object
) -> ChatModel:
    base = f"{server.url}/v1" if provider == "openai" else server.url
    config = ChatSettings(provider=provider, base_url=base, **settings)  # type: ignore[arg-type]
    return build_chat(config, {}, sleep=sleeps.append)


def test_openai_wire_format(server: FakeChatServer, sleeps: list[float]) -> None:
    model = make(server, sleeps, model="qwen2.5-7b", api_key=KEY, max_output_tokens=300)
    reply = model.complete("Summarise.", "<conversation>\nUser: we chose trio\n</conversation>")
    assert reply == "- User: we chose trio"
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["model"] == "qwen2.5-7b"
    assert request.body["max_tokens"] == 300
    assert request.body["stream"] is False
    assert [m["role"] for m in request.body["messages"]] == ["system", "user"]
    assert request.system == "Summarise."


def test_ollama_wire_format_asks_for_enough_context(
    server: FakeChatServer, sleeps: list[float]
) -> None:
    model = make(server, sleeps, "ollama", max_input_tokens=6000, max_output_tokens=500)
    assert model.model == "llama3.2"
    assert (
        model.complete("S", "User: 你好，我们用 Rust 重写吧") == "- User: 你好，我们用 Rust 重写吧"
    )
    (request,) = server.requests
    assert request.path == "/api/chat"
    assert "authorization" not in request.headers
    assert request.body["stream"] is False
    options = request.body["options"]
    assert options["num_predict"] == 500
    assert options["num_ctx"] >= 6500  # Ollama's default context would cut the prompt


def test_5xx_and_429_are_retried_then_succeed(server: FakeChatServer, sleeps: list[float]) -> None:
    server.fail_next(status(500), status(429, retry_after="2"))
    assert make(server, sleeps).complete("S", "User: hello there") == "- User: hello there"
    assert len(server.requests) == 3
    assert sleeps[1] == 2.0


def test_persistent_failure_gives_up_with_a_clear_error(
    server: FakeChatServer, sleeps: list[float]
) -> None:
    server.fail_next(*[status(503)] * 3)
    with pytest.raises(ChatError, match=r"HTTP 503.*gave up after 3 attempts") as caught:
        make(server, sleeps, max_retries=2).complete("S", "U")
    assert caught.value.retryable


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (INVALID_JSON, "not valid JSON"),
        (EMPTY, "empty text"),
        (WRONG_SHAPE, "no 'choices'"),
        (status(401), "check the API key"),
        (status(404, body='{"error": "model not found"}'), "unknown model"),
    ],
)
def test_bad_answers_fail_at_once(
    server: FakeChatServer, sleeps: list[float], fault: object, message: str
) -> None:
    server.fail_next(fault)  # type: ignore[arg-type]
    with pytest.raises(ChatError, match=message) as caught:
        make(server, sleeps, api_key=KEY).complete("S", "U")
    assert not caught.value.retryable
    assert KEY not in str(caught.value)
    assert len(server.requests) == 1


def test_ollama_wrong_shape_is_an_error(server: FakeChatServer, sleeps: list[float]) -> None:
    server.fail_next(WRONG_SHAPE)
    with pytest.raises(ChatError, match="no 'message'"):
        make(server, sleeps, "ollama").complete("S", "U")


def test_a_hang_times_out_and_is_retried(server: FakeChatServer, sleeps: list[float]) -> None:
    server.fail_next(HANG)
    model = make(server, sleeps, timeout_s=0.3)
    assert model.complete("S", "User: still there") == "- User: still there"
    assert len(server.requests) == 2


def test_not_configured_says_which_keys_to_set() -> None:
    with pytest.raises(ChatNotConfigured) as caught:
        build_chat(ChatSettings(), {})
    message = str(caught.value)
    for key in ("[chat]", "provider", "ollama", "openai", "chat.model", "chat.api_key_env"):
        assert key in message


def test_hosted_openai_without_a_key_is_refused_before_any_request() -> None:
    with pytest.raises(ChatNotConfigured, match="OPENAI_API_KEY"):
        build_chat(ChatSettings(provider="openai"), {})
    model = build_chat(ChatSettings(provider="openai"), {"OPENAI_API_KEY": KEY})
    assert model.endpoint == "https://api.openai.com/v1"
    model.close()
    model = build_chat(ChatSettings(provider="openai", api_key_env="MY_KEY"), {"MY_KEY": KEY})
    model.close()


def test_a_bad_base_url_is_a_config_problem() -> None:
    with pytest.raises(ChatNotConfigured, match=r"chat\.base_url"):
        build_chat(ChatSettings(provider="ollama", base_url="ftp://example"), {})
