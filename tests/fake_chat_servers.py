"""A fake chat model on 127.0.0.1 that speaks OpenAI's and Ollama's chat wire formats.

A `tests.fake_http.FakeHTTPServer` (a real HTTP server on 127.0.0.1) answers
OpenAI-style ``POST …/chat/completions`` (``{"choices": [{"message": …}]}``)
and Ollama's ``POST /api/chat`` with ``stream: false`` (``{"message": …,
"done": true}``), routing by the path's ending. It records every request
(path, headers, JSON body), so tests can read the prompts it got, and can be
told to misbehave for the next requests (`fail_next`): an HTTP status,
invalid JSON, an empty reply, a reply of the wrong shape, or a hang longer
than the client's timeout. `reply_next` queues literal replies.

Invariants: the default reply is a deterministic function of the prompt
(`fake_summary`): one bullet per conversation line holding its first words,
so a summary is shorter than long messages, keeps their distinctive words
(searchable later) and shows which messages the model saw; `close` releases
hanging handlers and joins the server thread, so no socket outlives a test.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import Any

from tests import fake_http
from tests.fake_http import HANG, INVALID_JSON, FakeHTTPServer, Fault, status

SUMMARY_WORDS = 6

EMPTY = Fault("empty")
WRONG_SHAPE = Fault("wrong_shape")


@dataclass(frozen=True)
class Recorded(fake_http.Recorded):
    """A chat request: its system prompt and its last (user) message."""

    @property
    def system(self) -> str:
        return str(self.body["messages"][0]["content"])

    @property
    def user(self) -> str:
        return str(self.body["messages"][-1]["content"])


def fake_summary(user: str) -> str:
    """The fake model's reply: a bullet with the first words of each line it was given."""
    bullets = []
    for line in user.splitlines():
        line = re.sub(r"</?(conversation|summary)\b[^>]*>", "", line).strip(" -")
        if line:
            bullets.append("- " + " ".join(line.split()[:SUMMARY_WORDS]))
    return "\n".join(bullets) or "- (nothing)"


class FakeChatServer(FakeHTTPServer):
    """Chat replies in OpenAI's and Ollama's wire formats, queued or made up."""

    recorded_type = Recorded

    def __init__(self, *, hang_s: float = 5.0) -> None:
        self._replies: deque[str] = deque()
        super().__init__(hang_s=hang_s)

    @property
    def requests(self) -> list[Recorded]:  # type: ignore[override]
        return [r for r in super().requests if isinstance(r, Recorded)]

    def reply_next(self, *replies: str) -> None:
        with self._lock:
            self._replies.extend(replies)

    def answer(self, path: str, body: dict[str, Any], fault: Fault | None) -> tuple[int, Any]:
        """The JSON payload for a well-formed request, in the path's wire format."""
        with self._lock:
            reply = self._replies.popleft() if fault is None and self._replies else None
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, {"error": {"message": "messages must be a non-empty list"}}
        text = reply if reply is not None else fake_summary(str(messages[-1].get("content")))
        if fault is not None and fault.kind == "empty":
            text = ""
        model = body.get("model", "")
        route = path.split("?", 1)[0]
        if route.endswith("/api/chat"):
            if fault is not None and fault.kind == "wrong_shape":
                return 200, {"model": model, "response": text, "done": True}
            return 200, {
                "model": model,
                "created_at": "2026-11-23T12:00:00Z",
                "message": {"role": "assistant", "content": text},
                "done": True,
                "done_reason": "stop",
            }
        if route.endswith("/chat/completions"):
            if fault is not None and fault.kind == "wrong_shape":
                return 200, {"id": "chatcmpl-fake", "object": "chat.completion", "choices": []}
            return 200, {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        return 404, {"error": {"message": f"no route {route}"}}


__all__ = [
    "EMPTY",
    "HANG",
    "INVALID_JSON",
    "WRONG_SHAPE",
    "FakeChatServer",
    "Fault",
    "Recorded",
    "fake_summary",
    "status",
]
