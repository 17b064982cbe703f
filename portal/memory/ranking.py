"""Ranking pieces: exact cosine over a place's vectors, BM25 over its words, reciprocal-rank fusion.

Everything here is vectorised with numpy; a person's set is small (at most `max_active`), so an
exact scan beats an approximate index that would filter afterwards.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .text import words

RRF_K = 60
BM25_K1 = 1.2
BM25_B = 0.75
FRAGMENT_MIN = 3


def normalize(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def cosine_top(
    query: np.ndarray,
    ids: Sequence[str],
    matrix: np.ndarray,
    limit: int,
    min_similarity: float | None = None,
) -> list[tuple[str, float]]:
    """The `limit` rows most similar to `query`, best first, as (id, cosine similarity)."""
    if not len(ids) or limit <= 0:
        return []
    q = query.astype(np.float32, copy=False)
    qn = float(np.linalg.norm(q)) or 1.0
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    sims = (matrix @ q) / (norms * qn)
    k = min(limit, len(ids))
    if k < len(ids):
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
    else:
        top = np.argsort(-sims, kind="stable")
    out = [(ids[i], float(sims[i])) for i in top]
    if min_similarity is not None:
        out = [(i, s) for i, s in out if s >= min_similarity]
    return out


def bm25_top(query: str, docs: Sequence[tuple[str, str]], limit: int) -> list[tuple[str, float]]:
    """BM25 (Okapi) of `docs` — (id, text) pairs — for the folded words of `query`, best first.

    When no query word is found, a fragment match (a query word of three letters or more inside a
    document word) ranks what it finds, so "pyth" still finds "Python".
    """
    terms = list(dict.fromkeys(words(query)))
    if not terms or not docs or limit <= 0:
        return []
    tokenised = [(doc_id, words(text)) for doc_id, text in docs]
    lengths = np.array([len(toks) for _, toks in tokenised], dtype=np.float64)
    avg = float(lengths.mean()) or 1.0
    n = len(tokenised)
    counts = [Counter(toks) for _, toks in tokenised]
    scores = np.zeros(n, dtype=np.float64)
    for term in terms:
        tf = np.array([c.get(term, 0) for c in counts], dtype=np.float64)
        df = int(np.count_nonzero(tf))
        if not df:
            continue
        idf = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
        scores += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * lengths / avg))
    if not scores.any():
        return fragment_top(terms, tokenised, limit)
    order = np.argsort(-scores, kind="stable")
    return [(tokenised[i][0], float(scores[i])) for i in order[:limit] if scores[i] > 0]


def fragment_top(terms: Sequence[str], tokenised: Sequence[tuple[str, list[str]]], limit: int) -> list[tuple[str, float]]:
    """Documents holding a query fragment inside one of their words, by how many fragments."""
    fragments = [t for t in terms if len(t) >= FRAGMENT_MIN]
    if not fragments:
        return []
    scored = []
    for doc_id, toks in tokenised:
        joined = " ".join(toks)
        hits = sum(1 for f in fragments if f in joined)
        if hits:
            scored.append((doc_id, float(hits)))
    scored.sort(key=lambda pair: -pair[1])
    return scored[:limit]


def fuse(
    rankings: Sequence[tuple[str, Sequence[tuple[str, float]], float]],
    limit: int,
    k: int = RRF_K,
) -> list[tuple[str, float, set[str]]]:
    """Reciprocal-rank fusion of named rankings: (name, [(id, score)…], weight) → (id, score, names).

    Ties keep the order of first appearance, so the first ranking breaks them.
    """
    fused: dict[str, float] = {}
    found_by: dict[str, set[str]] = {}
    for name, ranking, weight in rankings:
        for rank, (doc_id, _score) in enumerate(ranking):
            fused[doc_id] = fused.get(doc_id, 0.0) + weight / (k + rank + 1)
            found_by.setdefault(doc_id, set()).add(name)
    ordered = sorted(fused.items(), key=lambda item: -item[1])
    return [(doc_id, score, found_by[doc_id]) for doc_id, score in ordered[:limit]]
