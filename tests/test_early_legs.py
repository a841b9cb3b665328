"""The legs a search runs ahead (`early_keywords`, `early_nearest`) are
what `rank_candidates` would have run itself, and it uses one only when it
fits: the same vector and the same pool."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import apsw
import pytest

from openmemoryd.config import SearchSettings
from openmemoryd.search.pipeline import (
    SearchQuery,
    early_keywords,
    early_nearest,
    rank_candidates,
)
from openmemoryd.search.vector import VectorQuery, vector_leg
from openmemoryd.store.db import open_index
from openmemoryd.store.vectors import target_table
from test_quantised import DIMS, add_file, cone_vectors, fill


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    opened = open_index(tmp_path / "index.sqlite", workspace=tmp_path)
    yield opened.conn
    opened.conn.close()


def test_an_early_vector_leg_is_used_only_for_its_vector_and_pool(conn: apsw.Connection) -> None:
    table = target_table(conn, "test:a", DIMS)
    fill(conn, table, add_file(conn, "memory/a.md", 60), seed=1)
    settings = SearchSettings()
    vector = VectorQuery(table, cone_vectors(1, 3)[0])
    query = SearchQuery("note")
    ahead = early_nearest(conn, query, settings, vector)
    assert ahead is not None
    assert [c.id for c in ahead.candidates] == [
        c.id for c in vector_leg(conn, vector, ahead.pool, None, None, settings.quantised_above)
    ]
    keywords = early_keywords(conn, query, settings)
    ranked = rank_candidates(conn, query, settings, vector, 0.0, keywords, ahead)
    assert ranked.nearest_count == len(ahead.candidates) > 0

    empty = replace(ahead, candidates=[])  # recognisable: used, it finds nothing
    assert rank_candidates(conn, query, settings, vector, 0.0, None, empty).nearest_count == 0
    other = VectorQuery(table, cone_vectors(1, 4)[0])
    assert rank_candidates(conn, query, settings, other, 0.0, None, empty).nearest_count > 0
    smaller = SearchQuery("note", limit=2)
    assert rank_candidates(conn, smaller, settings, vector, 0.0, None, empty).nearest_count > 0


def test_a_refused_query_runs_nothing_ahead(conn: apsw.Connection) -> None:
    table = target_table(conn, "test:a", DIMS)
    vector = VectorQuery(table, cone_vectors(1, 3)[0])
    settings = SearchSettings()
    assert early_nearest(conn, SearchQuery("  "), settings, vector) is None
    assert early_nearest(conn, SearchQuery("x", sources=("nowhere",)), settings, vector) is None
