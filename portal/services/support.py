"""Support staff and admins: finding people, access and erasure requests, the audit trail.

Framework-free, like the memory service: the staff views are thin shells over `Support`. Every
rule lives here once: staff see only their tenant (anyone else's person is "not found"), memory
text is shown only through a recorded break-glass reason, and every action leaves a
content-free audit entry (ids, codes, counts, ticket references — never a person's words).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from portal.domain import export
from portal.domain.apps import AppSummary, apps_of
from portal.domain.audit import AuditNote
from portal.domain.errors import NotFound, Refused
from portal.domain.options import utc_now
from portal.domain.people import ErasureRequest, Tenant, User
from portal.domain.types import Memory, Place
from portal.ports import Records, UnitOfWork
from portal.services.audit_reading import AuditReading
from portal.services.memory_service import MemoryService

DEADLINE = timedelta(days=30)  # GDPR: one month to answer a request
NEAR_DEADLINE = timedelta(days=7)
BREAK_GLASS_REASONS = ("access_request", "rectification_request", "complaint", "legal_obligation")


@dataclass(frozen=True)
class PersonSummary:
    user: User
    total: int
    by_kind: dict[str, int]
    paused: bool
    last_activity: datetime | None
    open_requests: list[ErasureRequest]
    apps: list[AppSummary] = field(default_factory=list)  # what each connected app did: counts, never text


@dataclass(frozen=True)
class RequestView:
    """An erasure request as staff and the person see it: how old, by when it is due (one month
    from its receipt), and the name of the person while their account exists."""

    request: ErasureRequest
    age_days: int
    due: datetime
    near_deadline: bool
    name: str | None = None


class Support(AuditReading):
    def __init__(self, service: MemoryService, records: Records, erasure_scope: str = "tenant") -> None:
        self.service = service
        self.records = records
        self.accounts = records.accounts
        self.erasures = records.erasures
        self.unit = records.unit
        self.erasure_scope = erasure_scope

    # ------------------------------------------------------------------ who sees what

    def _person(self, actor: User, user_id: str) -> User:
        """The person `actor` may act for. Staff act for the people (members) of their own tenant
        only: a colleague or an admin is "not found" to them, so staff cannot open, export or erase
        another staff member's or an admin's account. Admins act for anyone."""
        person = self.accounts.get(user_id)
        if person is None or not self._may_see(actor, person):
            raise NotFound()
        return person

    def _may_see(self, actor: User, person: User) -> bool:
        scopes = self.scopes(actor)
        if scopes is None:
            return True
        return person.tenant_id in scopes and person.role == "member"

    # ------------------------------------------------------------------ people

    def find(self, actor: User, query: str) -> list[User]:
        query = query.strip()[:320]
        if not query:
            return []
        return [p for p in self.accounts.find(query, self.scopes(actor)) if self._may_see(actor, p)]

    def summary(self, actor: User, user_id: str) -> PersonSummary:
        """Counts by kind, pause state and last activity — no memory text."""
        person = self._person(actor, user_id)
        return self._summary(person, self._all(person.place))

    def _summary(self, person: User, memories: list[Memory]) -> PersonSummary:
        moments = [m.last_used_at or m.updated_at for m in memories]
        if person.last_visit_at:
            moments.append(person.last_visit_at)
        return PersonSummary(
            person, len(memories), dict(Counter(m.kind for m in memories)), self.service.is_paused(person.place),
            max(moments) if moments else None, self.erasures.open_for(person.owner_id, person.tenant_id),
            self.service.connected_apps(person.place, apps_of(self.records.api_keys.list(person.tenant_id))),
        )

    def open_memories(self, actor: User, user_id: str, reason: str, ticket: str | None) -> tuple[PersonSummary, list[Memory]]:
        """Break glass: the person's memory text, for a recorded reason (audited before it is shown),
        with the person's summary for the page that shows it."""
        person = self._person(actor, user_id)  # first: someone of another tenant is "not found", reason or not
        if reason not in BREAK_GLASS_REASONS:
            raise Refused("reason_required")
        memories = self._all(person.place)
        with self.unit() as uow:  # audited before it is shown: no entry, no text
            uow.audit.record(actor.id, actor.role, "memories.viewed", person.owner_id, person.tenant_id,
                             counts={"memories": len(memories)}, ticket=_ticket(ticket), reason_code=reason)
            uow.commit()
        return self._summary(person, memories), memories

    def export(self, actor: User, user_id: str, ticket: str | None) -> dict[str, Any]:
        """An access request (art. 15/20): everything kept about the person in their tenant."""
        person = self._person(actor, user_id)
        return self._document(person.place, person, AuditNote(actor.id, actor.role, "access.exported",
                                                              ticket=_ticket(ticket)))

    def _document(self, place: Place, person: User | None, note: AuditNote) -> dict[str, Any]:
        """The document handed over for an access request, the person's account in it: read and
        audited in one transaction; the same document the person downloads."""
        return export.document(self.service.export(place, audit=note), person, apps_of(self.records.api_keys.list(place.scope)))

    def _all(self, place: Place) -> list[Memory]:
        items: list[Memory] = []
        cursor = None
        while True:
            page = self.service.list(place, state="all", limit=200, cursor=cursor)
            items.extend(page.items)
            if not page.next_cursor:
                return items
            cursor = page.next_cursor

    # ------------------------------------------------------------------ erasure

    def log_erasure(self, actor: User, user_id: str, ticket: str | None, received_at: datetime | None,
                    requested_by: str = "staff") -> ErasureRequest:
        person = self._person(actor, user_id)
        received = received_at or utc_now()
        if received > utc_now() + timedelta(days=1):
            raise Refused("received_in_future")
        with self.unit() as uow:  # the request and its audit entry: one transaction
            request = uow.erasures.open(person.tenant_id, person.owner_id, person.id, _ticket(ticket), received,
                                        requested_by)
            uow.audit.record(actor.id, actor.role, "erasure.logged", person.owner_id, person.tenant_id,
                             ticket=request.ticket)
            uow.commit()
        return request

    def person_asks_erasure(self, person: User) -> ErasureRequest:
        """From the portal: "Ask to delete my account"."""
        with self.unit() as uow:  # the request and its audit entry: one transaction
            existing = uow.erasures.open_for(person.owner_id, person.tenant_id)
            if existing:
                return existing[0]
            request = uow.erasures.open(person.tenant_id, person.owner_id, person.id, None, utc_now(), "person")
            uow.audit.record(person.id, person.role, "erasure.requested", person.owner_id, person.tenant_id)
            uow.commit()
        return request

    def requests(self, actor: User) -> list[RequestView]:
        views = []
        for r in self.erasures.all(self.scopes(actor)):
            subject = self.accounts.get(r.subject_user_id) if r.subject_user_id else None
            if subject is not None and not self._may_see(actor, subject):
                continue  # a colleague's or an admin's own request: admins handle it
            views.append(_view(r, subject.name if subject else None))
        return views

    def request_view(self, actor: User, request_id: str) -> RequestView:
        """One request (as `request` decides who may see it), with its due date and, while the
        account exists, the person's name."""
        request = self.request(actor, request_id)
        subject = self.accounts.get(request.subject_user_id) if request.subject_user_id else None
        return _view(request, subject.name if subject else None)

    def pending_erasure(self, person: User) -> RequestView | None:
        """The person's own open request to delete their account (the earliest), for their pages."""
        found = self.erasures.open_for(person.owner_id, person.tenant_id)
        return _view(found[0]) if found else None

    def request(self, actor: User, request_id: str) -> ErasureRequest:
        request = self.erasures.get(request_id)
        scopes = self.scopes(actor)
        if request is None or (scopes is not None and request.tenant_id not in scopes):
            raise NotFound()
        subject = self.accounts.get(request.subject_user_id) if request.subject_user_id else None
        if subject is not None and not self._may_see(actor, subject):
            raise NotFound()  # a staff member's or an admin's own request is for admins
        return request

    def complete_erasure(self, actor: User, request_id: str, typed: str) -> dict[str, int]:
        """Erase the person and delete their account, once the staff member has typed the person's
        e-mail or owner id. The erasure reaches the scopes that are the account's (its tenant's;
        every scope only when the host configured owner ids unique across tenants, DESIGN §2),
        never another tenant's namesake. The purge, the account's deletion, the completion of the
        request (and of the person's other open requests) and their audit entries are one
        transaction: all of it happens, or none of it."""
        seen = self.request(actor, request_id)  # someone of another tenant's request is "not found"
        with self.unit() as uow:
            # Every open request of the person, locked in id order before anything else: two staff
            # completing two of them at once then wait for each other instead of deadlocking.
            locked = {r.id: r for r in uow.erasures.open_for(seen.subject_owner_id, seen.tenant_id, for_update=True)}
            if request_id not in locked:
                raise Refused("already_completed")
            request = locked[request_id]
            person = uow.accounts.get(request.subject_user_id) if request.subject_user_id else None
            if person is not None and not self._may_see(actor, person):
                raise NotFound()  # staff do not erase a colleague's or an admin's account: admins do
            expected = {request.subject_owner_id.lower()} | ({person.email.lower()} if person else set())
            if typed.strip().lower() not in expected:
                raise Refused("confirmation_mismatch")
            scopes = None if self.erasure_scope == "all" else [request.tenant_id]
            # Other open requests for the same person (the person asked from the portal and staff
            # logged one too) are answered by this erasure: left open they would keep the account id
            # and sit in the list as overdue forever.
            others = [r for r in locked.values() if r.id != request.id]
            counts = _erase(uow, request.subject_owner_id, scopes, [person] if person else [], [request, *others],
                            actor.id, actor.role)
            uow.commit()
        return counts

    # ------------------------------------------------------------------ the operator (command line)
    # The operator runs the service: no account, every tenant; audited as "operator". A person is
    # named by their owner id in a tenant, as the hosts' backends name them.

    def tenants_of(self, owner_id: str) -> list[Tenant]:
        """The tenants keeping anything under this owner id, or holding an account with it: where a
        person named by their owner id alone may be."""
        found = set(self.service.store.scopes_of(owner_id)) | {u.tenant_id for u in self.accounts.of_owner(owner_id)}
        return [t for t in self.records.tenants.all() if t.id in found]

    def export_owner(self, place: Place) -> dict[str, Any]:
        """The operator's answer to an access request: the document staff hand over (`export`), with
        the account holding this owner id in this tenant, if one does. Two accounts sharing the
        owner id cannot both be the document's person: Refused `owner_shared` (staff export each)."""
        accounts = self.accounts.of_owner(place.owner_id, [place.scope])
        if len(accounts) > 1:
            raise Refused("owner_shared")
        return self._document(place, accounts[0] if accounts else None, AuditNote(None, "operator", "access.exported"))

    def erase_owner(self, owner_id: str, tenant_ids: list[str] | None) -> dict[str, int]:
        """The operator's erasure of a person, as staff complete one (`complete_erasure`): everything
        kept under the owner id in these tenants (None: in every tenant) and every account holding it
        there go, the person's open requests there are completed, and `person.purged` is recorded
        with the counts, all in one unit of work."""
        with self.unit() as uow:
            tenants = tenant_ids if tenant_ids is not None else [t.id for t in uow.tenants.all()]
            requests = [r for t in sorted(tenants) for r in uow.erasures.open_for(owner_id, t, for_update=True)]
            counts = _erase(uow, owner_id, tenant_ids, uow.accounts.of_owner(owner_id, tenant_ids), requests,
                            None, "operator")
            scope = tenant_ids[0] if tenant_ids is not None and len(tenant_ids) == 1 else None
            uow.audit.record(None, "operator", "person.purged", owner_id, scope, counts=counts)
            uow.commit()
        return counts


