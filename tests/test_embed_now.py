"""A few passages embedded for a caller waiting on them, not behind indexing.

`log`, `capture` and `forget` compare a new memory with remembered lines
while an agent waits; the local model's worker process is busy with
indexing batches while agents append, so those comparisons are embedded in
the daemon's own process (`EmbedsNow`), with the same vectors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from openmemoryd.config import LocalSettings
from openmemoryd.embed import EmbedsNow, Vectors
from openmemoryd.embed.local import LocalEmbedder
from openmemoryd.engine.similar import passages_now


@pytest.mark.slow
def test_the_local_model_embeds_passages_now_as_its_worker_does() -> None:
    texts = [
        "- Я предпочитаю тёмную тему во всех редакторах",
        "- 我更喜欢用 Vim，不喜欢 VS Code",
        "- The staging deploy broke because nobody ran the migrations",
    ]
    embedder = LocalEmbedder(LocalSettings())
    try:
        assert isinstance(embedder, EmbedsNow)
        now = embedder.embed_documents_now(texts)
        assert embedder._worker is None  # no worker process was asked
        assert now.shape == (3, 384)
        queued = embedder.embed_documents(texts)
        assert np.min(np.sum(now * queued, axis=1)) > 0.9999
        assert embedder.embed_documents_now([]).shape == (0, 384)
    finally:
        embedder.close()


class _Remote:
    """A provider with no model of its own in the daemon (a remote API)."""

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return np.zeros((len(texts), 2), dtype=np.float32)


def test_a_provider_without_the_model_in_process_embeds_as_it_always_does() -> None:
    remote = _Remote()
    assert not isinstance(remote, EmbedsNow)
    embed = passages_now(remote)  # type: ignore[arg-type]
    assert embed == remote.embed_documents
    local = LocalEmbedder.__new__(LocalEmbedder)
    assert passages_now(local) == local.embed_documents_now  # type: ignore[comparison-overlap]
