"""The reference passages' vectors shipped with the default model (embed/e5/reference.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from openmemoryd.config import LocalSettings
from openmemoryd.embed.e5 import DIMS, E5Model
from openmemoryd.embed.e5 import reference as shipped
from openmemoryd.embed.local.models import DEFAULT_MODEL, F32Array
from openmemoryd.embed.local.provider import LocalEmbedder
from openmemoryd.embed.reference import REFERENCE_PASSAGES

QUERIES = (
    "what drink does Wei like",
    "zzzqqq",
    "例会是什么时候",
    "когда перенесли встречу с Олегом",
)


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped files looked up and written in *tmp_path* instead of the package."""
    monkeypatch.setattr(shipped, "_DIR", tmp_path)
    return tmp_path


def test_the_shipped_vectors_are_the_passages_as_the_model_embeds_them() -> None:
    vectors = shipped.load()
    assert vectors is not None, (
        "no reference vectors for today's passages and weights: "
        "run `python -m openmemoryd.embed.e5.reference` and commit the file"
    )
    live = E5Model.load().encode(REFERENCE_PASSAGES, is_query=False)
    assert vectors.shape == live.shape == (len(REFERENCE_PASSAGES), DIMS)
    assert float(np.abs(vectors - live).max()) < 1e-4


def test_a_query_gets_the_same_baseline_from_shipped_vectors_without_embedding_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoded: list[int] = []
    real_encode = E5Model.encode

    def counting(self: E5Model, texts: Sequence[str], *, is_query: bool, **kw: int) -> F32Array:
        encoded.append(len(texts))
        return real_encode(self, texts, is_query=is_query, **kw)

    monkeypatch.setattr(E5Model, "encode", counting)
    with_file = LocalEmbedder(LocalSettings())
    without = LocalEmbedder(
        LocalSettings(), model=dataclasses.replace(DEFAULT_MODEL, shipped_reference=lambda: None)
    )
    try:
        for query in QUERIES:
            vector = with_file.embed_query(query)
            shipped_null = with_file.null_cosine(vector)
            assert encoded == [1], "the shipped baseline embedded the passages"
            embedded_null = without.null_cosine(vector)
            assert shipped_null is not None
            assert embedded_null is not None
            assert abs(shipped_null.overall - embedded_null.overall) < 1e-5, query
            assert shipped_null.by_script.keys() == embedded_null.by_script.keys()
            for script, cosine in shipped_null.by_script.items():
                assert abs(cosine - embedded_null.by_script[script]) < 1e-5, (query, script)
            encoded.clear()
    finally:
        with_file.close()
        without.close()


def test_the_digest_names_the_passages(monkeypatch: pytest.MonkeyPatch) -> None:
    today = shipped.shipped_path()
    monkeypatch.setattr(shipped, "REFERENCE_PASSAGES", (*REFERENCE_PASSAGES, "One more passage."))
    assert shipped.shipped_path() != today
    assert shipped.load() is None  # edited passages: embedded by the daemon, not read stale


def test_a_missing_or_malformed_file_is_no_vectors(elsewhere: Path) -> None:
    path = shipped.shipped_path()
    assert path.parent == elsewhere
    assert shipped.load() is None
    rows = (len(REFERENCE_PASSAGES), DIMS)
    for bad in (
        np.zeros((rows[0] - 1, DIMS), dtype=np.float32),  # a passage short
        np.zeros(rows, dtype=np.float64),  # not float32
        np.full(rows, np.nan, dtype=np.float32),
    ):
        np.save(path, bad)
        assert shipped.load() is None
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)  # never unpickled
    assert shipped.load() is None
    path.write_bytes(b"not a numpy file")
    assert shipped.load() is None


def test_writing_replaces_the_files_of_earlier_digests(elsewhere: Path) -> None:
    stale = elsewhere / "reference-0123456789abcdef.npy"
    np.save(stale, np.zeros((1, DIMS), dtype=np.float32))
    vectors = np.random.default_rng(0).standard_normal((len(REFERENCE_PASSAGES), DIMS))
    written = shipped.write(vectors.astype(np.float32))
    assert not stale.exists()
    assert sorted(elsewhere.iterdir()) == [written]
    loaded = shipped.load()
    assert loaded is not None
    assert np.array_equal(loaded, vectors.astype(np.float32))
    with pytest.raises(ValueError, match="expected"):
        shipped.write(vectors[:3].astype(np.float32))
