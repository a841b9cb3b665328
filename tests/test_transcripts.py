"""Session transcripts: parsing each shape, slices, line maps and redaction.

Samples are written here the way each agent writes them (field names,
nesting, extra fields) so a shape change in the parser shows up as a missing
or extra message. Property tests check the slice contract the incremental
indexer relies on: any prefix, then the rest from where it stopped, reads
exactly what one pass over the whole file reads.
"""

from __future__ import annotations

import json
import time
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openmemoryd.index.chunker import chunk_markdown
from openmemoryd.index.transcripts import (
    MAX_MESSAGE_CHARS,
    Message,
    ParsedSlice,
    map_lines,
    message_time,
    parse_transcript,
    render,
)
from openmemoryd.text.redact import redact_secrets


def jsonl(*records: object) -> bytes:
    """Records as a transcript file: one compact JSON object per line."""
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def content_lines(data: bytes, first_line: int = 1) -> list[str]:
    return render(parse_transcript(data, first_line=first_line).messages).text.split("\n")


def iso(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


# ---------------------------------------------------------------- OpenClaw cases 22-23


def test_metadata_records_between_messages_keep_jsonl_line_numbers() -> None:
    data = jsonl(
        {"type": "custom", "customType": "model-snapshot", "data": {}},
        {"type": "custom", "customType": "openclaw.cache-ttl", "data": {}},
        {"type": "session-meta", "agentId": "test"},
        {"type": "message", "message": {"role": "user", "content": "Hello world"}},
        {"type": "custom", "customType": "tool-result", "data": {}},
        {
            "type": "message",
            "message": {"role": "assistant", "content": "Hi there, how can I help?"},
        },
        {"type": "message", "message": {"role": "user", "content": "Tell me a joke"}},
    )
    rendered = render(parse_transcript(data).messages)
    assert rendered.text.split("\n") == [
        "User: Hello world",
        "Assistant: Hi there, how can I help?",
        "User: Tell me a joke",
    ]
    assert rendered.line_map == [4, 6, 7]


def test_no_message_records_render_nothing() -> None:
    data = jsonl(
        {"type": "custom", "customType": "model-snapshot", "data": {}},
        {"type": "session-meta", "agentId": "test"},
    )
    parsed = parse_transcript(data)
    rendered = render(parsed.messages)
    assert (rendered.text, rendered.line_map, rendered.timestamps) == ("", [], [])
    assert (parsed.consumed, parsed.lines) == (len(data), 2)


def test_blank_and_invalid_lines_are_skipped_without_shifting_the_map() -> None:
    data = b"\n".join(
        [
            b"",
            b"not valid json",
            json.dumps(
                {"type": "message", "message": {"role": "user", "content": "First"}}
            ).encode(),
            b"",
            json.dumps(
                {"type": "message", "message": {"role": "assistant", "content": "Second"}}
            ).encode(),
            b"",
        ]
    )
    assert render(parse_transcript(data).messages).line_map == [3, 5]


# ---------------------------------------------------------------- shapes


def test_openclaw_session_keeps_text_blocks_and_drops_tools_and_thinking() -> None:
    data = jsonl(
        {
            "type": "session",
            "version": 3,
            "id": "9f1c2b7e",
            "timestamp": "2026-02-01T10:00:00.000Z",
            "cwd": "/home/ada/notes",
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "2026-02-01T10:00:01.000Z",
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Remind me what we decided\n\n  about caching"}
                ],
                "timestamp": 1769940001000,
            },
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "a1",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Search memory first."},
                    {"type": "toolCall", "id": "c1", "name": "memory_search", "arguments": {}},
                ],
                "timestamp": 1769940002000,
            },
        },
        {
            "type": "message",
            "id": "a3",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "content": [{"type": "text", "text": "MEMORY.md#L3: use Redis"}],
            },
        },
        {
            "type": "message",
            "id": "a4",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "We chose Redis"},
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                    {"type": "text", "text": "with a 5 minute TTL."},
                ],
                "timestamp": 1769940003000,
            },
        },
        {"type": "model_change", "provider": "anthropic", "modelId": "claude-opus-4"},
    )
    parsed = parse_transcript(data)
    assert parsed.messages == [
        Message(
            "user", "Remind me what we decided about caching", 2, iso("2026-02-01T10:00:01+00:00")
        ),
        Message("assistant", "We chose Redis with a 5 minute TTL.", 5, 1769940003.0),
    ]


