"""The records around the memories — accounts, tenants, API keys, the audit log, erasure requests —
and the unit of work that changes them with a person's memories in one transaction.

Support and Administration are written against these protocols only. A store of records answers
reads on its own (each read sees what is committed) and hands out units of work for changes:

    with records.unit() as uow:
        request = uow.erasures.open(...)
        uow.audit.record(...)
        uow.commit()          # both, or (leaving without commit, or on an error) neither

The SQL adapter (`portal.adapters.sql.uow`) runs a unit on one connection; the in-memory one
(`portal.adapters.memory.records`) on copies it keeps or drops. `portal.contract.records` is the
suite a third party's store runs to prove itself the same.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from portal.domain.audit import AuditEntry
from portal.domain.people import ApiKey, ErasureRequest, Tenant, User
from portal.domain.types import Place, PurgeCounts


class Accounts(Protocol):
    """Portal accounts. Refusals raise `AccountError(code)` (`check_new_account`'s codes,
    `unknown_tenant`, `email_taken`)."""

    def create(self, email: str, name: str, tenant_id: str, role: str, password: str, owner_id: str | None = None,
               language: str | None = None) -> User:
        """A new account; `language` None: none chosen (the portal speaks the browser's)."""
        ...
    def get(self, user_id: str) -> User | None: ...
    def find(self, query: str, tenant_ids: list[str] | None = None) -> list[User]:
        """Accounts whose e-mail or name contains `query` (in any case; a store may fold ASCII
        letters only, as SQLite does) or whose owner id is `query`, by e-mail, at most 50, within
        `tenant_ids` (None: every tenant). Every character of `query` stands for itself."""
        ...
    def of_owner(self, owner_id: str, tenant_ids: list[str] | None = None) -> list[User]:
        """Every account holding exactly this owner id (within `tenant_ids`; None: every tenant), by
        e-mail: the person an owner id names, for their export and erasure."""
        ...
    def authenticate(self, email: str, password: str) -> User | None: ...
    def end_sessions(self, user_id: str) -> bool: ...
    def set_password(self, user_id: str, password: str) -> bool: ...
    def disable(self, user_id: str) -> bool:
        """No password opens the account any more and its sessions end; `set_password` enables it
        again. The account stays (the audit log still names who did what)."""
        ...
    def set_language(self, user_id: str, language: str) -> None: ...
    def mark_visit(self, user_id: str, at: datetime) -> None: ...
    def delete(self, user_id: str) -> bool: ...
    def staff(self, tenant_ids: list[str] | None = None) -> list[User]: ...
    def names_of(self, place: Place) -> list[str]: ...


class AuditLog(Protocol):
    """Content-free entries: ids, codes, counts and ticket references only."""

    def record(self, actor_id: str | None, actor_role: str, action: str, subject_owner_id: str | None = None,
               scope: str | None = None, counts: dict[str, int] | None = None, ticket: str | None = None,
               reason_code: str | None = None) -> AuditEntry: ...
    def write(self, entry: AuditEntry) -> None: ...
    def query(self, scopes: list[str] | None, actor_id: str | Sequence[str] | None = None,
              subject: str | Sequence[str] | None = None, action: str | Sequence[str] | None = None,
              since: datetime | None = None, until: datetime | None = None, limit: int = 500) -> list[AuditEntry]:
        """Newest first (ties by id, descending); `scopes=None` means every scope; `until` excluded.
        An action is the action itself or its family; several actors, subjects or actions (a
        sequence) mean any of them, and an empty sequence none (`portal.domain.audit.any_of`)."""
        ...


class Erasures(Protocol):
    """Erasure requests. `for_update` locks what it reads until the unit of work ends."""

    def open(self, tenant_id: str, subject_owner_id: str, subject_user_id: str | None, ticket: str | None,
             received_at: datetime, requested_by: str) -> ErasureRequest: ...
    def get(self, request_id: str, for_update: bool = False) -> ErasureRequest | None: ...
    def all(self, tenant_ids: list[str] | None) -> list[ErasureRequest]:
        """Open ones first, then by the time they were received."""
        ...
    def open_for(self, subject_owner_id: str, tenant_id: str, for_update: bool = False) -> list[ErasureRequest]:
        """The person's open requests in their tenant, in id order."""
        ...
    def complete(self, request_id: str, actor_id: str | None, counts: dict[str, int]) -> None:
        """Completed now by `actor_id` (None: the operator, on the command line) with these counts;
        the account id is let go."""
        ...


class Tenants(Protocol):
    def create(self, name: str, ai_enabled: bool = True) -> Tenant: ...
    def find(self, name_or_id: str) -> Tenant | None: ...
    def all(self) -> list[Tenant]: ...
    def set_ai(self, tenant_id: str, enabled: bool) -> bool: ...
    def ai_enabled(self, place: Place) -> bool: ...
    def set_learnt_days(self, tenant_id: str, days: int | None) -> bool:
        """The tenant's default "forget what the assistant learns after N days" (None or 0: never)."""
        ...
    def learnt_days(self, place: Place) -> int | None: ...


class ApiKeys(Protocol):
    def create(self, tenant_id: str, permissions: Iterable[str], name: str | None = None) -> tuple[ApiKey, str]: ...
    def verify(self, token: str) -> ApiKey | None: ...
    def revoke(self, key_id: str) -> bool: ...
    def list(self, tenant_id: str | None = None) -> builtins.list[ApiKey]: ...


class Repositories(Protocol):
    """The five stores of records, as a `Records` reads them or a `UnitOfWork` changes them."""

    @property
    def accounts(self) -> Accounts: ...
    @property
    def audit(self) -> AuditLog: ...
    @property
    def erasures(self) -> Erasures: ...
    @property
    def tenants(self) -> Tenants: ...
    @property
    def api_keys(self) -> ApiKeys: ...


class UnitOfWork(Repositories, Protocol):
    """One transaction over a person's memories and the records around them."""

    def purge_owner(self, owner_id: str, scopes: Sequence[str] | None) -> PurgeCounts:
        """Erase everything kept under this owner id in `scopes` (None: in every scope)."""
        ...
    def commit(self) -> None: ...


class Records(Repositories, Protocol):
    """Reads of the records (each sees what is committed) and units of work for changes."""

    def unit(self) -> AbstractContextManager[UnitOfWork]: ...
