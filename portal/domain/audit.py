"""The audit trail's entries: content-free by construction (ids, roles, action codes, counts,
ticket references and reason codes — never a person's words).

An operation that must leave an audit record is handed an `AuditNote` (who acts, and the action's
code) and writes the entry in its own unit of work: the record and the change it records commit
together or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from portal.domain.options import new_id, utc_now


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: str
    at: datetime
    actor_id: str | None
    actor_role: str
    action: str
    subject_owner_id: str | None
    scope: str | None
    counts: dict[str, int] | None
    ticket: str | None
    reason_code: str | None


def action_matches(action: str, wanted: str) -> bool:
    """The audit filter on actions: an action itself (`erasure.completed`), or its family, the part
    before the dot (`erasure`: `erasure.logged`, `erasure.completed`)."""
    return action == wanted or ("." not in wanted and action.startswith(wanted + "."))


@dataclass(frozen=True, slots=True)
class AuditNote:
    """Who acts and what they do, for the entry an operation writes with its change."""

    actor_id: str | None
    actor_role: str
    action: str
    ticket: str | None = None
    reason_code: str | None = None

    def entry(self, subject_owner_id: str | None, scope: str | None, counts: dict[str, int] | None = None,
              at: datetime | None = None) -> AuditEntry:
        return AuditEntry(new_id(), at or utc_now(), self.actor_id, self.actor_role, self.action, subject_owner_id,
                          scope, dict(counts) if counts else None, self.ticket, self.reason_code)
