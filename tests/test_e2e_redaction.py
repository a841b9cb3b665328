"""Secrets said in prose never become searchable from session transcripts.

Each form goes through the real daemon: logged as a conversation turn, then
searched for. The words around the secret stay findable; the secret does
not, in the snippet or as a search term.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from conftest import Daemon, Env
from test_e2e_http import http_daemon  # noqa: F401  (a fixture)

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


# ---------------------------------------------------------------- the reported keys, end to end

# (what a user logs, its secret, a word that stays findable, its masked form)
KEYS = (
    (
        "The payments service uses Stripe key sk_live_51HabcdefghijklmnopqrstuvWXyz for zqstripe",
        "sk_live_51HabcdefghijklmnopqrstuvWXyz",
        "zqstripe",
        "sk_live_…",
    ),
    (
        "The reporting database is "
        "postgres://report:Sup3rS3cretPw@db.internal:5432/reports zqdburl",
        "Sup3rS3cretPw",
        "zqdburl",
        "postgres://report:***@db.internal:5432/reports",
    ),
    (
        "AWS secret access key for zqaws is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "zqaws",
        "***",
    ),
)
WEBHOOK = "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"


def _workspace_text(daemon: Daemon) -> str:
    """Every Markdown file of the workspace, as one text."""
    return "\n".join(p.read_text("utf-8") for p in sorted(daemon.env.workspace.rglob("*.md")))


def test_log_capture_and_transcripts_keep_no_key(daemon: Daemon, tmp_path: Path) -> None:
    # log: masked, kept, and the reply says so without repeating the key.
    for said, secret, _, masked in KEYS:
        logged = daemon.cli("log", said)
        assert logged.returncode == 0, logged.stderr
        assert "privacy: masked 1 secret(s)" in logged.stdout
        assert f"  masked: {masked}" in logged.stdout.splitlines()
        assert secret not in logged.stdout + logged.stderr
    # A password said in words is refused whole, its value not echoed.
    refused = daemon.cli("log", "zqpw 密码是 password=Hunter2Secret!")
    assert refused.returncode == 1
    assert "Rejected (secret)" in refused.stdout
    assert "Hunter2" not in refused.stdout + refused.stderr

    # capture: a message holding a webhook is skipped as a secret.
    turn = [{"role": "user", "content": f"Remember: the staging Slack webhook is {WEBHOOK}"}]
    captured = daemon.cli("capture", "--messages", "-", stdin=json.dumps(turn))
    assert captured.returncode == 0, captured.stderr
    assert "secret" in captured.stdout
    assert WEBHOOK not in captured.stdout

    kept = _workspace_text(daemon)
    for _, secret, nearby, _ in KEYS:
        assert secret not in kept
        assert nearby in kept  # the memory itself was written
    assert "XXXXXXXXXXXXXXXX" not in kept
    assert "Hunter2" not in kept
    primer = daemon.cli("primer", "--private", "--budget", "4000")
    assert primer.returncode == 0, primer.stderr
    assert "sk_live_…" in primer.stdout
    assert "sk_live_51H" not in primer.stdout

    # session transcripts: the same words said in a conversation.
    turns = [{"role": "user", "content": said} for said, *_ in KEYS] + [
        {"role": "user", "content": f"zqslack webhook: {WEBHOOK}"},
        {"role": "assistant", "content": "zqpw 密码是 password=Hunter2Secret!"},
    ]
    messages = tmp_path / "keys.json"
    messages.write_text(json.dumps(turns))
    logged = daemon.cli(
        "log-turns", "--agent", "coder", "--session", "keys", "--messages", str(messages)
    )
    assert logged.returncode == 0, logged.stderr
    secrets = [secret for _, secret, _, _ in KEYS] + ["XXXXXXXXXXXXXXXX", "Hunter2Secret"]
    for nearby in ("zqstripe", "zqdburl", "zqaws", "zqslack", "zqpw"):
        found = daemon.cli_json("search", nearby, "--source", "sessions")
        assert found["results"], nearby
        for hit in found["results"]:
            assert not any(secret in hit["snippet"] for secret in secrets), hit["snippet"]
    for secret in secrets:
        # The hidden part: "sk_live_" names the kind and stays findable.
        hidden = secret.removeprefix("sk_live_")[:12]
        leaked = daemon.cli_json("search", hidden, "--source", "sessions", "--min-score", "0")
        assert all(secret not in hit["snippet"] for hit in leaked["results"])
        assert not any(hit["text_score"] for hit in leaked["results"]), (secret, leaked)


# ---------------------------------------------------------------- append, on every surface

STRIPE = "sk_live_51HabcdefghijklmnopqrstuvWXyz"
PG_PASSWORD = "Sup3rS3cretPw"
GITHUB = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
# What a mask hides of each (a known kind keeps the prefix naming it).
HIDDEN = ("51HabcdefghijklmnopqrstuvWXyz", PG_PASSWORD, "abcdefghijklmnopqrstuvwxyz0123456789")


def test_append_masks_secrets_on_every_surface(
    http_daemon: tuple[Daemon, str],  # noqa: F811
) -> None:
    daemon, url = http_daemon
    # The CLI: the file keeps the note with the keys masked, the output lists them.
    note = (
        f"zqbilling: Stripe key {STRIPE}\n"
        f"reports DB postgres://report:{PG_PASSWORD}@db.internal:5432/reports\n"
        f"CI pushes with {GITHUB}"
    )
    said = daemon.cli("append", "--path", "memory/billing.md", note)
    assert said.returncode == 0, said.stderr
    assert said.stdout.splitlines() == [
        "Appended to memory/billing.md#L1-L3 (indexed, new file, 3 secrets masked)",
        "  masked: sk_live_…",
        "  masked: postgres://report:***@db.internal:5432/reports",
        "  masked: ghp_…",
    ]
    assert (daemon.env.workspace / "memory" / "billing.md").read_text("utf-8") == (
        "zqbilling: Stripe key sk_live_…\n"
        "reports DB postgres://report:***@db.internal:5432/reports\n"
        "CI pushes with ghp_…\n"
    )
    # --json, text from stdin: the reply's redactions
    piped = daemon.cli(
        "append", "--path", "memory/ops.md", "--json", stdin=f"zqops deploy token {GITHUB}\n"
    )
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["redactions"] == ["ghp_…"]
    # a note with no secret says nothing of masking, and is kept as sent
    plain = daemon.cli("append", "--path", "memory/ops.md", "zqops the password policy is 12 chars")
    assert plain.stdout.splitlines() == ["Appended to memory/ops.md#L3 (indexed)"]

    # The Python client.
    with daemon.client() as client:
        appended = client.append(f"zqclient the staging password is {PG_PASSWORD}")
    assert appended.redactions == ("***",)
    assert "zqclient the staging password is ***" in _workspace_text(daemon)

    # HTTP, with the `content` other memory tools send.
    with httpx.Client(base_url=url, timeout=30) as web:
        reply = web.post(
            "/append", json={"content": f"zqhttp key {STRIPE}", "path": "memory/http.md"}
        )
    assert reply.status_code == 200, reply.text
    assert reply.json()["redactions"] == ["sk_live_…"]

    # No character a mask hides anywhere: the Markdown, the append journal,
    # the index, the daemon's log.
    for root in (daemon.env.workspace, daemon.env.state_dir):
        for file in (p for p in root.rglob("*") if p.is_file()):
            data = file.read_bytes()
            for hidden in HIDDEN:
                assert hidden.encode() not in data, (file, hidden)
    for output in (said, piped):
        assert not any(hidden in output.stdout + output.stderr for hidden in HIDDEN)
    # the notes are found by their words; the secrets by none of theirs
    for word in ("zqbilling", "zqops", "zqclient", "zqhttp"):
        assert daemon.cli_json("search", word)["results"], word
    for hidden in HIDDEN:
        leaked = daemon.cli_json("search", hidden[:12], "--min-score", "0")
        assert not any(hit["text_score"] for hit in leaked["results"]), (hidden, leaked)


# ---------------------------------------------------------------- session-end and tasks


def test_session_end_and_tasks_mask_secrets_on_every_surface(
    http_daemon: tuple[Daemon, str],  # noqa: F811
) -> None:
    daemon, url = http_daemon
    pg_url = f"postgres://report:{PG_PASSWORD}@db.internal:5432/reports"
    pg_masked = "postgres://report:***@db.internal:5432/reports"
    # The CLI: every part of the session is masked, and the output says so.
    ended = daemon.cli(
        "session-end",
        "--request",
        f"zqsession wire payments with {STRIPE}",
        "--learned",
        f"the reports DB is {pg_url}",
        "--learned",
        "the password is “correct horse”",
        "--completed",
        f"zqdone rotated {STRIPE}",
        "--next",
        f"zqnext rotate the CI token {GITHUB}",
    )
    assert ended.returncode == 0, ended.stderr
    lines = ended.stdout.splitlines()
    assert lines[0].startswith("Journal written to memory/")
    assert lines[1:5] == [
        "  masked: sk_live_…",
        f"  masked: {pg_masked}",
        "  masked: ***",
        "  masked: ghp_…",
    ]
    assert lines[5].startswith("New task: ")
    assert "zqnext rotate the CI token ghp_…" in lines[5]
    # tasks add, the same: the task is kept masked, the output lists the mask
    added = daemon.cli("tasks", "add", f"zqtask check {pg_url} backups", "zqtask plain")
    assert added.returncode == 0, added.stderr
    assert f"  masked: {pg_masked}" in added.stdout.splitlines()
    assert f"zqtask check {pg_masked} backups" in added.stdout
    # the same task given again with its secret is the one already open
    again = daemon.cli_json("tasks", "add", f"zqtask check {pg_url} backups")
    assert again["changed"] == []
    assert again["redactions"] == [pg_masked]
    # and it is found by the text the caller knows
    done = daemon.cli_json("tasks", "done", f"zqtask check {pg_url} backups")
    assert [t["text"] for t in done["changed"]] == [f"zqtask check {pg_masked} backups"]

    # HTTP and the Python client carry the same field.
    with httpx.Client(base_url=url, timeout=30) as web:
        reply = web.post(
            "/session-end", json={"learned": [f"zqhttp key {STRIPE}"], "next_steps": ["zqhttp"]}
        )
        assert reply.status_code == 200, reply.text
        assert reply.json()["redactions"] == ["sk_live_…"]
        listed = web.post("/tasks", json={"action": "add", "tasks": [f"zqhttp2 {GITHUB}"]})
        assert listed.status_code == 200, listed.text
        assert listed.json()["redactions"] == ["ghp_…"]
    with daemon.client() as client:
        from_client = client.session_end(next_steps=(f"zqclient {STRIPE}",))
    assert from_client.redactions == ("sk_live_…",)

    # No character a mask hides anywhere: the Markdown, the append and task
    # journals, the index, the daemon's log.
    for root in (daemon.env.workspace, daemon.env.state_dir):
        for file in (p for p in root.rglob("*") if p.is_file()):
            data = file.read_bytes()
            for hidden in (*HIDDEN, "correct horse"):
                assert hidden.encode() not in data, (file, hidden)
    for output in (ended, added):
        assert not any(hidden in output.stdout + output.stderr for hidden in HIDDEN)
    kept = _workspace_text(daemon)
    for word in ("zqsession", "zqdone", "zqnext", "zqtask", "zqhttp", "zqclient"):
        assert word in kept, word
    for hidden in HIDDEN:
        leaked = daemon.cli_json("search", hidden[:12], "--min-score", "0")
        assert not any(hit["text_score"] for hit in leaked["results"]), (hidden, leaked)
