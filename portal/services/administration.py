"""Admins: tenants and their AI switch, staff accounts and API keys — each change audited.

Framework-free; the admin views are thin shells over `Administration`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from portal.adapters.sql.accounts import AccountError, Accounts, User
from portal.adapters.sql.api_keys import ApiKey, ApiKeys
from portal.adapters.sql.audit import AuditLog
from portal.adapters.sql.tenants import Tenant, TenantExists, Tenants
from portal.adapters.sql.uow import SqlUnitOfWork
from portal.domain.types import NotFound
from portal.services.support import Refusal


class Administration:
    def __init__(self, tenants: Tenants, accounts: Accounts, api_keys: ApiKeys, audit: AuditLog,
                 unit: Callable[[], AbstractContextManager[SqlUnitOfWork]]) -> None:
        self.tenants = tenants
        self.accounts = accounts
        self.api_keys = api_keys
        self.audit = audit
        self.unit = unit

    @staticmethod
    def _admin(actor: User) -> None:
        if actor.role != "admin":
            raise NotFound()

    def create_tenant(self, actor: User, name: str, ai_enabled: bool) -> Tenant:
        self._admin(actor)
        try:
            tenant = self.tenants.create(name, ai_enabled=ai_enabled)
        except TenantExists:
            raise Refusal("tenant_exists") from None
        except ValueError:
            raise Refusal("invalid_name") from None
        self.audit.record(actor.id, actor.role, "tenant.created", scope=tenant.id)
        return tenant

    def set_ai(self, actor: User, tenant_id: str, enabled: bool) -> None:
        self._admin(actor)
        if not self.tenants.set_ai(tenant_id, enabled):
            raise NotFound()
        self.audit.record(actor.id, actor.role, "tenant.ai_on" if enabled else "tenant.ai_off", scope=tenant_id)

    def create_staff(self, actor: User, email: str, name: str, tenant_id: str, role: str, password: str) -> User:
        self._admin(actor)
        if role not in ("staff", "admin"):
            raise Refusal("invalid_role")
        try:
            created = self.accounts.create(email, name, tenant_id, role, password)
        except AccountError as exc:
            raise Refusal(exc.code) from None
        self.audit.record(actor.id, actor.role, f"{role}.created", created.owner_id, tenant_id)
        return created

    def create_api_key(self, actor: User, tenant_id: str, permissions: list[str], name: str | None) -> tuple[ApiKey, str]:
        self._admin(actor)
        try:
            key, token = self.api_keys.create(tenant_id, permissions, name=name or None)
        except ValueError:
            raise Refusal("invalid_api_key") from None
        self.audit.record(actor.id, actor.role, "api_key.created", scope=tenant_id, ticket=key.id)
        return key, token

    def revoke_api_key(self, actor: User, key_id: str) -> None:
        self._admin(actor)
        keys = {k.id: k for k in self.api_keys.list()}
        if key_id not in keys or not self.api_keys.revoke(key_id):
            raise NotFound()
        self.audit.record(actor.id, actor.role, "api_key.revoked", scope=keys[key_id].tenant_id, ticket=key_id)

    def end_sessions(self, actor: User, user_id: str) -> None:
        """End every sign-in session of an account; its audit entry in the same transaction."""
        self._admin(actor)
        with self.unit() as uow:
            person = uow.accounts.get(user_id)
            if person is None or not uow.accounts.end_sessions(user_id):
                raise NotFound()
            uow.audit.record(actor.id, actor.role, "sessions.ended", person.owner_id, person.tenant_id)
            uow.commit()
