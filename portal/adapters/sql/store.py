"""The SQLAlchemy store: one implementation for SQLite and PostgreSQL with pgvector.

Every statement carries the place (`owner_id`, `scope`) in its WHERE clause; nothing a person
writes is ever part of the SQL text. With a cipher, text is encrypted before it reaches the
database, which then cannot search it (`searches_text` is False and words are ranked in process).

Recall reads a place's ranking data from a per-process `RecallCache` while the place's token
(`memory_places`) is the one it was read at; every write that changes what recall ranks replaces
the token in the same transaction (see `SqlTx.commit` in `.transaction`).
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Protocol

from sqlalchemy import (
    select,
    update,
)
from sqlalchemy.engine import Connection, Engine

from portal.adapters.sql.audit import AuditLog
from portal.adapters.sql.engine import (
    CHECKPOINT_FIRST_WAIT_MS,
    OWNER_TABLE_NAMES,
    checkpoint,
    is_postgres,
    lock_place,
    place_lock_key,
    vacuum_owner_tables,
)
from portal.adapters.sql.janitor import Janitor
from portal.adapters.sql.keycheck import KeysMismatch
from portal.adapters.sql.maintenance import StoreMaintenance
from portal.adapters.sql.statements import LOCK_NOT_DURABLE
from portal.adapters.sql.tables import (
    memories,
    memory_revisions,
)
from portal.adapters.sql.transaction import SqlTx
from portal.adapters.sql.uow import SqlUnitOfWork
from portal.domain.apps import RECALLED
from portal.domain.audit import AuditEntry
from portal.domain.errors import Unavailable
from portal.domain.options import utc_now
from portal.domain.recall.cache import RecallCache
from portal.domain.types import Embedding, Memory, Place, PurgeCounts
from portal.domain.uses import UseBatch
from portal.ports import NeedsVector

M = memories.c
R = memory_revisions.c
log = logging.getLogger("portal.store")


class TextCipher(Protocol):
    digest_key: bytes

    def encrypt(self, text: str) -> str: ...
    def decrypt(self, token: str) -> str: ...


DEFAULT_CACHE_BYTES = 256 * 1024 * 1024
VACUUM_SPACING = 1.0  # seconds between two VACUUMs of one table
DEFAULT_CACHE_IDLE = 300.0


class SqlStore(StoreMaintenance):
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
        # What "now" is for its reads (no read answers a memory past its expiry): the service's
        # clock (MemoryService sets it), the wall clock until then.
        self.clock: Callable[[], datetime] = utc_now
        # The encryption keys check, when it could not be made at start (see defer_keys_check).
        self._keys_check: Callable[[], bool] | None = None
        self._keys_lock = threading.Lock()
        # SQLite has one writer at a time anyway; queueing threads here spares them busy-waiting.
        self._sqlite_writer = threading.Lock()
        # What erasures leave to clean after their commit (see .janitor): one task per table to VACUUM,
        # each at most once a second (erasures in a burst share one).
        vacuums = {f"vacuum:{name}": partial(vacuum_owner_tables, self.engine, (name,)) for name in OWNER_TABLE_NAMES}
        self.janitor = Janitor({"checkpoint": lambda: checkpoint(self.engine), **vacuums},
                               spacing=dict.fromkeys(vacuums, VACUUM_SPACING))

    def defer_keys_check(self, check: Callable[[], bool]) -> None:
        """The encryption keys check could not be made at start (the database did not answer): it is
        made before this store's next transaction, which it refuses (`Unavailable`) until it passes."""
        self._keys_check = check

    def _keys_checked(self) -> None:
        if self._keys_check is None:
            return
        with self._keys_lock:
            check = self._keys_check
            if check is None:
                return
            try:
                if check():
                    self._keys_check = None
            except KeysMismatch:
                log.error("keys.mismatch: this process's MEMORY_ENCRYPTION_KEYS do not fit the database")
                raise Unavailable() from None

    @contextmanager
    def writer(self) -> Iterator[Connection]:
        """A connection whose transactions write: on SQLite queued behind this process's writers
        and opened with BEGIN IMMEDIATE (several processes then serialise instead of failing half
        way); on PostgreSQL a plain one (the place locks are taken inside)."""
        self._keys_checked()
        if self.postgres:
            with self.engine.connect() as conn:
                yield conn
            return
        with self._sqlite_writer, self.engine.connect() as conn:
            yield conn.execution_options(sqlite_begin="IMMEDIATE")

    @contextmanager
    def write(self, place: Place) -> Iterator[SqlTx]:
        made: list[SqlTx] = []
        try:
            with self.writer() as conn:
                for tx in self._transaction(conn, place, lock=self.postgres, writable=True):
                    made.append(tx)
                    yield tx
        finally:
            # After the writer lock is released: cleaning up after an erasure never holds up writers.
            if made and made[0].erased and made[0].committed:
                self.after_erasure(made[0].erased)

    @contextmanager
    def read(self, place: Place, snapshot: bool = True) -> Iterator[SqlTx]:
        """A read transaction: on PostgreSQL a REPEATABLE READ snapshot, or with `snapshot=False`
        each statement on its own (autocommit: no BEGIN and ROLLBACK round trips), for a reader
        that copes with a write landing between two of its statements."""
        self._keys_checked()
        with self.engine.connect() as conn:
            if self.postgres:
                conn = conn.execution_options(isolation_level="REPEATABLE READ" if snapshot else "AUTOCOMMIT")
            yield from self._transaction(conn, place, lock=False)

    def _transaction(self, conn: Connection, place: Place, lock: bool, writable: bool = False) -> Iterator[SqlTx]:
        trans = conn.begin()
        try:
            if lock:
                lock_place(conn, place.owner_id, place.scope)
            yield SqlTx(self, conn, trans, place, writable)
        finally:
            if trans.is_active:
                trans.rollback()

    def mark_used(self, place: Place, ids: Sequence[str], at: datetime, app_id: str | None = None,
                  conversation: str | None = None) -> builtins.list[Memory]:
        """One UPDATE ... RETURNING (and, for an app, one upsert of its uses). On PostgreSQL the
        UPDATE takes the place's lock itself and does not wait for durability (see `MARK_USED_PG`):
        without an app, a statement on its own (autocommit, one round trip); with one, the uses of
        the rows it marked follow in the same transaction, under that lock. SQLite has one writer
        at a time: there it queues like any write."""
        if self.postgres:
            with self.engine.connect() as conn:
                if app_id is None:
                    conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                    return SqlTx(self, conn, conn.begin(), place, writable=True).mark_used_returning(ids, at, app_id)
                with conn.begin() as trans:
                    tx = SqlTx(self, conn, trans, place, writable=True)
                    marked = tx.mark_used_returning(ids, at, app_id)
                    tx.record_use(app_id, RECALLED, [m.id for m in marked], at)
                    if conversation is not None:
                        tx.record_conversation(app_id, conversation, [m.id for m in marked], at)
                return marked
        with self.write(place) as tx:
            marked = tx.mark_used_returning(ids, at, app_id)
            if app_id is not None:
                tx.record_use(app_id, RECALLED, [m.id for m in marked], at)
                if conversation is not None:
                    tx.record_conversation(app_id, conversation, [m.id for m in marked], at)
            tx.commit()
        return marked

    def record_batch(self, place: Place, batch: UseBatch) -> int:
        """Under the place's lock, taken before the memories are looked at (PostgreSQL: its own
        statement, so the look sees an erasure that held it), without waiting for durability."""
        if not batch:
            return 0
        with self.writer() as conn, conn.begin() as trans:
            if self.postgres:
                conn.execute(LOCK_NOT_DURABLE, {"key": place_lock_key(place.owner_id, place.scope)})
            tx = SqlTx(self, conn, trans, place, writable=True)
            present = tx.present(batch.ids())
            tx.apply_uses(batch.only(set(present)))
        return len(present)

    def purge_owner(self, owner_id: str, scopes: Sequence[str] | None = None, record: AuditEntry | None = None) -> PurgeCounts:
        with self.unit() as uow:
            counts = uow.purge_owner(owner_id, scopes)
            if record is not None:
                uow.record(replace(record, counts=counts.to_json()))
            uow.commit()
        return counts

    @contextmanager
    def unit(self) -> Iterator[SqlUnitOfWork]:
        """A write transaction across places and the records around them (see `.uow`)."""
        made: list[SqlUnitOfWork] = []
        try:
            with self.writer() as conn:
                trans = conn.begin()
                try:
                    made.append(SqlUnitOfWork(self, conn, trans))
                    yield made[0]
                finally:
                    if trans.is_active:
                        trans.rollback()
        finally:
            if made and made[0].committed:
                made[0].after_commit()

    def after_erasure(self, tables: Iterable[str]) -> None:
        """After a transaction that erased words from `tables` committed (and let go of the writer
        lock): the one cleaning up every erasure goes through — a forget, an in-place edit, an
        undo, an earlier wording or a job's transcript or summary cleared, a person's erasure.

        SQLite: copy the write-ahead log into the database file and truncate it, so the erased
        rows' earlier page images do not stay in the `-wal` file (secure_delete zeroed them in the
        database pages): tried at once, with a short wait for readers, then by the janitor until it
        succeeds. PostgreSQL: the janitor VACUUMs the tables the erasure touched, index entries
        included, so their dead rows go now rather than when autovacuum comes by (requests for one
        table while its VACUUM waits are one VACUUM; docs/operations.md, "What erasure removes"). A
        VACUUM that cannot run (no privilege, a lock held past VACUUM_WAIT) is left to autovacuum;
        the log says so, with the error's class only."""
        if not self.postgres:
            if not checkpoint(self.engine, wait_ms=CHECKPOINT_FIRST_WAIT_MS):
                self.janitor.ask("checkpoint")
            return
        for name in sorted(set(tables)):
            self.janitor.ask(f"vacuum:{name}")

    def settle(self, timeout: float = 30.0) -> bool:
        """Wait until the cleaning up after erasures is done (see .janitor)."""
        return self.janitor.settle(timeout)

    def needing_vector(self, model: str, dim: int | None, limit: int) -> builtins.list[NeedsVector]:
        stale = (M.embedding_model.is_(None)) | (M.embedding_model != model)
        if dim is not None:
            stale = stale | (M.embedding_dim != dim)
        query = (
            select(M.owner_id, M.scope, M.id, M.revision, M.text, M.updated_at)
            .where(stale).order_by(M.owner_id, M.id).limit(limit)  # the primary key's order: no sort
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

    def audit_trail(self) -> builtins.list[AuditEntry]:
        return list(reversed(AuditLog(self.engine).query(None, limit=1_000_000)))

    def places(self) -> Iterator[Place]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(M.owner_id, M.scope).distinct()).all()
        return iter([Place(r.owner_id, r.scope) for r in rows])

    def encrypt(self, text: str) -> str:
        return self.cipher.encrypt(text) if self.cipher else text

    def decrypt(self, text: str) -> str:
        return self.cipher.decrypt(text) if self.cipher else text
