"""A LoCoMo conversation indexed by a real daemon, then searched in this process.

The offline fits (`bench.fusion_fit`, `bench.rerank_fit`) need what the
daemon does not send over the socket: every candidate of a search, with its
features or its text. So a daemon with the default configuration indexes
the conversation (dated files) and embeds it, stops, and its index is opened
here and searched with the daemon's own pipeline and the bundled model.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

from bench.daemon import BenchDaemon
from bench.locomo_data import Conversation, write_workspace
from bench.locomo_methods import METHODS
from openmemoryd.config import LocalSettings
from openmemoryd.embed import to_blob
from openmemoryd.embed.local.provider import LocalEmbedder
from openmemoryd.search.vector import VectorQuery
from openmemoryd.store import open_index
from openmemoryd.store.vectors import active_table


@contextmanager
def indexed(conversation: Conversation) -> Iterator[tuple[apsw.Connection, LocalEmbedder]]:
    """The index a real daemon built of *conversation*, and the bundled model."""
    with BenchDaemon(config_toml=METHODS["calibrated"].config_toml) as daemon:
        write_workspace(conversation, daemon.workspace, "dated")
        daemon.start()
        daemon.wait_indexed()
        index = Path(daemon.wait_vectors().index_path)
        daemon.stop()
        opened = open_index(index, workspace=daemon.workspace)
        embedder = LocalEmbedder(LocalSettings())
        try:
            yield opened.conn, embedder
        finally:
            embedder.close()
            opened.conn.close()


def vector_query(conn: apsw.Connection, embedder: LocalEmbedder, text: str) -> VectorQuery:
    """The vector leg's query for *text*, as the daemon builds it."""
    vector = embedder.embed_query(text)
    table = active_table(conn)
    assert table is not None, "the daemon left no vectors"
    return VectorQuery(
        table,
        to_blob(vector),
        embedder.score_floor,
        embedder.score_ceiling,
        embedder.null_cosine(vector, text),
        embedder.evidence_width,
    )
