"""Task changes in the append journal: judged, superseded and put back.

`tasks add/done/reopen/remove` and `session_end` rewrite ``memory/TASKS.md``
whole; a person's editor saving a copy read before such a change used to
undo it with nothing in `status` (an added task gone, a done task open
again). These tests drive the daemon's own task code (`engine.task_ops`) on
an in-process engine, the stale save by hand, and the keeper's passes by
`check_file`, so each is exactly one ordering; the rule itself is also
checked on byte strings with `judge`.
"""

from __future__ import annotations

from pathlib import Path

from omem_protocol import RestoreParams, SessionEndParams, TasksParams
from openmemoryd.engine import Engine
from openmemoryd.engine.agent_ops import forget
from openmemoryd.engine.journal_keeper import check_file, missing_report, restore
from openmemoryd.engine.task_ops import session_end, tasks
from openmemoryd.memory.append_journal import SAVE_S, AppendJournal, judge
from openmemoryd.memory.task_journal import TaskStates, journal_changes, put_back, supersedes
from openmemoryd.memory.tasks_file import TasksFile
from openmemoryd.workspace import MemoryPath

SETTLE = 30.0
MAX_AGE = 3600.0
DAY = "2026-11-20"
LINE = f"- [ ] renew the TLS certificate ➕ {DAY}"
DONE = f"- [x] renew the TLS certificate ➕ {DAY} ✅ 2026-11-21"


# ---------------------------------------------------------------- the rule, on byte strings


def test_a_task_counts_as_present_in_the_state_its_change_left_it() -> None:
    open_file = TaskStates(f"# Tasks\n\n## Open\n\n{LINE}\n".encode())
    done_file = TaskStates(f"# Tasks\n\n## Done\n\n{DONE}\r\n".encode())
    empty = TaskStates(b"# Tasks\n")
    assert open_file.holds("add", LINE)
    assert done_file.holds("add", LINE)
    assert not empty.holds("add", LINE)
    assert done_file.holds("done", DONE)
    assert not open_file.holds("done", DONE)
    assert open_file.holds("reopen", LINE)
    assert not done_file.holds("reopen", LINE)
    assert empty.holds("remove", LINE)
    assert not open_file.holds("remove", LINE)
    # the text's case and spacing do not make another task; its added date does
    assert TaskStates(f"- [ ] Renew  the TLS certificate ➕ {DAY}\n".encode()).holds("add", LINE)
    assert not TaskStates(b"- [ ] renew the TLS certificate \xe2\x9e\x95 2026-11-22\n").holds(
        "add", LINE
    )


def test_a_later_change_of_the_same_task_supersedes_what_it_contradicts() -> None:
    assert supersedes("reopen", LINE, "done", DONE)
    assert supersedes("done", DONE, "reopen", LINE)
    assert supersedes("remove", LINE, "add", LINE)
    assert supersedes("add", LINE, "remove", LINE)
    assert not supersedes("done", DONE, "add", LINE)  # the add still holds: the task is there
    other = "- [ ] rotate the API keys ➕ 2026-11-20"
    assert not supersedes("remove", LINE, "add", other)


def _tasks_file(tmp_path: Path, text: str) -> MemoryPath:
    mp = MemoryPath(key="memory/TASKS.md", root=tmp_path, parts=("memory", "TASKS.md"))
    mp.absolute.parent.mkdir(parents=True, exist_ok=True)
    mp.absolute.write_text(text)
    return mp


def _change(journal: AppendJournal, mp: MemoryPath, action: str, text: str) -> bytes:
    """Make *action* on *text* as the daemon does, journalled; return the file before."""
    before = mp.absolute.read_bytes()
    tasks = TasksFile(before.decode())
    if action == "add":
        task, _ = tasks.add(text, DAY)
        line = tasks.line(task)
    else:
        task = tasks.find(text, want_done=None)
        task = tasks.complete(task, "2026-11-21")
        line = tasks.line(task)
    after = tasks.text().encode()
    mp.absolute.write_bytes(after)
    for record in journal_changes(mp, before, after, [(action, line, task.line)]):
        journal.record(record, 100.0)
    return before


NEW = "# Tasks\n\n## Open\n\n- [ ] an old task ➕ 2026-11-01\n\n## Done\n"


def test_a_stale_save_with_a_line_of_its_own_gets_every_later_change_back(tmp_path: Path) -> None:
    mp = _tasks_file(tmp_path, NEW)
    journal = AppendJournal(tmp_path / "journal.json")
    stale = _change(journal, mp, "add", "renew the TLS certificate")
    _change(journal, mp, "add", "rotate the API keys")
    _change(journal, mp, "done", "an old task")
    saved = stale + b"- [ ] a task typed by hand\n"
    verdict = judge(saved, journal.entries(), 101.0, SETTLE, MAX_AGE)
    assert [(e.task, e.block.split(" ➕")[0]) for e in verdict.restore] == [
        ("add", "- [ ] renew the TLS certificate"),
        ("add", "- [ ] rotate the API keys"),
        ("done", "- [x] an old task"),
    ]
    assert verdict.missing == []


