"""The workspace: which files are memory, how to open them, how to create it."""

from __future__ import annotations

from openmemoryd.workspace.files import DiskFile, Scan, scan_memory_files
from openmemoryd.workspace.layout import (
    DAILY_KEY_RE,
    SECTIONS,
    daily_date,
    daily_key,
    init_workspace,
    is_pristine_template,
    template_text,
)
from openmemoryd.workspace.paths import (
    IGNORED_DIRS,
    MEMORY_DIR,
    ROOT_FILES,
    MemoryPath,
    PathPolicy,
    RootMissing,
    ignored_name,
    open_beneath,
    read_memory_file,
    workspace_missing,
)
from openmemoryd.workspace.sessions import SESSION_SUFFIX, SessionFile, SessionLocator

__all__ = [
    "DAILY_KEY_RE",
    "IGNORED_DIRS",
    "MEMORY_DIR",
    "ROOT_FILES",
    "SECTIONS",
    "SESSION_SUFFIX",
    "DiskFile",
    "MemoryPath",
    "PathPolicy",
    "RootMissing",
    "Scan",
    "SessionFile",
    "SessionLocator",
    "daily_date",
    "daily_key",
    "ignored_name",
    "init_workspace",
    "is_pristine_template",
    "open_beneath",
    "read_memory_file",
    "scan_memory_files",
    "template_text",
    "workspace_missing",
]
