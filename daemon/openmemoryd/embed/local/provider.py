"""The local provider: multilingual-e5-small (or the English-only MiniLM), offline.

Queries are embedded in the daemon process (one BLAS thread: a query is a few
milliseconds and must not wait behind indexing); passages are embedded by a
worker process (see `worker`) at lower priority with its own thread budget.
The model is loaded lazily, so a daemon that never searches by meaning never
pays for it. A worker that crashes or hangs is killed and restarted on the
next batch; the error is raised as retryable so the indexer backs off.
Which model runs is a `LocalModel` (see `models`); nothing here depends on it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Final

import msgspec
import numpy as np

from omem_protocol import FrameBuffer
from openmemoryd.config import LocalSettings
from openmemoryd.embed.local.models import DEFAULT_MODEL, LocalModel, TextEncoder
from openmemoryd.embed.local.worker import (
    MAX_FRAME,
    Done,
    Failed,
    Job,
    Ready,
    WorkerReply,
    write_frame,
)
from openmemoryd.embed.provider import EmbeddingError, Vectors
from openmemoryd.embed.reference import NULL_TOP, REFERENCE_PASSAGES, REFERENCE_SCRIPTS, Baseline
from openmemoryd.embed.vectors import sanitize
from openmemoryd.text.scripts import main_script

READY_TIMEOUT_S: Final = 180.0

_log = logging.getLogger(__name__)

_reply_decoder: msgspec.msgpack.Decoder[WorkerReply] = msgspec.msgpack.Decoder(WorkerReply)


class LocalEmbedder:
    """A `LocalModel` (default: multilingual-e5-small), run by ONNX Runtime or numpy.

    Raises FileNotFoundError at construction when the model's files are not
    installed, so the registry reports it before anything is indexed.
    """

    def __init__(
        self,
        settings: LocalSettings,
        *,
        model: LocalModel = DEFAULT_MODEL,
        job_timeout_s: float = 600.0,
        weights: Path | None = None,
    ) -> None:
        self._settings = settings
        self._spec = model
        self._job_timeout = job_timeout_s
        self._weights = weights or model.locate()
        self._query_model: TextEncoder | None = None
        self._reference: Vectors | None = None
        self._query_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self._worker: _Worker | None = None
        self._worker_lock = threading.Lock()

    @property
    def name(self) -> str:
        return "local"

    @property
    def model(self) -> str:
        return self._spec.model_id

    @property
    def dims(self) -> int:
        return self._spec.dims

    @property
    def max_input_bytes(self) -> int:
        return 1 << 20  # e5 windows long inputs itself; MiniLM reads the first 256 tokens

    @property
    def score_floor(self) -> float:
        return self._spec.score_floor

    @property
    def score_ceiling(self) -> float:
        return self._spec.score_ceiling

    def identity(self) -> str:
        return f"local:{self._spec.model_id}"

    @property
    def engine(self) -> str | None:
        """What runs the query model ("onnxruntime" or "numpy"); None until it loads."""
        model = self._query_model
        return None if model is None else model.engine

    @property
    def evidence_width(self) -> float | None:
        return self._spec.evidence_width

    def null_cosine(self, query: Vectors, text: str = "") -> Baseline | None:
        """*query*'s mean cosine with its `NULL_TOP` nearest reference passages,
        and with those of each script (embed.reference), *text* being the
        query's own words; None when the model has no calibrated evidence width."""
        if self._spec.evidence_width is None:
            return None
        reference = self._reference
        if reference is None:  # two first searches at once both compute it: harmless
            reference = self._spec.shipped_reference()
            if reference is None:  # the passages changed since the file was written
                encoded = self._model().encode(REFERENCE_PASSAGES, is_query=False)
                reference = sanitize(encoded)
            self._reference = reference
        cosines = reference @ query
        by_script = {
            script: float(np.sort(cosines[list(rows)])[-NULL_TOP:].mean())
            for script, rows in REFERENCE_SCRIPTS.items()
        }
        overall = float(np.sort(cosines)[-NULL_TOP:].mean())
        return Baseline(overall, by_script, main_script(text))

    def embed_query(self, text: str) -> Vectors:
        """*text*'s query vector; any failure of the model (it cannot load, the
        engine errs) is an EmbeddingError, so the search falls back to keywords
        and says why instead of failing."""
        try:
            model = self._model()
        except Exception as exc:
            raise EmbeddingError(f"cannot load the local model: {exc}", retryable=False) from exc
        try:
            if self._settings.query_threads == 1:
                return sanitize(model.encode([text], is_query=True)[0])
            # Threads are process-wide: queries encoding at once, each asking
            # for every thread, slow each other and some wait for seconds
            # (32 clients: 18 searches/s, p99 7.6 s). One at a time on all the
            # threads halves that tail and raises the rate to 27/s, still half
            # of one thread each; docs/benchmarks.md, "Query embedding threads".
            with self._encode_lock:
                return sanitize(model.encode([text], is_query=True)[0])
        except EmbeddingError:
            raise
        except Exception as exc:
            message = f"the local model failed on a query ({model.engine}): {exc}"
            raise EmbeddingError(message, retryable=True) from exc

    def embed_documents_now(self, texts: Sequence[str]) -> Vectors:
        """*texts* embedded as passages by the query model, in this process:
        not queued behind the worker's indexing batches (`EmbedsNow`). For a
        few short texts; the vectors are the worker's (the same model and
        recipe)."""
        if not texts:
            return np.zeros((0, self._spec.dims), dtype=np.float32)
        try:
            model = self._model()
        except Exception as exc:
            raise EmbeddingError(f"cannot load the local model: {exc}", retryable=False) from exc
        try:
            with self._encode_lock:
                return sanitize(model.encode(list(texts), is_query=False))
        except Exception as exc:
            message = f"the local model failed on passages ({model.engine}): {exc}"
            raise EmbeddingError(message, retryable=True) from exc

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._spec.dims), dtype=np.float32)
        with self._worker_lock:
            worker = self._worker
            if worker is None or not worker.alive():
                worker = self._worker = _Worker(self._worker_argv(), self._spec)
                worker.start()
            try:
                return sanitize(worker.run(list(texts), self._job_timeout))
            except EmbeddingError:
                worker.stop()
                self._worker = None
                raise

    def close(self) -> None:
        """Stop the worker now, even mid-job (never waits for the job's lock:
        a shutdown must not wait minutes for a batch nobody will store)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop(kill=True)

    def _model(self) -> TextEncoder:
        with self._query_lock:
            if self._query_model is None:
                from threadpoolctl import threadpool_limits

                self._spec.verify(self._weights)
                threads = self._settings.query_threads
                threadpool_limits(threads)
                model = self._spec.load(self._weights, self._settings.engine, threads)
                _log.info(
                    "queries embed with %s on %s, %d thread(s)",
                    self._spec.model_id,
                    model.engine,
                    threads,
                )
                self._query_model = model
            return self._query_model

    def _worker_argv(self) -> list[str]:
        self._spec.verify(self._weights)
        return [
            sys.executable,
            "-m",
            "openmemoryd.embed.local",
            "--model",
            self._spec.model_id,
            "--weights",
            str(self._weights),
            "--threads",
            str(self._settings.threads),
            "--engine",
            self._settings.engine,
            "--nice",
            str(self._settings.nice),
        ]


class _Worker:
    """One worker process and the framed pipe protocol to it."""

    def __init__(self, argv: list[str], model: LocalModel) -> None:
        self._argv = argv
        self._model = model
        self._proc: subprocess.Popen[bytes] | None = None
        self._frames = FrameBuffer(MAX_FRAME)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        env = dict(os.environ, OPENBLAS_NUM_THREADS=self._argv[self._argv.index("--threads") + 1])
        self._proc = subprocess.Popen(
            self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        reply = self._receive(READY_TIMEOUT_S)
        if isinstance(reply, Failed):
            self.stop()
            raise EmbeddingError(reply.error, retryable=False)
        expected = (self._model.model_id, self._model.dims)
        if not isinstance(reply, Ready) or (reply.model, reply.dims) != expected:
            self.stop()
            raise EmbeddingError("the embedding worker sent an unexpected greeting", retryable=True)

    def _pipes(self) -> tuple[subprocess.Popen[bytes], IO[bytes], IO[bytes]]:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise EmbeddingError("the embedding worker is not running", retryable=True)
        return proc, proc.stdin, proc.stdout

    def run(self, texts: list[str], timeout: float) -> Vectors:
        _, stdin, _ = self._pipes()
        try:
            write_frame(stdin, Job(texts=texts))
        except (BrokenPipeError, OSError) as exc:
            raise EmbeddingError(f"the embedding worker died: {exc}", retryable=True) from None
        reply = self._receive(timeout)
        if isinstance(reply, Failed):
            raise EmbeddingError(f"local embedding failed: {reply.error}", retryable=True)
        expected = (len(texts), self._model.dims)
        if not isinstance(reply, Done) or (reply.count, reply.dims) != expected:
            raise EmbeddingError("the embedding worker answered out of turn", retryable=True)
        return np.frombuffer(reply.vectors, dtype="<f4").reshape(reply.count, reply.dims)

    def _receive(self, timeout: float) -> WorkerReply:
        proc, _, stdout = self._pipes()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    raise EmbeddingError(
                        f"the embedding worker did not answer within {timeout:.0f} s",
                        retryable=True,
                    )
                data = os.read(stdout.fileno(), 1 << 20)
                if not data:
                    code = proc.poll()
                    raise EmbeddingError(
                        f"the embedding worker exited (code {code})", retryable=True
                    )
                frames = self._frames.feed(data)
                if frames:
                    return _reply_decoder.decode(frames[0])

    def stop(self, *, kill: bool = False) -> None:
        """End the worker: politely (close its stdin) or, with *kill*, at once."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if kill:
            proc.kill()
        elif proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        # Killed, its pipes stay open until collected: an unclosed-file
        # warning, and a descriptor held, in a process that embeds again.
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
