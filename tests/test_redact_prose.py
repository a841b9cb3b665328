"""Masking passwords as people write them: in quotes, as a passcode or a pwd.

A password said in words is often quoted ("the password is “hunter2”",
密码是“…”, пароль: «…»), and a quoted password may hold spaces ("correct
horse"): the mask must take it to its closing quote, or the rest is left
readable. ``passcode`` and ``pwd`` name passwords as ``password`` does. Talk
about passwords (a policy, a length, where one is kept) and the shell's
``PWD`` stay as written. The wider promises are in `test_redact`.
"""

from __future__ import annotations

import time

import pytest

from openmemoryd.text.redact import redact_secrets


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # English: typographic and ASCII quotes, a password with spaces in it
        ("password is “hunter2”", "password is ***"),
        ("password is ‘hunter2’", "password is ***"),
        ('the password is "correct horse"', "the password is ***"),
        ("the password is 'correct horse battery'", "the password is ***"),
        ("the password is ‘correct horse’ — keep it", "the password is *** — keep it"),
        ('my password is "hunter2" and my pin is 4821', "my password is *** and my pin is ***"),
        ("Passcode is “1234”", "Passcode is ***"),
        ("password = «correct horse»", "password = ***"),
        # Chinese
        ("密码是“hunter2”", "密码是***"),
        ('密码是"correct horse"', "密码是***"),
        ("密码：「correct horse」", "密码：***"),
        ("密碼是『正確的馬』，别外传", "密碼是***，别外传"),
        ("数据库密码：“正确 马”", "数据库密码：***"),
        # Russian
        ("пароль: «hunter2»", "пароль: ***"),
        ('пароль: "hunter2"', "пароль: ***"),
        ("пароль — «правильная лошадь»", "пароль — ***"),
        ("пароль от почты: «котик 123»", "пароль от почты: ***"),
        ("пароль: „correct horse“", "пароль: ***"),
    ],
)
def test_a_quoted_password_is_masked_whole(text: str, expected: str) -> None:
    assert redact_secrets(text) == expected
    assert redact_secrets(expected) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # an assignment keeps its quotes, typographic ones too, as it keeps "…"
        ("password: “correct horse”", "password: “***”"),
        ('password: "correct horse"', 'password: "***"'),
        ("API_KEY=«abc def»", "API_KEY=«***»"),
        ("--password “a b c”", "--password “***”"),
        # an unclosed quote still masks what follows it
        ("password: “hunter2", "password: ***"),
    ],
)
def test_an_assigned_value_in_typographic_quotes_is_masked_to_its_closing_quote(
    text: str, expected: str
) -> None:
    assert redact_secrets(text) == expected
    assert redact_secrets(expected) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("passcode: 1234", "passcode: ***"),
        ("PASSCODE=9f8e7d", "PASSCODE=***"),
        ("pwd=abc", "pwd=***"),
        ("pwd: abc", "pwd: ***"),
        ('{"pwd": "abc", "user": "me"}', '{"pwd": "***", "user": "me"}'),
        ("DB_PWD=/s3cr3t", "DB_PWD=***"),
        ("the pwd is abc123", "the pwd is ***"),
        # the same said in Chinese and Russian
        ("密码：1234", "密码：***"),
        ("口令=abc", "口令=***"),
        ("пароль: 1234", "пароль: ***"),
        ("пин-код — 4821", "пин-код — ***"),
    ],
)
def test_passcode_and_pwd_name_a_password(text: str, expected: str) -> None:
    assert redact_secrets(text) == expected
    assert redact_secrets(expected) == expected


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("the password is “correct horse battery staple”", "correct horse battery staple"),
        ('the password is "correct horse"', "correct horse"),
        ("密码是“correct horse”", "correct horse"),
        ("пароль: «правильная лошадь»", "правильная лошадь"),
        ("password: “correct horse”", "correct horse"),
        ("pwd=Tr0ub4dor", "Tr0ub4dor"),
    ],
)
def test_no_character_of_a_quoted_password_is_left(text: str, secret: str) -> None:
    masked = redact_secrets(text)
    assert "***" in masked
    assert not any(secret[i : i + 3] in masked for i in range(len(secret) - 2)), masked


@pytest.mark.parametrize(
    "text",
    [
        # talk about passwords, in three languages
        "the password policy requires 12 characters",
        "the passcode policy requires 6 digits",
        "password: see the vault",
        "passcode: see the vault",
        "passwords: 3 stored",
        "пароль — 12 символов",
        "пароль — в заметках",
        "пароль: см. в хранилище",
        "密码为12位，必须包含数字",
        "密码规则要求12位",
        "密码：见保险库",
        # the shell's working directory, and pwd as a type or a command
        "PWD=/home/me",
        "OLDPWD=~/src PWD=/srv/app",
        "pwd: /srv/app",
        "$ pwd\n/home/me",
        "pwd: str = os.getcwd()",
        # quotes around what is not a password
        'The "password" field is required.',
        "The «password» field is required.",
        "“密码”字段是必填的",
    ],
)
def test_talk_about_passwords_is_left_alone(text: str) -> None:
    assert redact_secrets(text) == text


def test_unclosed_quotes_stay_linear() -> None:
    """Quotes never closed cost a bounded look ahead each, not a quadratic scan."""
    near_misses = [
        "password: “" * 60_000,
        'the password is "' * 40_000,
        "密码是“" * 150_000,
        "пароль: «" * 60_000,
        "PWD=/" * 150_000,
        "PWD=/a:" * 100_000,
        "password is “" + "a" * 500_000,
    ]
    for text in near_misses:
        started = time.perf_counter()
        redact_secrets(text)
        assert time.perf_counter() - started < 5.0, text[:20]
