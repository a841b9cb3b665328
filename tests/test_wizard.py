"""`openmemoryd init` / `configure`: the questions, the config they write, and
the real wizard in a real pseudo-terminal feeding a real daemon."""

from __future__ import annotations

import json
import os
import pty
import select
import stat
import subprocess
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.conftest import Daemon, Env, run_openmemoryd
from tests.fake_embedding_servers import FakeEmbeddingServer

from openmemoryd.config import EmbeddingSettings, RemoteSettings
from openmemoryd.errors import ConfigError
from openmemoryd.wizard import McpHosts, Option, Preset, run_configure, run_init
from openmemoryd.wizard.config_file import update_config
from openmemoryd.wizard.prompts import _pick
from openmemoryd.wizard.questions import EmbeddingAnswers, ask_embedding


class Scripted:
    """A person who gives these answers, in order, and hears everything said."""

    def __init__(self, *answers: str) -> None:
        self.answers = deque(answers)
        self.asked: list[str] = []
        self.heard: list[str] = []

    def say(self, text: str = "") -> None:
        self.heard.append(text)

    def _next(self, question: str, default: str) -> str:
        self.asked.append(question)
        answer = self.answers.popleft()
        return default if answer == "" else answer

    def text(self, question: str, default: str) -> str:
        return self._next(question, default)

    def choose(self, question: str, options: Sequence[Option], default: str) -> str:
        answer = self._next(question, default)
        assert answer in {option.value for option in options}, (question, answer)
        return answer

    def secret(self, question: str) -> str:
        return self._next(question, "")


def _unreachable(url: str) -> str | None:
    return "ConnectError"


def _init(env: Env, person: Scripted) -> list[str]:
    out: list[str] = []
    run_init(
        env.config(),
        person,
        out.append,
        interactive=True,
        preset=Preset(),
        # env.vars: never the user's own config home; no keys from this machine.
        environ={k: v for k, v in env.vars.items() if not k.endswith("_API_KEY")},
        probe=_unreachable,
        # nor their Cursor: its question comes only where ~/.cursor exists
        hosts=McpHosts(home=env.root / "home"),
    )
    return out


# ---------------------------------------------------------------- questions


def test_enter_everywhere_gives_the_bundled_local_model(env: Env) -> None:
    env.config_file.unlink()
    person = Scripted("", "", "")
    out = _init(env, person)
    assert person.asked == ["Workspace directory", "Embedding provider", "Local model"]
    text = env.config_file.read_text()
    assert 'provider = "local"' in text
    assert "model" not in text  # the default model is left to the daemon
    assert (env.workspace / "MEMORY.md").is_file()
    assert "Embedding: local (multilingual-e5-small, the default)" in out
    assert any(line.startswith("Config:") and "(created)" in line for line in out)


def test_with_cursor_installed_init_offers_to_register_the_bridge(env: Env) -> None:
    cursor = env.root / "home" / ".cursor"
    cursor.mkdir(parents=True)
    person = Scripted("", "", "")  # Enter everywhere: yes
    out = _init(env, person)
    assert person.asked[:2] == ["Workspace directory", "Embedding provider"]
    assert person.asked[2].startswith("Add openmemory to Cursor's MCP servers (")
    assert person.asked[2].endswith(".cursor/mcp.json)?")
    entry = json.loads((cursor / "mcp.json").read_text())["mcpServers"]["openmemory"]
    assert entry["args"] == ["--socket", str(env.socket), "mcp"]
    assert any(line.startswith("  ✓ Added Cursor's MCP servers:") for line in out)

    (cursor / "mcp.json").unlink()
    no = Scripted("", "", "no")
    _init(env, no)
    assert no.asked[2].startswith("Add openmemory to Cursor's MCP servers"), no.asked
    assert not (cursor / "mcp.json").exists()