def _erase(uow: UnitOfWork, owner_id: str, scopes: list[str] | None, accounts: list[User],
           requests: list[ErasureRequest], actor_id: str | None, actor_role: str) -> dict[str, int]:
    """The erasure of a person, in the caller's unit of work: what is kept under the owner id in
    `scopes` (None: every scope), these accounts, and these open requests completed, each with its
    audit entry. The counts, accounts included."""
    counts = uow.purge_owner(owner_id, scopes).to_json()
    counts["accounts"] = sum(int(uow.accounts.delete(account.id)) for account in accounts)
    for done in requests:
        uow.erasures.complete(done.id, actor_id, counts)
        uow.audit.record(actor_id, actor_role, "erasure.completed", owner_id, done.tenant_id, counts=counts,
                         ticket=done.ticket)
    return counts


def _view(request: ErasureRequest, name: str | None = None) -> RequestView:
    now = utc_now()
    due = request.received_at + DEADLINE
    return RequestView(request, (now - request.received_at).days, due,
                       request.state == "open" and due - now <= NEAR_DEADLINE, name)


def _ticket(ticket: str | None) -> str | None:
    ticket = (ticket or "").strip()
    if not ticket:
        return None
    if len(ticket) > 100 or any(not (c.isalnum() or c in "-_#/.:") for c in ticket):
        raise Refused("invalid_ticket")
    return ticket
