"""The records around the memories, in process (`portal.ports.Records`): the reference a third
party's store is compared with, and what tests without a database run on.

A unit of work holds the records' lock for its whole life (one unit at a time, like SQLite's writer
lock), works on copies of the records, and swaps them in at `commit()`. A person's memories it
erases are taken out of the `InMemoryStore` at once and put back unless the unit commits. The audit
log is the store's own (`InMemoryStore.audit_entries`), so the entries the memory service writes
with its changes and the ones written here are one log.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from portal.adapters.keys import new_key, parse_token, secret_matches, use_to_record
from portal.adapters.memory.store import InMemoryStore
from portal.adapters.passwords import hash_password, verify_password
from portal.domain.audit import AuditEntry
from portal.domain.options import new_id, utc_now
from portal.domain.people import (
    AccountError,
    ApiKey,
    ErasureRequest,
    Tenant,
    TenantExists,
    User,
    check_language,
    check_new_account,
    check_password,
    check_tenant_name,
)
from portal.domain.types import Place, PurgeCounts

FIND_LIMIT = 50


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


class InMemoryAccounts:
    def __init__(self, holder: _Holder) -> None:
        self._h = holder

    def create(self, email: str, name: str, tenant_id: str, role: str, password: str, owner_id: str | None = None,
               language: str = "en") -> User:
        email = check_new_account(email, name, role, password, owner_id, language)
        password_hash = hash_password(password)
        with self._h.writing():
            data = self._h.data
            if tenant_id not in data.tenants:
                raise AccountError("unknown_tenant")
            if any(u.email == email for u, _ in data.users.values()):
                raise AccountError("email_taken")
            user_id = new_id()
            user = User(user_id, email, name.strip(), role, tenant_id, owner_id or user_id, language, utc_now(), None)
            data.users[user_id] = (user, password_hash)
        return user

    def get(self, user_id: str) -> User | None:
        found = self._h.data.users.get(user_id) if isinstance(user_id, str) else None
        return found[0] if found else None

    def find(self, query: str, tenant_ids: list[str] | None = None) -> list[User]:
        needle = query.strip().lower()
        found = [u for u, _ in self._h.data.users.values()
                 if (needle in u.email or needle in u.name.lower() or u.owner_id == query.strip())
                 and (tenant_ids is None or u.tenant_id in tenant_ids)]
        return sorted(found, key=lambda u: u.email)[:FIND_LIMIT]

    def authenticate(self, email: str, password: str) -> User | None:
        wanted = email.strip().lower()
        found = next(((u, h) for u, h in self._h.data.users.values() if u.email == wanted), None)
        if not verify_password(found[1] if found else None, password):
            return None
        return found[0] if found else None

    def _change(self, user_id: str, password_hash: str | None = None, **changes: Any) -> bool:
        with self._h.writing():
            found = self._h.data.users.get(user_id)
            if found is None:
                return False
            self._h.data.users[user_id] = (replace(found[0], **changes), password_hash or found[1])
        return True

    def end_sessions(self, user_id: str) -> bool:
        with self._h.writing():
            user = self.get(user_id)
            return user is not None and self._change(user_id, session_epoch=user.session_epoch + 1)

    def set_password(self, user_id: str, password: str) -> bool:
        check_password(password)
        password_hash = hash_password(password)
        with self._h.writing():
            user = self.get(user_id)
            return user is not None and self._change(user_id, password_hash, session_epoch=user.session_epoch + 1)

    def set_language(self, user_id: str, language: str) -> None:
        check_language(language)
        self._change(user_id, language=language)

    def mark_visit(self, user_id: str, at: datetime) -> None:
        self._change(user_id, last_visit_at=at)

    def delete(self, user_id: str) -> bool:
        with self._h.writing():
            return self._h.data.users.pop(user_id, None) is not None

    def staff(self, tenant_ids: list[str] | None = None) -> list[User]:
        return sorted((u for u, _ in self._h.data.users.values()
                       if u.role in ("staff", "admin") and (tenant_ids is None or u.tenant_id in tenant_ids)),
                      key=lambda u: u.email)

    def names_of(self, place: Place) -> list[str]:
        return [u.name for u, _ in self._h.data.users.values()
                if u.tenant_id == place.scope and u.owner_id != place.owner_id]


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

    def query(self, scopes: list[str] | None, actor_id: str | None = None, subject: str | None = None,
              action: str | None = None, since: datetime | None = None, until: datetime | None = None,
              limit: int = 500) -> list[AuditEntry]:
        chosen = [e for e in self._h.entries()
                  if (scopes is None or e.scope in scopes) and (not actor_id or e.actor_id == actor_id)
                  and (not subject or e.subject_owner_id == subject) and (not action or e.action == action)
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

    def complete(self, request_id: str, actor_id: str, counts: dict[str, int]) -> None:
        with self._h.writing():
            found = self._h.data.erasures.get(request_id)
            if found is not None:
                self._h.data.erasures[request_id] = replace(found, state="completed", completed_at=utc_now(),
                                                            completed_by=actor_id, counts=dict(counts),
                                                            subject_user_id=None)


class InMemoryTenants:
    def __init__(self, holder: _Holder) -> None:
        self._h = holder

    def create(self, name: str, ai_enabled: bool = True) -> Tenant:
        name = check_tenant_name(name)
        with self._h.writing():
            if any(t.name == name for t in self._h.data.tenants.values()):
                raise TenantExists(name)
            tenant = Tenant(new_id(), name, ai_enabled, utc_now())
            self._h.data.tenants[tenant.id] = tenant
        return tenant

    def find(self, name_or_id: str) -> Tenant | None:
        return next((t for t in self._h.data.tenants.values() if name_or_id in (t.id, t.name)), None)

    def all(self) -> list[Tenant]:
        return sorted(self._h.data.tenants.values(), key=lambda t: t.name)

    def set_ai(self, tenant_id: str, enabled: bool) -> bool:
        with self._h.writing():
            found = self._h.data.tenants.get(tenant_id)
            if found is None:
                return False
            self._h.data.tenants[tenant_id] = replace(found, ai_enabled=enabled)
        return True

    def ai_enabled(self, place: Place) -> bool:
        found = self._h.data.tenants.get(place.scope)
        return True if found is None else found.ai_enabled


class InMemoryApiKeys:
    def __init__(self, holder: _Holder) -> None:
        self._h = holder

    def create(self, tenant_id: str, permissions: Iterable[str], name: str | None = None) -> tuple[ApiKey, str]:
        key, token, secret_hash = new_key(tenant_id, permissions, name)
        with self._h.writing():
            if tenant_id not in self._h.data.tenants:
                raise ValueError(f"no tenant {tenant_id!r}")
            self._h.data.keys[key.id] = (key, secret_hash)
        return key, token

    def verify(self, token: str) -> ApiKey | None:
        parsed = parse_token(token)
        if parsed is None:
            return None
        key_id, secret = parsed
        found = self._h.data.keys.get(key_id)
        if not secret_matches(found[1] if found else None, secret) or found is None or found[0].revoked_at:
            return None
        key, now = found[0], utc_now()
        if use_to_record(key, now):
            key = replace(key, last_used_at=now)
            with self._h.writing():
                self._h.data.keys[key_id] = (key, found[1])
        return key

    def revoke(self, key_id: str) -> bool:
        with self._h.writing():
            found = self._h.data.keys.get(key_id)
            if found is None or found[0].revoked_at is not None:
                return False
            self._h.data.keys[key_id] = (replace(found[0], revoked_at=utc_now()), found[1])
        return True

    def list(self, tenant_id: str | None = None) -> builtins.list[ApiKey]:
        return sorted((k for k, _ in self._h.data.keys.values() if tenant_id is None or k.tenant_id == tenant_id),
                      key=lambda k: (k.created_at, k.id))


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
