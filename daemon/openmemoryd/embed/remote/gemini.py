"""Google Gemini embeddings (Generative Language API).

Wire format: documents go to ``POST {base}/models/{model}:batchEmbedContents``
as ``{"requests": [{"model": "models/{model}", "content": {"parts": [{"text"}]},
"taskType": "RETRIEVAL_DOCUMENT"}, ...]}`` → ``{"embeddings": [{"values"}]}``;
a query goes to ``POST {base}/models/{model}:embedContent`` with
``"taskType": "RETRIEVAL_QUERY"`` → ``{"embedding": {"values"}}``.
``outputDimensionality`` is sent per request only when dimensions are set.
Invariant: the key travels in the ``x-goog-api-key`` header, never in the URL
(Google also accepts ``?key=``, which would put it in every proxy log).
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import quote

from openmemoryd.embed.remote.http import RemoteConfig, RemoteEmbedder


class GeminiEmbedder(RemoteEmbedder):
    provider = "gemini"
    default_base_url = "https://generativelanguage.googleapis.com/v1beta"
    default_model = "gemini-embedding-001"
    key_env_vars = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    hosted_hosts = ("generativelanguage.googleapis.com",)
    # The model reads at most 2,048 tokens; 6,000 bytes stays under that.
    input_limit_bytes = 6000
    batch_count_limit = 100
    supports_dimensions = True

    def __init__(self, config: RemoteConfig) -> None:
        # Accept "models/gemini-embedding-001" as well as the bare name.
        super().__init__(replace(config, model=config.model.removeprefix("models/")))
        self._model_path = quote(self.model, safe="-._~")

    @classmethod
    def auth_headers(cls, api_key: str) -> dict[str, str]:
        return {"x-goog-api-key": api_key}

    def _request(self, texts: list[str], *, query: bool) -> list[object]:
        if query:
            return [self._embed_one_query(text) for text in texts]
        body = {"requests": [self._content(text, "RETRIEVAL_DOCUMENT") for text in texts]}
        payload = self._session.post_json(f"models/{self._model_path}:batchEmbedContents", body)
        return [self._field(item, "values") for item in self._list_field(payload, "embeddings")]

    def _embed_one_query(self, text: str) -> object:
        body = self._content(text, "RETRIEVAL_QUERY")
        payload = self._session.post_json(f"models/{self._model_path}:embedContent", body)
        return self._field(self._field(payload, "embedding"), "values")

    def _content(self, text: str, task: str) -> dict[str, object]:
        request: dict[str, object] = {
            "model": f"models/{self._model_path}",
            "content": {"parts": [{"text": text}]},
            "taskType": task,
        }
        if self._dimensions:
            request["outputDimensionality"] = self._dimensions
        return request