def test_a_relative_workspace_answer_is_made_absolute(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The config resolves relative paths against its own directory; the
    # wizard creates the workspace now, relative to where it runs.
    monkeypatch.chdir(tmp_path)
    env.config_file.unlink()
    _init(env, Scripted("notes/ws", "none"))
    assert (tmp_path / "notes" / "ws" / "MEMORY.md").is_file()
    assert f'workspace = "{tmp_path / "notes" / "ws"}"' in env.config_file.read_text()


def test_a_hosted_provider_asks_for_the_key_and_keeps_it_private(env: Env) -> None:
    person = Scripted("", "openai", "", "text-embedding-3-large", "sk-test-secret")
    out = _init(env, person)
    assert person.asked[-1].startswith("API key (Enter to set OPENAI_API_KEY later)")
    text = env.config_file.read_text()
    assert 'api_key = "sk-test-secret"' in text
    assert 'model = "text-embedding-3-large"' in text
    assert "base_url" not in text  # the vendor's own URL is the default
    assert stat.S_IMODE(env.config_file.stat().st_mode) == 0o600
    assert not any("sk-test-secret" in line for line in out)


def test_a_key_already_in_the_environment_is_not_asked_for(env: Env) -> None:
    answers = ask_embedding(
        Scripted("gemini", ""), EmbeddingSettings(), {"GEMINI_API_KEY": "k"}, probe=_unreachable
    )
    assert answers == EmbeddingAnswers(provider="gemini", model="gemini-embedding-001")


def test_no_key_at_all_is_a_note_not_a_failure() -> None:
    answers = ask_embedding(Scripted("voyage", "", ""), EmbeddingSettings(), {})
    assert answers.api_key == ""
    assert answers.notes == ("no API key yet: set VOYAGE_API_KEY before starting the daemon",)


def test_ollama_offers_its_models_and_says_when_it_is_down() -> None:
    person = Scripted("ollama", "http://127.0.0.1:9", "other", "bge-m3")
    answers = ask_embedding(person, EmbeddingSettings(), {}, probe=_unreachable)
    assert person.asked == [
        "Embedding provider",
        "Ollama base URL",
        "Ollama embedding model",
        "Model name",
    ]
    assert (answers.provider, answers.model, answers.base_url) == (
        "ollama",
        "bge-m3",
        "http://127.0.0.1:9",
    )
    assert "Ollama is not reachable at http://127.0.0.1:9" in answers.notes[0]


def test_the_current_config_is_the_default_answer() -> None:
    current = EmbeddingSettings(
        provider="ollama",
        ollama=RemoteSettings(base_url="http://10.0.0.2:11434", model="mxbai-embed-large"),
    )
    answers = ask_embedding(Scripted("", "", ""), current, {}, probe=lambda url: None)
    assert answers == EmbeddingAnswers(
        provider="ollama", model="mxbai-embed-large", base_url="http://10.0.0.2:11434"
    )


def test_flags_answer_their_questions() -> None:
    person = Scripted()
    answers = ask_embedding(person, EmbeddingSettings(), {}, provider="none", model=None)
    assert (answers.provider, person.asked) == ("none", [])


def test_a_menu_takes_a_number_or_a_name() -> None:
    options = [Option("local", "Local"), Option("ollama", "Ollama")]
    assert _pick("2", options) == "ollama"
    assert _pick("OLLAMA", options) == "ollama"
    assert _pick("3", options) is None
    assert _pick("gpt", options) is None


# ---------------------------------------------------------------- the config file


def test_editing_keeps_comments_and_other_sections(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    original = (
        "# my notes about this setup\n"
        "[search]\nlimit = 9  # more results\n\n"
        '[embedding]\nprovider = "local"\nmodel = "all-minilm-l6-v2"\n'
    )
    path.write_text(original)
    update = update_config(path, embedding=EmbeddingAnswers(provider="openai", model="m"))
    text = path.read_text()
    assert "# my notes about this setup" in text
    assert "limit = 9  # more results" in text
    assert 'provider = "openai"' in text
    assert 'model = "all-minilm-l6-v2"' not in text  # it would override openai's model
    assert update.changed
    assert update.backup is not None
    assert update.backup.read_text() == original


def test_the_same_answers_twice_change_nothing(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    answers = EmbeddingAnswers(provider="ollama", model="nomic-embed-text")
    assert update_config(path, embedding=answers).created
    assert not update_config(path, embedding=answers).changed
    assert not path.with_name("config.toml.bak").exists()


def test_answers_that_would_break_the_config_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[embedding]\nprovider = "none"\n')
    with pytest.raises(ConfigError, match="would be invalid"):
        update_config(path, embedding=EmbeddingAnswers(provider="word2vec"))
    assert path.read_text() == '[embedding]\nprovider = "none"\n'


def test_configure_touches_only_the_embedding(env: Env) -> None:
    env.write_config('workspace = "/somewhere"\n[embedding]\nprovider = "none"\n')
    out: list[str] = []
    run_configure(
        env.config(),
        Scripted(),
        out.append,
        preset=Preset(provider="local", model="all-minilm-l6-v2"),
        environ=env.vars,
    )
    text = env.config_file.read_text()
    assert text.startswith('workspace = "/somewhere"\n')
    assert 'provider = "local"\nmodel = "all-minilm-l6-v2"' in text


# ---------------------------------------------------------------- the command


def test_init_without_a_terminal_keeps_an_existing_config(env: Env) -> None:
    before = env.config_file.read_bytes()
    result = run_openmemoryd(env, "init")
    assert result.returncode == 0, result.stderr
    assert "(kept as it is)" in result.stdout
    assert env.config_file.read_bytes() == before


def test_init_without_a_terminal_writes_the_defaults_when_there_is_no_config(env: Env) -> None:
    env.config_file.unlink()
    result = run_openmemoryd(env, "init")
    assert result.returncode == 0, result.stderr
    assert "?" not in result.stdout  # nothing was asked
    text = env.config_file.read_text()
    assert f'workspace = "{env.workspace}"' in text
    assert 'provider = "local"' in text


def test_configure_without_a_terminal_needs_a_provider(env: Env) -> None:
    result = run_openmemoryd(env, "configure")
    assert result.returncode == 2
    assert "needs a terminal, or --provider" in result.stderr
    bad = run_openmemoryd(env, "configure", "--provider", "word2vec")
    assert bad.returncode == 2
    assert "unknown provider 'word2vec'" in bad.stderr


# ---------------------------------------------------------------- a real terminal


class Terminal:
    """`openmemoryd ARGS` on a pseudo-terminal, answered like a person would."""

    def __init__(self, env: Env, *args: str) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "openmemoryd", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env.vars, "TERM": "dumb", "COLUMNS": "120", "HOME": str(env.root / "home")},
            close_fds=True,
        )
        os.close(slave)
        self.screen = ""

    def expect(self, text: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"never saw {text!r}; the screen:\n{self.screen}")
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # EIO: the program exited
                    chunk = b""
                if not chunk and self.proc.poll() is not None:
                    pytest.fail(f"exited before {text!r}; the screen:\n{self.screen}")
                self.screen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")

    def answer(self, prompt: str, text: str) -> None:
        self.expect(prompt)
        self.screen = self.screen.split(prompt, 1)[1]
        os.write(self.master, text.encode() + b"\r")

    def finish(self) -> int:
        self.expect("Next steps:" if "init" in self.proc.args else "Embedding:")  # type: ignore[operator]
        code = self.proc.wait(timeout=30)
        os.close(self.master)
        return code


@pytest.mark.e2e
def test_the_wizard_in_a_terminal_sets_up_a_daemon_that_uses_the_answers(env: Env) -> None:
    env.config_file.unlink()
    with FakeEmbeddingServer(dims=8) as ollama:
        terminal = Terminal(env, "init")
        terminal.answer("? Workspace directory", "")
        terminal.answer("choice [1]:", "2")  # Ollama
        terminal.answer("? Ollama base URL", ollama.url)
        terminal.answer("choice [1]:", "")  # nomic-embed-text
        terminal.expect(f"Ollama reachable ({ollama.url})")
        assert terminal.finish() == 0
        text = env.config_file.read_text()
        assert 'provider = "ollama"' in text
        assert f'base_url = "{ollama.url}"' in text

        (env.workspace / "memory" / "2026-11-01.md").write_text("# Notes\n\nthe kettle whistles\n")
        daemon = Daemon(env).start()
        try:
            assert daemon.cli("sync").returncode == 0
            status = json.loads(daemon.cli("status", "--json").stdout)
            assert (status["provider"], status["model"]) == ("ollama", "nomic-embed-text")
            assert any("the kettle whistles" in t for batch in ollama.inputs() for t in batch)
        finally:
            daemon.stop()

    terminal = Terminal(env, "configure")
    terminal.answer("choice [2]:", "none")  # the current provider is the default
    assert terminal.finish() == 0
    assert 'provider = "none"' in env.config_file.read_text()
    daemon = Daemon(env).start()
    try:
        status = json.loads(daemon.cli("status", "--json").stdout)
        assert status["vector"] is False
    finally:
        daemon.stop()