def test_plain_and_openai_chat_logs() -> None:
    data = jsonl(
        {"role": "system", "content": "You are a helpful assistant."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "describe", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a cat on a mat"},
        {"role": "function", "name": "describe", "content": "a cat"},
        {"role": "assistant", "content": "A cat sitting on a mat."},
        {"role": "developer", "content": "Be brief."},
    )
    assert content_lines(data) == [
        "User: What is in this picture?",
        "Assistant: A cat sitting on a mat.",
    ]
    assert render(parse_transcript(data).messages).line_map == [2, 6]


def claude_line(kind: str, content: object, **extra: object) -> dict[str, object]:
    record: dict[str, object] = {
        "parentUuid": "5b0d5f7e-3c2a-4f7e-9d51-0c7a1e2b9f10",
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/ada/proj",
        "sessionId": "0c4f3e2a-8d1b-4b6a-9f3e-2a1d0c9b8e7f",
        "version": "1.0.51",
        "gitBranch": "main",
        "type": kind,
        "message": {"role": kind, "content": content},
        "uuid": "7e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b",
        "timestamp": "2025-07-14T09:12:03.512Z",
    }
    record.update(extra)
    return record


def test_claude_code_session() -> None:
    data = jsonl(
        {"type": "summary", "summary": "CI build failure", "leafUuid": "7e1f2a3b"},
        claude_line(
            "user",
            "<command-name>/clear</command-name>",
            isMeta=True,
        ),
        claude_line("user", "Why does the build fail on CI?"),
        claude_line(
            "assistant",
            [{"type": "thinking", "thinking": "Check the workflow.", "signature": "EqQBCkYIBRgC"}],
        ),
        claude_line(
            "assistant",
            [
                {"type": "text", "text": "I'll read the workflow file."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "Read",
                    "input": {"file_path": "/home/ada/proj/.github/workflows/ci.yml"},
                },
            ],
            timestamp="2025-07-14T09:12:05.250Z",
        ),
        claude_line(
            "user",
            [{"tool_use_id": "toolu_01", "type": "tool_result", "content": "name: CI\non: push"}],
        ),
        claude_line(
            "assistant", [{"type": "text", "text": "A sub-agent said hi."}], isSidechain=True
        ),
        claude_line(
            "user",
            [
                {"type": "image", "source": {"type": "base64", "data": "iVBORw0KGgo="}},
                {"type": "text", "text": "Here is the error screenshot"},
            ],
        ),
        {"type": "system", "content": "Compacted", "timestamp": "2025-07-14T09:13:00Z"},
    )
    parsed = parse_transcript(data)
    assert [(m.role, m.text, m.line) for m in parsed.messages] == [
        ("user", "Why does the build fail on CI?", 3),
        ("assistant", "I'll read the workflow file.", 5),
        ("user", "Here is the error screenshot", 8),
    ]
    assert parsed.messages[1].timestamp == iso("2025-07-14T09:12:05.250+00:00")


def codex_item(payload: dict[str, object]) -> dict[str, object]:
    return {"timestamp": "2025-09-02T10:00:04.118Z", "type": "response_item", "payload": payload}


def codex_message(role: str, text: str) -> dict[str, object]:
    part = "input_text" if role == "user" else "output_text"
    return codex_item({"type": "message", "role": role, "content": [{"type": part, "text": text}]})


def test_codex_rollout_skips_injected_context_and_tool_traffic() -> None:
    data = jsonl(
        {
            "timestamp": "2025-09-02T10:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": "01992f", "cwd": "/repo", "originator": "codex_cli_rs"},
        },
        codex_message("user", "<user_instructions>\n\nUse pnpm.\n\n</user_instructions>"),
        codex_message("user", "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
        codex_message("user", "# AGENTS.md instructions for /repo\n\nRun the tests."),
        codex_message("user", "Rename the config loader"),
        {
            "timestamp": "2025-09-02T10:00:04.120Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "Rename the config loader"},
        },
        codex_item(
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "**Finding the loader**"}],
                "encrypted_content": "gAAAAABo",
            }
        ),
        codex_item(
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["rg","load_config"]}',
                "call_id": "call_1",
            }
        ),
        codex_item({"type": "function_call_output", "call_id": "call_1", "output": "src/c.py"}),
        codex_message("assistant", "Renamed `load_config` to `read_config`."),
        {"timestamp": "2025-09-02T10:00:09Z", "type": "turn_context", "payload": {"cwd": "/repo"}},
    )
    parsed = parse_transcript(data)
    assert [(m.role, m.text, m.line) for m in parsed.messages] == [
        ("user", "Rename the config loader", 5),
        ("assistant", "Renamed `load_config` to `read_config`.", 10),
    ]
    assert parsed.messages[0].timestamp == iso("2025-09-02T10:00:04.118+00:00")


