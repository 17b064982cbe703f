"""The audit trail as support staff and admins read it (`Support` inherits it): the entries an
actor may see, filtered by people named by id, e-mail or name, and the names of the staff and of
the apps the entries speak of. Framework-free; nothing typed into a filter is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from portal.domain.apps import apps_of
from portal.domain.audit import AuditEntry
from portal.domain.errors import NotFound
from portal.domain.people import User
from portal.ports import Records
from portal.ports.records import Accounts


class AuditReading:
    records: Records
    accounts: Accounts

    @staticmethod
    def scopes(actor: User) -> list[str] | None:
        """The tenants an actor may see: all for admins (None), their own for staff."""
        if actor.role == "admin":
            return None
        if actor.role == "staff":
            return [actor.tenant_id]
        raise NotFound()

    def audit_entries(self, actor: User, actor_named: str | None = None, subject_named: str | None = None,
                      action: str | Sequence[str] | None = None, since: datetime | None = None,
                      until: datetime | None = None) -> list[AuditEntry]:
        """The entries `actor` may read (staff: their tenant's), newest first. Who acted and whom an
        entry is about are named by id, or by an e-mail or a name (any part of them, in any case)
        of the accounts `actor` may see: the entries of any of them. Nothing typed is kept."""
        scopes = self.scopes(actor)
        return self.records.audit.query(scopes, actor_id=self._named(actor_named, scopes, owner=False),
                                        subject=self._named(subject_named, scopes, owner=True), action=action,
                                        since=since, until=until)

    def _named(self, text: str | None, scopes: list[str] | None, owner: bool) -> tuple[str, ...] | None:
        """The ids `text` names: itself (an id), and the accounts within `scopes` whose e-mail or
        name holds it (their owner ids when `owner`, else their account ids)."""
        text = (text or "").strip()[:320]
        if not text:
            return None
        return (text, *(u.owner_id if owner else u.id for u in self.accounts.find(text, scopes)))

    def app_names(self, actor: User) -> dict[str, str]:
        """The names of the apps of the tenants `actor` may see, by app id (an audit entry about an
        app names it by id)."""
        scopes = self.scopes(actor)
        keys = self.records.api_keys.list() if scopes is None else [
            k for tenant in scopes for k in self.records.api_keys.list(tenant)]
        return {app_id: app.name for app_id, app in apps_of(keys).items()}

    def actor_names(self, entries: list[AuditEntry]) -> dict[str, str]:
        """The names of the staff and admins who acted in these entries (a person acting on their
        own memories stays an id: the log names no one it is about)."""
        names: dict[str, str] = {}
        for actor_id in {e.actor_id for e in entries if e.actor_id and e.actor_role in ("staff", "admin")}:
            account = self.accounts.get(actor_id)
            if account is not None:
                names[actor_id] = account.name
        return names
