"""Ranking pieces: exact cosine over a place's vectors, BM25 over its terms, and fusion of the two
(relative scores by default, reciprocal ranks as an option).

Everything here is vectorised with numpy; a person's set is small (at most `max_active`), so an
exact scan beats an approximate index that would filter afterwards.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .text import query_terms, terms

RRF_K = 60
BM25_K1 = 1.2
# Memories are a sentence or two: their length says little about how much of them is on topic, so
# length normalisation is weaker than the usual 0.75 (0.4 was best on the LoCoMo dev set, 0.3–0.5
# are all close; see docs/benchmarks.md).
BM25_B = 0.4
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


def bm25_scores(
    query: Sequence[str], docs: Sequence[Sequence[str]], count: int, average_length: float
) -> np.ndarray:
    """BM25 (Okapi) of each tokenised doc for the query terms, best high.

    `count` and `average_length` describe the whole set being searched (a person's memories in a
    place), while `docs` needs only hold those sharing a term with the query: a term's document
    frequency is counted among them, which is exact when every doc holding a query term is there.
    That lets a database pick the candidates with its full-text index and every store score them
    the same way, on the person's own memories only.
    """
    n = max(count, len(docs))
    scores = np.zeros(len(docs), dtype=np.float64)
    if not docs or not query:
        return scores
    lengths = np.fromiter((len(d) for d in docs), dtype=np.float64, count=len(docs))
    norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths / (average_length or 1.0))
    counts = [Counter(d) for d in docs]
    for term in dict.fromkeys(query):
        tf = np.fromiter((c.get(term, 0) for c in counts), dtype=np.float64, count=len(counts))
        df = int(np.count_nonzero(tf))
        if not df:
            continue
        idf = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
        scores += idf * tf * (BM25_K1 + 1) / (tf + norm)
    return scores


def bm25_rank(
    query: Sequence[str], docs: Sequence[tuple[str, Sequence[str]]], count: int, average_length: float, limit: int
) -> list[tuple[str, float]]:
    """The `limit` best (id, BM25) of tokenised docs, best first; ties keep the docs' order."""
    if limit <= 0:
        return []
    scores = bm25_scores(query, [toks for _, toks in docs], count, average_length)
    order = np.argsort(-scores, kind="stable")
    return [(docs[i][0], float(scores[i])) for i in order[:limit] if scores[i] > 0]


def words_top(query: str, docs: Sequence[tuple[str, Sequence[str]]], limit: int) -> list[tuple[str, float]]:
    """The word ranking over a whole set of docs given as (id, ranking terms): BM25 of the query's
    terms, or when none is found a fragment match (a query word of three letters or more inside a
    document word), so "pyth" still finds "Python"."""
    wanted = query_terms(query)
    if not wanted or not docs or limit <= 0:
        return []
    # In id order, as the SQL stores read their candidates: equal scores then fall the same way.
    docs = sorted(docs, key=lambda doc: doc[0])
    average = sum(len(toks) for _, toks in docs) / len(docs)
    ranked = bm25_rank(wanted, docs, len(docs), average, limit)
    return ranked or fragment_top(wanted, docs, limit)


def bm25_top(query: str, docs: Sequence[tuple[str, str]], limit: int) -> list[tuple[str, float]]:
    """The word ranking of `docs` — (id, text) pairs — for `query`, best first (see `words_top`)."""
    if not docs or limit <= 0:
        return []
    return words_top(query, [(doc_id, terms(text)) for doc_id, text in docs], limit)


def fragment_top(
    query: Sequence[str], tokenised: Sequence[tuple[str, Sequence[str]]], limit: int
) -> list[tuple[str, float]]:
    """Documents holding a query fragment inside one of their words, by how many fragments."""
    fragments = [t for t in query if len(t) >= FRAGMENT_MIN]
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


def fuse_scores(
    rankings: Sequence[tuple[str, Sequence[tuple[str, float]], float]],
    limit: int,
) -> list[tuple[str, float, set[str]]]:
    """Relative score fusion of named rankings: (name, [(id, score)…], weight) → (id, score, names).

    Each ranking's scores are scaled to [0, 1] over its own candidates (its best 1, its worst 0; a
    lone candidate, or candidates all equal, 1), then weighted and summed. Unlike reciprocal ranks
    this keeps how far apart the candidates are: a memory far better by words than the next one
    keeps that lead. Ties keep the order of first appearance, so the first ranking breaks them.
    """
    fused: dict[str, float] = {}
    found_by: dict[str, set[str]] = {}
    for name, ranking, weight in rankings:
        if not ranking:
            continue
        values = [score for _, score in ranking]
        low, high = min(values), max(values)
        span = high - low
        for doc_id, score in ranking:
            scaled = (score - low) / span if span > 0 else 1.0
            fused[doc_id] = fused.get(doc_id, 0.0) + weight * scaled
            found_by.setdefault(doc_id, set()).add(name)
    ordered = sorted(fused.items(), key=lambda item: -item[1])
    return [(doc_id, score, found_by[doc_id]) for doc_id, score in ordered[:limit]]


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
