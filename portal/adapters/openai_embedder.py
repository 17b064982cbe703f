"""The embedder of an OpenAI-compatible `/embeddings` endpoint (see `portal.adapters.embedders`).

Nothing is contacted at construction beyond building the HTTP client; error messages carry codes
and counts, never the texts being embedded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from portal.adapters.embedder_base import EmbedderError, _text_list
from portal.adapters.http_deadline import post_within


class OpenAIEmbedder:
    """An OpenAI-compatible `POST {base_url}/embeddings` endpoint (OpenAI, vLLM, Ollama, LiteLLM...).

    Transient failures (connection errors, timeouts, 429, 5xx) are retried a bounded number of
    times with a short backoff; anything else becomes an `EmbedderError` at once. `timeout` bounds
    one request to the endpoint, all of its tries and backoffs together: a request waiting on an
    embedder that hangs gives up then, and the write goes on without a vector.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 10.0,
        retries: int = 2,
        batch_size: int = 128,
        dimensions: int | None = None,
        backoff: float = 0.2,
    ):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        if not model:
            raise ValueError("model is required")
        if batch_size < 1 or retries < 0:
            raise ValueError("batch_size must be positive and retries not negative")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.model_id = model
        self.url = base_url.rstrip("/") + "/embeddings"
        self.timeout = timeout
        self.retries = retries
        self.batch_size = batch_size
        self.dimensions = dimensions
        self.backoff = backoff
        self._dim: int | None = dimensions
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # One client for the embedder's life: keeps connections alive between calls.
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        batch = _text_list(texts, purpose)
        if not batch:
            return np.zeros((0, self._dim or 0), dtype=np.float32), self.model_id
        parts = [self._embed_batch(batch[i : i + self.batch_size]) for i in range(0, len(batch), self.batch_size)]
        matrix = np.ascontiguousarray(np.concatenate(parts, axis=0), dtype=np.float32)
        self._dim = matrix.shape[1]
        return matrix, self.model_id

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.model_id, "input": batch}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        return self._parse(self._post(body), len(batch))

    def _post(self, body: dict[str, Any]) -> Any:
        failure = "no attempt made"
        deadline = time.monotonic() + self.timeout
        tried = 0
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(self.backoff * 2 ** (attempt - 1), max(0.0, deadline - time.monotonic())))
            left = deadline - time.monotonic()
            if left <= 0:
                break
            tried += 1
            try:
                status, content = post_within(self._client, self.url, body, deadline)
            except (httpx.TransportError, TimeoutError) as exc:
                # Only the exception's class: its text may quote the URL's query string.
                failure = f"{type(exc).__name__}"
                continue
            if status == 429 or status >= 500:
                failure = f"HTTP {status}"
                continue
            if status >= 400:
                # The body is not quoted: some servers echo the input back in their error.
                raise EmbedderError(f"embedding endpoint refused the request: HTTP {status}")
            try:
                return json.loads(content)
            except ValueError:
                raise EmbedderError("embedding endpoint answered with something other than JSON") from None
        raise EmbedderError(f"embedding endpoint failed within {self.timeout:g} s ({tried} attempts): {failure}")

    def _parse(self, answer: Any, expected: int) -> np.ndarray:
        try:
            # Answers may come in any order; "index" says which input each vector belongs to.
            items = sorted(answer["data"], key=lambda item: int(item["index"]))
            indices = [int(item["index"]) for item in items]
            matrix = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError):
            raise EmbedderError("embedding endpoint answered in an unexpected shape") from None
        if indices != list(range(expected)) or matrix.ndim != 2 or matrix.shape[1] == 0:
            raise EmbedderError(f"embedding endpoint answered {len(indices)} vectors for {expected} texts")
        return matrix
