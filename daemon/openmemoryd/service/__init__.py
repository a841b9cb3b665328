"""Integration with service managers (systemd, launchd)."""

from __future__ import annotations

from openmemoryd.service.notify import sd_notify

__all__ = ["sd_notify"]
