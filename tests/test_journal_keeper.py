"""The journal keeper's restore, on an in-process engine: a decision made on a
copy of the file read outside the writer lane is checked again inside it."""

from __future__ import annotations

import time

from openmemoryd.engine import Engine
from openmemoryd.engine.agent_ops import forget
from openmemoryd.engine.journal_keeper import check_file, restore_entries
from openmemoryd.memory.append import append_block, unjournalled

FACT = "I always deploy on Thursdays"


async def test_a_forgotten_append_is_not_restored_on_a_stale_verdict(engine: Engine) -> None:
    appended = await engine.append(FACT, None)
    mp = engine.policy.resolve(appended.path)
    (entry,) = engine.journal.entries(mp.key)
    # The keeper read the file after forget removed the line but before forget
    # dropped the entry: the line is missing from a file that extends the one
    # it was appended to, so its verdict says "restore". It must not.
    await forget(engine, citation_=appended.citation, text=None, query=None, all_=False)
    assert FACT not in mp.absolute.read_text()

    assert await restore_entries(engine, mp, [entry]) == [None]
    assert FACT not in mp.absolute.read_text()
    assert engine.journal.entries(mp.key) == []


async def test_a_block_back_in_the_file_is_not_appended_twice(engine: Engine) -> None:
    appended = await engine.append(FACT, None)
    mp = engine.policy.resolve(appended.path)
    (entry,) = engine.journal.entries(mp.key)

    assert await restore_entries(engine, mp, [entry]) == [None]
    assert mp.absolute.read_text().count(FACT) == 1
    assert engine.journal.entries(mp.key) == [entry]  # still watched until settled


async def test_a_block_still_missing_is_restored(engine: Engine) -> None:
    appended = await engine.append(FACT, None)
    mp = engine.policy.resolve(appended.path)
    (entry,) = engine.journal.entries(mp.key)
    mp.absolute.write_text(mp.absolute.read_text().replace(FACT, "something else"))

    (where,) = await restore_entries(engine, mp, [entry])
    assert where is not None
    assert where.startswith(mp.key)
    assert mp.absolute.read_text().count(FACT) == 1
    (renewed,) = engine.journal.entries(mp.key)  # journalled anew where it now is
    assert renewed.seq != entry.seq
    assert renewed.block == entry.block


async def test_a_write_waiting_for_its_record_holds_the_keeper_back(engine: Engine) -> None:
    """An append is written in the writer lane and journalled just after it.
    A stale rewrite judged in between had the earlier blocks put back, after
    which the unrecorded one no longer fit its file and stayed lost (seen as
    a lost acknowledged append under load). The keeper now waits for it."""
    first = await engine.append("line a", None)
    mp = engine.policy.resolve(first.path)
    before_b = mp.absolute.read_bytes()
    await engine.append("line b", None)
    limit = engine.config.index.max_file_bytes
    c = append_block(mp, "line c", limit)  # written; its record not made yet
    mp.absolute.write_bytes(before_b + b"editor line\n")  # stale: drops b and c

    assert await check_file(engine, mp.key) == []  # not judged while c waits
    assert b"line b" not in mp.absolute.read_bytes()

    engine.journal.record(c, time.time())
    assert not unjournalled(str(mp.absolute), 10.0)
    assert await check_file(engine, mp.key) == []
    text = mp.absolute.read_text()
    assert [text.count(line) for line in ("line a", "line b", "line c")] == [1, 1, 1]
    assert text.index("line b") < text.index("line c")  # put back in write order


async def test_a_write_never_journalled_is_waited_for_only_so_long(engine: Engine) -> None:
    mp = engine.policy.resolve("memory/waits.md")
    append_block(mp, "never recorded", engine.config.index.max_file_bytes)
    assert unjournalled(str(mp.absolute), 10.0)
    assert not unjournalled(str(mp.absolute), 0.0)  # older than that: forgotten
    assert not unjournalled(str(mp.absolute), 10.0)
