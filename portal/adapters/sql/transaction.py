"""One transaction on one place of the SQL store: reading, ranking (through the recall cache when
it can), the commit, and the conversion of rows to memories. Its writes are `PlaceWriting`'s
(`.writing`), the records beside the memories `PlaceRecords`'s (`.records`)."""

from __future__ import annotations

import builtins
import json
import secrets
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import (
    LargeBinary,
    func,
    select,
    type_coerce,
)
from sqlalchemy.engine import Connection, RootTransaction, RowMapping
from sqlalchemy.sql.elements import ColumnElement

from portal.adapters.sql.conversations import PlaceConversations
from portal.adapters.sql.records import PlaceRecords
from portal.adapters.sql.search import mean_vector, nearest_rows, words_each, words_ranking
from portal.adapters.sql.statements import (
    FIND_WORDS,
    GET,
    GET_MANY,
    NEW_TOKEN_PG,
    NEW_TOKEN_SQLITE,
    TOKEN,
    could_be_id,
    pg_vector,
    sources_of,
    usable_by,
)
from portal.adapters.sql.tables import (
    memories,
    memory_revisions,
)
from portal.adapters.sql.writing import PlaceWriting
from portal.domain.decisions import withheld_of
from portal.domain.recall.index import Entry, PlaceIndex, estimated_bytes
from portal.domain.recall.ranking import bag, words_top
from portal.domain.text import terms
from portal.domain.types import Embedding, Memory, Place, Revision
from portal.ports import Cursor, Filters

if TYPE_CHECKING:
    from portal.adapters.sql.store import SqlStore

M = memories.c
R = memory_revisions.c


