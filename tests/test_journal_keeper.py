"""The journal keeper's restore, on an in-process engine: a decision made on a
copy of the file read outside the writer lane is checked again inside it."""

from __future__ import annotations

from openmemoryd.engine import Engine
from openmemoryd.engine.agent_ops import forget
from openmemoryd.engine.journal_keeper import restore_entries

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
