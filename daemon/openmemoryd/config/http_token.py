"""Which bearer tokens the HTTP API can accept: visible ASCII, nothing else.

A client sends the token in an ``Authorization`` header. HTTP carries
header values as bytes that servers read as Latin-1, and most clients
(Python's http.client, requests, browsers' fetch) refuse to send anything
outside Latin-1 at all; a token such as ``s3cret-тест`` would be accepted at
start-up and then never match, so the user would be told that their correct
token is wrong. Spaces and control characters would be cut or mangled on the
way the same way. So a token is refused where it is configured, naming the
setting, and never echoed (not even the offending character: it is part of a
secret).

Visible ASCII (``!`` to ``~``) rather than RFC 6750's narrower token68
alphabet (letters, digits, ``-._~+/`` and trailing ``=``): every client
sends it unchanged, and a token with ``!`` or ``@`` that works today keeps
working.
"""

from __future__ import annotations

from openmemoryd.errors import ConfigError

__all__ = ["check_http_token"]


def check_http_token(token: str, setting: str) -> None:
    """Raise `ConfigError` naming *setting* unless *token* (already stripped of
    surrounding whitespace) is visible ASCII; the empty token (none) passes."""
    bad = next((i for i, char in enumerate(token) if not "!" <= char <= "~"), None)
    if bad is None:
        return
    raise ConfigError(
        f"{setting}: the HTTP bearer token must be visible ASCII characters (letters, digits "
        f"and punctuation, no spaces), but its character {bad + 1} is not; clients send the "
        "token in an HTTP header, where it would not arrive as written, so it could never "
        "match. Choose another, e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
    )
