"""`append` masks secrets before the text reaches the file, the append
journal or the index, and says what it masked.

An agent that appends "the Stripe key is sk_live_…" must not leave the key
in the user's Markdown, where every later search and primer would serve it.
Everything around a secret is kept byte for byte, and a password said in
words masks its value instead of refusing the note (as `log` refuses a
memory): an append is the caller's own text, and must not be lost.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from omem_client import _render
from omem_protocol import AppendResult
from openmemoryd.engine import Engine
from openmemoryd.memory.log_gate import Rejected, check_safety, mask_secrets
from openmemoryd.search import SearchQuery

STRIPE = "sk_live_51HabcdefghijklmnopqrstuvWXyz"
PG_PASSWORD = "Sup3rS3cretPw"
PG_URL = f"postgres://report:{PG_PASSWORD}@db.internal:5432/reports"
GITHUB = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"

# A note in the shapes people write: a heading, CRLF-free lines, list items,
# code, unicode and trailing spaces, which must all survive unchanged.
NOTE = (
    "## Billing notes  \n"
    "\n"
    f"- Stripe key: {STRIPE} (rotate in März)\n"
    f"- reports DB → {PG_URL}\n"
    f"\tCI pushes with {GITHUB}; ask 王 first\n"
    "```\nexport PAGER=less\n```\n"
)
MASKED_NOTE = (
    "## Billing notes  \n"
    "\n"
    "- Stripe key: sk_live_… (rotate in März)\n"
    "- reports DB → postgres://report:***@db.internal:5432/reports\n"
    "\tCI pushes with ghp_…; ask 王 first\n"
    "```\nexport PAGER=less\n```\n"
)
SECRETS = (STRIPE, PG_PASSWORD, GITHUB)


def _hidden(secret: str) -> str:
    """The part of *secret* a mask must hide (a known kind keeps its prefix)."""
    return secret.removeprefix("sk_live_").removeprefix("ghp_")


def test_masking_changes_only_the_secrets() -> None:
    safe = mask_secrets(NOTE)
    assert safe.text == MASKED_NOTE
    assert safe.redactions == (
        "sk_live_…",
        "postgres://report:***@db.internal:5432/reports",
        "ghp_…",
    )


def test_a_masked_form_leaves_out_the_punctuation_around_it() -> None:
    safe = mask_secrets(f"(CI: {GITHUB}); «{STRIPE}», then PASSWORD=hunter2zq.")
    assert safe.text == "(CI: ghp_…); «sk_live_…», then PASSWORD=***."
    assert safe.redactions == ("ghp_…", "sk_live_…", "PASSWORD=***")


@pytest.mark.parametrize(
    "text",
    [
        "Deploys happen on Thursdays.\r\nNo secrets here: pk_live_publishable123456 is public.",
        "Already masked before: sk_live_… and PASSWORD=*** stay as they are.",
        "the password policy requires 12 characters; the secret is to stir slowly",
        "",
    ],
)
def test_text_without_a_secret_is_kept_exactly_and_reports_nothing(text: str) -> None:
    safe = mask_secrets(text)
    assert safe.text == text
    assert safe.redactions == ()


def test_masking_twice_reports_nothing_new() -> None:
    once = mask_secrets(NOTE)
    twice = mask_secrets(once.text)
    assert twice.text == once.text
    assert twice.redactions == ()


def test_check_safety_still_masks_and_rejects_as_before() -> None:
    # log's gate is built on the same masking: masked keys are kept ...
    safe = check_safety(f"The Stripe key is {STRIPE} for payments")
    assert not isinstance(safe, Rejected)
    assert safe.text == "The Stripe key is sk_live_… for payments"
    assert safe.redactions == ("sk_live_…",)
    # ... and a password said in words still refuses a memory.
    refused = check_safety("my password is hunter2zq")
    assert isinstance(refused, Rejected)
    assert refused.rule == "secret"


# ---------------------------------------------------------------- the engine


def _everything_on_disk(root: Path) -> bytes:
    """Every byte of every file under *root* (Markdown, journal, index)."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


