"""Secrets said in prose never become searchable from session transcripts.

Each form goes through the real daemon: logged as a conversation turn, then
searched for. The words around the secret stay findable; the secret does
not, in the snippet or as a search term.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import Daemon, Env

pytestmark = pytest.mark.e2e

# (a turn an agent logs, the secret in it, a word near it that stays findable)
FORMS = (
    ("the password is hunter2zq for the staging box", "hunter2zq", "staging"),
    ("the password for the router is Tr0ub4dor3x", "Tr0ub4dor3x", "router"),
    ("记住：数据库密码是 pgpass77qx", "pgpass77qx", "数据库"),
    ("Пароль от wifi: qwerty77zz, не забудь", "qwerty77zz", "wifi"),
    ("use https://api.example.com/v1/items?api_key=k3yk3yk3y9&page=2", "k3yk3yk3y9", "items"),
    (
        "curl with Bearer eyJhbGciOiJIUzI1NiJ9qqq777 to the billing api",
        "eyJhbGciOiJIUzI1NiJ9qqq777",
        "billing",
    ),
)


@pytest.fixture
def daemon(env: Env) -> Daemon:
    handle = Daemon(env).start()
    yield handle  # type: ignore[misc]
    handle.stop()


@pytest.mark.parametrize(("said", "secret", "nearby"), FORMS)
def test_a_secret_said_in_a_conversation_is_not_searchable(
    daemon: Daemon, tmp_path: Path, said: str, secret: str, nearby: str
) -> None:
    messages = tmp_path / "turns.json"
    messages.write_text(json.dumps([{"role": "user", "content": said}]))
    logged = daemon.cli(
        "log-turns", "--agent", "coder", "--session", "s1", "--messages", str(messages)
    )
    assert logged.returncode == 0, logged.stderr

    found = json.loads(daemon.cli("search", nearby, "--source", "sessions", "--json").stdout)
    assert found["results"], f"the turn itself must stay findable by {nearby!r}"
    for hit in found["results"]:
        assert secret not in hit["snippet"]
    for query in (secret, secret[:8]):
        leaked = json.loads(
            daemon.cli("search", query, "--source", "sessions", "--min-score", "0", "--json").stdout
        )
        assert all(secret not in hit["snippet"] for hit in leaked["results"])
        assert not any(hit["text_score"] for hit in leaked["results"]), (query, leaked["results"])
