"""The CLI without a daemon: parsing, usage errors and exit code 3."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from omem_client import Client, DaemonNotRunning
from omem_client.cli import EXIT_UNREACHABLE, app


def test_usage_errors_exit_2() -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["search"]).exit_code == 2
    assert runner.invoke(app, ["search", "x", "--limit", "0"]).exit_code == 2
    assert runner.invoke(app, ["search", "x", "--min-score", "2"]).exit_code == 2
    assert runner.invoke(app, ["get", "MEMORY.md", "--from", "0"]).exit_code == 2
    assert runner.invoke(app, ["frobnicate"]).exit_code == 2


def test_no_daemon_exits_3_and_says_how_to_start_it(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["--socket", str(tmp_path / "none.sock"), "status"])
    assert result.exit_code == EXIT_UNREACHABLE
    assert "openmemoryd start" in result.output
    assert "Traceback" not in result.output


def test_library_raises_daemon_not_running(tmp_path: Path) -> None:
    with pytest.raises(DaemonNotRunning, match="openmemoryd start"):
        Client(tmp_path / "none.sock").status()


def test_version_flag() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("omem-client ")


def test_progress_bar_shows_done_total_elapsed_and_eta(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from omem_client import _render
    from omem_protocol import Progress

    clock = iter([100.0, 110.0, 120.0, 130.0, 140.0])
    monkeypatch.setattr(_render.time, "monotonic", lambda: next(clock))
    bar = _render.ProgressBar(enabled=True)  # started at t=100
    bar.update(Progress(id=1, done=25, total=100, phase="index"))  # t=110: no rate yet
    bar.update(Progress(id=1, done=50, total=100, phase="index"))  # t=120: 25 in 10 s
    shown = capsys.readouterr().err
    assert "[#######-----------------------] 25/100 index · elapsed 0:10 · eta ?" in shown
    assert "50/100 index · elapsed 0:20 · eta 0:20" in shown
    # a phase reached with work done before the command started: its rate
    # is what this command sees, not what was done before it
    bar.update(Progress(id=1, done=2431, total=16781, phase="embed"))  # t=130
    bar.update(Progress(id=1, done=2441, total=16781, phase="embed"))  # t=140: 1 a second
    bar.finish()
    shown = capsys.readouterr().err
    assert "2441/16781 embed · elapsed 0:40 · eta 239:00" in shown
    assert shown.endswith("\r\033[K")


def test_progress_bar_is_silent_when_disabled(capsys: pytest.CaptureFixture[str]) -> None:
    from omem_client import _render
    from omem_protocol import Progress

    bar = _render.ProgressBar(enabled=False)
    bar.update(Progress(id=1, done=1, total=2, phase="index"))
    bar.finish()
    assert capsys.readouterr().err == ""


def test_an_empty_answer_names_its_reason_without_a_score_it_does_not_have() -> None:
    import msgspec

    from conftest import search_result
    from omem_client import _render

    def empty(reason: str, best: float | None) -> list[str]:
        reply = msgspec.structs.replace(search_result([]), empty_reason=reason, best_score=best)
        return _render.search_notes(reply)

    assert empty("below_min_score", 0.04) == [
        "(no match reached the minimum score (0.35, the closest 0.040);"
        " a minimum score of 0 shows the closest matches anyway)"
    ]
    assert empty("below_min_score", None) == [
        "(no match reached the minimum score (0.35); a minimum score of 0"
        " shows the closest matches anyway)"
    ]
    assert empty("nothing_dated", 0.0) == ["(no notes of the days the query names)"]


def test_control_characters_are_escaped_and_text_is_not() -> None:
    from omem_client._cli_io import visible

    assert visible("bell \a esc \x1b[31m osc \x1b]0;t\x07 nul \x00") == (
        "bell \\x07 esc \\x1b[31m osc \\x1b]0;t\\x07 nul \\x00"
    )
    assert visible("del \x7f csi \x9b c1 \x80 \x85") == "del \\x7f csi \\x9b c1 \\x80 \\x85"
    assert visible("vt \x0b ff \x0c so \x0e us \x1f") == "vt \\x0b ff \\x0c so \\x0e us \\x1f"
    # tab, newline and a CRLF line end move nothing; a bare CR hides what came before
    assert visible("a\tb\nc\r\nd") == "a\tb\nc\r\nd"
    assert visible("safe\rEVIL\r") == "safe\\x0dEVIL\\x0d"
    plain = "魏 предпочитает 乌龙茶 \u00a0 é ✓ 🙂 \\x1b"
    assert visible(plain) == plain


def test_a_command_stream_escapes_only_when_told_and_survives_a_closed_pipe() -> None:
    import io
    import os

    from omem_client._cli_io import _CommandStream

    # (the streams wrapped are kept: a TextIOWrapper closes its buffer when collected)
    raw = io.BytesIO()
    terminal = io.TextIOWrapper(raw, encoding="utf-8")
    shown = _CommandStream(terminal, shown=True)
    shown.write("red \x1b[31m\n")
    shown.flush()
    assert raw.getvalue() == b"red \\x1b[31m\n"
    plain = _CommandStream(terminal, shown=False)
    plain.write("red \x1b[31m\n")
    plain.flush()
    assert raw.getvalue().endswith(b"\nred \x1b[31m\n")

    read_end, write_end = os.pipe()
    os.close(read_end)
    with open(write_end, "wb") as closed:
        pipe = io.TextIOWrapper(closed, encoding="utf-8")
        stream = _CommandStream(pipe, shown=False)
        assert stream.write("x" * 200_000) == 200_000  # EPIPE: from now on, /dev/null
        stream.write("more\n")
        stream.flush()
        stream.detach()


def test_json_output_escapes_the_controls_json_leaves_raw(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from omem_client._cli_io import print_json
    from omem_protocol import GetResult

    text = "del \x7f csi \x9b8m esc \x1b"
    print_json(GetResult(path="m.md", text=text, from_line=1, to_line=1, total_lines=1))
    out = capsys.readouterr().out
    assert not set(out) & set("\x7f\x9b\x1b")
    assert "\\u009b" in out
    assert json.loads(out)["text"] == text


def test_status_counts_skipped_files_apart_from_indexed_ones() -> None:
    """A skipped file (binary, too large) is recorded but not searchable:
    `status` says so, as `doctor` does; a daemon that does not send the
    count (older) shows the old line."""
    from omem_client import _render
    from omem_protocol import SourceCounts, StatusResult

    def files_lines(indexed: int, skipped: int) -> list[str]:
        status = StatusResult(
            daemon_version="0.1.0",
            protocol=1,
            pid=1,
            uptime_s=1.0,
            socket="/run/omem.sock",
            workspace="default",
            workspace_path="/ws",
            index_path="/ws.sqlite",
            index_bytes=0,
            files_on_disk=6,
            files_indexed=indexed,
            files_skipped=skipped,
            chunks=2,
            sources=(
                SourceCounts(
                    source="memory",
                    files_on_disk=6,
                    files_indexed=indexed,
                    chunks=2,
                    files_skipped=skipped,
                ),
            ),
            fts=True,
            vector=False,
            provider="none",
            model=None,
            syncing=False,
            last_sync=None,
        )
        return [
            line
            for line in _render.status_lines(status)
            if line.startswith(("Files:", "  memory:"))
        ]

    assert files_lines(6, 1) == [
        "Files:      5 indexed, 1 skipped (see Issues) / 6 on disk",
        "  memory: 5/6 files, 2 chunks, 1 skipped",
    ]
    assert files_lines(6, 0) == [
        "Files:      6 indexed / 6 on disk",
        "  memory: 6/6 files, 2 chunks",
    ]


# ---------------------------------------------------------------- text that starts with "-"


@pytest.fixture
def bodies(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, object, dict[str, object]]]:
    """The texts and options `search` and `append` pass to their bodies."""
    from omem_client import cli

    seen: list[tuple[str, object, dict[str, object]]] = []

    def record(name: str) -> object:
        def body(_options: object, text: object, **given: object) -> None:
            seen.append((name, text, {k: v for k, v in given.items() if v}))

        return body

    monkeypatch.setattr(cli, "search_command", record("search"))
    monkeypatch.setattr(cli, "append_command", record("append"))
    return seen


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["append", "- пункт списка"], ("append", "- пункт списка", {})),
        (["append", "---"], ("append", "---", {})),  # a Markdown rule
        (["append", "- item", "--path", "a.md"], ("append", "- item", {"path": "a.md"})),
        (["append", "--path=my notes.md", "- item"], ("append", "- item", {"path": "my notes.md"})),
        (["append", "--", "-x"], ("append", "-x", {})),  # -- still works, for any text
        (["search", "-ss 00:01:00", "-n", "2"], ("search", "-ss 00:01:00", {"limit": 2})),
        (["search", "below", "-5 degrees", "ice"], ("search", "below -5 degrees ice", {})),
        (["search", "-n5", "-пункт"], ("search", "-пункт", {"limit": 5})),
    ],
)
def test_text_that_starts_with_a_dash_is_text(
    bodies: list[tuple[str, object, dict[str, object]]],
    argv: list[str],
    expected: tuple[str, object, dict[str, object]],
) -> None:
    """A Markdown list item is the most natural note to append, and click
    refused it: ``No such option: -``. A token that no option could be is text."""
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert bodies == [expected]


@pytest.mark.parametrize(
    "argv",
    [
        ["log", "- Мы решили использовать Redis"],
        ["log", "--type", "decision", "- Мы решили использовать Redis"],
        ["log", "-t", "-odd"],  # an option's value is the option's, whatever it looks like
        ["recall", "- what do I drink in the morning"],
        ["tasks", "add", "- fix the login bug"],
        ["tasks", "done", "- fix the login bug"],
    ],
)
def test_every_command_of_free_text_takes_a_dash(tmp_path: Path, argv: list[str]) -> None:
    """Parsed, so they reach the (absent) daemon: exit 3, not a usage error."""
    result = CliRunner().invoke(app, ["--socket", str(tmp_path / "none.sock"), *argv])
    assert result.exit_code == EXIT_UNREACHABLE, result.output


def test_an_option_shaped_word_is_still_an_option_and_the_error_says_how_to_pass_text() -> None:
    """``-x`` may be text or a wrong option: the error says to put ``--``
    first. A misspelt option is never written to memory as text, even with
    a value that has a space in it; click's suggestion is left alone."""
    runner = CliRunner()
    unknown = runner.invoke(app, ["append", "-x"])
    assert unknown.exit_code == 2
    assert "Put -- before it:" in unknown.output
    assert "append -- -x" in unknown.output
    misspelt = runner.invoke(app, ["append", "--pth=my notes.md", "text"])
    assert misspelt.exit_code == 2
    assert "No such option: --pth" in misspelt.output
    typo = runner.invoke(app, ["search", "--limt", "3", "x"])
    assert typo.exit_code == 2
    assert "--limit" in typo.output
    assert "Put --" not in typo.output


