"""When sqlite-vec cannot be loaded: keyword search, the reason said, nothing wasted."""

from __future__ import annotations

import pytest

from conftest import Env
from fake_embedder import FakeEmbedder
from openmemoryd.engine import workspace_status
from openmemoryd.search import SearchQuery
from openmemoryd.store import db as store_db
from test_vectors import engine_with

REASON = "sqlite-vec could not be loaded: simulated"


async def test_search_answers_by_keywords_and_says_why(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_db, "load_vector_extension", lambda conn: REASON)
    embedder = FakeEmbedder()
    async with engine_with(env, embedder) as engine:
        await engine.append("Wei prefers oolong tea in the afternoon", None)
        await engine.sync()
        result = await engine.search(SearchQuery("oolong tea"))
        assert [h.path for h in result.results] == [result.results[0].path]
        assert "oolong" in result.results[0].snippet
        assert (result.mode, result.degraded) == ("lexical", True)
        assert result.degraded_reason == f"{REASON}; keyword search only"
        status = await workspace_status(engine)
        assert not status.vector
        assert REASON in status.issues
        assert status.embedding.last_error is None  # nothing tried and failed to be stored
    assert embedder.document_calls == 0  # no text embedded that could not be kept