async def test_append_writes_the_masked_text_and_says_what_it_masked(engine: Engine) -> None:
    appended = await engine.append(NOTE, None)

    assert appended.redactions == (
        "sk_live_…",
        "postgres://report:***@db.internal:5432/reports",
        "ghp_…",
    )
    file = engine.policy.resolve(appended.path).absolute
    written = file.read_text("utf-8")
    assert MASKED_NOTE.rstrip("\n") in written
    # the citation names the masked block's lines (a mask never adds or drops one)
    got = await engine.get(appended.citation, None, None)
    assert got.text == MASKED_NOTE.rstrip("\n")
    # the append journal holds what was written, not what was sent
    entries = engine.journal.entries(appended.path)
    assert entries
    assert entries[-1].block.rstrip("\n") == MASKED_NOTE.rstrip("\n")
    # no character of a secret anywhere: the workspace, the journal, the index
    on_disk = _everything_on_disk(engine.config.workspace) + _everything_on_disk(
        engine.config.state_dir
    )
    for secret in SECRETS:
        assert _hidden(secret).encode() not in on_disk, secret
    # the rest of the note stays findable, the secret is not
    found = await _search(engine, "reports DB")
    assert found
    assert not await _search(engine, _hidden(STRIPE))


async def test_a_password_said_in_words_is_masked_and_the_note_kept(engine: Engine) -> None:
    note = "Standup: the staging password is hunter2zq, ask Ops to rotate it.\nThen lunch."
    appended = await engine.append(note, "memory/standup.md")
    assert appended.redactions == ("***",)
    written = engine.policy.resolve("memory/standup.md").absolute.read_text("utf-8")
    assert "Standup: the staging password is ***, ask Ops to rotate it.\nThen lunch." in written
    assert "hunter2zq" not in written


async def test_a_note_without_secrets_is_written_as_sent(engine: Engine) -> None:
    note = "Wei prefers oolong tea.\nThe password policy requires 12 characters."
    appended = await engine.append(note, "memory/plain.md")
    assert appended.redactions == ()
    assert engine.policy.resolve("memory/plain.md").absolute.read_text("utf-8") == note + "\n"


async def test_a_long_note_is_masked_too(engine: Engine) -> None:
    # Past the size masked in a worker thread: the same masking.
    filler = "A line of meeting notes about the quarterly roadmap.\n" * 400
    note = f"{filler}The Stripe key is {STRIPE}.\n{filler}"
    assert len(note) > 16_384
    appended = await engine.append(note, "memory/long.md")
    assert appended.redactions == ("sk_live_…",)
    written = engine.policy.resolve("memory/long.md").absolute.read_text("utf-8")
    assert written == f"{filler}The Stripe key is sk_live_….\n{filler}"


async def _search(engine: Engine, query: str) -> list[str]:
    result = await engine.search(SearchQuery(text=query, limit=5, min_score=0.0))
    return [hit.snippet for hit in result.results if hit.text_score]


# ---------------------------------------------------------------- what the caller reads


def _result(redactions: tuple[str, ...] = (), *, created: bool = False) -> AppendResult:
    return AppendResult(
        path="memory/2026-11-28.md",
        start_line=3,
        end_line=5,
        created=created,
        indexed=True,
        citation="memory/2026-11-28.md#L3-L5",
        redactions=redactions,
    )


def test_the_reply_lists_each_masked_secret() -> None:
    lines = _render.append_lines(
        _result(("sk_live_…", "postgres://report:***@db.internal:5432/reports"))
    )
    assert lines == [
        "Appended to memory/2026-11-28.md#L3-L5 (indexed, 2 secrets masked)",
        "  masked: sk_live_…",
        "  masked: postgres://report:***@db.internal:5432/reports",
    ]
    assert _render.append_lines(_result(("ghp_…",), created=True))[0] == (
        "Appended to memory/2026-11-28.md#L3-L5 (indexed, new file, 1 secret masked)"
    )


def test_the_reply_without_secrets_is_one_line_as_before() -> None:
    assert _render.append_lines(_result()) == ["Appended to memory/2026-11-28.md#L3-L5 (indexed)"]


def test_a_reply_from_an_older_daemon_decodes_with_no_redactions() -> None:
    old = (
        b'{"type":"append_result","path":"memory/a.md","start_line":1,"end_line":1,'
        b'"created":true,"indexed":true,"citation":"memory/a.md#L1"}'
    )
    result = msgspec.json.decode(old, type=AppendResult)
    assert result.redactions == ()