def test_is_text_knows_options_from_text() -> None:
    from omem_client._cli_base import is_text

    options = frozenset({"--path", "--json", "-n", "--limit", "-h", "--help"})
    for text in ("- item", "-ss 00:01:00", "-5", "---", "-пункт", "-> arrow", "-- item"):
        assert is_text(text, options), text
    for option in ("-x", "--frseh", "--pth=my notes.md", "--path=my notes.md", "-n5 x", "-h"):
        assert not is_text(option, options), option


# ---------------------------------------------------------------- capture and primer in text


def test_capture_counts_skipped_messages_from_one() -> None:
    from omem_client import _render
    from omem_protocol import CaptureResult, RejectedMessage

    result = CaptureResult(
        captured=(),
        rejected=(
            RejectedMessage(index=0, reason="not_user", detail="role 'assistant'"),
            RejectedMessage(index=1, reason="too_short", detail="2 characters; at least 10"),
        ),
        path=None,
        took_ms=1.0,
    )
    assert _render.capture_lines(result) == [
        "Nothing captured.",
        "  skipped message 1: not_user (role 'assistant')",
        "  skipped message 2: too_short (2 characters; at least 10)",
    ]


def test_the_budget_that_shows_a_file_is_read_from_either_wording() -> None:
    from omem_client._render import budget_showing

    assert (
        budget_showing("USER.md: no room in a 50-token budget; a budget of 76 tokens shows") == 76
    )
    assert budget_showing("USER.md: no room in the budget (shown from a budget of 97 tokens)") == 97
    assert budget_showing("USER.md: still the template") is None


