"""End to end with the real default embedder: the first hits are ordered by
the second estimate (`search.head_estimate`), in three languages.

Each language has two notes that answer the same question: one holds the
question's words spread over four lines, and both legs rank it first; the
other holds them together on one line. The first estimate puts the spread
note first; the second, which weighs words together on a line more and a
leg's rank less, puts the other first. A reload that turns it off brings
the first order back.
"""

from __future__ import annotations

import json
import signal

import pytest

from conftest import Daemon, Env
from test_e2e_semantic import wait_for_vectors
from test_reload import wait_for_log

pytestmark = pytest.mark.e2e

# language: (query, the note with the words spread, the note with them together)
CASES = {
    "en": (
        "Which tea does Wei brew in the morning?",
        "- Wei came by the office this morning, tea in hand\n"
        "- we talked about tea and her new kettle\n"
        "- she wants to brew it herself from now on\n"
        "- and to brew a pot every morning",
        "- Wei brews oolong tea every morning",
    ),
    "zh": (
        "魏早上用紫砂壶泡什么茶？",
        "- 魏早上来办公室，说起紫砂壶\n- 我们聊了紫砂壶泡茶\n"
        "- 她想以后用紫砂壶\n- 魏说早上泡什么茶都好",
        "- 魏每天早上用紫砂壶泡乌龙茶",
    ),
    "ru": (
        "Какой чай Вэй заваривает по утрам?",
        "- Вэй зашла утром в офис, с чаем в руке\n"
        "- мы говорили про чай и её новый чайник\n"
        "- она хочет сама заваривать\n"
        "- и заваривать чайник каждое утро",
        "- Вэй по утрам заваривает чай улун",
    ),
}
SPREAD, TOGETHER = "2026-11-10.md", "2026-11-12.md"


def _first_two(daemon: Daemon, query: str) -> list[str]:
    result = daemon.cli("search", query, "--json")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)["results"]
    scores = [hit["score"] for hit in hits]
    assert scores == sorted(scores, reverse=True), hits
    return [hit["path"] for hit in hits[:2]]


def _explained(daemon: Daemon, query: str) -> str:
    """The first line of `search --explain`: how the scores were made."""
    result = daemon.cli("search", query, "--explain")
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[0]


def test_the_second_estimate_orders_the_first_hits_in_three_languages(env: Env) -> None:
    env.write_config("")  # the defaults, with the bundled local model
    for language, (_, spread, together) in CASES.items():
        folder = env.workspace / "memory" / language
        folder.mkdir(parents=True)
        (folder / SPREAD).write_text(spread + "\n")
        (folder / TOGETHER).write_text(together + "\n")
    (env.workspace / "memory" / "2026-11-13.md").write_text(
        "- Lunch with Oleg, we talked about the billing migration\n"
    )
    daemon = Daemon(env).start()
    try:
        wait_for_vectors(daemon)
        for language, (query, _, _) in CASES.items():
            expected = [f"memory/{language}/{TOGETHER}", f"memory/{language}/{SPREAD}"]
            assert _first_two(daemon, query) == expected, language
        header = _explained(daemon, CASES["en"][0])
        assert "and neighbouring chunks; the first three re-estimated" in header, header

        env.write_config("[search]\nhead_estimate = false\n")
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGHUP)
        wait_for_log(daemon, "SIGHUP: applied search.head_estimate True -> False")
        for language, (query, _, _) in CASES.items():
            expected = [f"memory/{language}/{SPREAD}", f"memory/{language}/{TOGETHER}"]
            assert _first_two(daemon, query) == expected, language
        header = _explained(daemon, CASES["en"][0])
        assert header.endswith("and neighbouring chunks; decay off; MMR off"), header
    finally:
        daemon.stop()