class SqlTx(PlaceRecords, PlaceWriting, PlaceConversations):
    """One transaction on one place (see `portal.ports.StoreTx`)."""

    def __init__(self, store: SqlStore, conn: Connection, trans: RootTransaction, place: Place, writable: bool = False) -> None:
        self.store = store
        self.conn = conn
        self.place = place
        self._trans = trans
        # Vector matrices read in this transaction (SQLite), kept for its later rankings; only in a
        # read transaction, whose snapshot cannot change under it.
        self.matrices: dict[Any, Any] | None = None if writable else {}
        self.writable = writable
        # Whether this transaction changed what recall ranks; its commit then replaces the token.
        self.changed = False
        # The tables it erased words from (a memory, a revision, a wording overwritten in place or
        # undone, a job's transcript or summary); its commit then lets the store clear what the
        # database keeps of them besides (SqlStore.after_erasure).
        self.erased: set[str] = set()
        self.token_gone = False
        self.committed = False
        self._index: PlaceIndex | None | bool = False  # False: not looked up yet
        # For a place too big for the recall cache, the asker (app, moment) its one-shot index was
        # built for: only what that asker may receive is indexed (see place_index).
        self._index_asker: tuple[str | None, datetime | None] | None = None
        # The place as the bound parameters of the statements built once below.
        self.bound = {"place_owner": place.owner_id, "place_scope": place.scope}
        # What this transaction reads is what is still kept now (by the store's clock): a memory
        # past its expiry is in no answer, though the sweep may not have erased it yet.
        self.now = store.clock()

    def commit(self) -> None:
        if self.changed and not self.token_gone:
            self._replace_token()
        self._trans.commit()
        self.committed = True
        cache = self.store.recall_cache
        if self.changed and cache is not None:
            # What this worker kept of the place is stale now; nothing of a forgotten or corrected
            # memory stays in it until the next recall (other workers see the new token).
            cache.forget(self.place)
        # An erasure's cleaning up (SqlStore.after_erasure) runs once the writer lock is let go.

    def _replace_token(self) -> None:
        statement = NEW_TOKEN_PG if self.store.postgres else NEW_TOKEN_SQLITE
        self.conn.execute(statement, {**self.bound, "token": secrets.token_hex(16)})

    def place_index(self, filters: Filters) -> PlaceIndex | None:
        """The place's ranking data from the recall cache, read afresh when its token changed; None
        in a write transaction, without a cache, or for filters the index cannot answer.

        The token is read before the memories: in a snapshot both come from one state, and without
        one (`read(snapshot=False)`) the memories are at least as new as the token they are kept
        under, never older; a newer token then makes the next reader read them again."""
        cache = self.store.recall_cache
        if cache is None or self.writable or not PlaceIndex.serves(filters):
            return None
        asker = (filters.app, filters.alive_at)
        if self._index is False or (self._index_asker is not None and self._index_asker != asker):
            ticket = cache.ticket(self.place)  # before the token: see RecallCache
            try:
                token = self.conn.execute(TOKEN, self.bound).scalar_one_or_none()
                if token is None:  # nothing written here yet (or erased): nothing to keep
                    cache.forget(self.place)
                    self._index = None
                else:
                    index = cache.get(self.place, token)
                    if index is None:
                        entries = self._entries()
                        if estimated_bytes(entries) > cache.max_bytes:
                            # Not kept (too big): built for this asker only, not the whole place
                            # and then again for what the asker may receive.
                            index = PlaceIndex(token, [e for e in entries if e.receivable(filters)])
                            self._index_asker = asker
                        else:
                            index = PlaceIndex(token, entries)
                            if entries:  # an empty place costs nothing to read again: no entry names its person
                                cache.put(self.place, index, ticket)
                    self._index = index
            finally:
                cache.release(ticket)
        return self._index if isinstance(self._index, PlaceIndex) else None

    def _entries(self) -> builtins.list[Entry]:
        words = M.search_text if self.store.searches_text else M.text
        # The vectors as bytes: SQLite's blobs as they are; pgvector's binary form (`vector_send`:
        # a 4-byte header, then big-endian float4), read in microseconds where parsing the text
        # form of 1,000 vectors took 30 ms.
        postgres = self.store.postgres
        vector = type_coerce(func.vector_send(M.embedding) if postgres else M.embedding, LargeBinary)
        rows = self.conn.execute(
            select(M.id, M.kind, M.created_at, words, M.embedding_model, M.embedding_dim, vector, M.expires_at,
                   M.withheld)
            .where(self.here(), M.state == "active")
        ).all()
        entries = []
        shared: dict[str, str] = {}
        for memory_id, kind, created_at, stored, model, _dim, raw, expires_at, withheld in rows:
            found = None
            if raw is not None and model:
                found = Embedding(model, pg_vector(raw) if postgres else np.frombuffer(raw, dtype=np.float32))
            toks = (stored or "").split() if self.store.searches_text else terms(self.store.decrypt(stored))
            # One string per term within this index: a person's memories share most of their terms.
            # Not sys.intern: interned strings live as long as the process on some Pythons (3.12),
            # and an erased person's words must not.
            entries.append(Entry(memory_id, kind, created_at, [shared.setdefault(t, t) for t in toks], found,
                                 expires_at, withheld_of(withheld)))
        return entries

    # ---------------------------------------------------------------- reading

    def get(self, memory_id: str) -> Memory | None:
        if not could_be_id(memory_id):
            return None
        row = self.conn.execute(GET, {**self.bound, "memory_id": memory_id, "now": self.now}).mappings().first()
        return self._memory(row) if row else None

    def get_many(self, ids: Sequence[str]) -> builtins.list[Memory]:
        wanted = [i for i in ids if could_be_id(i)]
        if not wanted:
            return []
        rows = self.conn.execute(GET_MANY, {**self.bound, "ids": wanted, "now": self.now}).mappings().all()
        by_id = {r["id"]: self._memory(r) for r in rows}
        return [by_id[i] for i in dict.fromkeys(wanted) if i in by_id]

    def list(self, filters: Filters, limit: int | None = None, after: Cursor | None = None) -> builtins.list[Memory]:
        query = select(memories).where(self.here(), *self.filtered(filters))
        if after is not None:
            query = query.where(
                (M.created_at < after.created_at) | ((M.created_at == after.created_at) & (M.id < after.id))
            )
        query = query.order_by(M.created_at.desc(), M.id.desc())
        if limit is not None:
            query = query.limit(limit)
        return [self._memory(r) for r in self.conn.execute(query).mappings()]

    def count(self, state: str = "active", app: str | None = None) -> int:
        return int(self.conn.execute(select(func.count()).where(
            self.here(), *self.filtered(Filters(state=state, app=app)))).scalar_one())

    def find_words(self, words_key: str) -> builtins.list[Memory]:
        rows = self.conn.execute(FIND_WORDS, {**self.bound, "words_key": words_key, "now": self.now}).mappings()
        return [self._memory(row) for row in rows]

    def nearest(self, query: Embedding, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]:
        filters = self.at_now(filters)
        index = self.place_index(filters)
        return index.nearest(query, limit, filters) if index else nearest_rows(self, query, limit, filters)

    def mean_vector(self, model: str, dim: int, filters: Filters) -> np.ndarray | None:
        filters = self.at_now(filters)
        index = self.place_index(filters)
        return index.mean_vector(model, dim, filters) if index else mean_vector(self, model, dim, filters)

    def search_words(self, query: str, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]:
        filters = self.at_now(filters)
        index = self.place_index(filters)
        if index:
            return index.search_words(query, limit, filters)
        if not self.store.searches_text:  # the database holds ciphertext: rank the decrypted text here
            # In id order, as the database's own word search and the recall cache read them.
            listed = sorted(self.list(filters), key=lambda m: m.id)
            return words_top(query, [bag(m.id, terms(m.text)) for m in listed], limit)
        return words_ranking(self, query, limit, filters)

    def search_words_each(self, queries: Sequence[str], limit: int,
                          filters: Filters) -> builtins.list[builtins.list[tuple[str, float]]]:
        return words_each(self, queries, limit, filters)

    def embeddings(self, ids: Sequence[str], app: str | None = None) -> dict[str, Embedding]:
        wanted = [i for i in dict.fromkeys(ids) if could_be_id(i)]
        asker = self.at_now(Filters(app=app))
        index = self.place_index(asker)
        found: dict[str, Embedding] = {}
        if index:  # from what the asker may receive (PlaceIndex.view_for); the others below
            found, wanted = index.view_for(asker).embeddings(wanted)
        if wanted:
            rows = self.conn.execute(
                select(M.id, M.embedding_model, M.embedding).where(
                    self.here(), M.id.in_(wanted), M.embedding.is_not(None), *self.live(),
                    *([usable_by(app)] if app is not None else []))
            ).all()
            found.update((r.id, Embedding(r.embedding_model, r.embedding)) for r in rows if r.embedding_model)
        return found

    def history(self, memory_id: str) -> builtins.list[Revision]:
        rows = self.conn.execute(
            select(memory_revisions).where(self.here(memory_revisions), R.memory_id == memory_id)
            .order_by(R.revision.desc())
        ).mappings()
        return [self._revision(r) for r in rows]

    def trim_candidates(self, count: int) -> builtins.list[str]:
        useful = func.coalesce(M.last_used_at, M.created_at)
        rows = self.conn.execute(
            select(M.id).where(self.here(), M.state == "active", M.pinned.is_(False))
            .order_by(M.importance, useful, M.id).limit(count)
        )
        return list(rows.scalars())

    def filtered(self, filters: Filters) -> builtins.list[ColumnElement[bool]]:
        where: builtins.list[ColumnElement[bool]] = []
        if filters.state is not None:
            where.append(M.state == filters.state)
        if filters.kinds is not None:
            where.append(M.kind.in_(list(filters.kinds)))
        if filters.channel is not None:
            where.append(M.channel == filters.channel)
        if filters.seen is not None:
            where.append(M.seen.is_(filters.seen))
        if filters.pinned is not None:
            where.append(M.pinned.is_(filters.pinned))
        if filters.created_after is not None:
            where.append(M.created_at > filters.created_after)
        if filters.created_before is not None:
            where.append(M.created_at < filters.created_before)
        if filters.app is not None:
            where.append(usable_by(filters.app))
        return [*where, *self.live(filters.alive_at)]

    def at_now(self, filters: Filters) -> Filters:
        """The filters, as of this transaction's now unless they name their own moment."""
        return filters if filters.alive_at is not None else replace(filters, alive_at=self.now)

    def live(self, at: datetime | None = None) -> builtins.list[ColumnElement[bool]]:
        """Still kept at `at` (this transaction's now by default): see `Memory.alive_at`."""
        return [M.expires_at.is_(None) | (M.expires_at > (at or self.now))]

    # ---------------------------------------------------------------- rows

    def _memory(self, r: RowMapping) -> Memory:
        vector = r["embedding"]
        return Memory(
            id=r["id"], owner_id=r["owner_id"], scope=r["scope"], revision=r["revision"],
            text=self.store.decrypt(r["text"]), kind=r["kind"], importance=r["importance"],
            created_at=r["created_at"], updated_at=r["updated_at"], role=r["role"], origin=r["origin"],
            sources=sources_of(r["sources"]), channel=r["channel"], seen=bool(r["seen"]), pinned=bool(r["pinned"]),
            state=r["state"], last_used_at=r["last_used_at"],
            embedding=Embedding(r["embedding_model"], vector) if vector is not None and r["embedding_model"] else None,
            last_op=r["last_op"], words_key=r["words_key"],
            attributes=json.loads(self.store.decrypt(r["attributes"])) if r["attributes"] is not None else None,
            expires_at=r["expires_at"], withheld=withheld_of(r["withheld"]),
        )

    def _revision(self, r: RowMapping) -> Revision:
        vector = r["embedding"]
        return Revision(
            memory_id=r["memory_id"], revision=r["revision"], text=self.store.decrypt(r["text"]), kind=r["kind"],
            importance=r["importance"], origin=r["origin"], sources=sources_of(r["sources"]),
            written_at=r["written_at"], op=r["op"], expires_at=r["expires_at"],
            embedding=Embedding(r["embedding_model"], np.asarray(vector, np.float32)) if vector is not None else None,
        )
