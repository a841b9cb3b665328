"""Registers the test fault VFS in a daemon started with this directory on
PYTHONPATH and OPENMEMORYD_FAULTS_DIR set (see tests/fault_vfs.py)."""

import os
import sys
from pathlib import Path

_faults = os.environ.get("OPENMEMORYD_FAULTS_DIR", "").strip()
if _faults:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import fault_vfs

    os.environ["OPENMEMORYD_SQLITE_VFS"] = fault_vfs.register(Path(_faults))
