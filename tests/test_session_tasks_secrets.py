"""`session_end` and `tasks add` mask secrets before anything is written.

An agent ending a session with "rotated sk_live_…" in what it completed, or
a next step "check postgres://report:pw@db", used to leave the key in the
daily file and in ``memory/TASKS.md``, where every search and primer serves
it. Both now mask as `append` does: the words kept, the secret masked, the
reply listing what was masked. A task's id is that of its masked text, and
a task is still found by the text the caller knows, secret and all.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from omem_client import _render
from omem_protocol import (
    SessionEndParams,
    SessionEndResult,
    TaskItem,
    TasksParams,
    TasksResult,
)
from openmemoryd.engine import Engine
from openmemoryd.engine.task_ops import session_end, tasks
from openmemoryd.errors import BadRequest, NotFound
from openmemoryd.memory.tasks_file import TasksFile

STRIPE = "sk_live_51HabcdefghijklmnopqrstuvWXyz"
PG_PASSWORD = "Sup3rS3cretPw"
PG_URL = f"postgres://report:{PG_PASSWORD}@db.internal:5432/reports"
PG_MASKED = "postgres://report:***@db.internal:5432/reports"
GITHUB = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
# What a mask must hide of each (a known kind keeps the prefix naming it).
HIDDEN = ("51HabcdefghijklmnopqrstuvWXyz", PG_PASSWORD, "abcdefghijklmnopqrstuvwxyz0123456789")


def _everything_on_disk(engine: Engine) -> bytes:
    """Every byte under the workspace and the state dir (Markdown, journals, index)."""
    roots = (engine.config.workspace, engine.config.state_dir)
    return b"".join(
        p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()
    )


def _assert_nothing_hidden_on_disk(engine: Engine) -> None:
    on_disk = _everything_on_disk(engine)
    for hidden in HIDDEN:
        assert hidden.encode() not in on_disk, hidden


def _file(engine: Engine, key: str) -> str:
    return engine.policy.resolve(key).absolute.read_text("utf-8")


def _write_tasks(engine: Engine, line: str) -> None:
    """A TASKS.md as written before masking, with *line* its open task."""
    path = Path(engine.policy.resolve("memory/TASKS.md").absolute)
    path.write_text(f"# Tasks\n\n## Open\n\n{line}\n", "utf-8")


# ---------------------------------------------------------------- session_end


async def test_session_end_masks_the_journal_and_the_tasks(engine: Engine) -> None:
    ended = await session_end(
        engine,
        SessionEndParams(
            request=f"zqsession wire payments with {STRIPE}",
            learned=(f"the reports DB is {PG_URL}", "the password is “correct horse”"),
            completed=("moved CI to GitHub Actions",),
            next_steps=(f"rotate the CI token {GITHUB}", f"check {PG_URL} backups"),
            agent="coder",
        ),
    )

    assert ended.redactions == ("sk_live_…", PG_MASKED, "***", "ghp_…")
    journal = _file(engine, ended.path)
    assert "### Request\nzqsession wire payments with sk_live_…" in journal
    assert f"- the reports DB is {PG_MASKED}" in journal
    assert "- the password is ***" in journal
    assert "- rotate the CI token ghp_…" in journal
    assert "correct horse" not in journal
    assert [t.text for t in ended.tasks_added] == [
        "rotate the CI token ghp_…",
        f"check {PG_MASKED} backups",
    ]
    listed = _file(engine, "memory/TASKS.md")
    assert "- [ ] rotate the CI token ghp_… ➕" in listed
    # the ids are those of the masked texts
    on_file = {t.id: t.text for t in TasksFile(listed).tasks()}
    assert {t.id: t.text for t in ended.tasks_added} == on_file
    # no character a mask hides anywhere: Markdown, append and task journals, index
    _assert_nothing_hidden_on_disk(engine)
    assert b"correct horse" not in _everything_on_disk(engine)


async def test_a_next_step_with_a_secret_is_one_task_however_often_it_is_given(
    engine: Engine,
) -> None:
    first = await session_end(engine, SessionEndParams(next_steps=(f"rotate {GITHUB}",)))
    again = await session_end(
        engine, SessionEndParams(next_steps=(f"- [ ] Rotate  {GITHUB}", "rotate ghp_…"))
    )
    assert [t.text for t in first.tasks_added] == ["rotate ghp_…"]
    assert again.tasks_added == ()
    assert [t.id for t in again.tasks_existing] == [first.tasks_added[0].id]
    assert again.redactions == ("ghp_…",)


async def test_a_completed_item_closes_the_masked_task_it_names(engine: Engine) -> None:
    await session_end(engine, SessionEndParams(next_steps=(f"rotate {STRIPE}",)))
    ended = await session_end(engine, SessionEndParams(completed=(f"rotate {STRIPE}",)))
    assert [t.text for t in ended.tasks_done] == ["rotate sk_live_…"]
    assert ended.redactions == ("sk_live_…",)
    assert "- rotate sk_live_…" in _file(engine, ended.path)
    _assert_nothing_hidden_on_disk(engine)


async def test_a_task_written_before_masking_is_still_closed_by_its_text(
    engine: Engine,
) -> None:
    # A TASKS.md from before masking holds the key verbatim.
    _write_tasks(engine, f"- [ ] rotate {STRIPE} ➕ 2026-01-05")
    ended = await session_end(engine, SessionEndParams(completed=(f"rotate {STRIPE}",)))
    assert len(ended.tasks_done) == 1
    # the journal says what was done, masked
    journal = _file(engine, ended.path)
    assert "- rotate sk_live_…" in journal
    assert STRIPE not in journal


async def test_session_end_without_a_secret_reports_nothing(engine: Engine) -> None:
    ended = await session_end(
        engine,
        SessionEndParams(
            learned=("the password policy requires 12 characters",),
            next_steps=("write the release notes",),
        ),
    )
    assert ended.redactions == ()
    assert "- the password policy requires 12 characters" in _file(engine, ended.path)
    assert [t.text for t in ended.tasks_added] == ["write the release notes"]


async def test_session_end_masks_long_notes_too(engine: Engine) -> None:
    # Past the size masked in a worker thread: the same masking.
    filler = "A line of meeting notes about the quarterly roadmap.\n" * 400
    ended = await session_end(
        engine, SessionEndParams(learned=(f"{filler}The Stripe key is {STRIPE}.",))
    )
    assert ended.redactions == ("sk_live_…",)
    assert "The Stripe key is sk_live_…." in _file(engine, ended.path)
    _assert_nothing_hidden_on_disk(engine)


async def test_a_refused_session_end_writes_nothing(engine: Engine) -> None:
    with pytest.raises(BadRequest):
        await session_end(
            engine, SessionEndParams(learned=(f"key {STRIPE}", "   "), next_steps=("x",))
        )
    assert not any(engine.config.workspace.rglob("TASKS.md"))
    _assert_nothing_hidden_on_disk(engine)


# ---------------------------------------------------------------- tasks


async def test_tasks_add_masks_the_task_and_says_so(engine: Engine) -> None:
    added = await tasks(
        engine,
        TasksParams(action="add", tasks=(f"rotate {STRIPE}", f"check {PG_URL}", "plain task")),
    )
    assert added.redactions == ("sk_live_…", PG_MASKED)
    assert [t.text for t in added.changed] == [
        "rotate sk_live_…",
        f"check {PG_MASKED}",
        "plain task",
    ]
    listed = _file(engine, "memory/TASKS.md")
    on_file = {t.id: t.text for t in TasksFile(listed).tasks()}
    assert {t.id: t.text for t in added.changed} == on_file
    # the same task, given with its secret or masked, is the one already open
    again = await tasks(engine, TasksParams(action="add", tasks=(f"Rotate  {STRIPE}",)))
    assert again.changed == ()
    assert [t.id for t in again.unchanged] == [added.changed[0].id]
    _assert_nothing_hidden_on_disk(engine)


async def test_a_task_is_found_by_the_text_the_caller_knows(engine: Engine) -> None:
    await tasks(engine, TasksParams(action="add", tasks=(f"rotate {GITHUB}",)))
    done = await tasks(engine, TasksParams(action="done", tasks=(f"rotate {GITHUB}",)))
    assert [t.text for t in done.changed] == ["rotate ghp_…"]
    # a reference is only looked up, never written: nothing to report
    assert done.redactions == ()
    reopened = await tasks(engine, TasksParams(action="reopen", tasks=(f"rotate {GITHUB}",)))
    assert [t.done for t in reopened.changed] == [False]
    removed = await tasks(engine, TasksParams(action="remove", tasks=(f"rotate {GITHUB}",)))
    assert removed.open == 0
    _assert_nothing_hidden_on_disk(engine)


async def test_a_task_written_before_masking_is_found_by_its_text(engine: Engine) -> None:
    _write_tasks(engine, f"- [ ] rotate {GITHUB} ➕ 2026-01-05")
    done = await tasks(engine, TasksParams(action="done", tasks=(f"rotate {GITHUB}",)))
    assert len(done.changed) == 1


async def test_a_task_not_found_is_named_masked(engine: Engine) -> None:
    await tasks(engine, TasksParams(action="add", tasks=("plain task",)))
    with pytest.raises(NotFound) as missing:
        await tasks(engine, TasksParams(action="done", tasks=(f"rotate {STRIPE}",)))
    assert "sk_live_…" in str(missing.value)
    assert HIDDEN[0] not in str(missing.value)


async def test_an_empty_task_is_refused_before_anything_is_written(engine: Engine) -> None:
    with pytest.raises(BadRequest):
        await tasks(engine, TasksParams(action="add", tasks=(f"rotate {STRIPE}", " - [ ] ")))
    assert not any(engine.config.workspace.rglob("TASKS.md"))


async def test_listing_reports_no_redactions(engine: Engine) -> None:
    await tasks(engine, TasksParams(action="add", tasks=(f"rotate {STRIPE}",)))
    listed = await tasks(engine, TasksParams())
    assert listed.redactions == ()
    assert [t.text for t in listed.tasks] == ["rotate sk_live_…"]


# ---------------------------------------------------------------- what the caller reads


def _task(text: str) -> TaskItem:
    return TaskItem(
        id="abcd1234",
        text=text,
        done=False,
        added="2026-11-28",
        completed=None,
        line=5,
        citation="memory/TASKS.md#L5",
    )


def test_the_session_end_reply_lists_each_masked_secret() -> None:
    result = SessionEndResult(
        path="memory/2026-11-28.md",
        start_line=3,
        end_line=9,
        citation="memory/2026-11-28.md#L3-L9",
        tasks_path="memory/TASKS.md",
        tasks_added=(_task("rotate ghp_…"),),
        tasks_existing=(),
        tasks_done=(),
        took_ms=1.0,
        redactions=("sk_live_…", "ghp_…"),
    )
    lines = _render.session_end_lines(result)
    assert lines[:3] == [
        "Journal written to memory/2026-11-28.md#L3-L9",
        "  masked: sk_live_…",
        "  masked: ghp_…",
    ]
    assert lines[3].startswith("New task: ")
    plain = msgspec.structs.replace(result, redactions=())
    assert not any("masked" in line for line in _render.session_end_lines(plain))


def test_the_tasks_reply_lists_each_masked_secret() -> None:
    result = TasksResult(
        path="memory/TASKS.md",
        action="add",
        changed=(_task("rotate ghp_…"),),
        unchanged=(),
        tasks=(_task("rotate ghp_…"),),
        open=1,
        done=0,
        took_ms=1.0,
        redactions=("ghp_…",),
    )
    lines = _render.tasks_lines(result, "open")
    assert "  masked: ghp_…" in lines
    assert lines[-1] == "1 open, 0 done in memory/TASKS.md"


def test_replies_from_an_older_daemon_decode_with_no_redactions() -> None:
    ended = (
        b'{"type":"session_end_result","path":"memory/a.md","start_line":1,"end_line":3,'
        b'"citation":"memory/a.md#L1-L3","tasks_path":"memory/TASKS.md","tasks_added":[],'
        b'"tasks_existing":[],"tasks_done":[],"took_ms":1.0}'
    )
    assert msgspec.json.decode(ended, type=SessionEndResult).redactions == ()
    listed = (
        b'{"type":"tasks_result","path":"memory/TASKS.md","action":"list","changed":[],'
        b'"unchanged":[],"tasks":[],"open":0,"done":0,"took_ms":1.0}'
    )
    assert msgspec.json.decode(listed, type=TasksResult).redactions == ()
