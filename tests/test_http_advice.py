"""Advice in the HTTP API's successful replies names requests, not commands.

The daemon words its advice for the CLI (`omem-client restore re-adds them`,
`openmemoryd init` creates ...); a caller of the HTTP API, often a remote
agent or a web UI, can run neither. The gateway says each such command as
the request that does it, or as what to ask the user to run on the daemon's
machine (`wording.HTTP_HINTS`), in the fields that hold advice
(`omem_protocol.advice`): never in what the memory holds.
"""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import msgspec
import pytest

from conftest import search_result
from omem_protocol import (
    DoctorCheck,
    DoctorResult,
    GetResult,
    LastSync,
    PrimerResult,
    SearchHit,
    SyncResult,
)
from omem_protocol.advice import PRIMER_MARKER, reword_advice
from openmemoryd.api import Api
from openmemoryd.daemon_info import DaemonInfo
from openmemoryd.engine import Engine
from openmemoryd.engine.status_report import workspace_status
from openmemoryd.gateway.wording import HTTP_HINTS, in_http_words, reply_in_http_words
from test_http_gateway import error_of, http, make_app

ROOT = Path(__file__).parents[1]
DAEMON = ROOT / "daemon" / "openmemoryd"
# Modules whose words never reach a reply: the daemon's own commands and
# set-up print to a terminal, and the gateway's are already in HTTP words.
TERMINAL_ONLY = (
    "cli.py",
    "app.py",
    "detach.py",
    "one_shot.py",
    "doctor/offline.py",
    "memory/import_cli.py",
    "wizard/",
    "service/",
    "gateway/",
)
COMMAND = re.compile(
    r"omem-client [a-z]"
    r"|openmemoryd (?:init|start|stop|run|serve|doctor|index|import|install-service|status)\b"
)
# What the user is asked to run, on the machine where the daemon runs, may name one.
ASKED = re.compile(
    r"ask the user to run `[^`]+`(?:, or `[^`]+`,)? on the machine where the daemon runs"
)
SYNC_ADVICE = "after editing by hand, run `omem-client sync`"


def _strings(tree: ast.AST) -> Iterator[str]:
    """Every string literal of *tree* but docstrings; an f-string with ``{}``
    for each value it formats (implicit concatenation is one literal)."""
    docstrings: set[int] = set()
    inside_fstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
        if isinstance(node, ast.JoinedStr):
            inside_fstrings.update(id(value) for value in ast.walk(node) if value is not node)
    for node in ast.walk(tree):
        if id(node) in docstrings or id(node) in inside_fstrings:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value
        elif isinstance(node, ast.JoinedStr):
            yield "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)


def _advice_of_the_daemon() -> list[tuple[str, str]]:
    """(module, string) for each string of a module that can reach a reply
    and names one of the commands."""
    found = []
    for path in sorted(DAEMON.rglob("*.py")):
        name = path.relative_to(DAEMON).as_posix()
        if any(name == skip or name.startswith(skip) for skip in TERMINAL_ONLY):
            continue
        for text in _strings(ast.parse(path.read_text("utf-8"))):
            if COMMAND.search(text):
                found.append((name, text))
    return found


# ---------------------------------------------------------------- the mapping


def test_every_command_the_daemon_can_advise_is_said_in_http_words() -> None:
    """A new hint naming a command, anywhere a reply or an error can carry it,
    must have its HTTP words, or an HTTP caller is told to run a command again."""
    found = _advice_of_the_daemon()
    # the scan sees what it should: status, doctor, primer and error advice
    modules = {name for name, _ in found}
    assert {
        "engine/status_report.py",
        "engine/journal_keeper.py",
        "doctor/runtime.py",
        "doctor/files.py",
        "doctor/paths.py",
        "doctor/index.py",
        "doctor/inside.py",
        "memory/primer.py",
        "memory/tasks_file.py",
        "workspace/paths.py",
    } <= modules
    for name, text in found:
        said = ASKED.sub("", in_http_words(text))
        assert not COMMAND.search(said), f"{name}: {text!r} is said over HTTP as {said!r}"