def test_a_save_that_changed_the_file_elsewhere_is_reported(tmp_path: Path) -> None:
    mp = _tasks_file(tmp_path, NEW)
    journal = AppendJournal(tmp_path / "journal.json")
    stale = _change(journal, mp, "add", "renew the TLS certificate")
    typed = "## Open\n\n- [ ] typed above ➕ 2026-11-02\n".encode()
    saved = stale.replace(b"## Open\n\n", typed)
    verdict = judge(saved, journal.entries(), 101.0, SETTLE, MAX_AGE)
    assert verdict.restore == []
    assert [e.task for e in verdict.missing] == ["add"]


def test_a_task_list_emptied_on_purpose_stays_so_through_later_changes(tmp_path: Path) -> None:
    """Emptied by a person, then changed by the daemon twice: the second
    change is made in the middle of the file, so the file no longer begins
    with what the first left, but it descends from it by the daemon's own
    changes: the tasks from before the emptying are not reported or put back."""
    mp = _tasks_file(tmp_path, NEW)
    journal = AppendJournal(tmp_path / "journal.json")
    _change(journal, mp, "add", "renew the TLS certificate")
    mp.absolute.write_bytes(b"")
    _change(journal, mp, "add", "a fresh task")
    _change(journal, mp, "add", "another fresh task")
    _change(journal, mp, "done", "a fresh task")
    content = mp.absolute.read_bytes()
    held = judge(content, journal.entries(), 100.0 + SAVE_S / 2, SETTLE, MAX_AGE)
    assert held.restore == held.missing == held.settled == []
    decided = judge(content, journal.entries(), 100.0 + SAVE_S, SETTLE, MAX_AGE)
    assert [e.block.split(" ➕")[0] for e in decided.settled] == ["- [ ] renew the TLS certificate"]
    assert decided.restore == decided.missing == []


def test_put_back_restores_the_line_with_its_own_dates(tmp_path: Path) -> None:
    mp = _tasks_file(tmp_path, NEW)
    put = put_back(mp, "add", LINE, 1 << 20)
    assert put is not None
    assert put.task == "add"
    assert LINE in mp.absolute.read_text()
    assert put_back(mp, "add", LINE, 1 << 20) is None  # there already: nothing twice
    done = put_back(mp, "done", DONE, 1 << 20)
    assert done is not None
    text = mp.absolute.read_text()
    assert DONE in text
    assert LINE not in text
    assert text.index("## Done") < text.index(DONE)  # moved as `tasks done` moves it
    assert put_back(mp, "remove", LINE, 1 << 20) is not None
    assert "renew the TLS" not in mp.absolute.read_text()
    assert put_back(mp, "done", DONE, 1 << 20) is not None  # absent: put back done
    assert DONE in mp.absolute.read_text()


# ---------------------------------------------------------------- the daemon's code, in process


def _stale_save(path: Path, copy: bytes, own: str = "- [ ] a task typed by hand\n") -> None:
    """An editor's save: the copy it read, a line of the person's, renamed over the file."""
    temp = path.with_name(path.name + ".swp")
    temp.write_bytes(copy + own.encode())
    temp.replace(path)


async def test_tasks_added_by_an_agent_survive_a_stale_editor_save(engine: Engine) -> None:
    """The user's report: `tasks add` and a `session-end` next step, then a
    save of TASKS.md copied before both: both gone, `status` silent."""
    await tasks(engine, TasksParams(action="add", tasks=("an old task",)))
    mp = engine.policy.resolve("memory/TASKS.md")
    copy = mp.absolute.read_bytes()
    await tasks(engine, TasksParams(action="add", tasks=("zqtaskA renew the TLS certificate",)))
    await session_end(engine, SessionEndParams(next_steps=("zqtaskB rotate the API keys",)))
    _stale_save(mp.absolute, copy)
    assert b"zqtask" not in mp.absolute.read_bytes()

    assert await check_file(engine, mp.key) == []
    text = mp.absolute.read_text()
    assert text.count("zqtaskA renew the TLS certificate") == 1, text
    assert text.count("zqtaskB rotate the API keys") == 1, text
    assert "a task typed by hand" in text
    listed = await tasks(engine, TasksParams(action="list"))
    assert [t.text for t in listed.tasks] == [
        "an old task",
        "zqtaskA renew the TLS certificate",  # back at the end of ## Open
        "zqtaskB rotate the API keys",
        "a task typed by hand",  # where the person typed it, after ## Done
    ]


async def test_a_done_marking_lost_to_a_stale_save_is_made_again(engine: Engine) -> None:
    added = await tasks(engine, TasksParams(action="add", tasks=("ship the release",)))
    (task,) = added.changed
    mp = engine.policy.resolve("memory/TASKS.md")
    copy = mp.absolute.read_bytes()
    done = await tasks(engine, TasksParams(action="done", tasks=(task.id,)))
    _stale_save(mp.absolute, copy)
    await check_file(engine, mp.key)
    listed = await tasks(engine, TasksParams(action="list", status="all"))
    (again,) = [t for t in listed.tasks if t.text == "ship the release"]
    assert again.id == task.id  # the same task, not a copy
    assert again.done
    assert again.completed == done.changed[0].completed


