"""Version numbers shared by the daemon and every client.

`__version__` is the distribution's version (one source for pyproject, the
daemon and the client). `PROTOCOL_VERSION` is the wire protocol's major number:
it changes only when a message is renamed, retyped or removed. Additions are
compatible and are announced through capabilities instead, so a daemon and a
client of different releases keep talking as long as their majors match.
"""

from __future__ import annotations

__version__ = "0.1.0"

PROTOCOL_VERSION = 1
