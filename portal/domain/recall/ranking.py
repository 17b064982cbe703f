"""Ranking pieces: exact cosine over a place's vectors, BM25 over its terms, and fusion of the two
(relative scores by default, reciprocal ranks as an option).

Everything here is vectorised with numpy; a person's set is small (at most `max_active`), so an
exact scan beats an approximate index that would filter afterwards.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from portal.domain.text import terms, weighted_query_terms

RRF_K = 60
BM25_K1 = 1.2
# Memories are a sentence or two: their length says little about how much of them is on topic, so
# length normalisation is weaker than the usual 0.75 (0.4 was best on the LoCoMo dev set, 0.3–0.5
# are all close; see docs/benchmarks.md).
BM25_B = 0.4
FRAGMENT_MIN = 3
# Relative fusion (`fuse_scores`): cosines closer than this are not stretched apart, and a word
# ranking counts fully once its best BM25 score reaches LEXICAL_FULL (about one rare word matched in
# a place of fifty memories; a common word's idf counts less, portal.domain.commonness); below, in
# proportion. 3.5 with the language weights (4.0 before them): docs/benchmarks.md, issue 31.
VECTOR_SPAN = 0.1
LEXICAL_FULL = 3.5
# Scores equal to this many decimals are a tie, broken by id (float rounding differs by store).
TIE_DIGITS = 6


def normalize(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def row_norms(matrix: np.ndarray) -> np.ndarray:
    """Each row's length, zero rows counted as 1 (they stay at similarity 0)."""
    # einsum: one pass, no temporary matrix of squares (a few times faster than linalg.norm).
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    norms[norms == 0] = 1.0
    return norms


def cosine_top(
    query: np.ndarray,
    ids: Sequence[str],
    matrix: np.ndarray,
    limit: int,
    min_similarity: float | None = None,
    norms: np.ndarray | None = None,
) -> list[tuple[str, float]]:
    """The `limit` rows most similar to `query`, best first, as (id, cosine similarity); rows of
    equal similarity in row order (callers hand the rows in id order: ties fall by id). `norms`
    may hand in `row_norms(matrix)`, kept by a caller that ranks the same rows often."""
    if not len(ids) or limit <= 0:
        return []
    q = query.astype(np.float32, copy=False)
    qn = float(np.linalg.norm(q)) or 1.0
    if norms is None:
        norms = row_norms(matrix)
    sims = (matrix @ q) / (norms * qn)
    k = min(limit, len(ids))
    if k < len(ids):
        # Every row reaching the k-th score, in row order, then the best k of them: rows tying at
        # the cut are taken in row order too, not as the partition left them.
        kth = np.partition(sims, len(ids) - k)[len(ids) - k]
        reaching = np.flatnonzero(sims >= kth)
        top = reaching[np.argsort(-sims[reaching], kind="stable")[:k]]
    else:
        top = np.argsort(-sims, kind="stable")
    out = [(ids[i], float(sims[i])) for i in top]
    if min_similarity is not None:
        out = [(i, s) for i, s in out if s >= min_similarity]
    return out


Bag = tuple[str, Mapping[str, int], int]
"""A document for the word ranking: its id, how often each ranking term occurs in it, its length."""


def bag(doc_id: str, doc_terms: Sequence[str]) -> Bag:
    return doc_id, Counter(doc_terms), len(doc_terms)


def bm25_rank(
    query: Sequence[str], docs: Sequence[Bag], count: int, average_length: float, limit: int,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """BM25 (Okapi) of docs for the query terms: the `limit` best (id, score), best first, ties in
    the docs' order.

    `count` and `average_length` describe the whole set being searched (a person's memories in a
    place), while `docs` needs only hold those sharing a term with the query: a term's document
    frequency is counted among them, which is exact when every doc holding a query term is there.
    That lets a database pick the candidates with its full-text index and every store score them
    the same way, on the person's own memories only. `weights` (one a query term, 1 by default)
    multiply the terms' idf: how common each is in the query's language (`weighted_query_terms`).
    """
    if not docs or not query or limit <= 0:
        return []
    n = max(count, len(docs))
    lengths = np.fromiter((length for _, _, length in docs), dtype=np.float64, count=len(docs))
    norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths / (average_length or 1.0))
    scores = np.zeros(len(docs), dtype=np.float64)
    weight_of = dict(zip(query, weights or [1.0] * len(query), strict=True))
    for term in dict.fromkeys(query):
        tf = np.fromiter((counts.get(term, 0) for _, counts, _ in docs), dtype=np.float64, count=len(docs))
        df = int(np.count_nonzero(tf))
        if not df:
            continue
        idf = math.log((n - df + 0.5) / (df + 0.5) + 1.0) * weight_of[term]
        scores += idf * tf * (BM25_K1 + 1) / (tf + norm)
    order = np.argsort(-scores, kind="stable")
    return [(docs[i][0], float(scores[i])) for i in order[:limit] if scores[i] > 0]


