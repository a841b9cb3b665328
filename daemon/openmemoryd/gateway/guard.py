"""Who may talk to the HTTP API: the DNS-rebinding guard and the bearer token.

A web page the user visits can make the browser send requests to
127.0.0.1 — directly, or through a DNS name it re-points at 127.0.0.1
("DNS rebinding"). Such requests carry the page's name in ``Host`` and its
origin in ``Origin``; a local agent's requests carry a loopback ``Host`` and
no (or a loopback) ``Origin``. So every request whose ``Host`` or ``Origin``
is not loopback (or explicitly allowed) is refused before anything else
happens. The token is compared in constant time and never echoed.
"""

from __future__ import annotations

import hmac
from collections.abc import Collection
from urllib.parse import urlsplit

from openmemoryd.gateway.address import is_loopback_host


def host_problem(host: str | None, allowed: Collection[str]) -> str | None:
    """Why a ``Host`` header is refused, or None when it is fine."""
    if host is None or not host.strip():
        return "a Host header is required"
    name = _strip_port(host.strip().lower())
    if is_loopback_host(name) or name in allowed:
        return None
    return "the Host header must name this machine's loopback address (localhost, 127.0.0.1, [::1])"


def origin_problem(origin: str | None, allowed: Collection[str]) -> str | None:
    """Why an ``Origin`` header is refused; a missing one is fine (not a browser)."""
    if origin is None:
        return None
    try:
        parts = urlsplit(origin.strip())
        name = (parts.hostname or "").lower()
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return "the Origin header is not a valid origin"
    if parts.scheme in ("http", "https") and name and (is_loopback_host(name) or name in allowed):
        return None
    return "requests from web pages on other origins are refused"


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None when there
    is no header, it names another scheme (``Basic ...``) or carries no token.
    RFC 6750 treats those alike: the client did not try a bearer token, so it
    is told one is required, not that its token is wrong."""
    if authorization is None:
        return None
    scheme, _, given = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return None
    return given.strip()


def token_matches(expected: str, authorization: str | None) -> bool:
    """``Authorization: Bearer <expected>``, compared in constant time."""
    given = bearer_token(authorization)
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _strip_port(host: str) -> str:
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end != -1 else host
    name, sep, port = host.rpartition(":")
    return name if sep and port.isdigit() else host
