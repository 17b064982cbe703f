"""The records around the memories, in process (`portal.ports.Records`): the reference a third
party's store is compared with, and what tests without a database run on.

A unit of work holds the records' lock for its whole life (one unit at a time, like SQLite's writer
lock), works on copies of the records, and swaps them in at `commit()`. A person's memories it
erases are taken out of the `InMemoryStore` at once and put back unless the unit commits. The audit
log is the store's own (`InMemoryStore.audit_entries`), so the entries the memory service writes
with its changes and the ones written here are one log. The repositories of accounts, tenants and
API keys are in `.accounts`; the audit log, the erasure requests and the unit of work are here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from portal.adapters.memory.accounts import InMemoryAccounts, InMemoryApiKeys, InMemoryTenants
from portal.adapters.memory.store import InMemoryStore
from portal.domain.audit import AuditEntry, action_matches, any_of
from portal.domain.options import new_id, utc_now
from portal.domain.people import ApiKey, ErasureRequest, Tenant, User
from portal.domain.types import Place, PurgeCounts


@dataclass
class _Data:
    users: dict[str, tuple[User, str]] = field(default_factory=dict)  # id -> (account, password hash)
    tenants: dict[str, Tenant] = field(default_factory=dict)
    keys: dict[str, tuple[ApiKey, str]] = field(default_factory=dict)  # id -> (key, secret hash)
    erasures: dict[str, ErasureRequest] = field(default_factory=dict)
    audit: list[AuditEntry] = field(default_factory=list)  # written by a unit, not yet committed

    def copy(self) -> _Data:
        return _Data(dict(self.users), dict(self.tenants), dict(self.keys), dict(self.erasures), [])


class _Holder:
    """What a repository reads and writes: the committed records, or a unit's copies."""

    data: _Data
    store: InMemoryStore

    def writing(self) -> AbstractContextManager[Any]:
        """Held around each change: the records' lock outside a unit (a change commits alone, never
        in the middle of a unit), nothing inside one (the unit holds the lock already)."""
        raise NotImplementedError

    def add_entry(self, entry: AuditEntry) -> None:
        raise NotImplementedError

    def entries(self) -> list[AuditEntry]:
        return list(self.store.audit_entries) + self.data.audit


class InMemoryAuditLog:
    def __init__(self, holder: _Holder) -> None:
        self._h = holder

    def record(self, actor_id: str | None, actor_role: str, action: str, subject_owner_id: str | None = None,
               scope: str | None = None, counts: dict[str, int] | None = None, ticket: str | None = None,
               reason_code: str | None = None) -> AuditEntry:
        entry = AuditEntry(new_id(), utc_now(), actor_id, actor_role, action, subject_owner_id, scope, counts, ticket,
                           reason_code)
        self.write(entry)
        return entry

    def write(self, entry: AuditEntry) -> None:
        with self._h.writing():
            self._h.add_entry(entry)

    def query(self, scopes: list[str] | None, actor_id: str | Sequence[str] | None = None,
              subject: str | Sequence[str] | None = None, action: str | Sequence[str] | None = None,
              since: datetime | None = None, until: datetime | None = None, limit: int = 500) -> list[AuditEntry]:
        actors, subjects, actions = any_of(actor_id), any_of(subject), any_of(action)
        chosen = [e for e in self._h.entries()
                  if (scopes is None or e.scope in scopes) and (actors is None or e.actor_id in actors)
                  and (subjects is None or e.subject_owner_id in subjects)
                  and (actions is None or any(action_matches(e.action, wanted) for wanted in actions))
                  and (not since or e.at >= since) and (not until or e.at < until)]
        return sorted(chosen, key=lambda e: (e.at, e.id), reverse=True)[:limit]


