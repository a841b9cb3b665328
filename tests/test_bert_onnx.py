"""The ONNX Runtime engine: the same vectors as the numpy encoder, chosen as asked.

Both engines run the same network on the same weights (e5's 4-bit blocks,
MiniLM's float32), so their vectors must agree to float rounding: an index
built by one is searched by the other, and ``[embedding.local] engine`` is
not part of the index's identity. Measured over `TEXTS` (every script, long
texts cut into several windows, empty ones), queries and passages: cosine
>= 0.99999994 for e5 and MiniLM; the bar below leaves room for rounding.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import Daemon, Env
from fake_embedder import fake_local_model
from openmemoryd.config import LocalSettings
from openmemoryd.embed import EmbeddingError
from openmemoryd.embed.bert import BertEncoder
from openmemoryd.embed.bert_onnx import OnnxEncoder, build_graph
from openmemoryd.embed.e5 import E5Model
from openmemoryd.embed.e5.model import encoder_weights
from openmemoryd.embed.e5.weights import default_weights_path, load_weights
from openmemoryd.embed.engine import EngineName, make_encoder, onnxruntime_missing
from openmemoryd.embed.local import LocalEmbedder
from openmemoryd.embed.minilm import MiniLMModel
from openmemoryd.embed.q4 import BLOCK, Q4Matrix, dequantize_q4
from reliability_support import wait_until
from test_e2e_semantic import append_notes, paths, search, wait_for_vectors
from test_e5 import TEXTS

MIN_COSINE = 0.99999

pytestmark = pytest.mark.skipif(
    onnxruntime_missing() is not None, reason="onnxruntime is not installed here"
)


@pytest.fixture(scope="module")
def e5_pair() -> tuple[E5Model, E5Model]:
    return E5Model.load(engine="numpy"), E5Model.load(engine="onnxruntime")


@pytest.fixture(scope="module")
def minilm_pair() -> tuple[MiniLMModel, MiniLMModel]:
    return MiniLMModel.load(engine="numpy"), MiniLMModel.load(engine="onnxruntime")


def test_each_model_reports_the_engine_it_runs_on(
    e5_pair: tuple[E5Model, E5Model], minilm_pair: tuple[MiniLMModel, MiniLMModel]
) -> None:
    assert [model.engine for model in e5_pair] == ["numpy", "onnxruntime"]
    assert [model.engine for model in minilm_pair] == ["numpy", "onnxruntime"]
    assert E5Model.load().engine == "onnxruntime"  # "auto" where it is installed


@pytest.mark.parametrize("is_query", [True, False])
def test_e5_vectors_match_the_numpy_engine(
    e5_pair: tuple[E5Model, E5Model], is_query: bool
) -> None:
    numpy_model, onnx_model = e5_pair
    expected = numpy_model.encode(list(TEXTS), is_query=is_query)
    got = onnx_model.encode(list(TEXTS), is_query=is_query)
    assert got.shape == expected.shape == (len(TEXTS), 384)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = (got * expected).sum(axis=1)
    assert cosines.min() >= MIN_COSINE, [
        (text[:30], float(c)) for text, c in zip(TEXTS, cosines, strict=True) if c < MIN_COSINE
    ]


def test_several_windows_are_weighted_as_in_the_numpy_engine(
    e5_pair: tuple[E5Model, E5Model],
) -> None:
    numpy_model, onnx_model = e5_pair
    long = TEXTS[-1]  # the long Chinese text: several 512-token windows
    assert numpy_model.count_tokens(long, is_query=False) > 2 * numpy_model.max_tokens
    expected = numpy_model.encode([long, "ok"], is_query=False)
    got = onnx_model.encode([long, "ok"], is_query=False)
    assert (got * expected).sum(axis=1).min() >= MIN_COSINE


@pytest.mark.parametrize("is_query", [True, False])
def test_minilm_vectors_match_the_numpy_engine(
    minilm_pair: tuple[MiniLMModel, MiniLMModel], is_query: bool
) -> None:
    numpy_model, onnx_model = minilm_pair
    texts = list(TEXTS)
    cosines = (
        onnx_model.encode(texts, is_query=is_query) * numpy_model.encode(texts, is_query=is_query)
    ).sum(axis=1)
    assert cosines.min() >= MIN_COSINE


def test_the_graph_multiplies_by_the_shipped_4_bit_blocks() -> None:
    weights = load_weights(default_weights_path())
    graph = build_graph(encoder_weights(weights)).graph
    products = [node for node in graph.node if node.op_type == "MatMulNBits"]
    assert len(products) == 4 * len(weights.layers)  # qkv, attention out, ffn in, ffn out
    assert not [node for node in graph.node if node.op_type == "MatMul"]
    packed = sum(t.ByteSize() for t in graph.initializer)
    assert packed < 25 * 2**20  # 4-bit, not the 85 MB of float32 layer weights


def test_paired_nibbles_and_scales_are_the_same_weights() -> None:
    """ONNX Runtime's layout, dequantised by its rule, gives `float32()` exactly."""
    rng = np.random.default_rng(7)
    rows, cols = 5, 3 * BLOCK
    blocks = rng.integers(0, 256, size=(rows, cols // BLOCK, 18), dtype=np.uint8)
    blocks[:, :, :2] = (
        rng.uniform(0.001, 0.1, size=(rows, cols // BLOCK)).astype(np.float16).view(np.uint8)
    ).reshape(rows, cols // BLOCK, 2)
    matrix = Q4Matrix(blocks)
    assert (matrix.rows, matrix.cols) == (rows, cols)
    paired = matrix.paired_nibbles()
    low, high = paired & 0x0F, paired >> 4
    nibbles = np.stack([low, high], axis=3).reshape(rows, cols // BLOCK, BLOCK)
    scales = matrix.scales().reshape(rows, cols // BLOCK, 1)
    rebuilt = ((nibbles.astype(np.float32) - 8.0) * scales).reshape(rows, cols)
    np.testing.assert_array_equal(rebuilt, matrix.float32())
    np.testing.assert_array_equal(matrix.float32(), dequantize_q4(blocks, cols))
    stacked = Q4Matrix.stack((matrix, matrix))
    assert stacked.rows == 2 * rows
    np.testing.assert_array_equal(stacked.float32()[rows:], matrix.float32())


def test_thread_counts_below_one_are_refused() -> None:
    weights = encoder_weights(load_weights(default_weights_path()))
    with pytest.raises(ValueError, match="threads"):
        OnnxEncoder(weights, 0)


def test_unknown_engines_are_refused() -> None:
    weights = encoder_weights(load_weights(default_weights_path()))
    with pytest.raises(ValueError, match="unknown engine 'torch'"):
        make_encoder(weights, "torch", 1)  # type: ignore[arg-type]


@pytest.fixture
def no_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    """Imports of onnxruntime fail, as on a platform without its wheels."""
    real_import = builtins.__import__

    def refusing(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "onnxruntime" or name.startswith("onnxruntime."):
            raise ImportError("No module named 'onnxruntime'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refusing)


def test_auto_falls_back_to_numpy_without_onnxruntime_and_says_why(
    no_onnxruntime: None, caplog: pytest.LogCaptureFixture
) -> None:
    weights = encoder_weights(load_weights(default_weights_path()))
    with caplog.at_level(logging.WARNING, logger="openmemoryd.embed.engine"):
        encoder = make_encoder(weights, "auto", 1)
    assert isinstance(encoder, BertEncoder)
    assert encoder.engine == "numpy"
    assert "onnxruntime is not usable" in caplog.text
    assert "No module named 'onnxruntime'" in caplog.text


def test_asking_for_onnxruntime_without_it_is_a_clear_error(no_onnxruntime: None) -> None:
    with pytest.raises(RuntimeError, match="the onnxruntime engine cannot run here"):
        E5Model.load(engine="onnxruntime")


NOTES = {
    "memory/tea.md": "魏喜欢喝乌龙茶",
    "memory/infra.md": "The staging cluster runs Postgres 16 with nightly backups to S3",
    "memory/travel.md": "Caroline went hiking in the Alps last summer and loved it",
    "memory/meetings.md": "Совещание по бюджету перенесли на пятницу, после обеда",
}
QUERIES = ("what drink does Wei like", "database backups", "горный поход", "预算会议改期")


def _ranked(daemon: Daemon) -> dict[str, list[tuple[str, float | None]]]:
    with daemon.client() as client:
        return {
            query: [(hit.path, hit.vector_score) for hit in client.search(query).results]
            for query in QUERIES
        }


def _runs_on(daemon: Daemon, engine: str) -> None:
    """The daemon's log and `doctor` both name *engine* for the query model."""
    assert f"on {engine}, 1 thread(s)" in daemon.log()
    doctor = daemon.cli("doctor").stdout
    assert f"✓ embedder: local (multilingual-e5-small-q4 on {engine})" in doctor


@pytest.mark.e2e
def test_the_daemon_embeds_with_onnxruntime_and_numpy_reads_the_same_index(env: Env) -> None:
    """Through the real daemon: the default engine is ONNX Runtime; switching the
    same workspace to numpy re-embeds nothing and ranks every query the same."""
    env.write_config("")
    daemon = Daemon(env).start()
    try:
        append_notes(daemon, NOTES)
        embedded = wait_for_vectors(daemon)["embedding"]
        fast = _ranked(daemon)
        _runs_on(daemon, "onnxruntime")
    finally:
        daemon.stop()
    assert any(score is not None for hits in fast.values() for _, score in hits)

    env.write_config('[embedding.local]\nengine = "numpy"\n')
    again = Daemon(env).start()
    try:
        with again.client() as client:
            status = client.status().embedding  # before anything could re-embed
        assert status.state != "rebuilding"
        assert status.embedded == status.total == embedded["embedded"]  # type: ignore[index]
        slow = _ranked(again)
        _runs_on(again, "numpy")
    finally:
        again.stop()
    for query in QUERIES:
        assert [path for path, _ in slow[query]] == [path for path, _ in fast[query]], query
        for (_, a), (_, b) in zip(slow[query], fast[query], strict=True):
            assert (a is None) == (b is None)
            if a is not None and b is not None:
                assert abs(a - b) < 1e-4


class _BrokenEncoder:
    engine = "onnxruntime"

    def encode(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : bad allocation")


def _embedder_with(load: Any, tmp_path: Path, engine: EngineName = "auto") -> LocalEmbedder:
    model = fake_local_model("broken", 4, tmp_path, load)
    return LocalEmbedder(LocalSettings(engine=engine), model=model, weights=tmp_path)


def test_an_engine_failing_on_a_query_is_an_embedding_error(tmp_path: Path) -> None:
    """The search then answers by keywords and says why (engine.vector_query)."""
    embedder = _embedder_with(lambda *_: _BrokenEncoder(), tmp_path)
    failed = r"failed on a query \(onnxruntime\).*bad alloc"
    with pytest.raises(EmbeddingError, match=failed) as err:
        embedder.embed_query("what drink does Wei like")
    assert err.value.retryable


def test_an_engine_that_cannot_load_is_an_embedding_error(
    tmp_path: Path, no_onnxruntime: None
) -> None:
    def load(path: Path, engine: EngineName, threads: int) -> E5Model:
        return E5Model.load(engine=engine, threads=threads)

    embedder = _embedder_with(load, tmp_path, engine="onnxruntime")
    with pytest.raises(EmbeddingError, match="the onnxruntime engine cannot run here") as err:
        embedder.embed_query("what drink does Wei like")
    assert not err.value.retryable


@pytest.fixture
def shadowed_onnxruntime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Daemons started from here import an `onnxruntime` that fails to import,
    as where its wheel is missing or broken."""
    shadow = tmp_path / "shadow"
    (shadow / "onnxruntime").mkdir(parents=True)
    (shadow / "onnxruntime" / "__init__.py").write_text(
        'raise ImportError("onnxruntime wheel missing on this platform")\n'
    )
    paths = [str(shadow), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))


@pytest.mark.e2e
def test_without_onnxruntime_the_daemon_embeds_with_numpy(
    env: Env, shadowed_onnxruntime: None
) -> None:
    env.write_config("")  # engine "auto"
    daemon = Daemon(env).start()
    try:
        append_notes(daemon, NOTES)
        wait_for_vectors(daemon)
        result = search(daemon, "what drink does Wei like")
        assert result["mode"] == "hybrid"
        assert "memory/tea.md" in paths(result)
        assert "onnxruntime is not usable" in daemon.log()
        assert "wheel missing on this platform" in daemon.log()
        _runs_on(daemon, "numpy")
    finally:
        daemon.stop()


@pytest.mark.e2e
def test_asking_for_onnxruntime_where_it_cannot_run_degrades_to_keywords(
    env: Env, shadowed_onnxruntime: None
) -> None:
    """No vectors can be built: `status` says why, search answers by keywords."""
    env.write_config('[embedding.local]\nengine = "onnxruntime"\n')
    daemon = Daemon(env).start()
    try:
        note = NOTES["memory/infra.md"]
        assert daemon.cli("append", "--path", "memory/infra.md", note).returncode == 0

        def embedding() -> dict[str, Any]:
            status = json.loads(daemon.cli("status", "--json").stdout)
            found: dict[str, Any] = status["embedding"]
            return found

        wait_until(
            lambda: "onnxruntime engine cannot run here" in str(embedding()["last_error"]),
            "status reports why the model cannot load",
        )
        assert embedding()["embedded"] == 0
        result = search(daemon, "Postgres backups")
        assert result["mode"] == "lexical"
        assert result["degraded"]
        assert paths(result) == ["memory/infra.md"]
        assert daemon.proc is not None
        assert daemon.proc.poll() is None  # still serving
    finally:
        daemon.stop()
