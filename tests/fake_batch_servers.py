"""Fake OpenAI Files + Batches and Gemini async-batch services on 127.0.0.1.

`FakeBatchServer` is a `FakeEmbeddingServer` (so ``/v1/embeddings``, the
synchronous path, still answers) that also speaks the batch wire formats:

- OpenAI: ``POST /v1/files`` (multipart, ``purpose=batch``, a JSONL file of
  ``/v1/embeddings`` requests), ``POST /v1/batches``, ``GET
  /v1/batches/{id}`` (``validating`` → ``in_progress`` → a final status),
  ``POST /v1/batches/{id}/cancel``, ``GET /v1/files/{id}/content`` (output
  and error JSONL) and ``DELETE /v1/files/{id}``.
- Gemini: ``POST /v1beta/models/{m}:asyncBatchEmbedContent`` with inline
  requests, ``GET /v1beta/batches/{id}`` (an operation: ``metadata.state``,
  ``done``, inline responses under ``response.output``) and
  ``POST /v1beta/batches/{id}:cancel``.

Knobs: `polls_before_done` (polls answered "in progress" first),
`outcome` (``completed``, ``failed``, ``expired``: only the first half
answered, or ``never``: never finishes), `fail_texts` (texts whose request
fails inside the job: an error-file line, or an inline error). What a test
checks: `batches_created`, `cancelled`, `deleted`, `max_running` (jobs
submitted and not yet seen finished, at most) and `sync_texts` (texts sent
to the synchronous endpoints). Vectors are `fake_vector`s, as for the
synchronous path, so batch and synchronous vectors of a text are equal.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from tests.fake_http import Fault, Raw, Recorded

from fake_embedding_servers import FakeEmbeddingServer, fake_vector


class FakeBatchServer(FakeEmbeddingServer):
    """Batch jobs in OpenAI's and Gemini's formats, plus every synchronous one."""

    def __init__(self, *, dims: int = 8, polls_before_done: int = 1) -> None:
        self.polls_before_done = polls_before_done
        self.outcome = "completed"
        self.fail_texts: set[str] = set()
        self.files: dict[str, str] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.cancelled: list[str] = []
        self.deleted: list[str] = []
        self.max_running = 0
        self._running: set[str] = set()
        self._state = threading.Lock()
        super().__init__(dims=dims)

    @property
    def batches_created(self) -> list[str]:
        return list(self.jobs)

    def sync_texts(self) -> list[str]:
        """Texts sent to the synchronous embedding endpoints."""
        return [
            text
            for request in self.requests
            if request.path.endswith(("/embeddings", ":batchEmbedContents", ":embedContent"))
            for text in _sync_texts(request)
        ]

    def answer_request(self, request: Recorded, fault: Fault | None) -> tuple[int, Any]:
        route = request.path.split("?", 1)[0]
        with self._state:
            if route.startswith("/v1/files") or route.startswith("/v1/batches"):
                return self._openai(request.method, route, request.body)
            if route.endswith(":asyncBatchEmbedContent") or route.startswith("/v1beta/batches/"):
                return self._gemini(request.method, route, request.body)
        return super().answer_request(request, fault)

    # ------------------------------------------------------------ OpenAI

    def _openai(self, method: str, route: str, body: Any) -> tuple[int, Any]:
        parts = route.strip("/").split("/")[1:]  # drop "v1"
        if method == "POST" and parts == ["files"]:
            if body.get("fields", {}).get("purpose") != "batch" or "file" not in body["files"]:
                return 400, {"error": {"message": "purpose=batch and a file are required"}}
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = body["files"]["file"]
            return 200, {"id": file_id, "object": "file", "purpose": "batch"}
        if method == "POST" and parts == ["batches"]:
            return self._create_openai(body)
        if method == "GET" and len(parts) == 2 and parts[0] == "batches":
            return self._poll_openai(parts[1])
        if method == "POST" and len(parts) == 3 and parts[::2] == ["batches", "cancel"]:
            self.cancelled.append(parts[1])
            self._running.discard(parts[1])
            self.jobs[parts[1]]["status"] = "cancelled"
            return 200, self.jobs[parts[1]]
        if method == "GET" and len(parts) == 3 and parts[2] == "content":
            if parts[1] not in self.files:
                return 404, {"error": {"message": "no such file"}}
            return 200, Raw(self.files[parts[1]], "application/octet-stream")
        if method == "DELETE" and len(parts) == 2:
            self.deleted.append(parts[1])
            self.files.pop(parts[1], None)
            return 200, {"id": parts[1], "object": "file", "deleted": True}
        return 404, {"error": {"message": f"no route {method} {route}"}}

    def _create_openai(self, body: dict[str, Any]) -> tuple[int, Any]:
        if (body.get("endpoint"), body.get("completion_window")) != ("/v1/embeddings", "24h"):
            return 400, {"error": {"message": "endpoint /v1/embeddings and 24h are required"}}
        if body.get("input_file_id") not in self.files:
            return 400, {"error": {"message": "unknown input_file_id"}}
        job_id = f"batch_{len(self.jobs) + 1}"
        self.jobs[job_id] = {
            "id": job_id,
            "object": "batch",
            "endpoint": "/v1/embeddings",
            "input_file_id": body["input_file_id"],
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "polls": 0,
        }
        self._running.add(job_id)
        self.max_running = max(self.max_running, len(self._running))
        return 200, self._public(self.jobs[job_id])

    def _poll_openai(self, job_id: str) -> tuple[int, Any]:
        job = self.jobs.get(job_id)
        if job is None:
            return 404, {"error": {"message": "no such batch"}}
        if job["status"] in ("validating", "in_progress"):
            job["polls"] += 1
            if self.outcome == "never" or job["polls"] <= self.polls_before_done:
                job["status"] = "in_progress"
            else:
                self._finish_openai(job)
        return 200, self._public(job)

    def _finish_openai(self, job: dict[str, Any]) -> None:
        self._running.discard(job["id"])
        if self.outcome == "failed":
            job["status"] = "failed"
            job["errors"] = {"object": "list", "data": [{"code": "x", "message": "fake failure"}]}
            return
        lines = [json.loads(line) for line in self.files[job["input_file_id"]].splitlines()]
        if self.outcome == "expired":
            lines = lines[: len(lines) // 2]
        out: list[str] = []
        err: list[str] = []
        for line in lines:
            text = line["body"]["input"]
            dims = int(line["body"].get("dimensions", self.dims))
            record: dict[str, Any] = {
                "id": f"req_{line['custom_id']}",
                "custom_id": line["custom_id"],
            }
            if text in self.fail_texts:
                error = {"message": "fake request failure", "type": "invalid_request_error"}
                record["response"] = {"status_code": 400, "body": {"error": error}}
                record["error"] = None
                err.append(json.dumps(record))
                continue
            vector = fake_vector(self.aliases.get(text, text), dims).tolist()
            data = [{"object": "embedding", "index": 0, "embedding": vector}]
            record["response"] = {"status_code": 200, "body": {"object": "list", "data": data}}
            record["error"] = None
            out.append(json.dumps(record))
        job["status"] = "expired" if self.outcome == "expired" else "completed"
        for key, content in (("output_file_id", out), ("error_file_id", err)):
            if content:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = "\n".join(content) + "\n"
                job[key] = file_id

    @staticmethod
    def _public(job: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in job.items() if key != "polls"}

    # ------------------------------------------------------------ Gemini

    def _gemini(self, method: str, route: str, body: Any) -> tuple[int, Any]:
        if method == "POST" and route.endswith(":asyncBatchEmbedContent"):
            requests = body["batch"]["inputConfig"]["requests"]["requests"]
            name = f"batches/g{len(self.jobs) + 1}"
            self.jobs[name] = {"name": name, "requests": requests, "polls": 0, "state": "PENDING"}
            self._running.add(name)
            self.max_running = max(self.max_running, len(self._running))
            return 200, self._operation(self.jobs[name])
        name = route.removeprefix("/v1beta/")
        if method == "POST" and name.endswith(":cancel"):
            name = name.removesuffix(":cancel")
            self.cancelled.append(name)
            self._running.discard(name)
            self.jobs[name]["state"] = "CANCELLED"
            return 200, {}
        job = self.jobs.get(name)
        if method != "GET" or job is None:
            return 404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}
        if job["state"] in ("PENDING", "RUNNING"):
            job["polls"] += 1
            if self.outcome == "never" or job["polls"] <= self.polls_before_done:
                job["state"] = "RUNNING"
            else:
                job["state"] = "FAILED" if self.outcome == "failed" else "SUCCEEDED"
                self._running.discard(name)
        return 200, self._operation(job)

    def _operation(self, job: dict[str, Any]) -> dict[str, Any]:
        state = f"BATCH_STATE_{job['state']}"
        metadata = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.EmbedContentBatch",
            "name": job["name"],
            "state": state,
        }
        operation: dict[str, Any] = {"name": job["name"], "metadata": metadata, "done": False}
        if job["state"] == "FAILED":
            operation["done"] = True
            operation["error"] = {"code": 13, "message": "fake batch failure"}
        elif job["state"] == "CANCELLED":
            operation["done"] = True
        elif job["state"] == "SUCCEEDED":
            operation["done"] = True
            responses = [self._inline(item) for item in job["requests"]]
            operation["response"] = {
                "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta."
                "AsyncBatchEmbedContentResponse",
                "output": {"inlinedResponses": {"inlinedResponses": responses}},
            }
        return operation

    def _inline(self, item: dict[str, Any]) -> dict[str, Any]:
        request = item["request"]
        text = request["content"]["parts"][0]["text"]
        if text in self.fail_texts:
            failure = {"code": 3, "message": "fake request failure"}
            return {"error": failure, "metadata": item.get("metadata")}
        dims = int(request.get("outputDimensionality", self.dims))
        values = fake_vector(self.aliases.get(text, text), dims).tolist()
        return {"response": {"embedding": {"values": values}}, "metadata": item.get("metadata")}


def _sync_texts(request: Recorded) -> list[str]:
    body = request.body
    if "requests" in body:
        return [item["content"]["parts"][0]["text"] for item in body["requests"]]
    if "content" in body:
        return [body["content"]["parts"][0]["text"]]
    inputs = body.get("input", [])
    return [inputs] if isinstance(inputs, str) else list(inputs)
