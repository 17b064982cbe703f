"""A deterministic embedder for tests: our own `Embedder` protocol boundary, the one place a fake
stands in for a real part (the local model is exercised by its own tests)."""

from __future__ import annotations

import re
import threading
import unicodedata
import zlib
from collections.abc import Sequence

import numpy as np

_TOKEN = re.compile(r"[a-z0-9#+]+")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


class HashEmbedder:
    """Bag of words hashed (crc32, stable across runs) into `dim` buckets.

    `synonyms` maps a word to the word it means, so "puppy" lands in the bucket of "dog": that is
    how the tests tell a match by meaning from a match by words. Every call is recorded in `calls`
    so a test can check what text reached the embedder.
    """

    def __init__(self, model_id: str = "fake-hash-64", dim: int = 64, synonyms: dict[str, str] | None = None) -> None:
        self.model_id = model_id
        self.dim = dim
        self.synonyms = dict(synonyms or {})
        self.calls: list[tuple[list[str], str]] = []
        self._lock = threading.Lock()

    def vector(self, text: str) -> np.ndarray:
        out = np.zeros(self.dim, dtype=np.float32)
        for word in _TOKEN.findall(_fold(text)):
            word = self.synonyms.get(word, word)
            out[zlib.crc32(word.encode("utf-8")) % self.dim] += 1.0
        return out

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        with self._lock:
            self.calls.append((list(texts), purpose))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), self.model_id
        return np.stack([self.vector(t) for t in texts]), self.model_id

    def cosine(self, a: str, b: str) -> float:
        va, vb = self.vector(a), self.vector(b)
        return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))

    @property
    def texts_seen(self) -> list[str]:
        return [t for texts, _ in self.calls for t in texts]