def test_older_codex_rollout_without_payload() -> None:
    data = jsonl(
        {"id": "5973b6c0", "timestamp": "2025-05-01T08:00:00.000Z", "instructions": None},
        {"record_type": "state"},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Add a --dry-run flag"}],
        },
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Added it to `cli.py`."}],
        },
    )
    assert content_lines(data) == ["User: Add a --dry-run flag", "Assistant: Added it to `cli.py`."]


def test_empty_and_whitespace_only_content_is_dropped() -> None:
    data = jsonl(
        {"role": "user", "content": "   \n\t "},
        {"role": "assistant", "content": []},
        {"role": "assistant", "content": [{"type": "text", "text": "\n"}]},
        {"role": "user", "content": 42},
        {"role": "user", "content": "kept"},
    )
    assert content_lines(data) == ["User: kept"]


def test_text_is_whitespace_normalised() -> None:
    data = jsonl(
        {"role": "user", "content": "  line one\r\n\n   line two\tand\u00a0three  "},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": " a \n"}, {"type": "text", "text": "b"}],
        },
    )
    assert content_lines(data) == ["User: line one line two and three", "Assistant: a b"]


# ---------------------------------------------------------------- slices


def test_first_line_makes_numbers_absolute() -> None:
    data = jsonl({"type": "meta"}, {"role": "user", "content": "hello"})
    parsed = parse_transcript(data, first_line=41)
    assert [m.line for m in parsed.messages] == [42]
    assert parsed.lines == 2


def test_first_line_must_be_positive() -> None:
    with pytest.raises(ValueError, match="first_line"):
        parse_transcript(b"", first_line=0)


def test_unterminated_last_line_is_left_for_next_time() -> None:
    done = jsonl({"role": "user", "content": "one"}, {"role": "assistant", "content": "two"})
    partial = json.dumps({"role": "user", "content": "three"}).encode()  # valid, but no "\n"
    parsed = parse_transcript(done + partial)
    assert [m.text for m in parsed.messages] == ["one", "two"]
    assert (parsed.consumed, parsed.lines) == (len(done), 2)

    rest = parse_transcript((done + partial + b"\n")[parsed.consumed :], first_line=3)
    assert [(m.text, m.line) for m in rest.messages] == [("three", 3)]
    assert (rest.consumed, rest.lines) == (len(partial) + 1, 1)


def test_nothing_complete_consumes_nothing() -> None:
    assert parse_transcript(b"") == ParsedSlice([], 0, 0)
    assert parse_transcript(b'{"role":"user","content":"hi"}') == ParsedSlice([], 0, 0)


def test_blank_lines_count_toward_consumed_lines() -> None:
    parsed = parse_transcript(b"\n\r\n  \n")
    assert (parsed.messages, parsed.consumed, parsed.lines) == ([], 6, 3)


def test_crlf_lines() -> None:
    data = b'{"role":"user","content":"over CRLF"}\r\n\r\n{"role":"assistant","content":"fine"}\r\n'
    parsed = parse_transcript(data)
    assert [(m.text, m.line) for m in parsed.messages] == [("over CRLF", 1), ("fine", 3)]
    assert (parsed.consumed, parsed.lines) == (len(data), 3)


