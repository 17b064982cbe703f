"""The audit log's part of the records contract (`RecordsContract` composes it): entries come back
newest first, by scope, actor, subject, action (or its family) and time, and several actors,
subjects or actions at once mean any of them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from portal.domain.audit import AuditEntry, AuditNote
from portal.ports import Records

T0 = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)


class AuditContract:
    def test_the_audit_log_answers_newest_first_by_scope_actor_subject_action_and_time(self, records: Records) -> None:
        def write(at: datetime, actor: str, role: str, action: str, subject: str | None, scope: str,
                  counts: dict[str, int] | None = None, ticket: str | None = None,
                  reason_code: str | None = None) -> AuditEntry:
            entry = AuditNote(actor, role, action, ticket, reason_code).entry(subject, scope, counts, at=at)
            records.audit.write(entry)
            return entry

        first = write(T0, "staff-1", "staff", "memories.viewed", "owner-1", "acme", counts={"memories": 3},
                      ticket="T-1", reason_code="access_request")
        second = write(T0 + timedelta(seconds=1), "staff-2", "staff", "access.exported", "owner-2", "acme")
        third = write(T0 + timedelta(seconds=2), "admin-1", "admin", "tenant.created", None, "globex")
        assert records.audit.record("admin-1", "admin", "tenant.ai_off", None, "globex").at > third.at
        assert [e.id for e in records.audit.query(None)][1:] == [third.id, second.id, first.id]
        assert [e.id for e in records.audit.query(["acme"])] == [second.id, first.id]
        assert [e.id for e in records.audit.query(None, actor_id="staff-1")] == [first.id]
        assert [e.id for e in records.audit.query(None, subject="owner-2")] == [second.id]
        assert [e.id for e in records.audit.query(None, action="tenant.created")] == [third.id]
        # a family: the action's first part finds all of it; a part of a word finds nothing
        assert [e.id for e in records.audit.query(None, action="tenant")][1:] == [third.id]
        assert len(records.audit.query(None, action="tenant")) == 2
        assert records.audit.query(None, action="tenan") == [] and records.audit.query(None, action="tenant.") == []
        assert [e.id for e in records.audit.query(None, action="memories")] == [first.id]
        assert [e.id for e in records.audit.query(None, limit=2)][1:] == [third.id]
        (kept,) = records.audit.query(None, actor_id="staff-1")
        assert kept == first and kept.counts == {"memories": 3} and kept.reason_code == "access_request"
        assert [e.id for e in records.audit.query(None, since=second.at, until=third.at)] == [second.id]  # until excluded
        assert records.audit.query(None, until=first.at) == []
        # Several at once (the people an e-mail or a name finds, the actions a label names): any of
        # them; none (nobody found) matches nothing, not everything.
        assert [e.id for e in records.audit.query(None, actor_id=("staff-1", "staff-2", "nobody"))] == [second.id, first.id]
        assert [e.id for e in records.audit.query(None, subject=["owner-2", "owner-9"])] == [second.id]
        assert [e.id for e in records.audit.query(None, action=("access.exported", "tenant.created"))] == [
            third.id, second.id]
        assert [e.id for e in records.audit.query(None, action=("memories", "Erased everything"))] == [first.id]
        assert records.audit.query(None, actor_id=()) == records.audit.query(None, subject=()) == []
        assert records.audit.query(None, action=()) == []

    def test_the_erasure_family_holds_every_erasure_of_a_person(self, records: Records) -> None:
        """Filtering by "erasure" finds the requests and their completion, and every other way a
        person's memory is erased: by the person (erase everything), by an app (DELETE) and by the
        operator (purge). Their own family ("person") still finds them; nothing else joins."""
        scope = "erasures-" + uuid4().hex[:8]
        written = {}
        for i, action in enumerate(("erasure.logged", "person.erased_all", "person.erased", "person.purged",
                                    "erasure.completed", "person.paused", "memories.viewed", "person.erased_all_x")):
            entry = AuditNote("actor-1", "member", action).entry("owner-1", scope, at=T0 + timedelta(seconds=i))
            records.audit.write(entry)
            written[action] = entry.id
        found = [e.action for e in records.audit.query([scope], action="erasure")]
        assert found == ["erasure.completed", "person.purged", "person.erased", "person.erased_all", "erasure.logged"]
        assert {e.action for e in records.audit.query([scope], action="person")} == {
            "person.erased_all", "person.erased", "person.purged", "person.paused", "person.erased_all_x"}
        assert [e.id for e in records.audit.query([scope], action="person.erased_all")] == [written["person.erased_all"]]
        assert records.audit.query([scope], action="erasure.") == []
