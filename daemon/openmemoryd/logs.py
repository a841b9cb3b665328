"""Logging to stderr, where journald and launchd collect it.

Under systemd (``JOURNAL_STREAM`` set) lines carry no timestamp, because the
journal adds its own. SQLite's own error log is forwarded to the
``openmemoryd.sqlite`` logger so corruption or I/O errors it reports are not
lost.
"""

from __future__ import annotations

import logging
import os
import sys

import apsw

_SQLITE_NOTICE = 27
_SQLITE_WARNING = 28
_SQLITE_SCHEMA = 17

_configured = False


def setup_logging(level: str) -> None:
    """Configure the root logger once per process."""
    global _configured
    handler = logging.StreamHandler(sys.stderr)
    if os.environ.get("JOURNAL_STREAM"):
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(
            logging.Formatter(
                "%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%d %H:%M:%S"
            )
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    if not _configured:
        _forward_sqlite_log()
        _configured = True


def _forward_sqlite_log() -> None:
    logger = logging.getLogger("openmemoryd.sqlite")

    def handler(code: int, message: str) -> None:
        primary = code & 0xFF
        if primary == _SQLITE_SCHEMA:
            level = logging.DEBUG
        elif primary in (_SQLITE_NOTICE, _SQLITE_WARNING):
            level = logging.INFO
        else:
            level = logging.WARNING
        logger.log(level, "sqlite (%d): %s", code, message)

    try:
        apsw.config(apsw.SQLITE_CONFIG_LOG, handler)
    except apsw.MisuseError:
        logger.debug("SQLite already initialised; its log is not forwarded")
