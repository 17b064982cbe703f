"""Meaning and word rankings inside the database, one place at a time.

Meaning: PostgreSQL orders the place's rows by pgvector's `<=>` (cosine distance); SQLite reads
the place's blobs and scans them with numpy. Both select rows through the (owner_id, scope, state)
index first and only ever compare vectors of the query's model and size.

Words: `search_text` holds each memory's ranking terms (folded, stemmed words: see
`portal.memory.text`). SQLite's full-text index (FTS5 `MATCH`) picks the place's memories holding a
query term; PostgreSQL reads the place's terms through the place index (its GIN index is not read:
see `_place_terms_ranking`). BM25 then scores them in process with the place's own statistics (how
many memories, their average length), the very function the in-memory store uses: the three
stores rank alike, and no other person's words weigh on a person's ranking (FTS5's `bm25()` would
count the whole table). When no term is found, a fragment match over the place's terms takes over.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Float, LargeBinary, func, literal_column, select, text, type_coerce
from sqlalchemy.sql.elements import ColumnClause

from portal.memory.ranking import bag, bm25_rank, cosine_top, fragment_top, row_norms
from portal.memory.store import Filters
from portal.memory.text import query_terms
from portal.memory.types import Embedding

from .tables import VectorType, memories

if TYPE_CHECKING:
    from .transaction import SqlTx

M = memories.c
_TOKEN = re.compile(r"[^\w]+", re.UNICODE)


def nearest_rows(tx: SqlTx, query: Embedding, limit: int, filters: Filters) -> list[tuple[str, float]]:
    same_space = [M.embedding_model == query.model, M.embedding_dim == query.dim]
    where = [tx.here(), *tx.filtered(filters), *same_space]
    if tx.store.postgres:
        distance = M.embedding.op("<=>", return_type=Float())(query.vector)
        rows = tx.conn.execute(select(M.id, distance.label("d")).where(*where).order_by(distance).limit(limit)).all()
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
    rows = tx.conn.execute(select(M.id, type_coerce(M.embedding, LargeBinary)).where(*where)).all()
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


def fts_terms(wanted: list[str]) -> list[str]:
    """Ranking terms as the full-text index knows them: letters and digits only ("c++" is "c" to
    it); the index then finds a superset of the memories holding each term, and BM25 decides."""
    stripped = [_TOKEN.sub("", t) for t in wanted]
    return list(dict.fromkeys(t for t in stripped if t))


# How many terms a row's search_text holds (terms are joined by single spaces).
_TERM_COUNT: ColumnClause[Any] = literal_column(
    "CASE WHEN coalesce(search_text, '') = '' THEN 0 "
    "ELSE length(search_text) - length(replace(search_text, ' ', '')) + 1 END"
)


def words_ranking(tx: SqlTx, query: str, limit: int, filters: Filters) -> list[tuple[str, float]]:
    """BM25 of the query's terms over the place's memories, or the fragment match when no term is
    found: the same ranking as the in-memory store's, on the stored terms (`search_text`)."""
    wanted = query_terms(query)
    if not wanted or limit <= 0:
        return []
    where = [tx.here(), *tx.filtered(filters)]
    if tx.store.postgres:
        return _place_terms_ranking(tx, wanted, where, limit)
    indexed = fts_terms(wanted)
    if not indexed:
        return []
    # Only fixed fragments are joined into this SQL; the query terms are a bound parameter.
    holds = text(
        "memories.rowid IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH :match)"
    ).bindparams(match=" OR ".join('"' + t.replace('"', '""') + '"' for t in indexed))
    rows = tx.conn.execute(select(M.id, M.search_text).where(*where, holds).order_by(M.id)).all()
    if rows:
        count, total = tx.conn.execute(select(func.count(), func.coalesce(func.sum(_TERM_COUNT), 0)).where(*where)).one()
        docs = [bag(r.id, (r.search_text or "").split()) for r in rows]
        ranked = bm25_rank(wanted, docs, int(count), float(total) / max(int(count), 1), limit)
        if ranked:
            return ranked
    everything = tx.conn.execute(select(M.id, M.search_text).where(*where).order_by(M.id))
    return fragment_top(wanted, [(r.id, (r.search_text or "").split()) for r in everything], limit)


def _place_terms_ranking(tx: SqlTx, wanted: list[str], where: list[Any], limit: int) -> list[tuple[str, float]]:
    """PostgreSQL: one statement reads the place's terms through the (owner_id, scope, ...) index,
    at most a person's memories however large the database, and BM25 picks among them in process.

    Not the GIN index: a common term's posting list there holds every person's memories with it,
    and intersecting it with the place grew with the database (p50 over 200 queries: 6-8 ms at
    1,000,000 memories against 3.3-3.7 ms at 10,000, where this takes 3-4 ms at both; the same
    answers; docs/benchmarks.md, "Scale"). Only memories holding a query term get a term count; the
    place's size and average length come from all of its memories.
    """
    rows = tx.conn.execute(select(M.id, M.search_text).where(*where).order_by(M.id)).all()
    if not rows:
        return []
    docs = [(r.id, (r.search_text or "").split()) for r in rows]
    wanted_set = set(wanted)
    candidates = [bag(doc_id, toks) for doc_id, toks in docs if not wanted_set.isdisjoint(toks)]
    average = sum(len(toks) for _, toks in docs) / len(docs)
    ranked = bm25_rank(wanted, candidates, len(docs), average, limit)
    return ranked or fragment_top(wanted, docs, limit)