def test_primer_notes_say_why_files_are_left_out() -> None:
    """An empty primer printed nothing, as if the files were empty; the
    reasons were only in --json."""
    from omem_client import _render
    from omem_protocol import PrimerResult

    def notes(text: str, *omitted: str) -> list[str]:
        result = PrimerResult(
            text=text, sections=(), tokens=0, budget=50, omitted=omitted, took_ms=0.0
        )
        return _render.primer_notes(result)

    no_room = "USER.md: no room in a 50-token budget; a budget of 76 tokens shows some of it"
    assert notes("", no_room, "PROJECT.md: still the template", "memory/x.md: no room in a "
                 "50-token budget; a budget of 58 tokens shows some of it") == [
        "(nothing fitted in a 50-token budget, but the memory files are not empty: "
        "--budget 58 shows the first of them)",
        "(USER.md left out: no room in a 50-token budget; a budget of 76 tokens shows some of it)",
        "(PROJECT.md left out: still the template)",
        "(memory/x.md left out: no room in a 50-token budget; a budget of 58 tokens shows some "
        "of it)",
    ]  # fmt: skip
    assert notes("", "USER.md: still the template") == [
        "(nothing to start with: the memory files hold no memories yet)",
        "(USER.md left out: still the template)",
    ]
    assert notes("## User (USER.md)\n- Wei", "PROJECT.md: missing") == [
        "(PROJECT.md left out: missing)"
    ]
    assert notes("## User (USER.md)\n- Wei") == []


def test_keyword_segments_too_small_to_merge_are_not_called_merged() -> None:
    """ "8 segments (merged)" read as a contradiction to a user."""
    from omem_client import _render
    from omem_protocol import KeywordIndexStatus

    assert _render._keyword_line(KeywordIndexStatus("merged", 1)) == "1 segment (merged)"
    many = _render._keyword_line(KeywordIndexStatus("merged", 8))
    assert many == "8 segments (none worth merging)"
    waiting = _render._keyword_line(KeywordIndexStatus("waiting", 8))
    assert waiting == "8 segments (will merge once indexing settles)"
