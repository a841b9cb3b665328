"""The optional JSON HTTP API (``[http]``, ``openmemoryd run --http``).

Importing this package does not import hypercorn; `serve_http` does, when
the daemon actually serves HTTP.
"""

from __future__ import annotations

from openmemoryd.gateway.address import (
    TOKEN_ENV,
    GatewayPlan,
    ListenAddress,
    is_loopback_host,
    parse_listen,
    plan_gateway,
)
from openmemoryd.gateway.asgi import HTTP_ONLY_CODES, STATUS_FOR_CODE, GatewayApp
from openmemoryd.gateway.openapi import build_openapi
from openmemoryd.gateway.serve import bind_tcp, serve_http

__all__ = [
    "HTTP_ONLY_CODES",
    "STATUS_FOR_CODE",
    "TOKEN_ENV",
    "GatewayApp",
    "GatewayPlan",
    "ListenAddress",
    "bind_tcp",
    "build_openapi",
    "is_loopback_host",
    "parse_listen",
    "plan_gateway",
    "serve_http",
]
