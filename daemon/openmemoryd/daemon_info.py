"""Facts about this daemon process: below `api` and `doctor`, which both report them."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from omem_protocol import __version__

__all__ = ["DaemonInfo"]


@dataclass(frozen=True, slots=True)
class DaemonInfo:
    """Facts about this daemon process that `status` and `doctor` report."""

    socket: str
    pid: int = field(default_factory=os.getpid)
    started: float = field(default_factory=time.monotonic)
    version: str = __version__
    http: str | None = None  # the HTTP API's base URL once it listens
    # What the last SIGHUP left to tell (a config that did not load, changes
    # that wait for a restart): daemon-wide, so every workspace's status says it.
    config_issues: tuple[str, ...] = ()
