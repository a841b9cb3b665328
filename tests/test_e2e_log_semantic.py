"""End to end with the real default embedder: what `log`'s thresholds mean on e5.

multilingual-e5-small rates unrelated texts 0.75–0.8 and "I prefer dark
mode" against "I prefer light mode" 0.986, so its raw cosine cannot tell a
repetition from a changed detail. These pairs pin the calibration the
docs/cli.md documents: the rescaled cosine and the word overlap must both reach
0.92 for a reinforcement, and no number, name or negation may differ; either
reaching 0.85 is a possible conflict.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import Daemon, Env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def semantic(env: Env) -> Iterator[Daemon]:
    env.write_config("")  # defaults: embedding provider "auto" -> the local model
    handle = Daemon(env).start()
    try:
        yield handle
    finally:
        handle.stop()


def log(daemon: Daemon, text: str) -> dict[str, Any]:
    result = daemon.cli("--timeout", "120", "log", "--json", text)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_e5_pairs_land_on_the_right_side_of_the_thresholds(semantic: Daemon) -> None:
    first = log(semantic, "I prefer dark mode in every editor")
    assert first["status"] == "written"
    assert first["similarity_method"] == "vector+lexical"

    same = log(semantic, "i prefer dark mode in every editor.")
    assert same["status"] == "reinforced"
    assert same["similar"]["cosine"] > 0.97

    flipped = log(semantic, "I prefer light mode in every editor")
    assert flipped["status"] == "conflict"  # e5 alone would call it the same memory
    assert flipped["similar"]["cosine"] > 0.95
    assert flipped["similar"]["lexical"] < 0.92

    topic = log(semantic, "I use Neovim with the gruvbox colour scheme")
    assert topic["status"] == "written"  # same topic, another memory

    assert log(semantic, "We decided to use Postgres 16 for the staging cluster")["status"] == (
        "written"
    )
    changed = log(semantic, "We decided to use MySQL 8 for the staging cluster")
    assert changed["status"] == "conflict"
    assert changed["similar"]["similarity"] >= 0.85

    assert log(semantic, "我喜欢用 Neovim 写代码")["status"] == "written"
    assert log(semantic, "写代码我喜欢用 Neovim")["status"] == "reinforced"
    unrelated = log(semantic, "Caroline went hiking in the Alps last summer")
    assert unrelated["status"] == "written"


def test_a_huge_line_in_memory_does_not_hold_up_log_or_capture(semantic: Daemon) -> None:
    # A document pasted as one line once made every later `log` wait minutes
    # for the embedder to read all of it (about 3 s per 10,000 characters).
    huge = "Очень длинная заметка про архитектуру и базу данных. " * 8000  # 420 KB
    with semantic.client() as client:
        client.append(huge, path="MEMORY.md")
        client.sync()
    started = time.monotonic()
    logged = semantic.cli(
        "--timeout", "60", "log", "--json", "Мы решили хранить архитектурные заметки в базе данных"
    )
    assert logged.returncode in (0, 1), logged.stderr
    assert json.loads(logged.stdout)["status"] == "written"
    captured = semantic.cli(
        "--timeout",
        "60",
        "capture",
        "--json",
        stdin=json.dumps(
            [{"role": "user", "content": "Запомни: заметки про архитектуру лежат в базе данных"}]
        ),
    )
    assert captured.returncode == 0, captured.stderr
    assert time.monotonic() - started < 60


def test_e5_calls_a_changed_fact_a_repeat_and_the_details_do_not(semantic: Daemon) -> None:
    # e5 and word overlap both put these pairs past 0.92: only the changed
    # number, name or negation keeps the new fact from being dropped.
    tls = "我们决定 TLS 证书每 90 天轮换一次"
    assert log(semantic, tls)["status"] == "written"
    days = log(semantic, "我们决定 TLS 证书每 30 天轮换一次")
    assert days["status"] == "conflict"
    assert days["similar"]["similarity"] >= 0.92
    assert days["similar"]["lexical"] >= 0.92
    assert any("differing in 90 → 30" in reason for reason in days["reasons"])
    subjectless = log(semantic, "决定 TLS 证书每 90 天轮换一次")
    assert subjectless["status"] == "reinforced"  # 0.90 in words: the subject left out

    editor = "我喜欢用 Neovim 写代码，不喜欢 VS Code"
    assert log(semantic, editor)["status"] == "written"
    emacs = log(semantic, "我喜欢用 Emacs 写代码，不喜欢 VS Code")
    assert emacs["status"] == "conflict"
    assert emacs["similar"]["similarity"] >= 0.92
    negated = log(semantic, "我喜欢用 Neovim 写代码，喜欢 VS Code")
    assert negated["status"] == "conflict"
    assert log(semantic, "我喜欢用 neovim 写代码, 不喜欢 vs code")["status"] == "reinforced"

    assert log(semantic, "I prefer Neovim for writing code")["status"] == "written"
    assert log(semantic, "I prefer Emacs for writing code")["status"] == "conflict"


def test_capture_keeps_a_fact_whose_detail_changed(semantic: Daemon) -> None:
    """capture skips a message nearly the same by meaning (e5 cosine ≥ 0.95)
    as a remembered line; "every 30 days" after "every 90 days" scores 0.98
    and is the newer fact, not a repeat."""
    with semantic.client(timeout=120) as client:
        first = client.capture([{"role": "user", "content": "我们决定 TLS 证书每 90 天轮换一次"}])
        assert len(first.captured) == 1
        again = client.capture([{"role": "user", "content": "我们决定 TLS 证书每 90 天轮换一次。"}])
        assert [r.reason for r in again.rejected] == ["duplicate"], again
        changed = client.capture([{"role": "user", "content": "我们决定 TLS 证书每 30 天轮换一次"}])
        assert len(changed.captured) == 1, changed
