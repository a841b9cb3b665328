"""Health checks with fixes: ``openmemoryd doctor`` and the ``doctor`` RPC.

One set of checks, two vantage points. `diagnose` looks from outside (works
whether or not a daemon runs, and asks a running one for its status);
`diagnose_engine` runs inside the daemon on its live index, embedder and
watcher. Each check is ``ok``, ``warn`` (does not fail the doctor) or
``fail``, with a concrete fix whenever it is not ok. Checks only look:
nothing is created, locked or written.
"""

from __future__ import annotations

from openmemoryd.doctor.inside import diagnose_engine
from openmemoryd.doctor.offline import diagnose

__all__ = ["diagnose", "diagnose_engine"]