def test_invalid_utf8_is_replaced_in_its_line_only() -> None:
    data = (
        b'{"role":"user","content":"caf\xe9 au lait"}\n'
        + json.dumps({"role": "assistant", "content": "déjà vu"}).encode()
        + b"\n"
        + '{"role":"user","content":"naïve"}\n'.encode()
    )
    assert content_lines(data) == [
        "User: caf\ufffd au lait",
        "Assistant: déjà vu",
        "User: naïve",
    ]


def test_lone_surrogates_become_replacement_characters() -> None:
    data = b'{"role":"user","content":"broken \\ud83d emoji, whole \\ud83d\\ude00"}\n'
    [message] = parse_transcript(data).messages
    assert message.text == "broken \ufffd emoji, whole \U0001f600"
    message.text.encode("utf-8")


def test_byte_order_mark_and_odd_json_are_tolerated() -> None:
    data = (
        b'\xef\xbb\xbf{"role":"user","content":"after a BOM"}\n'
        b"[1, 2, 3]\n"
        b'"just a string"\n'
        + b'{"a":' * 100_000
        + b"\n"
        + b'{"role":"user","content":"big", "n": '
        + b"9" * 5000
        + b"}\n"
        + b'{"role":"assistant","content":"still here", "time": 1e999}\n'
    )
    parsed = parse_transcript(data)
    assert [(m.text, m.line, m.timestamp) for m in parsed.messages] == [
        ("after a BOM", 1, None),
        ("still here", 6, None),
    ]


def test_long_messages_are_cut_at_a_character_boundary() -> None:
    text = "x" * (MAX_MESSAGE_CHARS - 1) + "e\u0301" + " tail" * 100
    [message] = parse_transcript(jsonl({"role": "user", "content": text})).messages
    assert message.text == "x" * (MAX_MESSAGE_CHARS - 1)

    exact = "y" * MAX_MESSAGE_CHARS
    [message] = parse_transcript(jsonl({"role": "user", "content": exact})).messages
    assert message.text == exact


def test_messages_are_redacted() -> None:
    key = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34"
    data = jsonl(
        {"role": "user", "content": f"my key is {key}, keep it safe"},
        {"role": "assistant", "content": [{"type": "text", "text": "password: hunter2"}]},
    )
    assert content_lines(data) == [
        "User: my key is sk-proj-…, keep it safe",
        "Assistant: password: ***",
    ]


# ---------------------------------------------------------------- timestamps


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("timestamp", "2025-07-14T09:12:03.512Z", iso("2025-07-14T09:12:03.512+00:00")),
        ("timestamp", "2025-07-14T11:12:03+02:00", iso("2025-07-14T09:12:03+00:00")),
        ("timestamp", "2025-07-14 09:12:03", iso("2025-07-14T09:12:03+00:00")),
        ("created_at", 1752484323, 1752484323.0),
        ("created_at", 1752484323.25, 1752484323.25),
        ("time", 1752484323512, 1752484323.512),
        ("ts", "1752484323", 1752484323.0),
        ("ts", 1752484323512000, 1752484323.512),
        ("timestamp", "yesterday", None),
        ("timestamp", True, None),
        ("timestamp", -5, None),
        ("timestamp", None, None),
        ("timestamp", {"seconds": 1}, None),
        ("when", 1752484323, None),
    ],
)
def test_timestamps(field: str, value: object, expected: float | None) -> None:
    data = jsonl({"role": "user", "content": "hi", field: value})
    [message] = parse_transcript(data).messages
    assert message.timestamp == (pytest.approx(expected) if expected is not None else None)


def test_record_time_wins_over_message_time() -> None:
    data = jsonl(
        {
            "type": "message",
            "timestamp": "2026-02-01T10:00:00Z",
            "message": {"role": "user", "content": "a", "timestamp": 1},
        },
        {
            "type": "message",
            "message": {"role": "user", "content": "b", "timestamp": 1769940001000},
        },
    )
    assert [m.timestamp for m in parse_transcript(data).messages] == [
        iso("2026-02-01T10:00:00+00:00"),
        1769940001.0,
    ]


# ---------------------------------------------------------------- line maps


