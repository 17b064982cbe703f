"""Maintenance across places, a mixin of `SqlStore`: retention (`prune`), the periodic erasure of
words whose time is over (earlier wordings past their Undo, job summaries never read), and the
lookups a worker makes by job id. Each batch is its own short transaction (`maintenance()`), keyed
by the owner-led primary keys, and every erasure ends in `after_erasure`, as a forget does."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, exists, or_, select, tuple_, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from portal.adapters.sql.statements import could_be_id
from portal.adapters.sql.tables import (
    OWNER_TABLES,
    app_controls,
    app_uses,
    consolidation_jobs,
    conversation_uses,
    idempotency_receipts,
    memories,
    memory_places,
    memory_revisions,
)
from portal.domain.types import Place

M = memories.c
R = memory_revisions.c
BATCH = 1000


class StoreMaintenance:
    engine: Any

    if TYPE_CHECKING:  # given by SqlStore
        def writer(self) -> AbstractContextManager[Connection]: ...
        def after_erasure(self, tables: Iterable[str]) -> None: ...

    def expire_revisions(self, now: datetime) -> int:
        """Erase, in every place, the earlier wordings whose `expires_at` is past (see Store)."""
        deleted = self._delete_in_batches(memory_revisions, (R.owner_id, R.scope, R.memory_id, R.revision),
                                          and_(R.expires_at.is_not(None), R.expires_at <= now))
        if deleted:
            self.after_erasure(("memory_revisions",))
        return deleted

    def expire_summaries(self, before: datetime) -> int:
        """Clear, in every place, the summaries of jobs over since before `before` (see Store)."""
        j = consolidation_jobs.c
        where = and_(j.state.in_(["done", "failed"]), j.updated_at < before, j.summary.is_not(None))
        cleared = 0
        while True:
            with self.maintenance() as conn:
                keys = [tuple(row) for row in conn.execute(select(j.owner_id, j.scope, j.id).where(where).limit(BATCH))]
                if keys:
                    cleared += conn.execute(update(consolidation_jobs).where(
                        tuple_(j.owner_id, j.scope, j.id).in_(keys)).values(summary=None)).rowcount
            if len(keys) < BATCH:
                break
        if cleared:
            self.after_erasure(("consolidation_jobs",))
        return cleared

    def prune_jobs(self, older_than: datetime) -> int:
        j = consolidation_jobs.c
        deleted = self._delete_in_batches(consolidation_jobs, (j.owner_id, j.scope, j.id),
                                          and_(j.state.in_(["done", "failed"]), j.updated_at < older_than))
        if deleted:
            self.after_erasure(("consolidation_jobs",))
        return deleted

    def prune_history(self, older_than: datetime) -> int:
        later = memory_revisions.alias("later")
        replaced = or_(
            exists().where(later.c.owner_id == R.owner_id, later.c.scope == R.scope, later.c.memory_id == R.memory_id,
                           later.c.revision > R.revision, later.c.written_at < older_than),
            exists().where(M.id == R.memory_id, M.owner_id == R.owner_id, M.scope == R.scope, M.updated_at < older_than),
        )
        # Keyed and joined by owner too: each batch's DELETE names the owners it reaches (docs/operations.md,
        # "Scaling past one database").
        deleted = self._delete_in_batches(memory_revisions, (R.owner_id, R.scope, R.memory_id, R.revision),
                                          and_(R.written_at < older_than, replaced))
        if deleted:
            self.after_erasure(("memory_revisions",))  # earlier wordings are a person's words too
        return deleted

    def prune_receipts(self, older_than: datetime) -> int:
        t = idempotency_receipts.c
        return self._delete_in_batches(
            idempotency_receipts, (t.owner_id, t.scope, t.key), and_(t.status != 0, t.created_at < older_than)
        )

    def job_place(self, job_id: str) -> Place | None:
        j = consolidation_jobs.c
        with self.engine.connect() as conn:
            rows = conn.execute(select(j.owner_id, j.scope).where(j.id == job_id).limit(2)).all()
        return Place(rows[0].owner_id, rows[0].scope) if len(rows) == 1 else None

    def people(self, scope: str, hidden_from: str | None = None) -> builtins.list[str]:
        if not could_be_id(scope) or (hidden_from is not None and not could_be_id(hidden_from)):
            return []
        query = select(M.owner_id).where(M.scope == scope).distinct().order_by(M.owner_id)
        if hidden_from is not None:
            C = app_controls.c
            query = query.where(~exists().where(C.owner_id == M.owner_id, C.scope == scope, C.app_id == hidden_from,
                                                 C.state == "blocked"))
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def scopes_of(self, owner_id: str) -> builtins.list[str]:
        if not could_be_id(owner_id):
            return []
        found: set[str] = set()
        with self.engine.connect() as conn:  # one statement a table, each by the owner-led key
            for table in OWNER_TABLES:
                if table is not memory_places:  # recall's token of a place: nothing about the person
                    found.update(conn.execute(select(table.c.scope).where(table.c.owner_id == owner_id).distinct()).scalars())
        return sorted(found)

    def memory_place(self, scope: str, memory_id: str) -> Place | None:
        if not could_be_id(scope) or not could_be_id(memory_id):
            return None
        with self.engine.connect() as conn:  # ix_memories_id
            rows = conn.execute(select(M.owner_id).where(M.scope == scope, M.id == memory_id).limit(2)).all()
        return Place(rows[0].owner_id, scope) if len(rows) == 1 else None

    def unfinished_jobs(self, before: datetime, limit: int) -> builtins.list[str]:
        j = consolidation_jobs.c
        query = (select(j.id).where(j.state.in_(["queued", "running"]), j.updated_at < before)
                 .order_by(j.updated_at, j.id).limit(limit))
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def prune_uses(self, older_than: datetime) -> int:
        u = app_uses.c
        deleted = self._delete_in_batches(app_uses, (u.owner_id, u.scope, u.app_id, u.memory_id, u.action, u.day),
                                          u.last_at < older_than)
        c = conversation_uses.c  # which conversations used them: kept as long as the uses are
        return deleted + self._delete_in_batches(
            conversation_uses, (c.owner_id, c.scope, c.app_id, c.conversation, c.memory_id), c.last_at < older_than)

    def expired(self, now: datetime, limit: int) -> builtins.list[tuple[Place, str]]:
        query = (select(M.owner_id, M.scope, M.id).where(M.expires_at <= now)  # ix_memories_expires_at
                 .order_by(M.expires_at, M.owner_id, M.id).limit(limit))
        with self.engine.connect() as conn:
            return [(Place(r.owner_id, r.scope), r.id) for r in conn.execute(query)]

    def archived_before(self, older_than: datetime, limit: int) -> builtins.list[tuple[Place, str]]:
        query = (
            select(M.owner_id, M.scope, M.id)
            .where(M.state == "archived", M.updated_at < older_than, or_(M.last_used_at.is_(None), M.last_used_at < older_than))
            .order_by(M.owner_id, M.id).limit(limit)  # the primary key's order: no sort
        )
        with self.engine.connect() as conn:
            return [(Place(r.owner_id, r.scope), r.id) for r in conn.execute(query)]

    def _delete_in_batches(self, table: Any, key: tuple[Any, ...], where: ColumnElement[bool], batch: int = BATCH) -> int:
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
        with self.writer() as conn, conn.begin():
            yield conn
