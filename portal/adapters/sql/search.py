"""Meaning and word rankings inside the database, one place at a time.

Meaning: PostgreSQL orders the place's rows by pgvector's `<=>` (cosine distance); SQLite reads
the place's blobs and scans them with numpy. Both select rows through the (owner_id, scope, state)
index first and only ever compare vectors of the query's model and size.

Words: SQLite FTS5 `bm25()`; PostgreSQL full-text search (`simple` configuration over the folded
text, GIN index) ranked by `ts_rank_cd`. When no word is found, a fragment match over the place's
folded texts takes over.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy import Float, func, literal_column, select, text

from portal.memory.ranking import cosine_top, fragment_top
from portal.memory.store import Filters
from portal.memory.text import words
from portal.memory.types import Embedding

from .tables import memories

if TYPE_CHECKING:
    from .store import _SqlTx

M = memories.c
_TOKEN = re.compile(r"[^\w]+", re.UNICODE)
MAX_QUERY_TERMS = 32


def nearest_rows(tx: _SqlTx, query: Embedding, limit: int, filters: Filters) -> list[tuple[str, float]]:
    same_space = [M.embedding_model == query.model, M.embedding_dim == query.dim]
    where = [tx.here(), *tx.filtered(filters), *same_space]
    if tx.store.postgres:
        distance = M.embedding.op("<=>", return_type=Float())(query.vector)
        rows = tx.conn.execute(select(M.id, distance.label("d")).where(*where).order_by(distance).limit(limit)).all()
        return [(r.id, 1.0 - float(r.d)) for r in rows]
    rows = tx.conn.execute(select(M.id, M.embedding).where(*where)).all()
    if not rows:
        return []
    ids = [r.id for r in rows]
    matrix = np.frombuffer(b"".join(r.embedding.tobytes() for r in rows), dtype=np.float32).reshape(len(rows), -1)
    return cosine_top(query.vector, ids, matrix, limit)


def query_terms(query: str) -> list[str]:
    """The query's folded words, stripped to letters and digits, without repeats."""
    terms = [_TOKEN.sub("", w) for w in words(query)]
    return list(dict.fromkeys(t for t in terms if t))[:MAX_QUERY_TERMS]


def words_ranking(tx: _SqlTx, query: str, limit: int, filters: Filters) -> list[tuple[str, float]]:
    terms = query_terms(query)
    if not terms:
        return []
    where = [tx.here(), *tx.filtered(filters)]
    if tx.store.postgres:
        tsquery = func.to_tsquery(literal_column("'simple'::regconfig"), " | ".join(f"'{t}'" for t in terms))
        vector = func.to_tsvector(literal_column("'simple'::regconfig"), func.coalesce(M.search_text, ""))
        rank = func.ts_rank_cd(vector, tsquery)
        rows = tx.conn.execute(
            select(M.id, rank.label("r")).where(*where, vector.op("@@")(tsquery)).order_by(rank.desc(), M.id).limit(limit)
        ).all()
        ranked = [(r.id, float(r.r)) for r in rows]
    else:
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        place_sql = " AND ".join(
            ["m.owner_id = :owner", "m.scope = :scope"]
            + ([] if filters.state is None else ["m.state = :state"])
        )
        rows = tx.conn.execute(
            # Only fixed fragments are joined into this SQL; every value is a bound parameter.
            text(
                "SELECT m.id AS id, bm25(memories_fts) AS r FROM memories_fts "  # noqa: S608
                "JOIN memories m ON m.rowid = memories_fts.rowid "
                f"WHERE memories_fts MATCH :match AND {place_sql} ORDER BY r, m.id"
            ),
            {"match": match, "owner": tx.place.owner_id, "scope": tx.place.scope, "state": filters.state},
        ).all()
        allowed = _allowed_ids(tx, filters) if _narrowed(filters) else None
        ranked = [(r.id, -float(r.r)) for r in rows if allowed is None or r.id in allowed][:limit]
    if ranked:
        return ranked
    docs = tx.conn.execute(select(M.id, M.search_text).where(*where)).all()
    return fragment_top(terms, [(r.id, (r.search_text or "").split()) for r in docs], limit)


def _narrowed(filters: Filters) -> bool:
    return any(
        v is not None
        for v in (filters.kinds, filters.channel, filters.seen, filters.pinned, filters.created_after, filters.created_before)
    )


def _allowed_ids(tx: _SqlTx, filters: Filters) -> set[str]:
    return set(tx.conn.execute(select(M.id).where(tx.here(), *tx.filtered(filters))).scalars())
