"""End to end: forgetting a very long line through the real daemon, the CLI
and the MCP bridge.

A user appended a 300 KB line through MCP ``memory_append`` (it takes up to
a million characters), and `omem-client forget <citation>` printed all of it
back. The text a person or a model reads now quotes its start; `--json` and
the MCP structured result still carry the whole line, and the Markdown loses
that line and nothing else.
"""

from __future__ import annotations

import json
from datetime import date

import pytest

from conftest import Daemon
from omem_client._render import QUOTED_CHARS
from test_mcp_bridge import bridge, ok

pytestmark = pytest.mark.e2e

LONG = "Long line start " + "x" * 300_000
MORE = f"… ({len(LONG) - QUOTED_CHARS:,} more characters)"


def test_cli_forget_quotes_the_start_of_a_long_line_and_json_keeps_it_whole(
    daemon: Daemon,
) -> None:
    daily = daemon.env.workspace / "memory" / f"{date.today().isoformat()}.md"
    with daemon.client() as client:
        client.append("- the short line stays")
        first = client.append(LONG)
        second = client.append(LONG)
    # the later one first: forgetting a line closes up the lines after it
    shown = daemon.cli("forget", second.citation)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"Forgot {second.citation}: {LONG[:QUOTED_CHARS]}{MORE}\n"

    reply = daemon.cli_json("forget", first.citation)
    assert reply["removed_text"] == [LONG]  # every character, as --json promises

    after = daily.read_text("utf-8")
    assert "x" * 100 not in after
    assert after.rstrip("\n").endswith("- the short line stays")


async def test_mcp_forget_text_is_short_and_its_structured_result_whole(daemon: Daemon) -> None:
    async with bridge(daemon.env) as session:
        _, appended = await ok(session, "memory_append", text=LONG)
        text, forgotten = await ok(session, "memory_forget", citation=appended["citation"])
    assert text == f"Forgot {appended['citation']}: {LONG[:QUOTED_CHARS]}{MORE}"
    assert forgotten["removed_text"] == [LONG]
    assert json.dumps(forgotten).count("x" * 1000) >= 1