def words_top(query: str, docs: Sequence[Bag], limit: int) -> list[tuple[str, float]]:
    """The word ranking over a whole set of docs: BM25 of the query's terms, or when none is found
    a fragment match (a query word of three letters or more inside a document word), so "pyth"
    still finds "Python"."""
    wanted, weights = weighted_query_terms(query)
    if not wanted or not docs or limit <= 0:
        return []
    average = sum(length for _, _, length in docs) / len(docs)
    # Only docs holding a query term can score, and in id order, as the SQL stores read their
    # candidates: equal scores then fall the same way everywhere.
    candidates = sorted((d for d in docs if any(t in d[1] for t in wanted)), key=lambda d: d[0])
    ranked = bm25_rank(wanted, candidates, len(docs), average, limit, weights)
    return ranked or fragment_top(wanted, [(doc_id, list(counts)) for doc_id, counts, _ in docs], limit)


class WordIndex:
    """A set of docs made ready for many word rankings: the same answers as `words_top` over the
    same docs, computed from each term's postings (which docs hold it, how often) as arrays, so a
    query costs what its terms' postings hold rather than a look at every doc. For a store that
    ranks one place's memories again and again between writes."""

    __slots__ = ("_ids", "_docs", "_lists", "_postings", "_norm", "_count", "_haystack", "_starts")

    def __init__(self, docs: Sequence[Bag]) -> None:
        # In id order, as `words_top` ranks its candidates: equal scores fall the same way.
        ordered = sorted(docs, key=lambda d: d[0])
        self._ids = [doc_id for doc_id, _, _ in ordered]
        self._count = len(ordered)
        lengths = np.fromiter((length for _, _, length in ordered), dtype=np.float64, count=len(ordered))
        average = float(lengths.mean()) if len(ordered) else 0.0
        self._norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths / (average or 1.0))
        grouped: dict[str, tuple[list[int], list[int]]] = {}
        for i, (_, counts, _) in enumerate(ordered):
            for term, tf in counts.items():
                where, how_often = grouped.setdefault(term, ([], []))
                where.append(i)
                how_often.append(tf)
        # Each term's postings as lists, made arrays the first time a query asks for the term: a
        # place holds thousands of terms, a query a few (made once for all: 3.7 ms at 336 memories).
        self._lists = grouped
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._docs = list(docs)  # the fragment match keeps the given order, as `words_top` does
        # For the fragment match, made on its first use: every doc's terms joined by spaces, the
        # docs joined by newlines (no term holds one), and where each doc starts.
        self._haystack: str | None = None
        self._starts: np.ndarray | None = None

    def top(self, query: str, limit: int) -> list[tuple[str, float]]:
        wanted, weights = weighted_query_terms(query)
        if not wanted or not self._count or limit <= 0:
            return []
        scores: np.ndarray | None = None
        for term, weight in zip(wanted, weights, strict=True):
            found = self._posting(term)
            if found is None:
                continue
            where, tf = found
            idf = math.log((self._count - len(where) + 0.5) / (len(where) + 0.5) + 1.0) * weight
            if scores is None:
                scores = np.zeros(self._count, dtype=np.float64)
            scores[where] += idf * tf * (BM25_K1 + 1) / (tf + self._norm[where])
        if scores is not None:
            candidates = np.flatnonzero(scores > 0)
            best = candidates[np.argsort(-scores[candidates], kind="stable")[:limit]]
            return [(self._ids[i], float(scores[i])) for i in best]
        return self._fragments(wanted, limit)

    def _posting(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        found = self._postings.get(term)
        if found is None:
            listed = self._lists.get(term)
            if listed is None:
                return None
            # Threads sharing an index may both make it: the same arrays, either kept.
            found = self._postings[term] = (np.array(listed[0], dtype=np.intp), np.array(listed[1], dtype=np.float64))
        return found

    def _fragments(self, wanted: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """`fragment_top` over the docs, one scan of all their terms per fragment."""
        fragments = [t for t in wanted if len(t) >= FRAGMENT_MIN]
        if not fragments:
            return []
        if self._haystack is None or self._starts is None:
            joined = [" ".join(counts) for _, counts, _ in self._docs]
            self._haystack = "\n".join(joined)
            self._starts = np.cumsum([0] + [len(j) + 1 for j in joined[:-1]])
        hits = np.zeros(len(self._docs), dtype=np.int64)
        for fragment in fragments:
            found = [m.start() for m in re.finditer(re.escape(fragment), self._haystack)]
            if found:
                hits[np.unique(np.searchsorted(self._starts, found, side="right") - 1)] += 1
        holding = np.flatnonzero(hits)
        best = holding[np.argsort(-hits[holding], kind="stable")[:limit]]
        return [(self._docs[i][0], float(hits[i])) for i in best]


def bm25_top(query: str, docs: Sequence[tuple[str, str]], limit: int) -> list[tuple[str, float]]:
    """The word ranking of `docs` — (id, text) pairs — for `query`, best first (see `words_top`)."""
    if not docs or limit <= 0:
        return []
    return words_top(query, [bag(doc_id, terms(text)) for doc_id, text in docs], limit)


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

    Each ranking's scores are scaled to [0, 1] over its own candidates, then weighted and summed.
    Unlike reciprocal ranks this keeps how far apart the candidates are: a memory far better by
    words than the next one keeps that lead. Two things keep the scaling from inventing evidence:

    - the meaning ranking ("vector", cosines) puts its best at 1 and the others below it by their
      distance over the candidates' span, but over at least `VECTOR_SPAN`: cosines 1e-8 apart stay
      equal instead of becoming 1 and 0;
    - the word ranking ("lexical", BM25) is scaled from its worst to its best and then by how strong
      its best is (`lexical_evidence`): one memory sharing a common word with the question (the
      stem "like" of "how do they like their replies?" in "Likes tea") is no longer a full 1.

    Equal scores (to 1e-6) fall by id: memories that tie (the same text, the same vector) come
    in the same order on every store, with or without the recall cache. Scores that differ only
    by the stores' float rounding almost always round alike; two straddling a rounding boundary
    (one pair in millions) may still fall apart differently.
    """
    fused: dict[str, float] = {}
    found_by: dict[str, set[str]] = {}
    for name, ranking, weight in rankings:
        if not ranking:
            continue
        values = [score for _, score in ranking]
        low, high = min(values), max(values)
        if name == "lexical":
            evidence, span = lexical_evidence(high), high - low
            scale = [evidence * ((s - low) / span if span > 0 else 1.0) for s in values]
        else:
            span = max(high - low, VECTOR_SPAN)
            scale = [1.0 - (high - s) / span for s in values]
        for (doc_id, _), scaled in zip(ranking, scale, strict=True):
            fused[doc_id] = fused.get(doc_id, 0.0) + weight * scaled
            found_by.setdefault(doc_id, set()).add(name)
    return [(doc_id, score, found_by[doc_id]) for doc_id, score in ordered(fused)[:limit]]


def lexical_evidence(best: float) -> float:
    """How much a word ranking's best BM25 score says, in [0, 1]: full from `LEXICAL_FULL` up."""
    return min(1.0, max(best, 0.0) / LEXICAL_FULL)


def ordered(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Best first; scores equal to `TIE_DIGITS` decimals by id (the documented tie-break)."""
    # floor(x * 10^d + 0.5): rounding to d decimals, three times cheaper than round() here.
    scale = 10.0**TIE_DIGITS
    return sorted(scores.items(), key=lambda item: (-math.floor(item[1] * scale + 0.5), item[0]))


def fuse(
    rankings: Sequence[tuple[str, Sequence[tuple[str, float]], float]],
    limit: int,
    k: int = RRF_K,
) -> list[tuple[str, float, set[str]]]:
    """Reciprocal-rank fusion of named rankings: (name, [(id, score)…], weight) → (id, score, names).

    Equal scores fall by id, as in `fuse_scores`.
    """
    fused: dict[str, float] = {}
    found_by: dict[str, set[str]] = {}
    for name, ranking, weight in rankings:
        for rank, (doc_id, _score) in enumerate(ranking):
            fused[doc_id] = fused.get(doc_id, 0.0) + weight / (k + rank + 1)
            found_by.setdefault(doc_id, set()).add(name)
    return [(doc_id, score, found_by[doc_id]) for doc_id, score in ordered(fused)[:limit]]