def at(line: int, ts: float | None = None, role: str = "user") -> Message:
    return Message("user" if role == "user" else "assistant", f"message on line {line}", line, ts)


def test_map_lines_spans_the_source_lines_of_a_range() -> None:
    rendered = render([at(4), at(6), at(7), at(10), at(13)])
    assert map_lines(rendered, 1, 5) == (4, 13)
    assert map_lines(rendered, 2, 3) == (6, 7)
    assert map_lines(rendered, 4, 4) == (10, 10)


def test_map_lines_clamps_out_of_range_lines() -> None:
    rendered = render([at(4), at(6)])
    assert map_lines(rendered, 0, 99) == (4, 6)
    assert map_lines(rendered, 3, 3) == (6, 6)
    assert map_lines(rendered, 2, 1) == (4, 6)
    assert map_lines(render([]), 1, 3) == (1, 3)


def test_map_lines_orders_a_map_that_is_not_sorted() -> None:
    assert map_lines(render([at(9), at(3), at(5)]), 1, 3) == (3, 9)


def test_render_keeps_line_map_and_timestamps_aligned() -> None:
    rendered = render([at(2, 10.0), at(5, role="assistant"), at(9, 30.0)])
    assert rendered.text == (
        "User: message on line 2\nAssistant: message on line 5\nUser: message on line 9"
    )
    assert rendered.line_map == [2, 5, 9]
    assert rendered.timestamps == [10.0, None, 30.0]


def test_hand_built_multiline_text_maps_every_content_line() -> None:
    rendered = render([Message("user", "one\ntwo", 3, None), at(8)])
    assert rendered.line_map == [3, 3, 8]
    assert map_lines(rendered, 2, 3) == (3, 8)


def test_message_time_is_the_latest_in_range() -> None:
    rendered = render([at(1, 100.0), at(2), at(3, 300.0), at(4, 200.0)])
    assert message_time(rendered, 1, 4) == 300.0
    assert message_time(rendered, 1, 2) == 100.0
    assert message_time(rendered, 2, 2) is None
    assert message_time(rendered, 4, 9) == 200.0
    assert message_time(render([]), 1, 1) is None


def test_chunks_of_a_rendered_transcript_map_back_in_order() -> None:
    """OpenClaw case 21 with our chunker: ten content lines, a small budget."""
    lines = [2, 5, 8, 11, 14, 17, 20, 23, 26, 29]
    rendered = render([at(n) for n in lines])
    chunks = chunk_markdown(rendered.text, max_tokens=16, overlap_tokens=0)
    assert len(chunks) > 1
    spans = [map_lines(rendered, c.start_line, c.end_line) for c in chunks]
    assert spans[0][0] == 2
    assert spans[-1][1] == 29
    assert all(first <= last for first, last in spans)


# ---------------------------------------------------------------- slice properties

SAMPLE_LINES = [
    b"",
    b"   ",
    b"\r",
    b"not json",
    b"{broken",
    b'{"type":"custom","data":{}}',
    b'{"type":"message","message":{"role":"user","content":"Hello world"}}',
    b'{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"Hi"}]}}\r',
    b'{"role":"user","content":"plain","ts":1700000000}',
    b'{"role":"system","content":"ignored"}',
    b'{"type":"user","message":{"role":"user","content":"cc"},"timestamp":"2025-01-01T00:00:00Z"}',
    b'{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"x"}]}}',
    b'{"type":"response_item","payload":{"type":"message","role":"assistant",'
    b'"content":[{"type":"output_text","text":"codex"}]}}',
    b'{"role":"user","content":"token=abcdefghijklmnopqrstuvwxyz0123"}',
    b'{"role":"user","content":"caf\xe9"}',
]

transcripts = st.lists(
    st.one_of(st.sampled_from(SAMPLE_LINES), st.binary(max_size=40)), max_size=12
).map(lambda lines: b"\n".join(lines))


@given(st.binary(max_size=300))
def test_random_bytes_never_raise_and_consume_whole_lines(data: bytes) -> None:
    parsed = parse_transcript(data)
    assert 0 <= parsed.consumed <= len(data)
    assert parsed.consumed == 0 or data[parsed.consumed - 1 : parsed.consumed] == b"\n"
    assert b"\n" not in data[parsed.consumed :]
    assert parsed.lines == data[: parsed.consumed].count(b"\n")


