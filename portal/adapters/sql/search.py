"""Meaning and word rankings inside the database, one place at a time.

Meaning: PostgreSQL orders the place's rows by pgvector's `<=>` (cosine distance); SQLite reads
the place's blobs and scans them with numpy. Both select rows through the (owner_id, scope, state)
index first and only ever compare vectors of the query's model and size.

Words: `search_text` holds each memory's ranking terms (folded, stemmed words: see
`portal.domain.text`), and nothing else does: there is no full-text index, so no second copy of a
person's words that an erasure would leave behind (an FTS5 delete only adds a tombstone; a GIN
index keeps its entries until VACUUM). Both databases read the place's terms through the place
index (see `place_terms_ranking`) and BM25 scores them in process with the place's own statistics
(how many memories, their average length), the very function the in-memory store uses: the three
stores rank alike, and no other person's words weigh on a person's ranking. When no term is found,
a fragment match over the place's terms takes over.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Float, LargeBinary, func, select, type_coerce

from portal.adapters.sql.tables import VectorType, memories
from portal.domain.recall.ranking import WordIndex, bag, bm25_rank, cosine_top, fragment_top, row_norms
from portal.domain.text import terms, weighted_query_terms
from portal.domain.types import Embedding
from portal.ports import Filters

if TYPE_CHECKING:
    from portal.adapters.sql.transaction import SqlTx

M = memories.c


def nearest_rows(tx: SqlTx, query: Embedding, limit: int, filters: Filters) -> list[tuple[str, float]]:
    same_space = [M.embedding_model == query.model, M.embedding_dim == query.dim]
    where = [tx.here(), *tx.filtered(filters), *same_space]
    if tx.store.postgres:
        distance = M.embedding.op("<=>", return_type=Float())(query.vector)
        rows = tx.conn.execute(select(M.id, distance.label("d")).where(*where).order_by(distance, M.id).limit(limit)).all()
        return [(r.id, 1.0 - float(r.d)) for r in rows]
    ids, matrix, norms = place_matrix(tx, query.model, query.dim, filters)
    return cosine_top(query.vector, ids, matrix, limit, norms=norms)


def place_matrix(tx: SqlTx, model: str, dim: int, filters: Filters) -> tuple[list[str], np.ndarray, np.ndarray]:
    """SQLite: the ids, vectors and vector lengths of the place's memories passing the filters, in
    this model and size. The blobs are read as raw bytes and joined into one matrix (no array per
    row); a read transaction keeps the matrix for its other rankings (a recall ranks by meaning more
    than once), a write transaction reads it afresh each time since it may have changed it."""
    key = (model, dim, filters)
    cache = tx.matrices
    if cache is not None and key in cache:
        return cache[key]
    where = [tx.here(), *tx.filtered(filters), M.embedding_model == model, M.embedding_dim == dim]
    rows = tx.conn.execute(
        select(M.id, type_coerce(M.embedding, LargeBinary)).where(*where).order_by(M.id)  # ties fall by id
    ).all()
    ids = [r[0] for r in rows]
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
    found = (ids, matrix, row_norms(matrix))
    if cache is not None:
        cache[key] = found
    return found


def mean_vector(tx: SqlTx, model: str, dim: int, filters: Filters) -> np.ndarray | None:
    where = [tx.here(), *tx.filtered(filters), M.embedding_model == model, M.embedding_dim == dim]
    if tx.store.postgres:
        # sum / count: pgvector's avg() accumulates in double precision and took 2.5 of the 3.4 ms
        # this costs for 1,000 vectors; sum() adds in single precision, as numpy does elsewhere.
        total = func.sum(func.l2_normalize(M.embedding), type_=VectorType())
        found, count = tx.conn.execute(select(total, func.count()).where(*where)).one()
        return None if found is None or not count else (np.asarray(found, dtype=np.float32) / count).astype(np.float32)
    _, matrix, norms = place_matrix(tx, model, dim, filters)
    if not len(matrix):
        return None
    return (matrix / norms[:, None]).mean(axis=0).astype(np.float32)


def words_each(tx: SqlTx, queries: Sequence[str], limit: int, filters: Filters) -> list[list[tuple[str, float]]]:
    """`search_words` of each query over one read of the place: the terms of every memory passing
    the filters made into one `WordIndex` (the same BM25 and fragment match as `words_ranking` and
    the recall cache). The active memories' terms come from the recall cache when it holds the
    place (no text is read or decrypted for them); the others' are read once."""
    if not queries:
        return []
    filters = tx.at_now(filters)
    where = [tx.here(), *tx.filtered(filters)]
    active = replace(filters, state="active")
    cached = tx.place_index(active) if filters.state in (None, "active") else None
    docs = list(cached.bags(active)) if cached is not None else []  # a copy: the cache's own list stays
    if cached is not None:
        where.append(M.state != "active")
    if cached is None or filters.state is None:
        words = M.search_text if tx.store.searches_text else M.text
        for memory_id, stored in tx.conn.execute(select(M.id, words).where(*where)):
            toks = (stored or "").split() if tx.store.searches_text else terms(tx.store.decrypt(stored))
            docs.append(bag(memory_id, toks))
    index = WordIndex(docs)
    return [index.top(query, limit) for query in queries]


def words_ranking(tx: SqlTx, query: str, limit: int, filters: Filters) -> list[tuple[str, float]]:
    """BM25 of the query's terms over the place's memories, or the fragment match when no term is
    found: the same ranking as the in-memory store's, on the stored terms (`search_text`)."""
    wanted, weights = weighted_query_terms(query)
    if not wanted or limit <= 0:
        return []
    return place_terms_ranking(tx, wanted, [tx.here(), *tx.filtered(filters)], limit, weights)


def place_terms_ranking(tx: SqlTx, wanted: list[str], where: list[Any], limit: int,
                        weights: list[float] | None = None) -> list[tuple[str, float]]:
    """One statement reads the place's terms through the (owner_id, scope, ...) index, at most a
    person's memories however large the database, and BM25 picks among them in process.

    (A full-text index would not be faster: on PostgreSQL a common term's GIN posting list holds
    every person's memories with it, and intersecting it with the place grew with the database —
    p50 over 200 queries: 6-8 ms at 1,000,000 memories against 3.3-3.7 ms at 10,000, where this
    takes 3-4 ms at both; docs/benchmarks.md, "Scale".) Only memories holding a query term get a
    term count; the place's size and average length come from all of its memories.
    """
    rows = tx.conn.execute(select(M.id, M.search_text).where(*where).order_by(M.id)).all()
    if not rows:
        return []
    docs = [(r.id, (r.search_text or "").split()) for r in rows]
    wanted_set = set(wanted)
    candidates = [bag(doc_id, toks) for doc_id, toks in docs if not wanted_set.isdisjoint(toks)]
    average = sum(len(toks) for _, toks in docs) / len(docs)
    ranked = bm25_rank(wanted, candidates, len(docs), average, limit, weights)
    return ranked or fragment_top(wanted, docs, limit)
