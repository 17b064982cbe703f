"""Admins: tenants and their AI switch, staff accounts and API keys — each change and its audit
entry in one unit of work.

Framework-free; the admin views are thin shells over `Administration`.
"""

from __future__ import annotations

from dataclasses import dataclass

from portal.domain.decisions import learnt_days_of
from portal.domain.errors import NotFound, Refused
from portal.domain.people import AccountError, ApiKey, Tenant, TenantExists, User
from portal.ports import Accounts, Records, UnitOfWork


@dataclass(frozen=True)
class Overview:
    """What the admin page shows: tenants, staff and admin accounts, API keys (never a secret)."""

    tenants: list[Tenant]
    staff: list[User]
    keys: list[ApiKey]


class Administration:
    def __init__(self, records: Records) -> None:
        self.records = records

    @staticmethod
    def _admin(actor: User) -> None:
        if actor.role != "admin":
            raise NotFound()

    def overview(self, actor: User) -> Overview:
        self._admin(actor)
        return Overview(self.records.tenants.all(), self.records.accounts.staff(), self.records.api_keys.list())

    def create_tenant(self, actor: User, name: str, ai_enabled: bool) -> Tenant:
        self._admin(actor)
        with self.records.unit() as uow:
            try:
                tenant = uow.tenants.create(name, ai_enabled=ai_enabled)
            except TenantExists:
                raise Refused("tenant_exists") from None
            except ValueError:
                raise Refused("invalid_name") from None
            uow.audit.record(actor.id, actor.role, "tenant.created", scope=tenant.id)
            uow.commit()
        return tenant

    def set_ai(self, actor: User, tenant_id: str, enabled: bool) -> None:
        self._admin(actor)
        with self.records.unit() as uow:
            if not uow.tenants.set_ai(tenant_id, enabled):
                raise NotFound()
            uow.audit.record(actor.id, actor.role, "tenant.ai_on" if enabled else "tenant.ai_off", scope=tenant_id)
            uow.commit()

    def set_learnt_days(self, actor: User, tenant_id: str, days: int | None) -> None:
        """The tenant's default "forget what the assistant learns after N days" (None or 0: never),
        for its people who chose none; it applies to what is learnt from then on. Audited with the
        days as its count."""
        self._admin(actor)
        days = learnt_days_of(days)
        with self.records.unit() as uow:
            if not uow.tenants.set_learnt_days(tenant_id, days):
                raise NotFound()
            uow.audit.record(actor.id, actor.role, "tenant.learnt_days_set", scope=tenant_id, counts={"days": days or 0})
            uow.commit()

    def create_staff(self, actor: User, email: str, name: str, tenant_id: str, role: str, password: str) -> User:
        self._admin(actor)
        if role not in ("staff", "admin"):
            raise Refused("invalid_role")
        with self.records.unit() as uow:
            try:
                created = uow.accounts.create(email, name, tenant_id, role, password)
            except AccountError as exc:
                raise Refused(exc.code) from None
            uow.audit.record(actor.id, actor.role, f"{role}.created", created.owner_id, tenant_id)
            uow.commit()
        return created

    def create_api_key(self, actor: User, tenant_id: str, permissions: list[str], name: str | None) -> tuple[ApiKey, str]:
        self._admin(actor)
        with self.records.unit() as uow:
            try:
                key, token = uow.api_keys.create(tenant_id, permissions, name=name or None)
            except ValueError:
                raise Refused("invalid_api_key") from None
            uow.audit.record(actor.id, actor.role, "api_key.created", scope=tenant_id, ticket=key.id)
            uow.commit()
        return key, token

    def revoke_api_key(self, actor: User, key_id: str) -> None:
        self._admin(actor)
        with self.records.unit() as uow:
            keys = {k.id: k for k in uow.api_keys.list()}
            if key_id not in keys or not uow.api_keys.revoke(key_id):
                raise NotFound()
            uow.audit.record(actor.id, actor.role, "api_key.revoked", scope=keys[key_id].tenant_id, ticket=key_id)
            uow.commit()

    def end_sessions(self, actor: User, user_id: str) -> None:
        """End every sign-in session of an account; its audit entry in the same transaction."""
        self._admin(actor)
        with self.records.unit() as uow:
            person = uow.accounts.get(user_id)
            if person is None or not uow.accounts.end_sessions(user_id):
                raise NotFound()
            uow.audit.record(actor.id, actor.role, "sessions.ended", person.owner_id, person.tenant_id)
            uow.commit()

    # ------------------------------------------------------------------ staff accounts

    def staff_account(self, actor: User, user_id: str) -> User:
        """The staff or admin account `actor` (an admin) may change, or the refusal it would meet."""
        self._admin(actor)
        return self._staff_account(self.records.accounts, actor, user_id)

    def _staff_account(self, accounts: Accounts, actor: User, user_id: str) -> User:
        """A staff or admin account another admin may change: never a person's (their account
        goes with their data, by erasure), never the admin's own (no one locks themselves out)."""
        found = accounts.get(user_id) if isinstance(user_id, str) else None
        if found is None:
            raise NotFound()
        staff_only(found)
        if found.id == actor.id:
            raise Refused("own_account")
        return found

    def disable_staff(self, actor: User, user_id: str) -> None:
        """No password opens the account any more and its sessions end; a new password enables it."""
        self._admin(actor)
        with self.records.unit() as uow:
            disable_account(uow, self._staff_account(uow.accounts, actor, user_id), actor.id, actor.role)
            uow.commit()

    def reset_password(self, actor: User, user_id: str, password: str) -> None:
        """A new password for a staff account (enabling it again if it was disabled)."""
        self._admin(actor)
        with self.records.unit() as uow:
            set_account_password(uow, self._staff_account(uow.accounts, actor, user_id), password, actor.id,
                                 actor.role)
            uow.commit()

    def remove_staff(self, actor: User, user_id: str) -> dict[str, int]:
        """Remove a staff account: its e-mail, name and password go, and whatever its own place
        holds (staff may keep memories in the portal like anyone) is erased with it, in one unit
        of work; the audit log keeps its id and the counts."""
        self._admin(actor)
        with self.records.unit() as uow:
            counts = remove_staff_account(uow, self._staff_account(uow.accounts, actor, user_id), actor.id, actor.role)
            uow.commit()
        return counts


