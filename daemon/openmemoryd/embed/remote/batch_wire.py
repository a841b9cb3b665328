"""The batch wire formats: OpenAI's Files + Batches API, Gemini's async batch.

OpenAI: the texts go up as a JSON Lines file (``POST {base}/files``,
multipart, ``purpose=batch``), one line per text::

    {"custom_id": "7", "method": "POST", "url": "/v1/embeddings",
     "body": {"model": ..., "input": "...", "encoding_format": "float"}}

then ``POST {base}/batches`` with ``input_file_id``, ``endpoint``
``/v1/embeddings`` and ``completion_window`` ``24h``; ``GET
{base}/batches/{id}`` is polled until ``status`` is completed, failed,
expired or cancelled; the answers are downloaded from ``GET
{base}/files/{output_file_id}/content`` (JSON Lines: ``custom_id`` and
``response.body.data[].embedding``) and requests that failed from
``error_file_id``. Afterwards the three files are deleted, so memory text
does not stay in the account's storage.

Gemini: ``POST {base}/models/{model}:asyncBatchEmbedContent`` with the
requests inline (``batch.inputConfig.requests.requests[]``, each
``{"request": <EmbedContentRequest>, "metadata": {"key": "7"}}``) answers a
long-running operation named ``batches/{id}``; ``GET {base}/batches/{id}``
is polled until ``done`` (state ``BATCH_STATE_SUCCEEDED``, ``_FAILED``,
``_CANCELLED`` or ``_EXPIRED``); the results are inline, in input order, at
``response.output.inlinedResponses.inlinedResponses[]``, each an
``EmbedContentResponse`` (``{"embedding": {"values"}}``) or an ``error``.
Results delivered as a file instead (``responsesFile``) are reported as a
failure, so those texts embed synchronously.

Invariants: job and file ids from a server are used in URLs only when they
are plain identifiers, so a confused server cannot point requests elsewhere;
a malformed line costs its own text, not the job.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Final

from openmemoryd.config.model import BatchSettings
from openmemoryd.embed.provider import EmbeddingError
from openmemoryd.embed.remote.batch import BatchClient, BatchEmbedder, Collected, JobState
from openmemoryd.embed.remote.gemini import GeminiEmbedder
from openmemoryd.embed.remote.http import RemoteEmbedder
from openmemoryd.embed.remote.openai import OpenAIEmbedder, indexed_embeddings

_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,200}")
_GEMINI_NAME: Final = re.compile(r"batches/[A-Za-z0-9_-]{1,200}")
_OPENAI_DONE: Final = frozenset({"completed", "failed", "expired", "cancelled"})
_GEMINI_DONE: Final = frozenset(
    {"BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED"}
)


def make_batcher(embedder: object, settings: BatchSettings) -> BatchEmbedder | None:
    """The batcher for *embedder*, or None when batching does not apply.

    It applies, as in OpenClaw, when enabled and the provider is openai or
    gemini with an API key (a keyless OpenAI-compatible server is
    self-hosted and has no batch API).
    """
    if not settings.enabled or not isinstance(embedder, OpenAIEmbedder | GeminiEmbedder):
        return None
    if not embedder.has_api_key:
        return None
    return BatchEmbedder(client_for(embedder), settings)


def client_for(embedder: RemoteEmbedder) -> BatchClient:
    """The batch client speaking *embedder*'s provider's format."""
    if isinstance(embedder, OpenAIEmbedder):
        return OpenAIBatchClient(embedder)
    if isinstance(embedder, GeminiEmbedder):
        return GeminiBatchClient(embedder)
    raise ValueError(f"{embedder.provider} has no batch API")


class OpenAIBatchClient(BatchClient):
    # The input file may hold 50,000 requests and 200 MB; JSON escaping can
    # double a text's size, so half that in raw text.
    max_requests = 50_000
    max_bytes = 100 * 1024 * 1024

    def submit(self, texts: list[str]) -> str:
        embedder = self.embedder
        lines = []
        for index, text in enumerate(texts):
            body: dict[str, object] = {
                "model": embedder.model,
                "input": text,
                "encoding_format": "float",
            }
            if embedder._dimensions:
                body["dimensions"] = embedder._dimensions
            line = {"custom_id": str(index), "method": "POST", "url": "/v1/embeddings"}
            lines.append(json.dumps({**line, "body": body}, ensure_ascii=False))
        content = ("\n".join(lines) + "\n").encode("utf-8")
        uploaded = embedder._session.call(
            "POST",
            "files",
            files={"file": ("openmemory-embeddings.jsonl", content, "application/jsonl")},
            data={"purpose": "batch"},
        )
        file_id = self._id(uploaded, "id")
        created = embedder._session.post_json(
            "batches",
            {
                "input_file_id": file_id,
                "endpoint": "/v1/embeddings",
                "completion_window": "24h",
                "metadata": {"source": "openmemory"},
            },
        )
        return self._id(created, "id")

    def poll(self, job: str) -> JobState:
        payload = self.embedder._session.call("GET", f"batches/{job}")
        state = self.embedder._field(payload, "status")
        if not isinstance(state, str):
            raise self.embedder._malformed("'status' is not a string")
        error = _openai_errors(payload) if state == "failed" else None
        return JobState(done=state in _OPENAI_DONE, state=state, error=error, payload=payload)

    def collect(self, job: str, state: JobState, count: int) -> Collected:
        vectors: list[object | None] = [None] * count
        errors: list[str] = []
        for key in ("output_file_id", "error_file_id"):
            file_id = _optional_id(state.payload, key)
            if file_id is None:
                continue
            text = self.embedder._session.call("GET", f"files/{file_id}/content", text=True)
            for line in str(text).splitlines():
                if line.strip():
                    self._take(line, vectors, errors)
        _note_unanswered(vectors, errors, f"job {state.state}")
        return vectors, errors

    def cancel(self, job: str) -> None:
        self.embedder._session.post_json(f"batches/{job}/cancel", {})

    def cleanup(self, job: str, state: JobState) -> None:
        for key in ("input_file_id", "output_file_id", "error_file_id"):
            file_id = _optional_id(state.payload, key)
            if file_id is not None:
                self.embedder._session.call("DELETE", f"files/{file_id}")

    def _take(self, line: str, vectors: list[object | None], errors: list[str]) -> None:
        """One output or error line: its vector into *vectors*, or why not."""
        try:
            record = json.loads(line)
            index = int(record["custom_id"])
        except (ValueError, KeyError, TypeError):
            errors.append("a result line that is not valid JSON with a numeric custom_id")
            return
        if not 0 <= index < len(vectors):
            errors.append(f"a result for custom_id {index}, which was not sent")
            return
        response = record.get("response") if isinstance(record, dict) else None
        body = response.get("body") if isinstance(response, dict) else None
        if not isinstance(response, dict) or response.get("status_code") != 200:
            errors.append(f"text {index}: {_line_error(record, body)}")
            return
        try:
            [vector] = indexed_embeddings(self.embedder, body)
        except (ValueError, EmbeddingError):
            errors.append(f"text {index}: not exactly one vector in the answer")
            return
        vectors[index] = vector

    def _id(self, payload: object, key: str) -> str:
        value = self.embedder._field(payload, key)
        if not isinstance(value, str) or not _ID.fullmatch(value):
            raise self.embedder._malformed(f"{key!r} is not an identifier")
        return value


class GeminiBatchClient(BatchClient):
    # Inline requests must stay under 20 MB with their JSON around them.
    max_requests = 10_000
    max_bytes = 10 * 1024 * 1024

    def submit(self, texts: list[str]) -> str:
        embedder = self.embedder
        assert isinstance(embedder, GeminiEmbedder)
        requests = [
            {"request": embedder._content(text, "RETRIEVAL_DOCUMENT"), "metadata": {"key": str(i)}}
            for i, text in enumerate(texts)
        ]
        body = {
            "batch": {
                "model": f"models/{embedder._model_path}",
                "displayName": "openmemory-embeddings",
                "inputConfig": {"requests": {"requests": requests}},
            }
        }
        payload = embedder._session.post_json(
            f"models/{embedder._model_path}:asyncBatchEmbedContent", body
        )
        name = embedder._field(payload, "name")
        if not isinstance(name, str) or not _GEMINI_NAME.fullmatch(name):
            raise embedder._malformed("'name' is not a batches/<id> name")
        return name

    def poll(self, job: str) -> JobState:
        payload = self.embedder._session.call("GET", job)
        if not isinstance(payload, dict):
            raise self.embedder._malformed("the operation is not an object")
        metadata = payload.get("metadata")
        state = (metadata.get("state") if isinstance(metadata, dict) else None) or payload.get(
            "state", "BATCH_STATE_PENDING"
        )
        state = str(state)
        done = payload.get("done") is True or state in _GEMINI_DONE
        error: str | None = None
        failure = payload.get("error")
        if isinstance(failure, dict):
            error = str(failure.get("message") or failure)
        elif done and state != "BATCH_STATE_SUCCEEDED" and _gemini_output(payload) is None:
            error = f"ended {state}"
        return JobState(done=done, state=state, error=error, payload=payload)

    def collect(self, job: str, state: JobState, count: int) -> Collected:
        vectors: list[object | None] = [None] * count
        output = _gemini_output(state.payload)
        if output is None or "responsesFile" in output:
            return vectors, ["results were not returned inline"]
        inlined = output.get("inlinedResponses")
        if isinstance(inlined, dict):
            inlined = inlined.get("inlinedResponses")
        if not isinstance(inlined, list):
            return vectors, ["'inlinedResponses' is not a list"]
        errors: list[str] = []
        for position, item in enumerate(inlined):
            index = _gemini_key(item, position)
            if index is None or not 0 <= index < count:
                errors.append(f"a result for request {position}, which was not sent")
                continue
            response = item.get("response") if isinstance(item, dict) else None
            embedding = response.get("embedding") if isinstance(response, dict) else None
            values = embedding.get("values") if isinstance(embedding, dict) else None
            if values is None:
                failure = item.get("error") if isinstance(item, dict) else None
                errors.append(f"text {index}: {_message(failure) or 'no embedding'}")
                continue
            vectors[index] = values
        _note_unanswered(vectors, errors, state.state)
        return vectors, errors

    def cancel(self, job: str) -> None:
        self.embedder._session.post_json(f"{job}:cancel", {})

    def cleanup(self, job: str, state: JobState) -> None:
        """Nothing to delete: inline requests and results leave no files."""


def _note_unanswered(vectors: Sequence[object | None], errors: list[str], state: str) -> None:
    """Texts a finished job neither embedded nor reported an error for are
    errors too, so none of them is taken as done."""
    unanswered = sum(vector is None for vector in vectors) - len(errors)
    if unanswered > 0:
        errors.append(f"{unanswered} texts without an answer ({state})")


def _openai_errors(payload: object) -> str:
    """The first of a failed OpenAI batch's ``errors.data[].message``."""
    errors = payload.get("errors") if isinstance(payload, dict) else None
    data = errors.get("data") if isinstance(errors, dict) else None
    if isinstance(data, list) and data:
        return f"failed: {_message(data[0]) or data[0]}"
    return "failed"


def _line_error(record: object, body: object) -> str:
    """Why one OpenAI batch request failed, from its line."""
    if isinstance(record, dict) and record.get("error"):
        return _message(record["error"]) or "failed"
    if isinstance(body, dict) and body.get("error"):
        return _message(body["error"]) or "failed"
    return "failed"


def _message(error: object) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or "")
    return str(error) if error else ""


def _optional_id(payload: object, key: str) -> str | None:
    value = payload.get(key) if isinstance(payload, dict) else None
    return value if isinstance(value, str) and _ID.fullmatch(value) else None


def _gemini_output(payload: object) -> dict[str, object] | None:
    """Where the operation keeps the batch's output (response, metadata or top level)."""
    if not isinstance(payload, dict):
        return None
    for holder in (payload.get("response"), payload.get("metadata"), payload):
        output = holder.get("output") if isinstance(holder, dict) else None
        if isinstance(output, dict):
            return output
    return None


def _gemini_key(item: object, position: int) -> int | None:
    """The request index of one inline response: its metadata key, else its place."""
    metadata = item.get("metadata") if isinstance(item, dict) else None
    key = metadata.get("key") if isinstance(metadata, dict) else None
    if key is None:
        return position
    try:
        return int(str(key))
    except ValueError:
        return None