@settings(max_examples=200)
@given(transcripts, st.data())
def test_resuming_from_consumed_reads_what_one_pass_reads(data: bytes, draw: st.DataObject) -> None:
    cut = draw.draw(st.integers(min_value=0, max_value=len(data)), label="cut")
    first_line = draw.draw(st.integers(min_value=1, max_value=1000), label="first_line")
    whole = parse_transcript(data, first_line=first_line)
    head = parse_transcript(data[:cut], first_line=first_line)
    tail = parse_transcript(data[head.consumed :], first_line=first_line + head.lines)
    assert head.messages + tail.messages == whole.messages
    assert head.consumed + tail.consumed == whole.consumed
    assert head.lines + tail.lines == whole.lines
    for message in whole.messages:
        assert "\n" not in message.text
        assert message.text == message.text.strip()
        assert "  " not in message.text
        assert first_line <= message.line < first_line + whole.lines


# ---------------------------------------------------------------- redaction


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # assignments
        ("API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123", "API_KEY=sk-…"),
        ("export GITHUB_TOKEN=abc123", "export GITHUB_TOKEN=***"),
        ("password: hunter2", "password: ***"),
        ("the password: hunter2.", "the password: ***."),
        ("DB_PASSWORD='correct horse battery staple'", "DB_PASSWORD='***'"),
        ("clientSecret = 'Zx9yW8vU7tS6rQ5pO4nM'", "clientSecret = '***'"),
        ("-H 'x-api-key: 0123456789abcdef0123'", "-H 'x-api-key: ***'"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ***"),
        # JSON fields, also escaped inside a JSON string
        (
            '{"api_key": "abcdefghijklmnopqrstuvwxyz123456", "model": "gpt-4o"}',
            '{"api_key": "***", "model": "gpt-4o"}',
        ),
        ('{"password":"pw1"}', '{"password":"***"}'),
        (
            '{\\"accessToken\\": \\"abcdefghijklmnopqrstu\\"}',
            '{\\"accessToken\\": \\"***\\"}',
        ),
        # CLI flags
        ("run --api-key abcdefghijklmnopqrstu123 now", "run --api-key *** now"),
        ("run --token=xyz --verbose", "run --token=*** --verbose"),
        ("login --password 'p4ss word'", "login --password '***'"),
        # Bearer
        (
            "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln' x",
            "curl -H 'Authorization: Bearer eyJ…' x",
        ),
        ("send Bearer eyJhbGciOiJIUzI1NiJ9abcdef with it", "send Bearer *** with it"),
        # PEM
        (
            "key: -----BEGIN RSA PRIVATE KEY----- MIIEowIBAAKCAQEA7x abc== "
            "-----END RSA PRIVATE KEY----- done",
            "key: -----BEGIN RSA PRIVATE KEY----- …redacted… -----END RSA PRIVATE KEY----- done",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
            "-----BEGIN OPENSSH PRIVATE KEY-----\n…redacted…",
        ),
        # prose, URL query strings
        ("the password is hunter2", "the password is ***"),
        ("My password was hunter2.", "My password was ***."),
        ("the password for the router is hunter2", "the password for the router is ***"),
        ("pin is 4821", "pin is ***"),
        ("记住我的密码是hunter2", "记住我的密码是***"),
        ("記住我的密碼是 hunter2", "記住我的密碼是 ***"),
        ("пароль: hunter2", "пароль: ***"),
        ("Пароль от wifi: qwerty123", "Пароль от wifi: ***"),
        ("Пароль от Wi-Fi — qwerty123", "Пароль от Wi-Fi — ***"),
        ("пароль - hunter2", "пароль - ***"),
        ("https://x.io/v1?api_key=abcd1234efgh&x=1", "https://x.io/v1?api_key=***&x=1"),
        ("GET /a?key=s3cr3tvalue&sig=Zm9vYmFyYmF6cXV4MTIzNDU2", "GET /a?key=***&sig=***"),
        # token prefixes
        ("use sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx0123 here", "use sk-ant-api03-… here"),
        ("sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34", "sk-proj-…"),
        ("ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "ghp_…"),
        ("gho_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "gho_…"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_…"),
        ("slack xoxb-1234567890-abcdefghij", "slack xoxb-…"),
        ("xoxp-12345-abcd", "xoxp-…"),
        ("gsk_abcdefghij1234567890", "gsk_…"),
        ("AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIza…"),
        ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_…"),
        ("glpat-AbCdEfGhIj1234567890", "glpat-…"),
        ("aws AKIAIOSFODNN7EXAMPLE key", "aws AKIA… key"),
        (
            "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0/getMe",
            "https://api.telegram.org/bot123456789:***/getMe",
        ),
    ],
)
def test_redaction_masks_each_family(text: str, expected: str) -> None:
    assert redact_secrets(text) == expected
    assert redact_secrets(expected) == expected  # masking twice changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Let's skip the tests and ski on the weekend; the sky is clear.",
        "scikit-learn, aka sk-learn-compatible-estimators, and task-manager-cli",
        "See https://docs.python.org/3/library/re.html#re.sub?lang=en&v=3",
        "https://github.com/openclaw/openclaw/blob/main/src/api_key_helper.ts",
        "Fixed in commit 4f9af1066b7e6cd5f20623b33111dde6e6f0046f (short 4f9af10).",
        "Each token: a unit of text. The key: it matters.",
        "def login(token: str, password: Optional[str] = None) -> bool:",
        "max_tokens: 400, monkey: banana, sort_key=name, if token == expected:",
        "API_KEY=$OPENAI_API_KEY and TOKEN=${GITHUB_TOKEN}",
        "Bearer of bad news; bearer tokens go in headers.",
        "The meeting is at 12:30 on 2025-07-14T09:12:03Z, ticket 123456789:ABC.",
        "-----BEGIN CERTIFICATE----- MIIB -----END CERTIFICATE-----",
        "Tokens, secrets and passwords deserve care. 中文密码：不要写在这里",
        "the password is stored in 1Password; the password for my bank is written down",
        "пароль — это секрет",
        # a hyphen inside a word is no dash, and a length is no value
        "Пароль от Wi-Fi — в заметках на холодильнике",
        "пароль — 12 символов, пароль к почте — 123 знака",
        "https://example.com/search?q=tea&page=2",
        "AKIA is a prefix; AKIAshort is not a key.",
    ],
)
def test_redaction_leaves_ordinary_text_alone(text: str) -> None:
    assert redact_secrets(text) == text


