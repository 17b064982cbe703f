"""How relevant one memory is to one query, on a scale that depends on nothing else (issue 39).

Recall ranks with evidence measured against the place (BM25's idf over the person's memories, the
cosine less the mean of their vectors, each ranking scaled over its own candidates): good for
ordering one answer, meaningless across answers. A hit's score is instead a function of the query
and the memory alone, so a threshold means the same with 2 memories or 2,000, in any place:

    score = σ(COSINE · cosine + COVERAGE · coverage + BIAS)

- `cosine`: the plain cosine of the query's and the memory's vectors;
- `coverage`: the share of the query's ranking terms (`weighted_query_terms`: stop words out,
  stemmed, each weighed by how rare it is in the language, never by the place) that the memory
  holds, in [0, 1]; a term naming the person whose memories these are (their id, as mem0's
  `user_id="eve"`) counts for none (`Query`).

Without a vector (no embedder, the AI off, a memory of another model) the words alone answer,
with their own constants. The constants are a logistic regression of "the memory is evidence for
the question" on LoCoMo's dev conversations (standalone facts, `bench/quality/scores.py`), each
class weighed equally: a score is the chance a memory with that evidence answers the question,
among equally many that do and that do not. They were fitted for all-MiniLM-L6-v2 (the local
model); another model's cosines sit elsewhere (docs/operations.md says what to choose then).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from portal.domain.text import terms, weighted_query_terms
from portal.domain.types import Embedding, Memory

# Fitted on the LoCoMo dev set (bench/quality/scores.py; docs/benchmarks.md "Scores").
COSINE = 8.76
COVERAGE = 3.64
BIAS = -5.40
WORDS_COVERAGE = 8.80
WORDS_BIAS = -2.80


class Query:
    """A query's ranking terms and their weights, worked out once for all its hits."""

    __slots__ = ("terms", "weights", "total")

    def __init__(self, text: str, person: str = "") -> None:
        self.terms, self.weights = weighted_query_terms(text)
        # A term naming the person whose memories these are ("eve" of "where does eve live?" in
        # eve's place) is what every memory there is about, named or not ("I live in NYC"): it
        # counts for none of them, unless the query names nothing else.
        named = set(terms(person))
        if named and any(t not in named for t in self.terms):
            self.weights = [0.0 if t in named else w for t, w in zip(self.terms, self.weights, strict=True)]
        self.total = sum(self.weights)

    def coverage(self, memory_text: str) -> float:
        """The weighed share of the query's terms the memory's text holds, in [0, 1]."""
        return self.covered(set(terms(memory_text)))

    def covered(self, held: set[str]) -> float:
        """`coverage` of a memory whose ranking terms are `held`."""
        if not self.total:
            return 0.0
        return sum(w for t, w in zip(self.terms, self.weights, strict=True) if t in held) / self.total


def relevance(cosine: float | None, coverage: float) -> float:
    """The score of a memory whose plain cosine to the query is `cosine` (None: no vector to
    compare) and which holds `coverage` of the query's terms: in (0, 1), higher is more relevant."""
    if cosine is None or not math.isfinite(cosine):
        return _sigmoid(WORDS_COVERAGE * coverage + WORDS_BIAS)
    return _sigmoid(COSINE * cosine + COVERAGE * coverage + BIAS)


def relevances(query: str, vector: Embedding | None, memories: Sequence[Memory], person: str = "") -> list[float]:
    """`relevance` of each memory of `person` for `query`, whose vector is `vector` (None: no
    embedder): the plain cosine of the memory's own vector when it is of the query's model and
    size, else the words alone."""
    asked = Query(query, person)
    return [relevance(cosine(vector, m.embedding), asked.coverage(m.text)) for m in memories]


def cosine(a: Embedding | None, b: Embedding | None) -> float | None:
    """The plain cosine of two vectors of the same model and size (None otherwise, or for a zero one)."""
    if a is None or b is None or a.model != b.model or a.vector.shape != b.vector.shape:
        return None
    x, y = np.asarray(a.vector, dtype=np.float64), np.asarray(b.vector, dtype=np.float64)
    norms = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norms if norms else None


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
