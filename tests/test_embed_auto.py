"""`provider = "auto"`: the bundled model, else the first remote provider
with an API key, in a fixed order; else keyword search, saying why."""

from __future__ import annotations

import pytest

from fake_embedder import FakeEmbedder
from openmemoryd.config import EmbeddingSettings
from openmemoryd.embed import registry
from openmemoryd.embed.registry import AUTO_REMOTE_ORDER, as_local, choose_embedder
from openmemoryd.errors import OmemdError

KEYS = {
    "openai": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "voyage": "VOYAGE_API_KEY",
    "mistral": "MISTRAL_API_KEY",
}


@pytest.fixture
def no_local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    real = registry.build

    def build(name: str, *args: object, **kwargs: object) -> object:
        if name == "local":
            raise OmemdError("the bundled model is missing")
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(registry, "build", build)


def test_the_bundled_model_comes_first() -> None:
    choice = choose_embedder(EmbeddingSettings(), {"OPENAI_API_KEY": "sk-x"})
    assert choice.embedder is not None
    assert choice.embedder.name == "local"
    assert choice.reason == "auto: bundled local model"
    choice.embedder.close()


@pytest.mark.usefixtures("no_local_model")
@pytest.mark.parametrize("present", [AUTO_REMOTE_ORDER[i:] for i in range(len(AUTO_REMOTE_ORDER))])
def test_without_it_the_first_provider_with_a_key_in_order(present: tuple[str, ...]) -> None:
    environ = {KEYS[name]: f"key-{name}" for name in present}
    choice = choose_embedder(EmbeddingSettings(), environ)
    assert choice.embedder is not None
    assert choice.embedder.name == present[0]
    assert choice.reason == f"auto: {present[0]} (API key set)"


@pytest.mark.usefixtures("no_local_model")
def test_with_nothing_usable_search_is_by_keywords_and_says_why() -> None:
    choice = choose_embedder(EmbeddingSettings(), {})
    assert choice.embedder is None
    assert "local: the bundled model is missing" in choice.reason
    for name in AUTO_REMOTE_ORDER:
        assert f"{name}: no API key" in choice.reason


def test_as_local_tells_the_local_model_from_others() -> None:
    """`as_local` answers without importing the local model's code, so it
    must still recognise a local embedder once one exists, and nothing else."""
    assert as_local(FakeEmbedder()) is None
    choice = choose_embedder(EmbeddingSettings(), {})
    assert choice.embedder is not None
    assert choice.embedder.name == "local"
    try:
        assert as_local(choice.embedder) is choice.embedder
        assert as_local(FakeEmbedder()) is None
    finally:
        choice.embedder.close()
