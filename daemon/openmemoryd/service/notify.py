"""systemd readiness notification (``sd_notify``) without libsystemd.

With ``Type=notify`` systemd waits for ``READY=1`` before it calls the unit
started, so ``systemctl --user start openmemoryd`` returns only once the socket
accepts clients. Outside systemd (no ``NOTIFY_SOCKET``) every call is a no-op.
Failures are logged, never raised: readiness reporting must not take the
daemon down.
"""

from __future__ import annotations

import logging
import os
import socket

logger = logging.getLogger("openmemoryd.service")


def sd_notify(state: str) -> bool:
    """Send *state* (e.g. ``"READY=1"``) to systemd; return whether it was sent."""
    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):  # abstract namespace
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(state.encode("utf-8"))
    except OSError as exc:
        logger.warning("sd_notify(%r) failed: %s", state, exc)
        return False
    return True
