"""Indexing one session transcript incrementally, against a real index.

Transcripts are written while the agent works, so `index_session` reads only
what was appended since the last pass and *adds* its chunks. These tests pin
what a user relies on: nothing is indexed twice or lost when a file is
appended to, half-written, truncated, rotated or deleted; a live transcript
is not re-indexed at every line but is indexed once it has grown enough or
gone quiet; search results cite the transcript's own line numbers, name the
agent and the time the words were said; and tool traffic and secrets never
reach the index. Parsing each transcript shape is tested in
test_transcripts.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from openmemoryd.config import IndexSettings, SessionSettings
from openmemoryd.index import index_session
from openmemoryd.index import sessions as sessions_module
from openmemoryd.index.sessions import SessionOutcome
from openmemoryd.store import (
    ChunkRecord,
    chunk_records,
    indexed_file,
    lexical_candidates,
    open_index,
    session_state,
)
from openmemoryd.workspace import SessionFile, SessionLocator

INDEX = IndexSettings()
# Every message below is its own chunk, so line numbers can be checked one by one.
ONE_MESSAGE_PER_CHUNK = IndexSettings(chunk_tokens=32, chunk_overlap=0)
# Thresholds no test file reaches by accident: only idleness or force index.
PATIENT = SessionSettings(delta_bytes=1_000_000, delta_messages=1_000, idle_s=60.0)

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC).timestamp()


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    connection = open_index(tmp_path / "i.sqlite", workspace=tmp_path).conn
    yield connection
    connection.close()


@pytest.fixture
def own_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "state" / "sessions"
    (directory / "main").mkdir(parents=True)
    return directory


@pytest.fixture
def session(own_dir: Path) -> SessionFile:
    return transcript(own_dir, "main", "s1.jsonl")


def transcript(own_dir: Path, agent: str, name: str) -> SessionFile:
    found = SessionLocator(own_dir).classify(own_dir / agent / name)
    assert found is not None
    return found


def said(role: str, text: str, at: float | None = None) -> bytes:
    """One OpenClaw message record as a transcript line."""
    record: dict[str, object] = {"type": "message", "message": {"role": role, "content": text}}
    if at is not None:
        record["timestamp"] = datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")
    return json.dumps(record).encode() + b"\n"


def tool_call(command: str) -> bytes:
    record = {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [{"type": "toolCall", "name": "exec", "arguments": {"command": command}}],
        },
    }
    return json.dumps(record).encode() + b"\n"


def tool_result(output: str) -> bytes:
    record = {
        "type": "message",
        "message": {"role": "toolResult", "content": [{"type": "text", "text": output}]},
    }
    return json.dumps(record).encode() + b"\n"


def sentence(word: str) -> str:
    """About 80 characters naming *word*: one chunk under ONE_MESSAGE_PER_CHUNK."""
    return f"we talked about {word} at length and agreed to revisit {word} next week sometime"


def append(path: Path, *lines: bytes) -> None:
    with path.open("ab") as f:
        f.write(b"".join(lines))


def run(
    conn: apsw.Connection,
    session: SessionFile,
    *,
    force: bool = True,
    now: float | None = None,
    sessions: SessionSettings = PATIENT,
    index: IndexSettings = INDEX,
) -> SessionOutcome:
    """One pass; *now* defaults to the moment the file was last written."""
    when = session.path.stat().st_mtime if now is None else now
    return index_session(conn, session, index, sessions, force=force, now=when)


def chunks_of(conn: apsw.Connection, key: str) -> list[ChunkRecord]:
    ids = [row[0] for row in conn.execute("SELECT id FROM chunks WHERE path = ?", (key,))]
    records = chunk_records(conn, ids)
    return sorted(records.values(), key=lambda r: (r.start_line, r.id))


def spans(conn: apsw.Connection, key: str) -> list[tuple[int, int]]:
    return [(c.start_line, c.end_line) for c in chunks_of(conn, key)]


def found_in(conn: apsw.Connection, word: str) -> list[tuple[str, int, int]]:
    """Where a keyword search for *word* lands: (path, start, end) per chunk."""
    hits = lexical_candidates(conn, f'"{word}"', 20, sources=["sessions"])
    return sorted((c.path, c.start_line, c.end_line) for c, _ in hits)


# ---------------------------------------------------------------- when to index


def test_a_transcript_still_being_written_waits_until_it_goes_quiet(
    conn: apsw.Connection, session: SessionFile
) -> None:
    session.path.write_bytes(said("user", "hello there") + said("assistant", "hi, how can I help"))
    written = session.path.stat().st_mtime

    waiting = run(conn, session, force=False, now=written + 15)

    assert waiting.kind == "waiting"
    assert waiting.recheck_in == pytest.approx(45.0)
    assert waiting.pending_bytes == session.path.stat().st_size
    assert waiting.chunks == 0
    assert chunks_of(conn, session.key) == []
    assert session_state(conn, session.key) is None
    assert indexed_file(conn, session.key) is None

    quiet = run(conn, session, force=False, now=written + 61)

    assert quiet.kind == "added"
    assert quiet.chunks == 1
    assert quiet.pending_bytes == 0
    assert quiet.recheck_in is None
    assert found_in(conn, "help") == [(session.key, 1, 2)]


def test_a_quiet_file_is_indexed_by_its_mtime_on_disk(
    conn: apsw.Connection, session: SessionFile
) -> None:
    session.path.write_bytes(said("user", "an old conversation about lighthouses"))
    os.utime(session.path, (T0, T0))

    assert run(conn, session, force=False, now=T0 + 60).kind == "added"
    assert found_in(conn, "lighthouses") == [(session.key, 1, 1)]


def test_enough_new_messages_are_indexed_without_waiting_for_idle(
    conn: apsw.Connection, session: SessionFile
) -> None:
    three = SessionSettings(delta_bytes=1_000_000, delta_messages=3, idle_s=60.0)
    session.path.write_bytes(said("user", "first question") + said("assistant", "first answer"))
    assert run(conn, session, force=False, sessions=three).kind == "waiting"

    append(session.path, said("user", "second question about walruses"))

    outcome = run(conn, session, force=False, sessions=three)
    assert outcome.kind == "added"
    assert found_in(conn, "walruses") == [(session.key, 1, 3)]


def test_enough_new_bytes_are_indexed_without_waiting_for_idle(
    conn: apsw.Connection, session: SessionFile
) -> None:
    first = said("user", "a short question")
    second = said("assistant", "a much longer answer about glaciers " * 3)
    limit = len(first) + len(second)
    by_size = SessionSettings(delta_bytes=limit, delta_messages=1_000, idle_s=60.0)
    session.path.write_bytes(first)
    assert run(conn, session, force=False, sessions=by_size).kind == "waiting"

    append(session.path, second)

    assert run(conn, session, force=False, sessions=by_size).kind == "added"
    assert found_in(conn, "glaciers") == [(session.key, 1, 2)]


def test_thresholds_count_only_what_was_appended_since_the_last_pass(
    conn: apsw.Connection, session: SessionFile
) -> None:
    three = SessionSettings(delta_bytes=1_000_000, delta_messages=3, idle_s=60.0)
    session.path.write_bytes(said("user", "one") + said("assistant", "two") + said("user", "three"))
    assert run(conn, session, force=False, sessions=three).kind == "added"

    line = said("assistant", "four about otters")
    append(session.path, line)

    waiting = run(conn, session, force=False, sessions=three)
    assert waiting.kind == "waiting"
    assert waiting.pending_bytes == len(line)
    assert found_in(conn, "otters") == []


def test_force_indexes_a_transcript_that_was_just_written(
    conn: apsw.Connection, session: SessionFile
) -> None:
    session.path.write_bytes(said("user", "remember the falafel place"))

    outcome = run(conn, session, force=True)

    assert outcome.kind == "added"
    assert found_in(conn, "falafel") == [(session.key, 1, 1)]


def test_nothing_new_is_unchanged(conn: apsw.Connection, session: SessionFile) -> None:
    session.path.write_bytes(said("user", "remember the falafel place"))
    run(conn, session)
    before = chunks_of(conn, session.key)

    assert run(conn, session).kind == "unchanged"
    assert run(conn, session, force=False, now=T0).kind == "unchanged"
    assert chunks_of(conn, session.key) == before


# ---------------------------------------------------------------- appending


def test_appended_lines_add_chunks_and_keep_the_old_ones(
    conn: apsw.Connection, session: SessionFile
) -> None:
    first = said("user", sentence("pelicans")) + said("assistant", sentence("herons"))
    session.path.write_bytes(first)
    assert run(conn, session, index=ONE_MESSAGE_PER_CHUNK).kind == "added"
    old = chunks_of(conn, session.key)
    assert [(c.start_line, c.end_line) for c in old] == [(1, 1), (2, 2)]
    state = session_state(conn, session.key)
    assert state is not None
    assert (state.offset, state.lines) == (len(first), 2)

    more = (
        tool_call("ls") + said("user", sentence("puffins")) + said("assistant", sentence("gannets"))
    )
    append(session.path, more)

    outcome = run(conn, session, index=ONE_MESSAGE_PER_CHUNK)
    assert outcome.kind == "indexed"
    assert outcome.chunks == 2
    now = chunks_of(conn, session.key)
    assert now[:2] == old  # the same rows: not re-indexed
    assert [(c.start_line, c.end_line) for c in now[2:]] == [(4, 4), (5, 5)]
    assert found_in(conn, "puffins") == [(session.key, 4, 4)]
    assert found_in(conn, "gannets") == [(session.key, 5, 5)]
    state = session_state(conn, session.key)
    assert state is not None
    assert (state.offset, state.lines) == (len(first) + len(more), 5)
    file = indexed_file(conn, session.key)
    assert file is not None
    assert (file.source, file.size, file.chunks) == ("sessions", len(first) + len(more), 4)


def test_each_chunk_cites_the_jsonl_lines_of_its_messages(
    conn: apsw.Connection, session: SessionFile
) -> None:
    words = {"ravens": 1, "magpies": 3, "jays": 4, "rooks": 7}
    session.path.write_bytes(
        said("user", sentence("ravens"))
        + tool_call("cat notes.txt")
        + said("user", sentence("magpies"))
        + said("assistant", sentence("jays"))
        + tool_result("file contents")
        + b"\n"
        + said("assistant", sentence("rooks"))
    )

    run(conn, session, index=ONE_MESSAGE_PER_CHUNK)

    for word, line in words.items():
        assert found_in(conn, word) == [(session.key, line, line)], word


def test_a_half_written_last_line_waits_and_is_indexed_once_complete(
    conn: apsw.Connection, session: SessionFile
) -> None:
    complete = said("user", sentence("badgers"))
    last = said("assistant", sentence("weasels"))
    session.path.write_bytes(complete + last[:30])

    assert run(conn, session, index=ONE_MESSAGE_PER_CHUNK).kind == "added"
    assert spans(conn, session.key) == [(1, 1)]
    state = session_state(conn, session.key)
    assert state is not None
    assert (state.offset, state.lines) == (len(complete), 1)

    # Still half-written: nothing to read yet, not an error and not skipped.
    again = run(conn, session, index=ONE_MESSAGE_PER_CHUNK)
    assert again.kind == "waiting"
    assert again.pending_bytes == 30
    assert again.recheck_in is not None
    assert again.recheck_in > 0

    append(session.path, last[30:])

    assert run(conn, session, index=ONE_MESSAGE_PER_CHUNK).kind == "indexed"
    assert spans(conn, session.key) == [(1, 1), (2, 2)]
    assert found_in(conn, "weasels") == [(session.key, 2, 2)]
    state = session_state(conn, session.key)
    assert state is not None
    assert (state.offset, state.lines) == (len(complete) + len(last), 2)


def test_a_line_its_writer_abandoned_stops_being_pending(
    conn: apsw.Connection, session: SessionFile
) -> None:
    """A writer that crashed mid-line must not leave the transcript "waiting"
    (re-checked and listed as pending in status) forever."""
    complete = said("user", sentence("otters"))
    session.path.write_bytes(complete + b'{"type": "mess')
    run(conn, session)
    idle = PATIENT.idle_s
    later = session.path.stat().st_mtime + idle + 1

    abandoned = run(conn, session, force=False, now=later)

    assert abandoned.kind == "unchanged"
    assert abandoned.recheck_in is None
    assert spans(conn, session.key) == [(1, 1)]


def test_a_transcript_of_only_a_half_line_is_indexed_when_it_is_finished(
    conn: apsw.Connection, session: SessionFile
) -> None:
    line = said("user", "the password manager is called vaultwarden")
    session.path.write_bytes(line[:20])

    run(conn, session)
    assert chunks_of(conn, session.key) == []

    append(session.path, line[20:])

    assert run(conn, session).chunks == 1
    assert found_in(conn, "vaultwarden") == [(session.key, 1, 1)]


# ---------------------------------------------------------------- truncation, rotation, deletion


def test_a_truncated_transcript_is_read_again_from_the_start(
    conn: apsw.Connection, session: SessionFile
) -> None:
    session.path.write_bytes(
        said("user", "we discussed quokkas")
        + said("assistant", "quokkas are marsupials")
        + said("user", "and wombats too")
    )
    run(conn, session)
    inode = session.path.stat().st_ino

    session.path.write_bytes(said("user", "now about quokkas only"))  # same file, shorter
    assert session.path.stat().st_ino == inode

    outcome = run(conn, session)

    assert outcome.kind == "restarted"
    assert [c.text for c in chunks_of(conn, session.key)] == ["User: now about quokkas only"]
    assert found_in(conn, "quokkas") == [(session.key, 1, 1)]
    assert found_in(conn, "wombats") == []
    state = session_state(conn, session.key)
    assert state is not None
    assert (state.offset, state.lines) == (session.path.stat().st_size, 1)
    file = indexed_file(conn, session.key)
    assert file is not None
    assert file.chunks == 1


def test_a_rotated_transcript_replaces_what_was_indexed(
    conn: apsw.Connection, session: SessionFile
) -> None:
    session.path.write_bytes(said("user", "the old session mentioned capybaras"))
    run(conn, session)
    # The new file is longer than the old offset: only its inode tells.
    fresh = session.path.with_suffix(".tmp")
    fresh.write_bytes(
        said("user", "a brand new session about axolotls")
        + said("assistant", "axolotls regrow their limbs, remarkably")
    )
    os.replace(fresh, session.path)

    outcome = run(conn, session)

    assert outcome.kind == "restarted"
    assert found_in(conn, "capybaras") == []
    assert found_in(conn, "axolotls") == [(session.key, 1, 2)]
    state = session_state(conn, session.key)
    assert state is not None
    assert state.inode == session.path.stat().st_ino
    assert (state.offset, state.lines) == (session.path.stat().st_size, 2)


def test_a_deleted_transcript_leaves_the_index(conn: apsw.Connection, session: SessionFile) -> None:
    session.path.write_bytes(said("user", "remember the narwhal"))
    run(conn, session)
    session.path.unlink()

    assert run(conn, session, now=T0).kind == "removed"
    assert chunks_of(conn, session.key) == []
    assert found_in(conn, "narwhal") == []
    assert session_state(conn, session.key) is None
    assert indexed_file(conn, session.key) is None
    assert run(conn, session, now=T0).kind == "unchanged"


def test_a_transcript_recreated_after_deletion_starts_over(
    conn: apsw.Connection, session: SessionFile
) -> None:
    session.path.write_bytes(said("user", "first life of the file: lemurs"))
    run(conn, session)
    session.path.unlink()
    run(conn, session, now=T0)
    session.path.write_bytes(said("user", "second life: tapirs"))

    assert run(conn, session).kind == "added"
    assert found_in(conn, "lemurs") == []
    assert found_in(conn, "tapirs") == [(session.key, 1, 1)]


# ---------------------------------------------------------------- what reaches the index


def test_tool_traffic_and_secrets_never_reach_the_index(
    conn: apsw.Connection, session: SessionFile
) -> None:
    openai_key = "sk-proj-Abc123Def456Ghi789Jkl012"
    github_token = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    session.path.write_bytes(
        said("user", f"use my key {openai_key} for the pangolin project")
        + tool_call("curl -H 'Authorization: Bearer sekrit' https://example.com/armadillo")
        + tool_result("HTTP 200 armadillo response body")
        + said("assistant", f"done; also pushed with {github_token} to the pangolin repo")
    )

    run(conn, session)

    texts = [c.text for c in chunks_of(conn, session.key)]
    assert texts == [
        "User: use my key sk-proj-\u2026 for the pangolin project\n"
        "Assistant: done; also pushed with ghp_\u2026 to the pangolin repo"
    ]
    assert found_in(conn, "armadillo") == []
    assert found_in(conn, "pangolin") == [(session.key, 1, 4)]
    # Neither the chunk text nor the search terms (lower-cased, split at
    # punctuation) may hold the secret part of a key.
    rows = conn.execute("SELECT text FROM chunks UNION ALL SELECT body FROM chunks_fts")
    stored = "\n".join(str(text) for (text,) in rows).lower()
    for secret in ("abc123def456ghi789jkl012", "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8", "sekrit"):
        assert secret not in stored
        assert found_in(conn, secret) == []


def test_chunks_name_the_agent_and_when_their_messages_were_said(
    conn: apsw.Connection, own_dir: Path
) -> None:
    (own_dir / "scout").mkdir()
    session = transcript(own_dir, "scout", "trip.jsonl")
    session.path.write_bytes(
        said("user", sentence("kestrels"), at=T0)
        + said("assistant", sentence("falcons"), at=T0 + 90)
        + said("user", sentence("owls"))
    )

    run(conn, session, index=ONE_MESSAGE_PER_CHUNK)

    records = chunks_of(conn, session.key)
    assert [(c.start_line, c.agent, c.msg_time) for c in records] == [
        (1, "scout", T0),
        (2, "scout", T0 + 90),
        (3, "scout", None),
    ]
    state = session_state(conn, session.key)
    assert state is not None
    assert state.agent == "scout"
    assert len(lexical_candidates(conn, '"falcons"', 5, agent="scout")) == 1
    assert lexical_candidates(conn, '"falcons"', 5, agent="main") == []


def test_a_chunk_is_as_recent_as_its_latest_message(
    conn: apsw.Connection, session: SessionFile
) -> None:
    session.path.write_bytes(
        said("user", "when is the ferry", at=T0 + 300) + said("assistant", "at noon", at=T0)
    )

    run(conn, session)

    assert [c.msg_time for c in chunks_of(conn, session.key)] == [T0 + 300]


def test_a_directory_named_like_a_transcript_is_not_indexed(
    conn: apsw.Connection, session: SessionFile
) -> None:
    session.path.mkdir()
    (session.path / "inner.jsonl").write_bytes(said("user", "hidden manatees"))

    assert run(conn, session, now=T0).kind == "unchanged"
    assert session_state(conn, session.key) is None
    assert indexed_file(conn, session.key) is None
    assert found_in(conn, "manatees") == []


def test_a_symlink_named_like_a_transcript_is_not_followed(
    conn: apsw.Connection, session: SessionFile, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(said("user", "private dugongs"))
    session.path.symlink_to(target)

    assert run(conn, session, now=T0).kind == "unchanged"
    assert session_state(conn, session.key) is None
    assert found_in(conn, "dugongs") == []


def test_a_transcript_replaced_by_a_symlink_is_removed(
    conn: apsw.Connection, session: SessionFile, tmp_path: Path
) -> None:
    session.path.write_bytes(said("user", "remember the tortoise"))
    run(conn, session)
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(said("user", "private dugongs"))
    session.path.unlink()
    session.path.symlink_to(target)

    assert run(conn, session, now=T0).kind == "removed"
    assert found_in(conn, "tortoise") == []
    assert found_in(conn, "dugongs") == []
    assert session_state(conn, session.key) is None


def test_garbage_lines_are_skipped_without_shifting_line_numbers(
    conn: apsw.Connection, session: SessionFile
) -> None:
    session.path.write_bytes(
        said("user", sentence("beetles"))
        + b"\xff\xfe\x00 binary noise \x80\x81\n"
        + b'{"type": "message", "message": {"role": "user", "content": "cut o\n'
        + said("assistant", sentence("crickets"))
        + b"[1, 2, 3]\n"
        + b"\n"
        + b'{"type":"message","message":{"role":"user","content":"caf\xe9 '
        + sentence("moths").encode()
        + b'"}}\n'
        + b"not json at all\n"
        + said("assistant", sentence("mantises"))
    )

    outcome = run(conn, session, index=ONE_MESSAGE_PER_CHUNK)

    assert outcome.kind == "added"
    assert spans(conn, session.key) == [(1, 1), (4, 4), (7, 7), (9, 9)]
    assert found_in(conn, "beetles") == [(session.key, 1, 1)]
    assert found_in(conn, "crickets") == [(session.key, 4, 4)]
    assert found_in(conn, "moths") == [(session.key, 7, 7)]
    assert found_in(conn, "mantises") == [(session.key, 9, 9)]
    moths = chunks_of(conn, session.key)[2]
    assert moths.text.startswith("User: caf\ufffd we talked about moths")
    state = session_state(conn, session.key)
    assert state is not None
    assert state.lines == 9


def test_garbage_appended_between_passes_keeps_later_line_numbers(
    conn: apsw.Connection, session: SessionFile
) -> None:
    session.path.write_bytes(said("user", sentence("hornets")))
    run(conn, session, index=ONE_MESSAGE_PER_CHUNK)

    append(session.path, b"\x00\x01garbage\n", b"{oops\n")
    assert run(conn, session, index=ONE_MESSAGE_PER_CHUNK).chunks == 0
    append(session.path, said("assistant", sentence("wasps")))

    run(conn, session, index=ONE_MESSAGE_PER_CHUNK)
    assert spans(conn, session.key) == [(1, 1), (4, 4)]
    assert found_in(conn, "wasps") == [(session.key, 4, 4)]


# ---------------------------------------------------------------- keeping the recorded stat true


def test_touching_an_indexed_transcript_records_its_new_mtime(
    conn: apsw.Connection, session: SessionFile
) -> None:
    """The cheap change check compares (mtime, size) with the files row; a
    stale row would make every check re-queue the transcript forever."""
    session.path.write_bytes(said("user", "remember the okapi"))
    run(conn, session)
    os.utime(session.path, (T0, T0))

    assert run(conn, session).kind == "unchanged"
    file = indexed_file(conn, session.key)
    assert file is not None
    assert (file.mtime_ns, file.size) == (
        session.path.stat().st_mtime_ns,
        session.path.stat().st_size,
    )
    assert found_in(conn, "okapi") == [(session.key, 1, 1)]


def test_a_line_appended_during_a_pass_is_left_for_the_next_one(
    conn: apsw.Connection, session: SessionFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer may append between the pass's stat and its read. What is
    indexed must match the size recorded, or the pending count goes negative
    and the cheap change check never sees the file settle."""
    session.path.write_bytes(said("user", sentence("ibises")))
    late = said("assistant", sentence("storks"))
    real_read = sessions_module._read_from

    def read_while_appending(target: SessionFile, *where: int) -> bytes:
        append(target.path, late)
        return real_read(target, *where)

    monkeypatch.setattr(sessions_module, "_read_from", read_while_appending)
    first = run(conn, session, index=ONE_MESSAGE_PER_CHUNK)
    monkeypatch.undo()

    assert first.kind == "added"
    assert first.pending_bytes >= 0
    second = run(conn, session, index=ONE_MESSAGE_PER_CHUNK)
    assert spans(conn, session.key) == [(1, 1), (2, 2)]
    assert found_in(conn, "storks") == [(session.key, 2, 2)]
    assert second.pending_bytes == 0
    file = indexed_file(conn, session.key)
    assert file is not None
    assert (file.mtime_ns, file.size) == (
        session.path.stat().st_mtime_ns,
        session.path.stat().st_size,
    )
