"""Where the HTTP API listens, who may reach it, and with which token.

Invariants checked before anything binds:

* the listen address is an IP literal or ``localhost`` plus a port; a
  non-loopback address needs ``allow_remote = true`` *and* a token, so the
  memory is never served to the network by accident or without a secret;
* a `token_env` naming an unset variable is a start-up error, not "no token":
  a typo must not silently turn authentication off;
* a token that is not visible ASCII is a start-up error: no client could
  send it in a header, so the right token would be refused as wrong;
* the token itself is only ever held here and in the app; it is never
  formatted into a message.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from openmemoryd.config import HttpSettings, check_http_token
from openmemoryd.errors import ConfigError

TOKEN_ENV: Final = "OPENMEMORY_HTTP_TOKEN"
_LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost."})


@dataclass(frozen=True, slots=True)
class ListenAddress:
    host: str  # an IP literal, without brackets
    port: int

    @property
    def url(self) -> str:
        """The base URL clients use (port 0 is replaced once bound)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class GatewayPlan:
    """The checked `[http]` settings the gateway runs with."""

    address: ListenAddress
    token: str | None = field(repr=False)
    allowed_hosts: frozenset[str] = frozenset()
    max_inflight: int = 64


def is_loopback_host(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ``::1`` (brackets allowed)."""
    name = host.strip().lower()
    if name in _LOOPBACK_NAMES:
        return True
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def parse_listen(text: str) -> ListenAddress:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> `ListenAddress`, or `ConfigError`."""
    raw = text.strip()
    host, sep, port_text = raw.rpartition(":")
    if not sep or not host:
        raise ConfigError(f"http listen address {raw!r} must be HOST:PORT, e.g. 127.0.0.1:8787")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ConfigError(f"http listen address {raw!r}: put an IPv6 host in brackets, [::1]:8787")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"http listen address {raw!r}: the port must be 0-65535")
    if host.lower() in _LOOPBACK_NAMES:
        host = "127.0.0.1"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ConfigError(
            f"http listen address {raw!r}: the host must be an IP address or localhost"
        ) from None
    return ListenAddress(host, int(port_text))


def resolve_token(settings: HttpSettings, environ: Mapping[str, str]) -> str | None:
    """`token`, else `token_env`'s variable, else ``OPENMEMORY_HTTP_TOKEN``;
    the same order as an embedding provider's API key. Whichever it is must
    be visible ASCII (`check_http_token`): the error names where it came from."""
    if settings.token.strip():
        token = settings.token.strip()
        check_http_token(token, "http.token")
        return token
    if settings.token_env:
        value = environ.get(settings.token_env, "").strip()
        if not value:
            raise ConfigError(
                f"http.token_env names {settings.token_env}, which is not set; "
                "set it or remove token_env"
            )
        check_http_token(value, f"the variable {settings.token_env} (http.token_env)")
        return value
    value = environ.get(TOKEN_ENV, "").strip()
    check_http_token(value, f"the variable {TOKEN_ENV}")
    return value or None


def require_http_server() -> None:
    """The HTTP server is an optional dependency (the ``http`` extra): say how
    to install it, at startup, rather than fail when the first request comes."""
    try:
        import hypercorn  # noqa: F401
    except ImportError:
        raise ConfigError(
            "the HTTP API needs the http extra, which is not installed: run "
            "pip install -e '.[http]' in your openmemoryd clone, or turn HTTP off "
            "([http] enabled = false, no --http)"
        ) from None


def plan_gateway(settings: HttpSettings, environ: Mapping[str, str] | None = None) -> GatewayPlan:
    """Check `[http]` and resolve its token; `ConfigError` says what to fix."""
    require_http_server()
    address = parse_listen(settings.listen)
    token = resolve_token(settings, os.environ if environ is None else environ)
    if not is_loopback_host(address.host):
        if not settings.allow_remote:
            raise ConfigError(
                f"http listen address {settings.listen} is not loopback; the HTTP API serves "
                "your memory without the socket's user check, so set [http] allow_remote = true "
                "(and a token) to expose it, or listen on 127.0.0.1"
            )
        if token is None:
            raise ConfigError(
                f"http listen address {settings.listen} is not loopback: set [http] token, "
                f"token_env or {TOKEN_ENV} so remote clients must authenticate"
            )
    hosts = {h.strip().lower() for h in settings.allowed_hosts if h.strip()}
    if not is_loopback_host(address.host):
        hosts.add(address.host.lower())
    return GatewayPlan(address, token, frozenset(hosts), settings.max_inflight)