def test_each_hint_says_a_request_or_what_to_ask_the_user() -> None:
    for cli, said in HTTP_HINTS:
        assert "omem-client" not in said, cli
        assert re.search(r"\b(GET|POST) /", said) or ASKED.search(said), said
    for earlier, (_, said) in enumerate(HTTP_HINTS):
        # a rewording is never reworded again by a later entry
        assert not any(cli in said for cli, _ in HTTP_HINTS[earlier:]), said


def test_the_requests_named_are_routes_of_the_api() -> None:
    from openmemoryd.gateway.routes import ROUTES

    for _, said in HTTP_HINTS:
        for verb, path in re.findall(r"\b(GET|POST) (/[a-z/-]+)", said):
            assert ROUTES[path].method == verb, said


# ---------------------------------------------------------------- which fields


async def test_status_advice_is_reworded_in_every_field_that_carries_it(engine: Engine) -> None:
    status = await workspace_status(engine)
    assert status.sync is not None
    gone = "workspace missing: /w (deleted or moved?), so x; restore the directory (…), or "
    status = msgspec.structs.replace(
        status,
        issues=(
            "1 appended line missing from memory/a.md after an external rewrite "
            "(omem-client restore re-adds them)",
        ),
        last_sync=LastSync(finished_at=1.0, reason="x", took_ms=1.0, error=gone + CLI_INIT),
        sync=msgspec.structs.replace(status.sync, watcher_error=gone + CLI_INIT, last_error=None),
    )
    said = reply_in_http_words(status)
    assert isinstance(said, type(status))
    assert said.issues == (
        "1 appended line missing from memory/a.md after an external rewrite "
        "(POST /restore re-adds them)",
    )
    asked = (
        "ask the user to run `openmemoryd init` on the machine where the daemon runs, "
        "which creates an empty workspace there"
    )
    assert said.last_sync is not None
    assert said.last_sync.error == gone + asked
    assert said.sync is not None
    assert said.sync.watcher_error == gone + asked
    assert said.sync.last_error is None
    # everything else is the status as it was
    assert (
        msgspec.structs.replace(
            said, issues=status.issues, last_sync=status.last_sync, sync=status.sync
        )
        == status
    )


CLI_INIT = "`openmemoryd init` creates an empty workspace there"


def test_doctor_checks_are_reworded_detail_and_fix() -> None:
    doctor = DoctorResult(
        checks=(
            DoctorCheck(name="daemon", status="ok", detail="openmemoryd 1.0 answers"),
            DoctorCheck(
                name="appends",
                status="warn",
                detail="2 task changes missing from memory/TASKS.md after an external rewrite "
                "(omem-client restore makes them again)",
                fix="omem-client restore --dry-run shows them; omem-client restore re-adds them",
            ),
            DoctorCheck(
                name="files",
                status="warn",
                detail="a; b; c; and 2 more (`omem-client status` lists them all)",
                fix="run `omem-client sync`; files it skips (too large, unreadable) and "
                "transcripts waiting for more lines are listed by `omem-client status`",
            ),
        ),
        ok=True,
        took_ms=3.0,
    )
    said = reply_in_http_words(doctor)
    assert isinstance(said, DoctorResult)
    daemon, appends, files = said.checks
    assert daemon == doctor.checks[0]
    assert appends.detail.endswith("(POST /restore makes them again)")
    assert appends.fix == (
        'POST /restore with {"dry_run": true} shows them; POST /restore re-adds them'
    )
    assert files.detail.endswith("(the issues of GET /status list them all)")
    assert files.fix == (
        "call POST /sync; files it skips (too large, unreadable) and transcripts waiting "
        "for more lines are listed by GET /status"
    )
    assert (said.ok, said.took_ms) == (doctor.ok, doctor.took_ms)


