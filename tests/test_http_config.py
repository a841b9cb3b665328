"""`[http]`: the listen address, remote exposure and the token's sources."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from conftest import Env
from openmemoryd.config import HttpSettings, Overrides, load_config
from openmemoryd.config.reload import plan_reload
from openmemoryd.errors import ConfigError
from openmemoryd.gateway import TOKEN_ENV, ListenAddress, parse_listen, plan_gateway
from openmemoryd.gateway.guard import bearer_token, host_problem, origin_problem, token_matches


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8787", ListenAddress("127.0.0.1", 8787)),
        ("localhost:0", ListenAddress("127.0.0.1", 0)),
        ("[::1]:9000", ListenAddress("::1", 9000)),
        (" 0.0.0.0:80 ", ListenAddress("0.0.0.0", 80)),
    ],
)
def test_parse_listen(text: str, expected: ListenAddress) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("8787", "must be HOST:PORT"),
        ("127.0.0.1:http", "port must be 0-65535"),
        ("127.0.0.1:70000", "port must be 0-65535"),
        ("::1:8787", "in brackets"),
        ("example.com:8787", "IP address or localhost"),
    ],
)
def test_parse_listen_refuses(text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_listen(text)


def test_url_brackets_ipv6() -> None:
    assert ListenAddress("::1", 1).url == "http://[::1]:1"


def test_non_loopback_needs_allow_remote_and_a_token() -> None:
    with pytest.raises(ConfigError, match="allow_remote = true"):
        plan_gateway(HttpSettings(listen="0.0.0.0:8787"), {})
    with pytest.raises(ConfigError, match="so remote clients must authenticate"):
        plan_gateway(HttpSettings(listen="0.0.0.0:8787", allow_remote=True), {})
    plan = plan_gateway(
        HttpSettings(listen="192.0.2.7:8787", allow_remote=True, allowed_hosts=("Box.LAN",)),
        {TOKEN_ENV: "t0k"},
    )
    assert plan.token == "t0k"
    assert plan.allowed_hosts == {"box.lan", "192.0.2.7"}


def test_token_sources_in_the_api_key_order() -> None:
    env = {TOKEN_ENV: "from-default-var", "MY_TOKEN": "from-named-var"}
    assert plan_gateway(HttpSettings(), {}).token is None
    assert plan_gateway(HttpSettings(), env).token == "from-default-var"
    assert plan_gateway(HttpSettings(token_env="MY_TOKEN"), env).token == "from-named-var"
    assert plan_gateway(HttpSettings(token=" inline ", token_env="MY_TOKEN"), env).token == "inline"
    # a token_env that names nothing must not quietly turn authentication off
    with pytest.raises(ConfigError, match="MY_TOKEN, which is not set") as caught:
        plan_gateway(HttpSettings(token_env="MY_TOKEN"), {})
    assert "from-" not in str(caught.value)
    assert "inline" not in repr(plan_gateway(HttpSettings(token="inline"), {}))


@pytest.mark.parametrize("token", ["s3cret-тест", "пароль", "ab cd", "tab\tin", "ünïcode", "é"])
def test_a_token_no_client_can_send_is_refused_when_the_config_loads(env: Env, token: str) -> None:
    """A header carries Latin-1 bytes; such a token was accepted and then never
    matched, so the right token was answered "wrong"."""
    env.write_config("[http]\ntoken = " + json.dumps(token) + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(Overrides(), env.vars)
    message = str(caught.value)
    assert message.startswith(f"invalid config file {env.config_file}: $.http.token: ")
    assert "must be visible ASCII" in message
    assert token not in message
    assert token.split("-")[0] not in message  # no part of the secret either


@pytest.mark.parametrize("token", ["s3cret!@#$%^&*()[]{}<>?,.;:|~`'\\", "  padded  ", "A" * 200])
def test_visible_ascii_tokens_still_work(env: Env, token: str) -> None:
    env.write_config("[http]\ntoken = " + json.dumps(token) + "\n")
    config = load_config(Overrides(), env.vars)
    assert plan_gateway(config.http, {}).token == token.strip()


def test_a_token_from_a_variable_is_checked_and_named() -> None:
    with pytest.raises(ConfigError, match=f"^the variable {TOKEN_ENV}: .*visible ASCII"):
        plan_gateway(HttpSettings(), {TOKEN_ENV: "s3cret-тест"})
    with pytest.raises(ConfigError, match=r"^the variable MY_TOKEN \(http\.token_env\): "):
        plan_gateway(HttpSettings(token_env="MY_TOKEN"), {"MY_TOKEN": "a b"})
    with pytest.raises(ConfigError, match=r"^http\.token: "):  # settings built in code
        plan_gateway(HttpSettings(token="тест"), {})
    # the config's token comes first: a variable it overrides is not read
    assert plan_gateway(HttpSettings(token="ok"), {TOKEN_ENV: "тест"}).token == "ok"


def test_config_file_and_flag(env: Env) -> None:
    assert load_config(Overrides(), env.vars).http == HttpSettings()
    env.write_config('[http]\nenabled = true\nlisten = "127.0.0.1:9999"\ntoken_env = "T"\n')
    config = load_config(Overrides(), env.vars)
    assert config.http.enabled
    assert config.http.listen == "127.0.0.1:9999"
    flagged = load_config(Overrides(http="[::1]:7000"), env.vars)
    assert flagged.http.enabled
    assert flagged.http.listen == "[::1]:7000"
    assert flagged.http.token_env == "T"  # the rest of [http] still applies
    env.write_config("[http]\nenable = true\n")
    with pytest.raises(ConfigError, match="enable"):
        load_config(Overrides(), env.vars)


def test_reload_never_logs_the_token(env: Env) -> None:
    config = env.config()
    changed = replace(config, http=msgspec.structs.replace(config.http, token="hunter2"))
    plan = plan_reload(config, changed)
    assert [str(c) for c in plan.needs_restart] == ["http.token '…' -> '…'"]


def test_guard_helpers() -> None:
    assert host_problem(None, ()) == "a Host header is required"
    assert host_problem("127.0.0.5:1", ()) is None
    assert host_problem("[::1]", ()) is None
    assert host_problem("[::2]:80", ()) is not None
    assert host_problem("localhost.:80", ()) is None
    assert origin_problem(None, ()) is None
    assert origin_problem("http://localhost", ()) is None
    assert origin_problem("chrome-extension://localhost", ()) is not None
    assert token_matches("abc", "bearer abc")
    assert not token_matches("abc", "Bearer abd")
    assert not token_matches("abc", None)
    assert not token_matches("abc", "Bearer ab c")
    assert bearer_token("Bearer  abc ") == "abc"
    assert bearer_token("BEARER abc") == "abc"
    for other in (None, "", "Bearer", "Bearer  ", "Basic abc", "abc", "Token abc"):
        assert bearer_token(other) is None, other


def test_the_docs_describe_the_http_api() -> None:
    section = (Path(__file__).parents[1] / "docs" / "http.md").read_text("utf-8")
    assert "curl" in section
    assert "fetch(" in section
    assert "openmemoryd run --http 127.0.0.1:8787" in section
    for key in ("allow_remote", "token_env", TOKEN_ENV):
        assert key in section


def test_the_daemon_imports_hypercorn_only_when_serving_http() -> None:
    import subprocess
    import sys

    code = "import sys, openmemoryd.app, openmemoryd.cli; print('hypercorn' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"
