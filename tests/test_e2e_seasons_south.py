"""End to end: `search.seasons = "south"` reads "last summer" as December to
February, through the real daemon and client, and changes with SIGHUP.

An OpenAI-style fake embedder stands in for the model (the date reading
needs calibrated fusion, hence vectors); the notes are dated in fixed past
years, so the days each season means are known whatever day the tests run.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator

import pytest

from conftest import Daemon, Env
from fake_embedding_servers import FakeEmbeddingServer
from reliability_support import wait_for_vectors
from test_reload import wait_for_log

pytestmark = pytest.mark.e2e

NOTES = {
    "memory/2024-01-15.md": "- Swam at Bondi every morning before work",
    "memory/2024-07-15.md": "- Skied at Thredbo with the kids",
}


def config(embedder: FakeEmbeddingServer, seasons: str) -> str:
    return (
        f'[embedding]\nprovider = "openai"\n[embedding.openai]\nbase_url = "{embedder.url}/v1"\n'
        f'[search]\nseasons = "{seasons}"\n'
    )


@pytest.fixture
def southern(env: Env) -> Iterator[tuple[Daemon, FakeEmbeddingServer]]:
    with FakeEmbeddingServer() as embedder:
        env.write_config(config(embedder, "south"))
        (env.workspace / "memory").mkdir(parents=True)
        for path, text in NOTES.items():
            (env.workspace / path).write_text(text + "\n")
        daemon = Daemon(env).start()
        try:
            with daemon.client() as client:
                client.sync()
                wait_for_vectors(client)
            yield daemon, embedder
        finally:
            daemon.stop()


def _timeline(daemon: Daemon, query: str) -> list[str]:
    result = daemon.cli("search", query, "--json")
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["mode"] == "timeline", reply
    return [hit["path"] for hit in reply["results"]]


def test_summer_is_december_to_february_in_the_south(
    southern: tuple[Daemon, FakeEmbeddingServer],
) -> None:
    daemon, embedder = southern
    for query in (
        "what did we do in summer 2024",
        "что было летом 2024 года",
        "2024年夏天做了什么",
    ):
        assert _timeline(daemon, query) == ["memory/2024-01-15.md"], query
    assert _timeline(daemon, "what did we do in the winter of 2024") == ["memory/2024-07-15.md"]

    # back to the north without a restart
    daemon.env.write_config(config(embedder, "north"))
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGHUP)
    wait_for_log(daemon, "search.seasons 'south' -> 'north'")
    assert _timeline(daemon, "what did we do in summer 2024") == ["memory/2024-07-15.md"]
