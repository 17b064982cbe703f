"""The SQLAlchemy store: one implementation for SQLite and PostgreSQL with pgvector.

Every statement carries the place (`owner_id`, `scope`) in its WHERE clause; nothing a person
writes is ever part of the SQL text. With a cipher, text is encrypted before it reaches the
database, which then cannot search it (`searches_text` is False and words are ranked in process).

Recall reads a place's ranking data from a per-process `RecallCache` while the place's token
(`memory_places`) is the one it was read at; every write that changes what recall ranks replaces
the token in the same transaction (see `_SqlTx.commit`).
"""

from __future__ import annotations

import builtins
import json
import secrets
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Protocol

import numpy as np
from sqlalchemy import (
    LargeBinary,
    and_,
    bindparam,
    delete,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    tuple_,
    type_coerce,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine, RootTransaction, RowMapping
from sqlalchemy.sql.elements import ColumnElement

from portal.memory.ranking import bag, words_top
from portal.memory.recall_index import Entry, PlaceIndex, RecallCache
from portal.memory.store import Cursor, Filters, NeedsVector, Settings
from portal.memory.text import search_text, terms
from portal.memory.types import Embedding, Memory, Place, PurgeCounts, Receipt, Revision, Source

from .engine import is_postgres, lock_place, place_lock_key
from .search import mean_vector, nearest_rows, words_ranking
from .tables import (
    OWNER_TABLES,
    consolidation_refs,
    idempotency_receipts,
    memories,
    memory_places,
    memory_revisions,
    memory_settings,
    memory_tombstones,
)

M = memories.c
R = memory_revisions.c


class TextCipher(Protocol):
    digest_key: bytes

    def encrypt(self, text: str) -> str: ...
    def decrypt(self, token: str) -> str: ...


DEFAULT_CACHE_BYTES = 256 * 1024 * 1024
DEFAULT_CACHE_IDLE = 300.0


class SqlStore:
    """Store for SQLite and PostgreSQL. Schema comes from the Alembic migrations.

    `cache_bytes` bounds this process's recall cache (0: none, every recall reads the place's
    memories from the database); `cache_idle` is how long, in seconds, a place's ranking data may
    stay in it unused."""

    def __init__(
        self,
        engine: Engine,
        cipher: TextCipher | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        cache_idle: float = DEFAULT_CACHE_IDLE,
    ) -> None:
        self.engine = engine
        self.cipher = cipher
        self.searches_text = cipher is None
        self.words_secret = cipher.digest_key if cipher is not None else None
        self.postgres = is_postgres(engine)
        self.recall_cache = RecallCache(cache_bytes, cache_idle) if cache_bytes > 0 else None
        # SQLite has one writer at a time anyway; queueing threads here spares them busy-waiting.
        self._sqlite_writer = threading.Lock()

    @contextmanager
    def write(self, place: Place) -> Iterator[_SqlTx]:
        if self.postgres:
            with self.engine.connect() as conn:
                yield from self._transaction(conn, place, lock=True, writable=True)
            return
        with self._sqlite_writer, self.engine.connect() as conn:
            yield from self._transaction(conn.execution_options(sqlite_begin="IMMEDIATE"), place, lock=False, writable=True)

    @contextmanager
    def read(self, place: Place, snapshot: bool = True) -> Iterator[_SqlTx]:
        """A read transaction: on PostgreSQL a REPEATABLE READ snapshot, or with `snapshot=False`
        each statement on its own (autocommit: no BEGIN and ROLLBACK round trips), for a reader
        that copes with a write landing between two of its statements."""
        with self.engine.connect() as conn:
            if self.postgres:
                conn = conn.execution_options(isolation_level="REPEATABLE READ" if snapshot else "AUTOCOMMIT")
            yield from self._transaction(conn, place, lock=False)

    def _transaction(self, conn: Connection, place: Place, lock: bool, writable: bool = False) -> Iterator[_SqlTx]:
        trans = conn.begin()
        try:
            if lock:
                lock_place(conn, place.owner_id, place.scope)
            yield _SqlTx(self, conn, trans, place, writable)
        finally:
            if trans.is_active:
                trans.rollback()

    def mark_used(self, place: Place, ids: Sequence[str], at: datetime) -> builtins.list[Memory]:
        """One UPDATE ... RETURNING. On PostgreSQL a statement on its own (autocommit) that takes
        the place's lock itself and does not wait for durability (see `_MARK_USED_PG`): one round
        trip. SQLite has one writer at a time: there it queues like any write."""
        if self.postgres:
            with self.engine.connect() as conn:
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                return _SqlTx(self, conn, conn.begin(), place, writable=True).mark_used_returning(ids, at)
        with self.write(place) as tx:
            marked = tx.mark_used_returning(ids, at)
            tx.commit()
        return marked

    def purge_owner(self, owner_id: str, scopes: Sequence[str] | None = None) -> PurgeCounts:
        if self.recall_cache is not None:
            self.recall_cache.drop_owner(owner_id)
        counts: dict[str, int] = {}
        with self.engine.connect() as conn, conn.begin():
            if self.postgres:
                found = conn.execute(select(M.scope).where(M.owner_id == owner_id).distinct()).scalars()
                for scope in sorted(found):
                    if scopes is None or scope in scopes:
                        lock_place(conn, owner_id, scope)
            for table in OWNER_TABLES:
                where = table.c.owner_id == owner_id
                if scopes is not None:
                    where = where & table.c.scope.in_(list(scopes))
                counts[table.name] = conn.execute(delete(table).where(where)).rowcount
        if self.recall_cache is not None:
            # Again, after the commit: a recall running alongside may have cached the place anew.
            self.recall_cache.drop_owner(owner_id)
        return PurgeCounts(
            memories=counts["memories"], revisions=counts["memory_revisions"], settings=counts["memory_settings"],
            refs=counts["consolidation_refs"], receipts=counts["idempotency_receipts"],
            tombstones=counts["memory_tombstones"],
        )

    def needing_vector(self, model: str, dim: int | None, limit: int) -> builtins.list[NeedsVector]:
        stale = (M.embedding_model.is_(None)) | (M.embedding_model != model)
        if dim is not None:
            stale = stale | (M.embedding_dim != dim)
        query = (
            select(M.owner_id, M.scope, M.id, M.revision, M.text, M.updated_at)
            .where(stale).order_by(M.id).limit(limit)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [NeedsVector(Place(r.owner_id, r.scope), r.id, r.revision, self.decrypt(r.text), r.updated_at) for r in rows]

    def set_embedding(self, place: Place, memory_id: str, revision: int, updated_at: datetime, embedding: Embedding) -> bool:
        with self.write(place) as tx:
            done = tx.conn.execute(
                update(memories)
                .where(tx.here(), M.id == memory_id, M.revision == revision, M.updated_at == updated_at)
                .values(embedding_model=embedding.model, embedding_dim=embedding.dim, embedding=embedding.vector)
            ).rowcount
            tx.changed = bool(done)
            tx.commit()
        return bool(done)

    def places(self) -> Iterator[Place]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(M.owner_id, M.scope).distinct()).all()
        return iter([Place(r.owner_id, r.scope) for r in rows])

    # ---------------------------------------------------------------- retention

    def prune_history(self, older_than: datetime) -> int:
        later = memory_revisions.alias("later")
        replaced = or_(
            exists().where(later.c.memory_id == R.memory_id, later.c.revision > R.revision, later.c.written_at < older_than),
            exists().where(M.id == R.memory_id, M.owner_id == R.owner_id, M.scope == R.scope, M.updated_at < older_than),
        )
        return self._delete_in_batches(memory_revisions, (R.memory_id, R.revision), and_(R.written_at < older_than, replaced))

    def prune_receipts(self, older_than: datetime) -> int:
        t = idempotency_receipts.c
        return self._delete_in_batches(
            idempotency_receipts, (t.owner_id, t.scope, t.key), and_(t.status != 0, t.created_at < older_than)
        )

    def archived_before(self, older_than: datetime, limit: int) -> builtins.list[tuple[Place, str]]:
        query = (
            select(M.owner_id, M.scope, M.id)
            .where(M.state == "archived", M.updated_at < older_than, or_(M.last_used_at.is_(None), M.last_used_at < older_than))
            .order_by(M.id).limit(limit)
        )
        with self.engine.connect() as conn:
            return [(Place(r.owner_id, r.scope), r.id) for r in conn.execute(query)]

    def _delete_in_batches(self, table: Any, key: tuple[Any, ...], where: ColumnElement[bool], batch: int = 1000) -> int:
        """Delete the rows matching `where`, `batch` at a time, each batch its own short transaction
        so a large backlog never holds locks (or SQLite's single writer) for long."""
        deleted = 0
        while True:
            with self.maintenance() as conn:
                keys = [tuple(row) for row in conn.execute(select(*key).where(where).limit(batch))]
                if keys:
                    deleted += conn.execute(delete(table).where(tuple_(*key).in_(keys))).rowcount
            if len(keys) < batch:
                return deleted

    @contextmanager
    def maintenance(self) -> Iterator[Connection]:
        """A write transaction across places, for maintenance (retention, key rotation): committed on
        leaving, rolled back on an error. On SQLite it queues behind this process's writers and
        opens with BEGIN IMMEDIATE, as `write` does."""
        if self.postgres:
            with self.engine.connect() as conn, conn.begin():
                yield conn
            return
        with self._sqlite_writer, self.engine.connect() as conn:
            conn = conn.execution_options(sqlite_begin="IMMEDIATE")
            with conn.begin():
                yield conn

    def encrypt(self, text: str) -> str:
        return self.cipher.encrypt(text) if self.cipher else text

    def decrypt(self, text: str) -> str:
        return self.cipher.decrypt(text) if self.cipher else text


class _SqlTx:
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
        self._index: PlaceIndex | None | bool = False  # False: not looked up yet
        # The place as the bound parameters of the statements built once below.
        self.bound = {"place_owner": place.owner_id, "place_scope": place.scope}

    def commit(self) -> None:
        if self.changed:
            self._replace_token()
        self._trans.commit()

    def _replace_token(self) -> None:
        statement = _NEW_TOKEN_PG if self.store.postgres else _NEW_TOKEN_SQLITE
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
        if self._index is False:
            token = self.conn.execute(_TOKEN, self.bound).scalar_one_or_none()
            if token is None:  # nothing written here yet (or erased): nothing to keep
                cache.forget(self.place)
                self._index = None
            else:
                index = cache.get(self.place, token)
                if index is None:
                    index = PlaceIndex(token, self._entries())
                    cache.put(self.place, index)
                self._index = index
        return self._index if isinstance(self._index, PlaceIndex) else None

    def _entries(self) -> builtins.list[Entry]:
        words = M.search_text if self.store.searches_text else M.text
        # The vectors as bytes: SQLite's blobs as they are; pgvector's binary form (`vector_send`:
        # a 4-byte header, then big-endian float4), read in microseconds where parsing the text
        # form of 1,000 vectors took 30 ms.
        postgres = self.store.postgres
        vector = type_coerce(func.vector_send(M.embedding) if postgres else M.embedding, LargeBinary)
        rows = self.conn.execute(
            select(M.id, M.kind, M.created_at, words, M.embedding_model, M.embedding_dim, vector)
            .where(self.here(), M.state == "active")
        ).all()
        entries = []
        for memory_id, kind, created_at, stored, model, _dim, raw in rows:
            found = None
            if raw is not None and model:
                found = Embedding(model, pg_vector(raw) if postgres else np.frombuffer(raw, dtype=np.float32))
            toks = (stored or "").split() if self.store.searches_text else terms(self.store.decrypt(stored))
            # Interned: a person's memories share most of their terms; one string for each.
            entries.append(Entry(memory_id, kind, created_at, [sys.intern(t) for t in toks], found))
        return entries

    def here(self, table: Any = memories) -> ColumnElement[bool]:
        return and_(table.c.owner_id == self.place.owner_id, table.c.scope == self.place.scope)

    # ---------------------------------------------------------------- reading

    def get(self, memory_id: str) -> Memory | None:
        if not _could_be_id(memory_id):
            return None
        row = self.conn.execute(_GET, {**self.bound, "memory_id": memory_id}).mappings().first()
        return self._memory(row) if row else None

    def get_many(self, ids: Sequence[str]) -> builtins.list[Memory]:
        wanted = [i for i in ids if _could_be_id(i)]
        if not wanted:
            return []
        rows = self.conn.execute(_GET_MANY, {**self.bound, "ids": wanted}).mappings().all()
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

    def count(self, state: str = "active") -> int:
        return int(self.conn.execute(select(func.count()).where(self.here(), M.state == state)).scalar_one())

    def find_words(self, words_key: str) -> Memory | None:
        row = self.conn.execute(_FIND_WORDS, {**self.bound, "words_key": words_key}).mappings().first()
        return self._memory(row) if row else None

    def nearest(self, query: Embedding, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]:
        index = self.place_index(filters)
        return index.nearest(query, limit, filters) if index else nearest_rows(self, query, limit, filters)

    def mean_vector(self, model: str, dim: int, filters: Filters) -> np.ndarray | None:
        index = self.place_index(filters)
        return index.mean_vector(model, dim, filters) if index else mean_vector(self, model, dim, filters)

    def search_words(self, query: str, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]:
        index = self.place_index(filters)
        if index:
            return index.search_words(query, limit, filters)
        if not self.store.searches_text:  # the database holds ciphertext: rank the decrypted text here
            # In id order, as the database's own word search and the recall cache read them.
            listed = sorted(self.list(filters), key=lambda m: m.id)
            return words_top(query, [bag(m.id, terms(m.text)) for m in listed], limit)
        return words_ranking(self, query, limit, filters)

    def embeddings(self, ids: Sequence[str]) -> dict[str, Embedding]:
        wanted = [i for i in dict.fromkeys(ids) if _could_be_id(i)]
        index = self.place_index(Filters())
        found: dict[str, Embedding] = {}
        if index:
            found, wanted = index.embeddings(wanted)
        if wanted:
            rows = self.conn.execute(
                select(M.id, M.embedding_model, M.embedding).where(self.here(), M.id.in_(wanted), M.embedding.is_not(None))
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
        return where

    # ---------------------------------------------------------------- writing

    def insert(self, memory: Memory) -> int:
        # One statement: inserted unless the id is tombstoned here, and the count rides on it
        # (under the cap's threshold the cap costs no query).
        values = {f"new_{k}": v for k, v in self._row(memory).items()}
        before = self.conn.execute(_INSERT_COUNTING, {**values, **self.bound}).scalar_one_or_none()
        if before is None:
            raise ValueError("id already used")
        self.changed = True
        # RETURNING sees the snapshot before the insert on PostgreSQL, after it on SQLite.
        return int(before) + (1 if self.store.postgres and memory.state == "active" else 0)

    def save(self, memory: Memory, expected_revision: int) -> bool:
        row = self._row(memory)
        row.pop("id")
        row.pop("created_at")
        done = self.conn.execute(
            update(memories).where(self.here(), M.id == memory.id, M.revision == expected_revision).values(**row)
        ).rowcount
        self.changed = self.changed or bool(done)
        return bool(done)

    def push_revision(self, revision: Revision) -> None:
        e = revision.embedding
        self.conn.execute(
            insert(memory_revisions).values(
                memory_id=revision.memory_id, revision=revision.revision, owner_id=self.place.owner_id,
                scope=self.place.scope, text=self.store.encrypt(revision.text), kind=revision.kind,
                importance=revision.importance, origin=revision.origin, sources=_sources_json(revision.sources),
                op=revision.op, written_at=revision.written_at,
                embedding_model=e.model if e else None, embedding=e.vector if e else None,
            )
        )

    def pop_revision(self, memory_id: str) -> Revision | None:
        row = self.conn.execute(
            select(memory_revisions).where(self.here(memory_revisions), R.memory_id == memory_id)
            .order_by(R.revision.desc()).limit(1)
        ).mappings().first()
        if row is None:
            return None
        self.conn.execute(
            delete(memory_revisions).where(
                self.here(memory_revisions), R.memory_id == memory_id, R.revision == row["revision"]
            )
        )
        return self._revision(row)

    def remove(self, ids: Sequence[str]) -> tuple[int, int]:
        wanted = list({i for i in ids if _could_be_id(i)})
        if not wanted:
            return 0, 0
        revisions = self.conn.execute(
            delete(memory_revisions).where(self.here(memory_revisions), R.memory_id.in_(wanted))
        ).rowcount
        removed = self.conn.execute(delete(memories).where(self.here(), M.id.in_(wanted))).rowcount
        self.changed = self.changed or bool(removed)
        return removed, revisions

    def remove_all(self) -> tuple[int, int]:
        revisions = self.conn.execute(delete(memory_revisions).where(self.here(memory_revisions))).rowcount
        removed = self.conn.execute(delete(memories).where(self.here())).rowcount
        self.changed = self.changed or bool(removed)
        return removed, revisions

    def set_state(self, ids: Sequence[str], state: str) -> int:
        if not ids:
            return 0
        done = self.conn.execute(
            update(memories).where(self.here(), M.id.in_(list(ids)), M.state != state).values(state=state)
        ).rowcount
        self.changed = self.changed or bool(done)
        return done

    def mark_used(self, ids: Sequence[str], at: datetime) -> int:
        wanted = list({i for i in ids if _could_be_id(i)})
        if not wanted:
            return 0
        return self.conn.execute(
            update(memories).where(self.here(), M.id.in_(wanted), M.state == "active").values(last_used_at=at)
        ).rowcount

    def mark_used_returning(self, ids: Sequence[str], at: datetime) -> builtins.list[Memory]:
        wanted = list(dict.fromkeys(i for i in ids if _could_be_id(i)))
        if not wanted:
            return []
        values = {**self.bound, "ids": wanted, "used_at": at}
        if self.store.postgres:
            values["lock_key"] = place_lock_key(self.place.owner_id, self.place.scope)
        if self.store.postgres:
            rows: Any = [
                {**r, "embedding": None if r["embedding_sent"] is None else pg_vector(r["embedding_sent"])}
                for r in self.conn.execute(_MARK_USED_PG, values).mappings()
            ]
        else:
            rows = self.conn.execute(_MARK_USED, values).mappings().all()
        by_id = {r["id"]: self._memory(r) for r in rows}
        return [by_id[i] for i in wanted if i in by_id]

    def mark_seen(self, ids: Sequence[str]) -> int:
        wanted = list({i for i in ids if _could_be_id(i)})
        if not wanted:
            return 0
        return self.conn.execute(
            update(memories).where(self.here(), M.id.in_(wanted), M.seen.is_(False)).values(seen=True)
        ).rowcount

    # ---------------------------------------------------------------- tombstones, settings, refs

    def tombstone(self, ids: Sequence[str], at: datetime) -> None:
        for memory_id in dict.fromkeys(ids):
            if not self.is_tombstoned(memory_id):
                self.conn.execute(
                    insert(memory_tombstones).values(
                        owner_id=self.place.owner_id, scope=self.place.scope, memory_id=memory_id, forgotten_at=at
                    )
                )

    def is_tombstoned(self, memory_id: str) -> bool:
        found = self.conn.execute(_TOMBSTONED, {**self.bound, "memory_id": memory_id}).first()
        return found is not None

    def settings(self) -> Settings:
        paused = self.conn.execute(_PAUSED, self.bound).scalar()
        return Settings(paused=bool(paused))

    def set_settings(self, settings: Settings) -> None:
        values = {"paused": settings.paused, "updated_at": _now()}
        done = self.conn.execute(update(memory_settings).where(self.here(memory_settings)).values(**values)).rowcount
        if not done:
            self.conn.execute(
                insert(memory_settings).values(owner_id=self.place.owner_id, scope=self.place.scope, **values)
            )

    def claim_ref(self, ref: str, at: datetime) -> bool:
        exists = self.conn.execute(
            select(literal(1)).where(self.here(consolidation_refs), consolidation_refs.c.ref == ref)
        ).first()
        if exists:
            return False
        self.conn.execute(
            insert(consolidation_refs).values(owner_id=self.place.owner_id, scope=self.place.scope, ref=ref, claimed_at=at)
        )
        return True

    def release_ref(self, ref: str) -> bool:
        return bool(
            self.conn.execute(
                delete(consolidation_refs).where(self.here(consolidation_refs), consolidation_refs.c.ref == ref)
            ).rowcount
        )

    # ---------------------------------------------------------------- receipts

    def get_receipt(self, key: str) -> Receipt | None:
        row = self.conn.execute(
            select(idempotency_receipts).where(self.here(idempotency_receipts), idempotency_receipts.c.key == key)
        ).mappings().first()
        if row is None:
            return None
        response = json.loads(self.store.decrypt(row["response"])) if row["response"] is not None else None
        return Receipt(
            key=row["key"], request_hash=row["request_hash"], status=row["status"], response=response,
            memory_ids=tuple(json.loads(row["memory_ids"])), created_at=row["created_at"], redacted=row["redacted"],
        )

    def put_receipt(self, receipt: Receipt) -> bool:
        # Under the place's write lock, so looking first is race-free (and keeps PostgreSQL's
        # transaction clean, which a unique violation would abort).
        if self.get_receipt(receipt.key) is not None:
            return False
        response = None if receipt.response is None else self.store.encrypt(json.dumps(receipt.response))
        self.conn.execute(
            insert(idempotency_receipts).values(
                owner_id=self.place.owner_id, scope=self.place.scope, key=receipt.key,
                request_hash=receipt.request_hash, status=receipt.status, response=response,
                memory_ids=json.dumps(list(receipt.memory_ids)), redacted=receipt.redacted,
                created_at=receipt.created_at or _now(),
            )
        )
        return True

    def finish_receipt(self, key: str, status: int, response: dict[str, Any] | None, memory_ids: Sequence[str]) -> bool:
        t = idempotency_receipts.c
        return bool(
            self.conn.execute(
                update(idempotency_receipts).where(self.here(idempotency_receipts), t.key == key).values(
                    status=status, memory_ids=json.dumps(list(memory_ids)),
                    response=None if response is None else self.store.encrypt(json.dumps(response)),
                )
            ).rowcount
        )

    def drop_receipt(self, key: str) -> bool:
        t = idempotency_receipts.c
        return bool(self.conn.execute(delete(idempotency_receipts).where(self.here(idempotency_receipts), t.key == key)).rowcount)

    def redact_receipts(self, memory_id: str) -> int:
        t = idempotency_receipts.c
        return self.conn.execute(
            update(idempotency_receipts)
            # The id is matched as one quoted JSON element; autoescape keeps `_` and `%` in an id literal.
            .where(
                self.here(idempotency_receipts), t.redacted.is_(False),
                t.memory_ids.contains(json.dumps(memory_id), autoescape=True),
            )
            .values(response=None, redacted=True)
        ).rowcount

    # ---------------------------------------------------------------- rows

    def _row(self, m: Memory) -> dict[str, Any]:
        e = m.embedding
        return {
            "id": m.id, "owner_id": self.place.owner_id, "scope": self.place.scope, "revision": m.revision,
            "text": self.store.encrypt(m.text),
            "search_text": search_text(m.text) if self.store.searches_text else None,
            "words_key": m.words_key, "kind": m.kind, "importance": m.importance, "role": m.role,
            "origin": m.origin, "sources": _sources_json(m.sources), "channel": m.channel, "seen": m.seen,
            "pinned": m.pinned, "state": m.state, "last_op": m.last_op, "created_at": m.created_at,
            "updated_at": m.updated_at, "last_used_at": m.last_used_at,
            "embedding_model": e.model if e else None, "embedding_dim": e.dim if e else None,
            "embedding": e.vector if e else None,
        }

    def _memory(self, r: RowMapping) -> Memory:
        vector = r["embedding"]
        return Memory(
            id=r["id"], owner_id=r["owner_id"], scope=r["scope"], revision=r["revision"],
            text=self.store.decrypt(r["text"]), kind=r["kind"], importance=r["importance"],
            created_at=r["created_at"], updated_at=r["updated_at"], role=r["role"], origin=r["origin"],
            sources=_sources(r["sources"]), channel=r["channel"], seen=bool(r["seen"]), pinned=bool(r["pinned"]),
            state=r["state"], last_used_at=r["last_used_at"],
            embedding=Embedding(r["embedding_model"], vector) if vector is not None and r["embedding_model"] else None,
            last_op=r["last_op"], words_key=r["words_key"],
        )

    def _revision(self, r: RowMapping) -> Revision:
        vector = r["embedding"]
        return Revision(
            memory_id=r["memory_id"], revision=r["revision"], text=self.store.decrypt(r["text"]), kind=r["kind"],
            importance=r["importance"], origin=r["origin"], sources=_sources(r["sources"]),
            written_at=r["written_at"], op=r["op"],
            embedding=Embedding(r["embedding_model"], np.asarray(vector, np.float32)) if vector is not None else None,
        )


def _here(table: Any) -> ColumnElement[bool]:
    return and_(table.c.owner_id == bindparam("place_owner"), table.c.scope == bindparam("place_scope"))


def _new_token(upsert: Any) -> Any:
    statement = upsert(memory_places).values(
        owner_id=bindparam("place_owner"), scope=bindparam("place_scope"), token=bindparam("token")
    )
    return statement.on_conflict_do_update(index_elements=["owner_id", "scope"], set_={"token": statement.excluded.token})


# Statements run on every remember or recall, built once (building one costs more than running it
# on SQLite); the place and values come as bound parameters.
_GET = select(memories).where(_here(memories), M.id == bindparam("memory_id"))
_GET_MANY = select(memories).where(_here(memories), M.id.in_(bindparam("ids", expanding=True)))
_FIND_WORDS = select(memories).where(_here(memories), M.state == "active", M.words_key == bindparam("words_key")).limit(1)
_TOMBSTONED = select(literal(1)).where(
    _here(memory_tombstones), memory_tombstones.c.memory_id == bindparam("memory_id")
)
_PAUSED = select(memory_settings.c.paused).where(_here(memory_settings))
_NEW_TOKEN_PG = _new_token(pg_insert)
_NEW_TOKEN_SQLITE = _new_token(sqlite_insert)

_TOKEN = select(memory_places.c.token).where(_here(memory_places))
_MARK_USED = (
    update(memories)
    .where(_here(memories), M.id.in_(bindparam("ids", expanding=True)), M.state == "active")
    .values(last_used_at=bindparam("used_at"))
    .returning(*memories.c)
)
# PostgreSQL, in one round trip (a statement of its own, autocommit):
# - the place's advisory lock first, in a subquery evaluated once (an InitPlan) before any row is
#   updated, so that its rows are locked only once no write to the place is running: a write
#   holding one of them and wanting another would otherwise deadlock with it;
# - `synchronous_commit` off for its own transaction only (set_config's third argument), so it
#   does not wait for the WAL to reach the disk: a use time is a hint, and a crash losing the
#   last ones costs nothing that matters. Made in the WHERE clause: for every row written.
_PLACE_LOCK = select(literal(1)).select_from(
    select(func.pg_advisory_xact_lock(func.hashtextextended(bindparam("lock_key"), 0)).label("lock")).subquery()
).scalar_subquery()
# The vector comes back in pgvector's binary form (see `pg_vector`), not as text to parse.
_MARK_USED_PG = (
    update(memories)
    .where(
        _here(memories), M.id.in_(bindparam("ids", expanding=True)), M.state == "active",
        _PLACE_LOCK == 1, func.set_config("synchronous_commit", "off", True).is_not(None),
    )
    .values(last_used_at=bindparam("used_at"))
    .returning(
        *[c for c in memories.c if c.name != "embedding"],
        type_coerce(func.vector_send(M.embedding), LargeBinary).label("embedding_sent"),
    )
)


def pg_vector(sent: bytes) -> np.ndarray:
    """A vector from pgvector's binary form (`vector_send`): a 4-byte header (dimensions, unused),
    then big-endian float4. Reading it takes microseconds; the text form took 40 µs a vector."""
    return np.frombuffer(sent, dtype=">f4", offset=4).astype(np.float32)

# Built once: a statement made per call with .values(...) costs more to build than to run on SQLite.
_INSERT_COUNTING = (
    insert(memories)
    .from_select(
        [c.name for c in memories.c],
        select(*[bindparam(f"new_{c.name}", type_=c.type) for c in memories.c]).where(
            ~exists().where(_here(memory_tombstones), memory_tombstones.c.memory_id == bindparam("new_id"))
        ),
    )
    .returning(select(func.count()).where(_here(memories), M.state == "active").scalar_subquery())
)


def _could_be_id(value: object) -> bool:
    """Whether a value could be a stored id: ids come from callers (URLs, JSON), and a string the
    database cannot even be sent (a NUL, a lone surrogate from a JSON escape) names nothing."""
    if not isinstance(value, str) or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _sources_json(sources: Sequence[Source]) -> str:
    return json.dumps([s.to_json() for s in sources])


def _sources(raw: str) -> tuple[Source, ...]:
    return tuple(Source.from_json(s) for s in json.loads(raw or "[]"))


def _now() -> datetime:
    from portal.memory.ports import utc_now

    return utc_now()
