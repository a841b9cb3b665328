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
from reliability_support import fake_vectors_daemon
from test_reload import wait_for_log

pytestmark = pytest.mark.e2e

NOTES = {
    "memory/2024-01-15.md": "- Swam at Bondi every morning before work",
    "memory/2024-07-15.md": "- Skied at Thredbo with the kids",
}


def southern_config(base_url: str) -> str:
    return (
        f'[embedding]\nprovider = "openai"\n[embedding.openai]\nbase_url = "{base_url}"\n'
        '[search]\nseasons = "south"\n'
    )


@pytest.fixture
def southern(env: Env) -> Iterator[Daemon]:
    with fake_vectors_daemon(env, NOTES, southern_config) as daemon:
        yield daemon


def _timeline(daemon: Daemon, query: str) -> list[str]:
    result = daemon.cli("search", query, "--json")
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["mode"] == "timeline", reply
    return [hit["path"] for hit in reply["results"]]


def test_summer_is_december_to_february_in_the_south(southern: Daemon) -> None:
    daemon = southern
    for query in (
        "what did we do in summer 2024",
        "что было летом 2024 года",
        "2024年夏天做了什么",
    ):
        assert _timeline(daemon, query) == ["memory/2024-01-15.md"], query
    assert _timeline(daemon, "what did we do in the winter of 2024") == ["memory/2024-07-15.md"]

    # back to the north without a restart
    daemon.env.write_config(daemon.env.config_file.read_text().replace('"south"', '"north"'))
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGHUP)
    wait_for_log(daemon, "search.seasons 'south' -> 'north'")
    assert _timeline(daemon, "what did we do in summer 2024") == ["memory/2024-07-15.md"]
