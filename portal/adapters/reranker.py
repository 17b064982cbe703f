"""A rerank server as recall's second opinion (issue 31): text-embeddings-inference, Infinity, or
any Cohere-compatible `/rerank`, for deployments that run one.

Two request shapes, by `api`:
- "cohere" (Cohere, Infinity, vLLM, LocalAI...): POST {base}/rerank {"model", "query",
  "documents": [...], "top_n"} → {"results": [{"index", "relevance_score"}, ...]};
- "tei" (Hugging Face text-embeddings-inference): POST {base}/rerank {"query", "texts": [...]} →
  [{"index", "score"}, ...].
Every text must come back with a finite score, else the answer is refused (ValueError) and recall
keeps its own order. The deadline (`timeout`, seconds) bounds the whole call, the answer's bytes
included, and an answer over MAX_ANSWER bytes is refused (portal.adapters.http_deadline). Nothing
here logs or keeps a word: recall logs a failure by its type.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

import httpx

from portal.adapters.http_deadline import post_within

APIS = ("cohere", "tei")
MAX_ANSWER = 1024 * 1024  # bytes: a real answer for 100 texts is a few kB


class HttpReranker:
    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None, api: str = "cohere",
                 timeout: float = 0.5) -> None:
        if api not in APIS:
            raise ValueError(f"MEMORY_RERANK_API must be one of {', '.join(APIS)}")
        self.api, self.model, self.timeout = api, model, timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout,
                                    follow_redirects=False)

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        if self.api == "tei":
            body: dict[str, Any] = {"query": query, "texts": list(texts), "truncate": True}
        else:
            body = {"query": query, "documents": list(texts), "top_n": len(texts)}
            if self.model:
                body["model"] = self.model
        status, content = post_within(self._client, "/rerank", body, time.monotonic() + self.timeout, MAX_ANSWER)
        if status != 200:
            raise ValueError(f"the rerank server answered {status}")
        found = json.loads(content)
        rows = found.get("results") if isinstance(found, dict) else found
        key = "score" if self.api == "tei" else "relevance_score"
        scores: list[float | None] = [None] * len(texts)
        for row in rows if isinstance(rows, list) else []:
            index, score = (row.get("index"), row.get(key)) if isinstance(row, dict) else (None, None)
            if isinstance(index, int) and 0 <= index < len(texts) and isinstance(score, float | int) \
                    and not isinstance(score, bool) and math.isfinite(score):
                scores[index] = float(score)
        if any(s is None for s in scores):
            raise ValueError("the rerank server did not score every text")
        return [float(s) for s in scores if s is not None]

    def close(self) -> None:
        self._client.close()