def test_redaction_is_fast_on_a_megabyte() -> None:
    """Linear work: a quadratic pattern would take minutes here, not seconds."""
    prose = "The API returns a token: see https://example.com/a?b=c for the key. " * 7000
    adversarial = "a-" * 100_000 + "x_token" * 20_000 + "1234567890:" * 20_000 + "--token " * 20_000
    for text in (prose, adversarial):
        started = time.perf_counter()
        redact_secrets(text)
        assert time.perf_counter() - started < 5.0


fragments = st.sampled_from(
    [
        " ",
        "API_KEY=",
        "password: ",
        '"token": "',
        '"',
        "--api-key ",
        "Bearer ",
        "sk-",
        "ghp_",
        "AKIA",
        "123456789:",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "abcdefghij",
        "ABCDEFGHIJ",
        "0123456789",
        "the",
        ".",
        "…",
        "*",
    ]
)


@given(st.lists(fragments, max_size=20).map("".join))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact_secrets(text)
    assert redact_secrets(once) == once


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz .,!?'\n中文", max_size=300))
def test_lowercase_prose_is_never_changed(text: str) -> None:
    assert redact_secrets(text) == text


def test_a_pem_marker_run_into_a_token_is_masked_once() -> None:
    """Found by the idempotence property: the dashes of a PEM marker must not
    make one long name out of the marker and the token after it."""
    text = "-----END RSA PRIVATE KEY-----sk-abcdefghijabcdefghijAPI_KEY=API_KEY="
    once = redact_secrets(text)
    assert "abcdefghijabcdefghij" not in once
    assert redact_secrets(once) == once
