"""The RPC methods the daemon serves."""

from __future__ import annotations

from openmemoryd.api.handlers import CAPABILITIES, Api
from openmemoryd.daemon_info import DaemonInfo

__all__ = ["CAPABILITIES", "Api", "DaemonInfo"]