def test_what_the_memory_holds_is_never_reworded() -> None:
    """A note about openmemory itself reaches every caller as written."""
    hit = SearchHit(
        path="memory/a.md",
        start_line=1,
        end_line=1,
        score=0.9,
        text_score=0.9,
        vector_score=None,
        snippet=SYNC_ADVICE,
        source="memory",
        citation="memory/a.md#L1",
    )
    found = search_result([hit])
    assert reply_in_http_words(found) is found
    got = GetResult(path="memory/a.md", text=SYNC_ADVICE, from_line=1, to_line=1, total_lines=1)
    assert reply_in_http_words(got) is got
    primer = PrimerResult(
        text=f"## Notes (memory/a.md)\n- {SYNC_ADVICE}\n"
        "(… 12 more lines: omem-client get memory/a.md)",
        sections=(),
        tokens=20,
        budget=50,
        omitted=(),
        took_ms=1.0,
    )
    said = reply_in_http_words(primer)
    assert isinstance(said, PrimerResult)
    assert said.text == (
        f"## Notes (memory/a.md)\n- {SYNC_ADVICE}\n"
        "(… 12 more lines: GET /get with path memory/a.md)"
    )
    synced = SyncResult(
        scanned=1,
        added=0,
        updated=0,
        removed=0,
        unchanged=1,
        skipped=0,
        chunks=1,
        took_ms=1.0,
        issues=("memory: cannot list memory/x (permission denied)",),
    )
    assert reword_advice(synced, str.upper).issues == (
        "MEMORY: CANNOT LIST MEMORY/X (PERMISSION DENIED)",
    )


# ---------------------------------------------------------------- through the app


@pytest.fixture
async def client(engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    api = Api(engine, DaemonInfo(socket="/tmp/test.sock"))
    async with http(make_app(api)) as c:
        yield c


async def test_a_missing_workspace_is_for_the_user_to_recreate_on_the_daemons_machine(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    """Status, doctor and a write's error all said "`openmemoryd init` creates
    an empty workspace there": over HTTP it is something to ask the user."""
    shutil.rmtree(engine.config.workspace)
    asked = "ask the user to run `openmemoryd init` on the machine where the daemon runs"
    status = await client.get("/status")
    assert status.status_code == 200, status.text
    (issue,) = [i for i in status.json()["issues"] if i.startswith("workspace missing")]
    assert issue.endswith(f"{asked}, which creates an empty workspace there")
    doctor = await client.get("/doctor")
    (check,) = [c for c in doctor.json()["checks"] if c["name"] == "workspace"]
    assert check["status"] == "fail"
    assert check["fix"].endswith(f"{asked}, which creates an empty workspace there")
    for found in (*status.json()["issues"], *(c["fix"] or "" for c in doctor.json()["checks"])):
        assert "omem-client" not in found
        assert not COMMAND.search(ASKED.sub("", found)), found
    refused = await client.post("/append", json={"text": "a note"})
    assert refused.status_code >= 400
    assert f"{asked}, which creates an empty workspace there" in error_of(refused)["message"]


async def test_a_primer_cut_short_names_the_request_that_reads_the_rest(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    """The daemon's marker said `omem-client get USER.md`; the notes around it
    are what the user wrote, commands and all."""
    notes = [f"- {SYNC_ADVICE}"] + [f"- fact number {i} about the user" for i in range(60)]
    (engine.config.workspace / "USER.md").write_text("# User\n\n" + "\n".join(notes) + "\n")
    primer = await client.post("/primer", json={"budget": 120})
    assert primer.status_code == 200, primer.text
    lines = primer.json()["text"].splitlines()
    (marker,) = [line for line in lines if PRIMER_MARKER.match(line)]
    assert re.fullmatch(r"\(… \d+ more lines: GET /get with path USER\.md\)", marker), marker
    assert f"- {SYNC_ADVICE}" in lines
    # and the request it names reads them
    got = await client.get("/get", params={"path": "USER.md"})
    assert "fact number 59" in got.json()["text"]
