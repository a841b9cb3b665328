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

    clock = iter([100.0, 110.0])
    monkeypatch.setattr(_render.time, "monotonic", lambda: next(clock))
    bar = _render.ProgressBar(enabled=True)  # started at t=100
    bar.update(Progress(id=1, done=25, total=100, phase="index"))  # t=110: 10 s for 25%
    bar.finish()
    shown = capsys.readouterr().err
    assert "[#######-----------------------] 25/100 index" in shown
    assert "elapsed 0:10 · eta 0:30" in shown
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
