"""Logging to stderr, where journald and launchd collect it.

Under systemd (``JOURNAL_STREAM`` set) lines carry no timestamp, because the
journal adds its own. SQLite's own error log is forwarded to the
``openmemoryd.sqlite`` logger so corruption or I/O errors it reports are not
lost.

Two sources would otherwise bury what the log is for (a restored append, a
failing provider) under routine lines: watchfiles says "1 change detected"
at INFO for every batch of file events (3,025 of 3,619 lines after ten
minutes of use), and SQLite notes each automatic index its planner builds
for one statement. Both are kept for a debug log only.
"""

from __future__ import annotations

import logging
import os
import sys

import apsw

_SQLITE_NOTICE = 27
_SQLITE_WARNING = 28
_SQLITE_SCHEMA = 17
# SQLITE_WARNING_AUTOINDEX: "automatic index on f(id)", a planner's choice
# for one statement, not a problem
_SQLITE_WARNING_AUTOINDEX = _SQLITE_WARNING | (1 << 8)

# Loggers whose INFO lines are routine chatter (below WARNING they are shown
# only while the daemon logs at debug)
_CHATTY = ("watchfiles",)

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
    handler.addFilter(_quiet_chatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    if not _configured:
        _forward_sqlite_log()
        _configured = True


def _quiet_chatter(record: logging.LogRecord) -> bool:
    """Whether to write *record*: a chatty library's lines below WARNING only
    at debug.

    A filter on the handler rather than a level on those loggers, because
    the level is read when each line is written: a SIGHUP that turns
    ``log_level`` to debug (it sets the root logger's level) brings them
    back, and one that turns it to info hides them again.
    """
    chatty = any(record.name == name or record.name.startswith(name + ".") for name in _CHATTY)
    if record.levelno >= logging.WARNING or not chatty:
        return True
    return logging.getLogger().getEffectiveLevel() <= logging.DEBUG


def _sqlite_level(code: int) -> int:
    """The level to log an SQLite log message of (extended) *code* at."""
    if code == _SQLITE_WARNING_AUTOINDEX:
        return logging.DEBUG
    primary = code & 0xFF
    if primary == _SQLITE_SCHEMA:
        return logging.DEBUG
    if primary in (_SQLITE_NOTICE, _SQLITE_WARNING):
        return logging.INFO
    return logging.WARNING


def _forward_sqlite_log() -> None:
    logger = logging.getLogger("openmemoryd.sqlite")

    def handler(code: int, message: str) -> None:
        logger.log(_sqlite_level(code), "sqlite (%d): %s", code, message)

    try:
        apsw.config(apsw.SQLITE_CONFIG_LOG, handler)
    except apsw.MisuseError:
        logger.debug("SQLite already initialised; its log is not forwarded")
