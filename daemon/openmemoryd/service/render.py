"""Service files rendered from the templates shipped in ``openmemoryd/service/units/``.

The templates are complete, hand-installable files (the repository's
``systemd/`` and ``launchd/`` hold identical copies for people who install by
hand). Rendering changes only the lines that depend on the installation
(``ExecStart=``, ``ListenStream=``; the plist's program and log paths), so
everything else a template says reaches the user unchanged.

Values are escaped for the file format (systemd's quoting, ``%`` specifiers
and ``$`` expansion; XML through plistlib), and control characters are
refused: a newline in a path would otherwise start a new directive.
"""

from __future__ import annotations

import plistlib
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Final

from openmemoryd.errors import OmemdError

SERVICE_NAME: Final = "openmemoryd.service"
SOCKET_NAME: Final = "openmemoryd.socket"
PLIST_NAME: Final = "dev.openmemory.openmemoryd.plist"
LAUNCHD_LABEL: Final = "dev.openmemory.openmemoryd"

_PLAIN_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class UnitError(OmemdError):
    """A value cannot be written into a service file."""


def template(name: str) -> str:
    """The text of the shipped template *name* (works from a wheel or a checkout)."""
    return (resources.files("openmemoryd.service") / "units" / name).read_text("utf-8")


def systemd_service(argv: Sequence[str]) -> str:
    """``openmemoryd.service`` running *argv* (absolute program path first)."""
    command = " ".join(systemd_word(arg) for arg in argv)
    return _set_directive(template(SERVICE_NAME), "ExecStart", command)


def systemd_socket(listen: Path | None) -> str:
    """``openmemoryd.socket`` listening on *listen*, or on the template's
    ``%t/openmemory/openmemoryd.sock`` (the daemon's default) when None."""
    text = template(SOCKET_NAME)
    if listen is None:
        return text
    value = _checked(str(listen))
    if value != value.strip():
        raise UnitError(f"socket path {value!r} starts or ends with white space")
    return _set_directive(text, "ListenStream", value.replace("%", "%%"))


def launchd_plist(argv: Sequence[str], log_file: Path) -> bytes:
    """The LaunchAgent plist running *argv*, with stdout and stderr in *log_file*."""
    plist = plistlib.loads(template(PLIST_NAME).encode("utf-8"))
    plist["ProgramArguments"] = [_checked(arg) for arg in argv]
    plist["StandardErrorPath"] = plist["StandardOutPath"] = _checked(str(log_file))
    return plistlib.dumps(plist)


def systemd_word(arg: str) -> str:
    """Quote *arg* as one word of a systemd command line.

    ``%`` would start a specifier and ``$`` a variable, so both are doubled;
    anything beyond plain path characters is double-quoted with C escapes.
    """
    escaped = _checked(arg).replace("%", "%%").replace("$", "$$")
    if _PLAIN_WORD.fullmatch(escaped):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _checked(value: str) -> str:
    if _CONTROL.search(value):
        raise UnitError(f"{value!r} contains control characters; it cannot go in a service file")
    return value


def _set_directive(text: str, key: str, value: str) -> str:
    pattern = re.compile(rf"^{re.escape(key)}=.*$", re.M)
    if len(pattern.findall(text)) != 1:
        raise UnitError(f"the unit template must have exactly one {key}= line")
    return pattern.sub(lambda _: f"{key}={value}", text)
