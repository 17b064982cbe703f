"""The in-memory repositories of who may use the service (`portal.ports.Records`): accounts,
tenants and API keys. Each reads and writes through the `_Holder` it is given (`.records`): the
committed records, or the copies of an open unit of work.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from portal.adapters.keys import new_key, parse_token, secret_matches, use_to_record
from portal.adapters.passwords import DISABLED, hash_password, verify_password
from portal.domain.options import new_id, utc_now
from portal.domain.people import (
    AccountError,
    ApiKey,
    Tenant,
    TenantExists,
    User,
    check_language,
    check_new_account,
    check_password,
    check_tenant_name,
)
from portal.domain.types import Place

if TYPE_CHECKING:
    from portal.adapters.memory.records import _Holder

FIND_LIMIT = 50


class InMemoryAccounts:
    def __init__(self, holder: _Holder) -> None:
        self._h = holder

    def create(self, email: str, name: str, tenant_id: str, role: str, password: str, owner_id: str | None = None,
               language: str | None = None) -> User:
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

    def of_owner(self, owner_id: str, tenant_ids: list[str] | None = None) -> list[User]:
        return sorted((u for u, _ in self._h.data.users.values()
                       if u.owner_id == owner_id and (tenant_ids is None or u.tenant_id in tenant_ids)),
                      key=lambda u: u.email)

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
            return user is not None and self._change(user_id, password_hash, session_epoch=user.session_epoch + 1,
                                                     disabled=False)

    def disable(self, user_id: str) -> bool:
        with self._h.writing():
            user = self.get(user_id)
            return user is not None and self._change(user_id, DISABLED, session_epoch=user.session_epoch + 1,
                                                     disabled=True)

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

    def set_learnt_days(self, tenant_id: str, days: int | None) -> bool:
        with self._h.writing():
            found = self._h.data.tenants.get(tenant_id)
            if found is None:
                return False
            self._h.data.tenants[tenant_id] = replace(found, learnt_days=days or None)
        return True

    def learnt_days(self, place: Place) -> int | None:
        found = self._h.data.tenants.get(place.scope)
        return None if found is None else found.learnt_days


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

