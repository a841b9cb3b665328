"""End to end: `forget` by a citation that went stale, through the real
daemon, the CLI and the MCP bridge.

Two agents share MEMORY.md: one holds ``MEMORY.md#L13`` (a TLS decision)
from a search, the other forgets line 12. The first one's forget must take
the TLS decision from line 12, where it moved, and say so; never the Kafka
decision that moved into line 13. When what was cited is no longer there,
nothing is removed and the refusal says why.
"""

from __future__ import annotations

import pytest

from conftest import Daemon
from test_forget_stale import HEAD, K8S, KAFKA, TLS  # the same three decisions
from test_mcp_bridge import bridge, call, ok, text_of

pytestmark = pytest.mark.e2e


def _decisions(daemon: Daemon) -> None:
    path = daemon.env.workspace / "MEMORY.md"
    path.write_text("\n".join([*HEAD, K8S, TLS, KAFKA, ""]), "utf-8")
    with daemon.client() as client:
        client.sync()


def _cited_tls(daemon: Daemon) -> str:
    found = daemon.cli_json("search", "включить TLS между сервисами", "--max-tokens", "20")
    cited: str = found["results"][0]["citation"]
    return cited


def test_cli_forget_by_a_stale_citation_forgets_what_it_cited(daemon: Daemon) -> None:
    _decisions(daemon)
    assert _cited_tls(daemon) == "MEMORY.md#L13"  # agent 1
    other = daemon.cli("forget", "MEMORY.md#L12")  # agent 2
    assert other.returncode == 0, other.stderr
    assert other.stdout == f"Forgot MEMORY.md#L12: {K8S}\n"

    stale = daemon.cli("forget", "MEMORY.md#L13")
    assert stale.returncode == 0, stale.stderr
    assert stale.stdout == (
        f"Forgot MEMORY.md#L12 (cited as #L13; the file changed since): {TLS}\n"
    )
    text = (daemon.env.workspace / "MEMORY.md").read_text("utf-8")
    assert KAFKA in text
    assert TLS not in text
    assert K8S not in text
    found = daemon.cli_json("search", "Kafka RabbitMQ")
    assert found["results"][0]["citation"].startswith("MEMORY.md#L")
    assert "TLS" not in " ".join(hit["snippet"] for hit in found["results"])


def test_cli_refuses_a_stale_citation_whose_text_is_gone(daemon: Daemon) -> None:
    _decisions(daemon)
    assert _cited_tls(daemon) == "MEMORY.md#L13"
    path = daemon.env.workspace / "MEMORY.md"
    path.write_text(path.read_text("utf-8").replace(TLS, "- TLS только снаружи"), "utf-8")
    before = path.read_bytes()

    refused = daemon.cli("forget", "MEMORY.md#L13")
    assert refused.returncode == 4  # a daemon error: conflict
    assert "MEMORY.md#L13 changed since it was cited" in refused.stderr
    assert "TLS только снаружи" in refused.stderr  # what the lines hold now
    assert "Nothing was removed" in refused.stderr
    assert path.read_bytes() == before


async def test_mcp_forget_goes_the_same_way(daemon: Daemon) -> None:
    _decisions(daemon)
    async with bridge(daemon.env) as session:
        _, appended = await ok(session, "memory_append", text="- Релизы по вторникам")
        _, later = await ok(session, "memory_append", text="- Ревью обязательно")
        path = daemon.env.workspace / later["path"]
        # a person deletes the first appended line: the second moves up
        lines = path.read_text("utf-8").split("\n")
        lines.remove("- Релизы по вторникам")
        path.write_text("\n".join(lines), "utf-8")
        text, forgotten = await ok(session, "memory_forget", citation=later["citation"])
        assert forgotten["cited_as"] == later["citation"]
        assert forgotten["removed_text"] == ["- Ревью обязательно"]
        assert "(cited as #L" in text
        assert "the file changed since" in text
        # the first citation now names what was never served under it: refused
        refused = await call(session, "memory_forget", citation=appended["citation"])
        assert refused.is_error
        assert "changed since it was cited" in text_of(refused)
