"""``python -m openmemoryd.embed.local`` runs the embedding worker process.

The entry point lives here, not in `worker`, because the package imports
`worker` for its message types; running a module that is already imported
would make runpy warn and execute it twice.
"""

from __future__ import annotations

import sys

from openmemoryd.embed.local.worker import main

sys.exit(main())
