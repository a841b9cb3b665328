"""Integration with service managers (systemd, launchd)."""

from __future__ import annotations

from openmemoryd.service.activation import ActivationSocket, take_activation_socket
from openmemoryd.service.notify import sd_notify

__all__ = ["ActivationSocket", "sd_notify", "take_activation_socket"]
