"""The SQL unit of work: one connection and one transaction for a change that spans a person's
memories and the records around them — the audit log, accounts and erasure requests.

`SqlStore.unit()` opens it as a write transaction (SQLite: BEGIN IMMEDIATE behind this process's
writer lock; PostgreSQL: each place it erases is locked with the place's advisory lock). Nothing is
kept unless `commit()` is called; leaving the block without it rolls everything back, audit entry
included. What the commit makes stale in this process (the recall cache of an erased person) is
dropped right after it; once the writer lock is let go, the store cleans up after the erasure
(SQLite's write-ahead log, PostgreSQL's dead rows: see `SqlStore.after_erasure`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection, RootTransaction

from portal.adapters.sql.accounts import Accounts
from portal.adapters.sql.api_keys import ApiKeys
from portal.adapters.sql.audit import AuditLog, ErasureRequests
from portal.adapters.sql.engine import OWNER_TABLE_NAMES, lock_place
from portal.adapters.sql.tables import OWNER_TABLES, memories
from portal.adapters.sql.tenants import Tenants
from portal.domain.audit import AuditEntry
from portal.domain.types import PurgeCounts

if TYPE_CHECKING:
    from portal.adapters.sql.store import SqlStore


class SqlUnitOfWork:
    def __init__(self, store: SqlStore, conn: Connection, trans: RootTransaction) -> None:
        self.store = store
        self.conn = conn
        self._trans = trans
        self.audit = AuditLog(conn)
        self.accounts = Accounts(conn)
        self.erasures = ErasureRequests(conn)
        self.tenants = Tenants(conn)
        self.api_keys = ApiKeys(conn)
        self._erased_owners: set[str] = set()
        self._erased_nothing = True
        self.committed = False

    def record(self, entry: AuditEntry) -> None:
        self.audit.write(entry)

    def purge_owner(self, owner_id: str, scopes: Sequence[str] | None) -> PurgeCounts:
        """Erase everything kept under this owner id in `scopes` (None: in every scope)."""
        counts = purge(self.conn, self.store.postgres, owner_id, scopes)
        self._erased_owners.add(owner_id)
        self._erased_nothing = self._erased_nothing and not any(counts.to_json().values())
        if self.store.recall_cache is not None:
            self.store.recall_cache.drop_owner(owner_id)
        return counts

    def commit(self) -> None:
        self._trans.commit()
        self.committed = True
        if self.store.recall_cache is not None:
            for owner_id in self._erased_owners:
                # Again, after the commit: a recall running alongside may have cached the place anew.
                self.store.recall_cache.drop_owner(owner_id)

    def after_commit(self) -> None:
        """Once the writer lock is let go (SqlStore.unit): the cleaning up after an erasure — none
        when it erased nothing (an empty erasure repeated by anyone costs no VACUUM)."""
        if self._erased_owners and not self._erased_nothing:
            self.store.after_erasure(OWNER_TABLE_NAMES)


class SqlRecords:
    """The records of a SQL database (`portal.ports.Records`): reads on the engine, each its own
    transaction; changes in `unit()`, on the store's unit of work."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.accounts = Accounts(store.engine)
        self.audit = AuditLog(store.engine)
        self.erasures = ErasureRequests(store.engine)
        self.tenants = Tenants(store.engine)
        self.api_keys = ApiKeys(store.engine)

    @contextmanager
    def unit(self) -> Iterator[SqlUnitOfWork]:
        with self.store.unit() as uow:
            yield uow
        if uow.committed:
            for tenant_id in uow.tenants.switched:  # this process reads the new switch at once
                self.tenants.forget_switch(tenant_id)


def purge(conn: Connection, postgres: bool, owner_id: str, scopes: Sequence[str] | None) -> PurgeCounts:
    """Delete an owner's rows from every table that holds a person's data, on `conn`."""
    M = memories.c
    counts: dict[str, int] = {}
    if postgres:
        found = conn.execute(select(M.scope).where(M.owner_id == owner_id).distinct()).scalars()
        for scope in sorted(found):
            if scopes is None or scope in scopes:
                lock_place(conn, owner_id, scope)
    for table in OWNER_TABLES:
        where = table.c.owner_id == owner_id
        if scopes is not None:
            where = where & table.c.scope.in_(list(scopes))
        counts[table.name] = conn.execute(delete(table).where(where)).rowcount
    return PurgeCounts(
        memories=counts["memories"], revisions=counts["memory_revisions"], settings=counts["memory_settings"],
        refs=counts["consolidation_refs"], receipts=counts["idempotency_receipts"],
        tombstones=counts["memory_tombstones"],
        app_uses=counts["app_uses"] + counts["conversation_uses"], app_controls=counts["app_controls"],
        jobs=counts["consolidation_jobs"],
    )