class InMemoryErasures:
    def __init__(self, holder: _Holder) -> None:
        self._h = holder

    def open(self, tenant_id: str, subject_owner_id: str, subject_user_id: str | None, ticket: str | None,
             received_at: datetime, requested_by: str) -> ErasureRequest:
        request = ErasureRequest(new_id(), tenant_id, subject_owner_id, subject_user_id, ticket, received_at,
                                 requested_by, "open", None, None, None)
        with self._h.writing():
            self._h.data.erasures[request.id] = request
        return request

    def get(self, request_id: str, for_update: bool = False) -> ErasureRequest | None:
        return self._h.data.erasures.get(request_id) if isinstance(request_id, str) else None

    def all(self, tenant_ids: list[str] | None) -> list[ErasureRequest]:
        chosen = [r for r in self._h.data.erasures.values() if tenant_ids is None or r.tenant_id in tenant_ids]
        return sorted(chosen, key=lambda r: (r.state != "open", r.received_at))

    def open_for(self, subject_owner_id: str, tenant_id: str, for_update: bool = False) -> list[ErasureRequest]:
        return sorted((r for r in self._h.data.erasures.values()
                       if r.subject_owner_id == subject_owner_id and r.tenant_id == tenant_id and r.state == "open"),
                      key=lambda r: r.id)

    def complete(self, request_id: str, actor_id: str | None, counts: dict[str, int]) -> None:
        with self._h.writing():
            found = self._h.data.erasures.get(request_id)
            if found is not None:
                self._h.data.erasures[request_id] = replace(found, state="completed", completed_at=utc_now(),
                                                            completed_by=actor_id, counts=dict(counts),
                                                            subject_user_id=None)


class _Repositories(_Holder):
    def __init__(self) -> None:
        self.accounts = InMemoryAccounts(self)
        self.audit = InMemoryAuditLog(self)
        self.erasures = InMemoryErasures(self)
        self.tenants = InMemoryTenants(self)
        self.api_keys = InMemoryApiKeys(self)


class InMemoryUnitOfWork(_Repositories):
    def __init__(self, records: InMemoryRecords) -> None:
        self.store = records.store
        self.data = records.data.copy()
        self._records = records
        self._taken: list[dict[Place, Any]] = []
        self.committed = False
        super().__init__()

    def writing(self) -> AbstractContextManager[Any]:
        return nullcontext()

    def add_entry(self, entry: AuditEntry) -> None:
        self.data.audit.append(entry)

    def purge_owner(self, owner_id: str, scopes: Sequence[str] | None) -> PurgeCounts:
        # The places stay locked until the unit ends, as a SQL unit keeps its rows locked.
        counts, taken = self.store.take_owner(owner_id, scopes, hold=True)
        self._taken.append(taken)
        return counts

    def commit(self) -> None:
        self.store.audit_entries.extend(self.data.audit)
        self.data.audit = []
        self._records.data = self.data
        self.committed = True
        self.end()

    def end(self) -> None:
        """Let go of the places taken: erased when committed, put back otherwise."""
        for taken in reversed(self._taken):
            self.store.release(taken, restore=not self.committed)
        self._taken = []


class InMemoryRecords(_Repositories):
    """Reads see what is committed; `unit()` changes records (and erases memories) all or nothing."""

    def __init__(self, store: InMemoryStore | None = None) -> None:
        self.store = store or InMemoryStore()
        self.data = _Data()
        self._lock = threading.RLock()
        self._unit_thread: int | None = None
        super().__init__()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """A change on its own: under the lock, on fresh copies of the records (a reader iterating
        the ones it holds never sees them change); never from the thread of an open unit, whose
        commit would then write over it."""
        with self._lock:
            if self._unit_thread == threading.get_ident():
                raise RuntimeError("a change outside the open unit of work: make it through the unit")
            self.data = self.data.copy()
            yield

    def add_entry(self, entry: AuditEntry) -> None:
        self.store.audit_entries.append(entry)

    @contextmanager
    def unit(self) -> Iterator[InMemoryUnitOfWork]:
        with self._lock:
            if self._unit_thread is not None:
                raise RuntimeError("a unit of work inside another one")
            uow = InMemoryUnitOfWork(self)
            self._unit_thread = threading.get_ident()
            try:
                yield uow
            finally:
                self._unit_thread = None
                uow.end()
