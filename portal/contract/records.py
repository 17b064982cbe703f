"""The records contract: what any `Records` (accounts, tenants, API keys, the audit log, erasure
requests, and the unit of work over them and a person's memories) must do, through the protocol.

Subclass `RecordsContract` with two fixtures: `store`, a fresh empty `Store`, and `records`, the
`Records` over that same store (its units of work erase the store's memories):

    class TestMyRecords(RecordsContract):
        @pytest.fixture
        def store(self): return MyStore()

        @pytest.fixture
        def records(self, store): return MyRecords(store)
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from portal.contract.audit import AuditContract
from portal.domain.people import PERMISSIONS, AccountError, TenantExists
from portal.domain.types import Memory, Place
from portal.ports import Filters, Records, Store

PASSWORD = "correct horse battery"  # noqa: S105 - a test account's
T0 = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)


class Boom(Exception):
    """Raised inside a unit of work to leave it by an error."""


class RecordsContract(AuditContract):
    # ------------------------------------------------------------------ builders

    def tenant(self, records: Records, name: str = "Acme") -> str:
        return records.tenants.create(name).id

    def remembered(self, store: Store, place: Place, text: str) -> None:
        at = datetime.now(UTC)
        memory = Memory(id=uuid4().hex, owner_id=place.owner_id, scope=place.scope,
                        revision=1, text=text, kind="fact", importance=3, created_at=at, updated_at=at)
        with store.write(place) as tx:
            tx.insert(memory)
            tx.commit()

    def texts(self, store: Store, place: Place) -> list[str]:
        with store.read(place) as tx:
            return [m.text for m in tx.list(Filters(state=None))]

    # ------------------------------------------------------------------ accounts

    def test_an_account_is_kept_with_its_email_in_lower_case_and_its_owner_id(self, records: Records) -> None:
        acme = self.tenant(records)
        made = records.accounts.create("  Ada@Example.COM ", " Ada Quill ", acme, "member", PASSWORD)
        assert (made.email, made.name, made.role, made.tenant_id, made.language) == (
            "ada@example.com", "Ada Quill", "member", acme, None)  # no language chosen: the browser's, until chosen
        assert made.owner_id == made.id and made.last_visit_at is None
        assert records.accounts.get(made.id) == made
        chosen = records.accounts.create("bea@example.com", "Bea", acme, "staff", PASSWORD, owner_id="ext-bea",
                                         language="fr")
        assert (chosen.owner_id, chosen.language) == ("ext-bea", "fr")
        assert records.accounts.get("no-such-account") is None

    @pytest.mark.parametrize("change, code", [
        ({"email": "not-an-address"}, "invalid_email"), ({"name": "  "}, "invalid_name"),
        ({"role": "root"}, "invalid_role"), ({"password": "short"}, "password_too_short"),
        ({"language": "xx"}, "invalid_language"), ({"owner_id": "a\x00b"}, "invalid_owner_id"),
        ({"tenant_id": "no-such-tenant"}, "unknown_tenant"),
    ])
    def test_a_refused_account_says_why_and_keeps_nothing(self, records: Records, change: dict[str, str], code: str) -> None:
        acme = self.tenant(records)
        wanted = {"email": "ada@example.com", "name": "Ada", "tenant_id": acme, "role": "member", "password": PASSWORD,
                  **change}
        with pytest.raises(AccountError) as refused:
            records.accounts.create(**wanted)
        assert refused.value.code == code
        assert records.accounts.find("ada") == []

    def test_one_account_per_email_whatever_its_case(self, records: Records) -> None:
        acme = self.tenant(records)
        records.accounts.create("ada@example.com", "Ada", acme, "member", PASSWORD)
        with pytest.raises(AccountError) as refused:
            records.accounts.create("ADA@example.com", "Other Ada", acme, "member", PASSWORD)
        assert refused.value.code == "email_taken"
        assert [u.name for u in records.accounts.find("ada@example.com")] == ["Ada"]

    def test_authenticate_answers_the_account_only_for_its_password(self, records: Records) -> None:
        ada = records.accounts.create("ada@example.com", "Ada", self.tenant(records), "member", PASSWORD)
        assert records.accounts.authenticate(" ADA@example.com", PASSWORD) == ada
        assert records.accounts.authenticate("ada@example.com", PASSWORD + "!") is None
        assert records.accounts.authenticate("nobody@example.com", PASSWORD) is None

    def test_end_sessions_and_a_new_password_move_the_session_epoch_on(self, records: Records) -> None:
        ada = records.accounts.create("ada@example.com", "Ada", self.tenant(records), "member", PASSWORD)
        epoch = lambda: records.accounts.get(ada.id).session_epoch  # type: ignore[union-attr]  # noqa: E731
        assert epoch() == ada.session_epoch == 0
        assert records.accounts.end_sessions(ada.id) is True
        assert epoch() == 1
        assert records.accounts.set_password(ada.id, "another long password") is True
        assert epoch() == 2
        assert records.accounts.authenticate("ada@example.com", PASSWORD) is None
        assert records.accounts.authenticate("ada@example.com", "another long password") is not None
        with pytest.raises(AccountError):
            records.accounts.set_password(ada.id, "short")
        assert epoch() == 2
        assert records.accounts.end_sessions("no-such-account") is False
        assert records.accounts.set_password("no-such-account", "another long password") is False

    def test_a_disabled_account_cannot_sign_in_until_it_gets_a_new_password(self, records: Records) -> None:
        sam = records.accounts.create("sam@example.com", "Sam", self.tenant(records), "staff", PASSWORD)
        assert sam.disabled is False
        assert records.accounts.disable(sam.id) is True
        disabled = records.accounts.get(sam.id)
        assert disabled is not None and disabled.disabled is True and disabled.session_epoch == 1  # signed out
        assert records.accounts.authenticate("sam@example.com", PASSWORD) is None
        assert [u.disabled for u in records.accounts.staff()] == [True]
        assert records.accounts.set_password(sam.id, "a brand new password") is True  # enabled again
        assert records.accounts.get(sam.id).disabled is False  # type: ignore[union-attr]
        assert records.accounts.authenticate("sam@example.com", "a brand new password") is not None
        assert records.accounts.disable("no-such-account") is False

    def test_language_visit_and_deletion(self, records: Records) -> None:
        ada = records.accounts.create("ada@example.com", "Ada", self.tenant(records), "member", PASSWORD)
        assert records.accounts.get(ada.id).language is None  # type: ignore[union-attr]
        records.accounts.set_language(ada.id, "fr")
        with pytest.raises(AccountError):
            records.accounts.set_language(ada.id, "xx")
        records.accounts.mark_visit(ada.id, T0)
        now = records.accounts.get(ada.id)
        assert now is not None and (now.language, now.last_visit_at) == ("fr", T0)
        assert records.accounts.delete(ada.id) is True
        assert records.accounts.delete(ada.id) is False
        assert records.accounts.get(ada.id) is None
        assert records.accounts.authenticate("ada@example.com", PASSWORD) is None

    def test_find_matches_email_and_name_in_any_case_and_owner_ids_exactly(self, records: Records) -> None:
        acme, globex = self.tenant(records, "Acme"), self.tenant(records, "Globex")
        records.accounts.create("ada@acme.example", "Ada Quill", acme, "member", PASSWORD, owner_id="ext-1")
        records.accounts.create("bea@globex.example", "Bea Stone", globex, "member", PASSWORD, owner_id="ext-2")
        emails = lambda query, tenants=None: [u.email for u in records.accounts.find(query, tenants)]  # noqa: E731
        assert emails("QUILL") == ["ada@acme.example"]
        assert emails("example") == ["ada@acme.example", "bea@globex.example"]
        assert emails("example", [globex]) == ["bea@globex.example"]
        assert emails("example", []) == []
        assert emails("ext-2") == ["bea@globex.example"]
        assert emails("ext-") == [] and records.accounts.of_owner("ext-") == []  # owner ids match whole, not in part
        twin = records.accounts.create("twin@globex.example", "Twin", globex, "member", PASSWORD, owner_id="ext-1")
        assert [u.email for u in records.accounts.of_owner("ext-1")] == ["ada@acme.example", twin.email]
        assert records.accounts.of_owner("ext-1", [globex]) == [twin] and records.accounts.of_owner("ext-1", []) == []
        for wildcard in ("_", "%", "a_a", "q%l"):  # characters, not patterns
            assert emails(wildcard) == [], wildcard
        records.accounts.create("under_score@acme.example", "Per Cent 100%", acme, "member", PASSWORD)
        assert emails("_") == emails("r_s") == emails("0%") == ["under_score@acme.example"]

    def test_staff_lists_staff_and_admins_and_names_of_the_others_of_a_tenant(self, records: Records) -> None:
        acme, globex = self.tenant(records, "Acme"), self.tenant(records, "Globex")
        ada = records.accounts.create("ada@acme.example", "Ada", acme, "member", PASSWORD)
        records.accounts.create("sam@acme.example", "Sam", acme, "staff", PASSWORD)
        records.accounts.create("root@globex.example", "Root", globex, "admin", PASSWORD)
        records.accounts.create("bea@globex.example", "Bea", globex, "member", PASSWORD)
        assert [u.email for u in records.accounts.staff()] == ["root@globex.example", "sam@acme.example"]
        assert [u.email for u in records.accounts.staff([acme])] == ["sam@acme.example"]
        assert records.accounts.names_of(ada.place) == ["Sam"]

    # ------------------------------------------------------------------ tenants and keys

    def test_tenants_have_unique_names_and_an_ai_switch(self, records: Records) -> None:
        acme = records.tenants.create(" Acme ", ai_enabled=False)
        assert acme.name == "Acme" and records.tenants.find("Acme") == acme == records.tenants.find(acme.id)
        with pytest.raises(TenantExists):
            records.tenants.create("Acme")
        with pytest.raises(ValueError):
            records.tenants.create("  ")
        assert [t.name for t in records.tenants.all()] == ["Acme"]
        here = Place("someone", acme.id)
        assert records.tenants.ai_enabled(here) is False
        assert records.tenants.set_ai(acme.id, True) is True
        assert records.tenants.ai_enabled(here) is True
        assert records.tenants.set_ai("no-such-tenant", True) is False
        assert records.tenants.ai_enabled(Place("someone", "no-such-tenant")) is True

    def test_an_api_key_is_shown_once_verified_by_its_secret_and_revoked_for_good(self, records: Records) -> None:
        acme = self.tenant(records)
        key, token = records.api_keys.create(acme, ["memories:read"], name="Support bot")
        assert token.startswith(key.prefix) and key.permissions == frozenset({"memories:read"})
        verified = records.api_keys.verify(token)
        assert verified is not None and verified.id == key.id and verified.last_used_at is not None
        assert records.api_keys.verify(token[:-2] + ("AA" if not token.endswith("AA") else "BB")) is None
        assert [k.id for k in records.api_keys.list(acme)] == [key.id]
        assert records.api_keys.revoke(key.id) is True
        assert records.api_keys.revoke(key.id) is False
        assert records.api_keys.verify(token) is None
        for wrong in ([], ["root"]):
            with pytest.raises(ValueError):
                records.api_keys.create(acme, wrong)
        with pytest.raises(ValueError):
            records.api_keys.create("no-such-tenant", PERMISSIONS)

    # ------------------------------------------------------------------ erasure requests

    def test_erasure_requests_open_list_and_complete(self, records: Records) -> None:
        acme, globex = self.tenant(records, "Acme"), self.tenant(records, "Globex")
        late = records.erasures.open(acme, "owner-1", "user-1", "T-2", T0 + timedelta(days=2), "staff")
        early = records.erasures.open(acme, "owner-1", "user-1", None, T0, "person")
        other = records.erasures.open(globex, "owner-1", None, None, T0, "staff")
        assert records.erasures.get(late.id) == late and records.erasures.get("no-such-request") is None
        assert [r.id for r in records.erasures.open_for("owner-1", acme)] == sorted([late.id, early.id])
        records.erasures.complete(early.id, "staff-1", {"memories": 4})
        done = records.erasures.get(early.id)
        assert done is not None and (done.state, done.completed_by, done.counts, done.subject_user_id) == (
            "completed", "staff-1", {"memories": 4}, None)
        assert done.completed_at is not None
        assert [r.id for r in records.erasures.open_for("owner-1", acme)] == [late.id]
        assert [r.id for r in records.erasures.all([acme])] == [late.id, early.id]  # open ones first
        assert {r.id for r in records.erasures.all(None)} == {late.id, early.id, other.id}
        records.erasures.complete(other.id, None, {})  # by the operator, who has no account
        assert records.erasures.open_for("owner-1", globex) == []

    # ------------------------------------------------------------------ the unit of work

    def test_a_unit_keeps_nothing_without_commit_and_everything_with_it(self, records: Records) -> None:
        acme = self.tenant(records)
        with records.unit() as uow:
            uow.accounts.create("ada@example.com", "Ada", acme, "member", PASSWORD)
            uow.audit.record("admin-1", "admin", "member.created", scope=acme)
            uow.erasures.open(acme, "owner-1", None, None, T0, "staff")
            uow.tenants.set_ai(acme, False)
        assert records.accounts.find("ada") == [] and records.audit.query([acme]) == []
        assert records.erasures.all([acme]) == [] and records.tenants.ai_enabled(Place("x", acme)) is True
        with records.unit() as uow:
            made = uow.accounts.create("ada@example.com", "Ada", acme, "member", PASSWORD)
            assert uow.accounts.get(made.id) == made  # a unit sees its own writes
            uow.audit.record("admin-1", "admin", "member.created", scope=acme)
            uow.tenants.set_ai(acme, False)
            uow.commit()
        assert records.accounts.get(made.id) == made and len(records.audit.query([acme])) == 1
        assert records.tenants.ai_enabled(Place("x", acme)) is False  # at once, in this process too

    def test_an_error_in_a_unit_rolls_back_the_erasure_of_memories_with_the_rest(
        self, records: Records, store: Store,
    ) -> None:
        acme = self.tenant(records)
        ada = records.accounts.create("ada@example.com", "Ada", acme, "member", PASSWORD)
        self.remembered(store, ada.place, "Likes green tea")
        with pytest.raises(Boom), records.unit() as uow:
            counts = uow.purge_owner(ada.owner_id, [acme])
            assert counts.memories == 1
            uow.accounts.delete(ada.id)
            uow.audit.record("staff-1", "staff", "erasure.completed", ada.owner_id, acme, counts=counts.to_json())
            raise Boom()
        assert self.texts(store, ada.place) == ["Likes green tea"]
        assert records.accounts.get(ada.id) == ada and records.audit.query([acme]) == []

    def test_a_committed_unit_erases_the_owner_in_the_scopes_named_only(self, records: Records, store: Store) -> None:
        acme, globex = self.tenant(records, "Acme"), self.tenant(records, "Globex")
        mine, namesake = Place("user-1", acme), Place("user-1", globex)
        self.remembered(store, mine, "Likes green tea")
        self.remembered(store, namesake, "Plays the cello")
        with records.unit() as uow:
            counts = uow.purge_owner("user-1", [acme])
            uow.audit.record("staff-1", "staff", "erasure.completed", "user-1", acme, counts=counts.to_json())
            uow.commit()
        assert counts.memories == 1
        assert self.texts(store, mine) == [] and self.texts(store, namesake) == ["Plays the cello"]
        (entry,) = records.audit.query([acme])
        assert entry.counts is not None and entry.counts["memories"] == 1

    def test_a_writer_of_the_place_waits_for_a_unit_that_erased_it_and_survives_its_rollback(
        self, records: Records, store: Store,
    ) -> None:
        acme = self.tenant(records)
        ada = records.accounts.create("ada@example.com", "Ada", acme, "member", PASSWORD)
        self.remembered(store, ada.place, "Likes green tea")
        writer = threading.Thread(target=self.remembered, args=(store, ada.place, "Moved to Lyon"))
        with pytest.raises(Boom), records.unit() as uow:
            assert uow.purge_owner(ada.owner_id, [acme]).memories == 1
            writer.start()
            writer.join(0.5)  # it waits for the unit (or, wrongly, writes at once)
            raise Boom()
        writer.join(30)
        assert not writer.is_alive()
        assert sorted(self.texts(store, ada.place)) == ["Likes green tea", "Moved to Lyon"]

