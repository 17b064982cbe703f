"""The audit log and erasure requests, in SQL. Entries are content-free by construction: the
columns hold ids, codes, counts and ticket references, and nothing else."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import false, insert, or_, select, update
from sqlalchemy.engine import RowMapping
from sqlalchemy.sql.elements import ColumnElement

from portal.adapters.sql.binding import Bind, reading, writing
from portal.adapters.sql.tables import audit_log, erasure_requests
from portal.domain.audit import AuditEntry, any_of, family_also
from portal.domain.options import new_id, utc_now
from portal.domain.people import ErasureRequest


class AuditLog:
    """On an engine, each entry commits alone; bound to a unit of work's connection, an entry
    commits with the change it records (`portal.adapters.sql.uow`)."""

    def __init__(self, bind: Bind) -> None:
        self.bind = bind

    def record(
        self, actor_id: str | None, actor_role: str, action: str, subject_owner_id: str | None = None,
        scope: str | None = None, counts: dict[str, int] | None = None, ticket: str | None = None,
        reason_code: str | None = None,
    ) -> AuditEntry:
        entry = AuditEntry(new_id(), utc_now(), actor_id, actor_role, action, subject_owner_id, scope,
                           counts, ticket, reason_code)
        self.write(entry)
        return entry

    def write(self, entry: AuditEntry) -> None:
        with writing(self.bind) as conn:
            conn.execute(insert(audit_log).values(
                id=entry.id, at=entry.at, actor_id=entry.actor_id, actor_role=entry.actor_role, action=entry.action,
                subject_owner_id=entry.subject_owner_id, scope=entry.scope,
                counts=json.dumps(entry.counts) if entry.counts else None, ticket=entry.ticket,
                reason_code=entry.reason_code,
            ))

    def query(
        self, scopes: list[str] | None, actor_id: str | Sequence[str] | None = None,
        subject: str | Sequence[str] | None = None, action: str | Sequence[str] | None = None,
        since: datetime | None = None, until: datetime | None = None, limit: int = 500,
    ) -> list[AuditEntry]:
        """Newest first; `scopes=None` means every scope (admins). A sequence of actors, subjects or
        actions means any of them (none: no entry)."""
        c = audit_log.c
        statement = select(audit_log).order_by(c.at.desc(), c.id.desc()).limit(limit)
        if scopes is not None:
            statement = statement.where(c.scope.in_(scopes))
        if (actors := any_of(actor_id)) is not None:
            statement = statement.where(c.actor_id.in_(actors) if actors else false())
        if (subjects := any_of(subject)) is not None:
            statement = statement.where(c.subject_owner_id.in_(subjects) if subjects else false())
        if (actions := any_of(action)) is not None:  # each the action itself, or its family (action_matches)
            statement = statement.where(or_(false(), *(_action(wanted) for wanted in actions)))
        if since:
            statement = statement.where(c.at >= since)
        if until:
            statement = statement.where(c.at < until)
        with reading(self.bind) as conn:
            return [_entry(r) for r in conn.execute(statement).mappings()]


def _action(wanted: str) -> ColumnElement[bool]:
    """The entries of one action or of its family (portal.domain.audit.action_matches)."""
    c = audit_log.c
    family = c.action.startswith(wanted + ".", autoescape=True) if "." not in wanted else false()
    return or_(c.action == wanted, family, c.action.in_(family_also(wanted)))


class ErasureRequests:
    def __init__(self, bind: Bind) -> None:
        self.bind = bind

    def open(self, tenant_id: str, subject_owner_id: str, subject_user_id: str | None, ticket: str | None,
             received_at: datetime, requested_by: str) -> ErasureRequest:
        request = ErasureRequest(new_id(), tenant_id, subject_owner_id, subject_user_id, ticket, received_at,
                                 requested_by, "open", None, None, None)
        with writing(self.bind) as conn:
            conn.execute(insert(erasure_requests).values(
                id=request.id, tenant_id=tenant_id, subject_owner_id=subject_owner_id,
                subject_user_id=subject_user_id, ticket=ticket, received_at=received_at, requested_by=requested_by,
                state="open",
            ))
        return request

    def get(self, request_id: str, for_update: bool = False) -> ErasureRequest | None:
        """The request; `for_update` (in a unit of work) locks its row until the unit commits, so
        two staff completing it at once do not both erase (SQLite's writer lock does the same)."""
        statement = select(erasure_requests).where(erasure_requests.c.id == request_id)
        if for_update:
            statement = statement.with_for_update()
        with reading(self.bind) as conn:
            row = conn.execute(statement).mappings().first()
        return _request(row) if row else None

    def all(self, tenant_ids: list[str] | None) -> list[ErasureRequest]:
        c = erasure_requests.c
        statement = select(erasure_requests).order_by(c.state.desc(), c.received_at)
        if tenant_ids is not None:
            statement = statement.where(c.tenant_id.in_(tenant_ids))
        with reading(self.bind) as conn:
            return [_request(r) for r in conn.execute(statement).mappings()]

    def open_for(self, subject_owner_id: str, tenant_id: str, for_update: bool = False) -> list[ErasureRequest]:
        """The person's open requests, in id order; `for_update` (in a unit of work) locks them in
        that order, so two staff completing two of them at once wait for each other, never deadlock."""
        c = erasure_requests.c
        statement = select(erasure_requests).where(
            c.subject_owner_id == subject_owner_id, c.tenant_id == tenant_id, c.state == "open").order_by(c.id)
        if for_update:
            statement = statement.with_for_update()
        with reading(self.bind) as conn:
            return [_request(r) for r in conn.execute(statement).mappings()]

    def complete(self, request_id: str, actor_id: str | None, counts: dict[str, int]) -> None:
        with writing(self.bind) as conn:
            conn.execute(update(erasure_requests).where(erasure_requests.c.id == request_id).values(
                state="completed", completed_at=utc_now(), completed_by=actor_id, counts=json.dumps(counts),
                subject_user_id=None,
            ))


def _entry(r: RowMapping) -> AuditEntry:
    return AuditEntry(r["id"], r["at"], r["actor_id"], r["actor_role"], r["action"], r["subject_owner_id"],
                      r["scope"], json.loads(r["counts"]) if r["counts"] else None, r["ticket"], r["reason_code"])


def _request(r: RowMapping) -> ErasureRequest:
    return ErasureRequest(r["id"], r["tenant_id"], r["subject_owner_id"], r["subject_user_id"], r["ticket"],
                          r["received_at"], r["requested_by"], r["state"], r["completed_at"], r["completed_by"],
                          json.loads(r["counts"]) if r["counts"] else None)
