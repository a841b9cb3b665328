"""SIGHUP: the safe part of a changed config applies at once, the rest waits
for a restart, and a broken config changes nothing."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from conftest import KEYWORD_ONLY, Daemon, Env
from openmemoryd.config.reload import plan_reload


def test_plan_splits_reloadable_from_restart_only(env: Env) -> None:
    running = env.config()
    env.write_config(
        KEYWORD_ONLY
        + "\n[search]\nlimit = 2\n[recall]\nmin_score = 0.5\n[index]\nchunk_tokens = 300\n"
        + '[embedding.openai]\napi_key = "sk-secret-value"\n'
    )
    loaded = env.config()
    plan = plan_reload(running, loaded)
    assert [str(c) for c in plan.applied] == ["search.limit 6 -> 2", "recall.min_score 0.3 -> 0.5"]
    assert [c.key for c in plan.needs_restart] == ["index.chunk_tokens", "embedding.openai.api_key"]
    assert "sk-secret" not in " ".join(map(str, plan.needs_restart))
    assert plan.config.search.limit == 2
    assert plan.config.index == running.index  # not applied


def wait_for_log(daemon: Daemon, text: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = daemon.log()
        if text in log:
            return log
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never logged:\n{daemon.log()}")


def test_sighup_applies_search_defaults_and_keeps_serving(daemon: Daemon, tmp_path: Path) -> None:
    with daemon.client() as client:
        for i in range(4):
            client.append(f"oolong note {i}", path=f"memory/tea-{i}.md")
        assert len(client.search("oolong").results) == 4
        daemon.env.write_config(KEYWORD_ONLY + "\n[search]\nlimit = 2\n[sync]\ndebounce_ms = 99\n")
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGHUP)
        log = wait_for_log(daemon, "SIGHUP: applied search.limit 6 -> 2")
        assert "not applied until a restart: sync.debounce_ms 1500 -> 99" in log
        assert len(client.search("oolong").results) == 2

        daemon.env.write_config("[search]\nlimit = -5\n")
        daemon.proc.send_signal(signal.SIGHUP)
        log = wait_for_log(daemon, "SIGHUP: the config did not load, nothing changed")
        assert "$.search.limit" in log
        assert len(client.search("oolong").results) == 2  # still the last good config
        assert daemon.proc.poll() is None
