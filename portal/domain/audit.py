"""The audit trail's entries: content-free by construction (ids, roles, action codes, counts,
ticket references and reason codes — never a person's words).

An operation that must leave an audit record is handed an `AuditNote` (who acts, and the action's
code) and writes the entry in its own unit of work: the record and the change it records commit
together or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
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


# Actions a family holds besides those named after it: erasing a person's memory is an erasure
# whoever does it (the person, "erase everything"; an app, DELETE; the operator, purge), though
# those actions are named after the person.
FAMILY_ALSO: dict[str, tuple[str, ...]] = {"erasure": ("person.erased_all", "person.erased", "person.purged")}


def family_also(wanted: str) -> tuple[str, ...]:
    """The actions `wanted`, a family, holds besides those whose name starts with it."""
    return FAMILY_ALSO.get(wanted, ()) if "." not in wanted else ()


def any_of(wanted: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """An audit filter as the values it accepts: None (or "") filters nothing; one value or a
    sequence of them (the people an e-mail or a name finds, the actions a label names) accepts any
    of them, and an empty sequence accepts none."""
    if wanted is None or wanted == "":
        return None
    return (wanted,) if isinstance(wanted, str) else tuple(wanted)


def action_matches(action: str, wanted: str) -> bool:
    """The audit filter on actions: an action itself (`erasure.completed`), or its family, the part
    before the dot (`erasure`: `erasure.logged`, `erasure.completed`), with the actions the family
    holds besides (FAMILY_ALSO: `person.erased_all` is an erasure)."""
    return action == wanted or ("." not in wanted and action.startswith(wanted + ".")) or action in family_also(wanted)


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