async def test_a_done_marking_lost_to_an_edited_save_is_reported_then_restored(
    engine: Engine,
) -> None:
    added = await tasks(engine, TasksParams(action="add", tasks=("ship the release",)))
    mp = engine.policy.resolve("memory/TASKS.md")
    copy = mp.absolute.read_bytes()
    await tasks(engine, TasksParams(action="done", tasks=(added.changed[0].id,)))
    edited = copy.replace(b"# Tasks\n", b"# Tasks of the week\n")  # not a plain stale copy
    _stale_save(mp.absolute, edited, own="")

    (lost,) = await check_file(engine, mp.key)
    assert lost.task == "done"
    assert missing_report(engine) == [
        "1 task change missing from memory/TASKS.md after an external rewrite "
        "(omem-client restore makes them again)"
    ]
    dry = await restore(engine, RestoreParams(path=None, dry_run=True))
    assert [b.text for b in dry.blocks] == ["task marked done: ship the release"]
    done = await restore(engine, RestoreParams(path=None, dry_run=False))
    assert [b.citation for b in done.blocks] != [None]
    listed = await tasks(engine, TasksParams(action="list", status="done"))
    assert [t.text for t in listed.tasks] == ["ship the release"]
    assert "Tasks of the week" in mp.absolute.read_text()
    assert await check_file(engine, mp.key) == []


async def test_the_daemons_own_task_changes_are_not_undone(engine: Engine) -> None:
    """done, then reopen, then remove: each replaces what the journal held
    for the task, so none looks lost and nothing is put back."""
    added = await tasks(engine, TasksParams(action="add", tasks=("water the plants",)))
    ref = (added.changed[0].id,)
    mp = engine.policy.resolve("memory/TASKS.md")
    await tasks(engine, TasksParams(action="done", tasks=ref))
    await tasks(engine, TasksParams(action="reopen", tasks=ref))
    assert [e.task for e in engine.journal.entries(mp.key)] == ["add", "reopen"]
    assert await check_file(engine, mp.key) == []
    await tasks(engine, TasksParams(action="remove", tasks=ref))
    assert [e.task for e in engine.journal.entries(mp.key)] == ["remove"]
    assert await check_file(engine, mp.key) == []
    assert "water the plants" not in mp.absolute.read_text()


async def test_a_task_deleted_by_hand_after_a_later_change_stays_deleted(engine: Engine) -> None:
    """A person's edit based on a version that held the task (a later change
    of the daemon's is in it) deletes it on purpose, as for appends."""
    await tasks(engine, TasksParams(action="add", tasks=("first task",)))
    await tasks(engine, TasksParams(action="add", tasks=("second task",)))
    mp = engine.policy.resolve("memory/TASKS.md")
    text = mp.absolute.read_text()
    (first,) = [line for line in text.splitlines() if "first task" in line]
    _stale_save(mp.absolute, text.replace(first + "\n", "").encode(), own="- [ ] mine\n")
    assert await check_file(engine, mp.key) == []
    assert "first task" not in mp.absolute.read_text()
    assert "first task" not in "".join(e.block for e in engine.journal.entries(mp.key))


async def test_a_removal_lost_to_a_stale_save_is_made_again(engine: Engine) -> None:
    added = await tasks(engine, TasksParams(action="add", tasks=("obsolete task", "kept task")))
    mp = engine.policy.resolve("memory/TASKS.md")
    copy = mp.absolute.read_bytes()
    await tasks(engine, TasksParams(action="remove", tasks=(added.changed[0].id,)))
    _stale_save(mp.absolute, copy)
    assert await check_file(engine, mp.key) == []
    text = mp.absolute.read_text()
    assert "obsolete task" not in text
    assert "kept task" in text
    assert "a task typed by hand" in text


async def test_forgetting_a_task_line_ends_its_protection(engine: Engine) -> None:
    """`forget` removes a line on purpose: the task's entries go with it,
    whatever state the line is in (here done: its adding's entry goes too)."""
    added = await tasks(engine, TasksParams(action="add", tasks=("a secret task zq9",)))
    done = await tasks(engine, TasksParams(action="done", tasks=(added.changed[0].id,)))
    mp = engine.policy.resolve("memory/TASKS.md")
    assert [e.task for e in engine.journal.entries(mp.key)] == ["add", "done"]
    cited = done.changed[0].citation
    result = await forget(engine, citation_=cited, text=None, query=None, all_=False)
    assert result.removed
    assert engine.journal.entries(mp.key) == []
    assert await check_file(engine, mp.key) == []
    assert engine.journal.entries(mp.key) == []
    assert "zq9" not in mp.absolute.read_text()