# The changes to an account, each with its audit entry, in the caller's unit of work: the admin
# console above and the operator's command line (`memory-portal user ...`) make them alike.


def staff_only(account: User) -> User:
    """A person's account is never disabled or removed by itself: it goes with their data, by
    erasure (Refused `not_staff`)."""
    if account.role not in ("staff", "admin"):
        raise Refused("not_staff")
    return account


def disable_account(uow: UnitOfWork, account: User, actor_id: str | None, actor_role: str) -> None:
    uow.accounts.disable(staff_only(account).id)
    uow.audit.record(actor_id, actor_role, "staff.disabled", account.owner_id, account.tenant_id)


def set_account_password(uow: UnitOfWork, account: User, password: str, actor_id: str | None, actor_role: str) -> None:
    """A new password (enabling the account again if it was disabled); every session ends."""
    try:
        uow.accounts.set_password(account.id, password)
    except AccountError as exc:
        raise Refused(exc.code) from None
    family = "staff" if account.role in ("staff", "admin") else "account"
    uow.audit.record(actor_id, actor_role, f"{family}.password_set", account.owner_id, account.tenant_id)


def remove_staff_account(uow: UnitOfWork, account: User, actor_id: str | None, actor_role: str) -> dict[str, int]:
    """Delete a staff account and erase its own place: the counts, in its audit entry too."""
    staff_only(account)
    counts = uow.purge_owner(account.owner_id, [account.tenant_id]).to_json()
    counts["accounts"] = int(uow.accounts.delete(account.id))
    uow.audit.record(actor_id, actor_role, "staff.removed", account.owner_id, account.tenant_id, counts=counts)
    return counts
