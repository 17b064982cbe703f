"""The store contract on what a place keeps besides its memories: settings, claimed refs and
idempotency receipts (claimed, finished and dropped), the erasure of a whole place, and the audit
entries written in the same transaction as the change they record.
"""

from __future__ import annotations

from portal.contract.base import ALL, ContractBase
from portal.domain.audit import AuditNote
from portal.domain.types import Receipt
from portal.ports import Settings, Store


class ReceiptsContract(ContractBase):
    """Settings, refs and receipts, each per place."""

    def test_settings_default_and_round_trip(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        with store.read(here) as tx:
            assert tx.settings() == Settings() and tx.settings().paused is False
        for paused in (True, True, False, True):
            with store.write(here) as tx:
                tx.set_settings(Settings(paused=paused))
                tx.commit()
            with store.read(here) as tx:
                assert tx.settings().paused is paused
        with store.read(other) as tx:
            assert tx.settings().paused is False

    def test_a_ref_is_claimed_once_until_released(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(1)) is True
            assert tx.claim_ref("conv-1", self.at(2)) is False
            tx.commit()
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(3)) is False
            assert tx.release_ref("conv-2") is False
            assert tx.release_ref("conv-1") is True
            tx.commit()
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(4)) is True
            tx.commit()
        with store.write(other) as tx:
            assert tx.claim_ref("conv-1", self.at(5)) is True
            tx.commit()

    def test_a_ref_is_the_app_s_own(self, store: Store) -> None:
        """A conversation belongs to the app that had it (issue 38, review1): its ref is claimed and
        looked up under the app's id ("" the person's own), so another app's "conv-1" is another
        conversation, and a claim is held, renewed, finished and released under its app only."""
        here = self.place(store)
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(1), app_id="app-1") is True
            assert tx.claim_ref("conv-1", self.at(2), app_id="app-2") is True
            assert tx.claim_ref("conv-1", self.at(3)) is True  # the person's own
            assert tx.claim_ref("conv-1", self.at(4), app_id="app-1") is False
            assert tx.claim_ref("conv-1", self.at(5)) is False
            assert tx.claim_ref("conv-2", self.at(6), lease_until=self.at(60), holder="h", app_id="app-1") is True
            assert tx.holds_ref("conv-2", "h", app_id="app-1")
            assert not tx.holds_ref("conv-2", "h", app_id="app-2") and not tx.holds_ref("conv-2", "h")
            assert tx.renew_ref("conv-2", "h", self.at(90), app_id="app-2") is False
            assert tx.finish_ref("conv-2", "h") is False
            assert tx.renew_ref("conv-2", "h", self.at(90), app_id="app-1") is True
            assert tx.release_ref("conv-1", app_id="app-3") is False
            assert tx.release_ref("conv-1", app_id="app-2") is True
            tx.commit()
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(7), app_id="app-1") is False
            assert tx.claim_ref("conv-1", self.at(7), app_id="app-2") is True  # released for app-2 alone
            assert tx.claim_ref("conv-2", self.at(8), lease_until=self.at(68), holder="i", app_id="app-2") is True
            assert tx.finish_ref("conv-2", "h", app_id="app-1") is True
            assert tx.holds_ref("conv-2", "i", app_id="app-2") and not tx.holds_ref("conv-2", "h", app_id="app-1")
            tx.commit()

    def test_receipts_round_trip(self, store: Store) -> None:
        here = self.place(store)
        first, second = self.new_id(), self.new_id()
        receipt = Receipt(
            key="idem-1", request_hash="a" * 64, status=201,
            response={"memories": [{"id": first, "text": "Bonjour, ça va"}], "count": 2, "ok": True, "none": None},
            memory_ids=(first, second), created_at=self.at(5),
        )
        with store.write(here) as tx:
            assert tx.get_receipt("idem-1") is None
            tx.put_receipt(receipt)
            tx.put_receipt(Receipt(key="idem-2", request_hash="b" * 64, status=200, response=None,
                                   created_at=self.at(6)))
            tx.commit()
        with store.read(here) as tx:
            assert tx.get_receipt("idem-1") == receipt
            empty = tx.get_receipt("idem-2")
            assert empty is not None and empty.response is None and empty.memory_ids == () and not empty.redacted
            assert tx.get_receipt("idem-3") is None

    def test_a_pending_receipt_is_claimed_once_then_finished_or_dropped(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        done = self.new_id()
        pending = Receipt(key="idem-p", request_hash="c" * 64, status=0, response=None, created_at=self.at(7))
        with store.write(here) as tx:
            assert tx.put_receipt(pending) is True
            assert tx.put_receipt(pending) is False  # a second writer with the same key learns it is taken
            tx.commit()
        with store.write(other) as tx:
            assert tx.put_receipt(pending) is True  # keys are per place
            assert tx.drop_receipt("idem-p") is True
            tx.commit()
        with store.write(here) as tx:
            assert tx.finish_receipt("idem-p", 201, {"id": done}, [done]) is True
            assert tx.finish_receipt("missing", 201, None, []) is False
            tx.commit()
        with store.read(here) as tx:
            got = tx.get_receipt("idem-p")
            assert got is not None and (got.status, got.response, got.memory_ids) == (201, {"id": done}, (done,))
        with store.read(other) as tx:
            assert tx.get_receipt("idem-p") is None
        with store.write(here) as tx:
            assert tx.drop_receipt("idem-p") is True and tx.drop_receipt("idem-p") is False
            tx.commit()

    def test_a_receipt_keeps_exactly_what_it_is_given(self, store: Store) -> None:
        """Stores keep a receipt's answer as handed to them (content-free already: the service
        strips it, see `portal.services.idempotency`), and forgetting a memory changes no receipt."""
        here = self.place(store)
        (memory,) = self.add(store, here, "Walks the dog at seven")
        kept = {"memory": {"id": memory.id, "revision": 1, "text": None, "$memory": True}, "reinforced": False}
        with store.write(here) as tx:
            tx.put_receipt(Receipt("k", "d" * 64, 0, None, created_at=self.at(9)))
            assert tx.finish_receipt("k", 201, kept, [memory.id])
            tx.commit()
        with store.write(here) as tx:
            tx.remove([memory.id])
            tx.commit()
        with store.read(here) as tx:
            got = tx.get_receipt("k")
            assert got is not None and (got.status, got.response, got.memory_ids) == (201, kept, (memory.id,))

    def test_a_place_purge_leaves_nothing_that_names_the_owner(self, store: Store) -> None:
        here, other, elsewhere = self.places3(store)
        for place in (here, other, elsewhere):
            (memory,) = self.add(store, place, "Walks the dog at seven")
            with store.write(place) as tx:
                tx.push_revision(self.revision(memory, 1, "Walks the dog at six"))
                tx.set_settings(Settings(paused=True))
                tx.claim_ref("conv-1", self.at(2))
                tx.put_receipt(self.receipt("key-1", memory.id))
                tx.tombstone([self.new_id()], self.at(3))
                tx.commit()
        with store.write(here) as tx:
            counts = tx.purge()
            tx.commit()
        assert (counts.memories, counts.revisions, counts.settings, counts.refs, counts.receipts, counts.tombstones) == (
            1, 1, 1, 1, 1, 1)
        with store.read(here) as tx:
            assert tx.list(ALL) == [] and tx.get_receipt("key-1") is None and tx.settings() == Settings()
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(4)) is True  # the claim went too
        assert here not in list(store.places())
        for place in (other, elsewhere):
            with store.read(place) as tx:
                assert len(tx.list(ALL)) == 1 and tx.get_receipt("key-1") is not None and tx.settings().paused

    def test_an_audit_entry_commits_with_the_change_it_records(self, store: Store) -> None:
        here = self.place(store)
        note = AuditNote("actor-1", "member", "person.paused")
        before = len(store.audit_trail())
        with store.write(here) as tx:
            tx.set_settings(Settings(paused=True))
            tx.record(note.entry(here.owner_id, here.scope, at=self.at(1)))
            # left without commit: neither the change nor its record stays
        with store.read(here) as tx:
            assert tx.settings().paused is False
        assert len(store.audit_trail()) == before
        with store.write(here) as tx:
            tx.set_settings(Settings(paused=True))
            tx.record(note.entry(here.owner_id, here.scope, {"memories": 2}, at=self.at(2)))
            tx.commit()
        trail = store.audit_trail()
        assert len(trail) == before + 1
        assert (trail[-1].action, trail[-1].subject_owner_id, trail[-1].scope, trail[-1].counts) == (
            "person.paused", here.owner_id, here.scope, {"memories": 2})

    def test_a_running_claim_is_held_renewed_finished_or_taken_over_once_its_lease_ran_out(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        with store.write(here) as tx:
            assert tx.claim_ref("conv-9", self.at(10), lease_until=self.at(70), holder="a") is True
            assert tx.holds_ref("conv-9", "a") and not tx.holds_ref("conv-9", "b")
            tx.commit()
        with store.write(here) as tx:
            assert tx.claim_ref("conv-9", self.at(60), lease_until=self.at(120), holder="b") is False  # still held
            assert tx.renew_ref("conv-9", "a", self.at(130)) is True
            assert tx.renew_ref("conv-9", "b", self.at(130)) is False
            assert tx.claim_ref("conv-9", self.at(100), lease_until=self.at(160), holder="b") is False  # renewed
            # Its holder died: past the lease, another request takes the claim over.
            assert tx.claim_ref("conv-9", self.at(131), lease_until=self.at(191), holder="b") is True
            assert tx.holds_ref("conv-9", "b") and not tx.holds_ref("conv-9", "a")
            assert tx.renew_ref("conv-9", "a", self.at(200)) is False and tx.finish_ref("conv-9", "a") is False
            assert tx.finish_ref("conv-9", "b") is True
            assert not tx.holds_ref("conv-9", "b")
            # Done for good: no lease, no takeover.
            assert tx.claim_ref("conv-9", self.at(10_000), lease_until=self.at(10_060), holder="c") is False
            tx.commit()
        with store.write(other) as tx:
            assert tx.claim_ref("conv-9", self.at(10)) is True  # per place; without a lease it is done at once
            assert tx.claim_ref("conv-9", self.at(10_000), lease_until=self.at(10_060), holder="c") is False
            tx.commit()
        with store.write(here) as tx:
            tx.purge()
            tx.commit()
        with store.read(here) as tx:
            assert not tx.holds_ref("conv-9", "b")  # an erasure takes claims away

    def test_a_pending_receipt_is_leased_and_taken_over_only_once_its_lease_ran_out(self, store: Store) -> None:
        here = self.place(store)
        with store.write(here) as tx:
            tx.put_receipt(Receipt("k", "d" * 64, 0, None, created_at=self.at(0), lease_until=self.at(60)))
            assert tx.lease_receipt("k", self.at(120), expired_before=self.at(30)) is False  # still held
            assert tx.lease_receipt("k", self.at(90)) is True  # renewed by its request
            assert tx.lease_receipt("k", self.at(150), expired_before=self.at(91)) is True  # ran out: taken over
            assert tx.lease_receipt("missing", self.at(150)) is False
            tx.commit()
        with store.read(here) as tx:
            got = tx.get_receipt("k")
            assert got is not None and got.lease_until == self.at(150)
        with store.write(here) as tx:
            assert tx.finish_receipt("k", 201, {"ok": True}, [])
            assert tx.lease_receipt("k", self.at(500)) is False  # finished: nothing to hold
            tx.commit()

    def test_a_receipt_taken_over_answers_only_to_its_new_holder(self, store: Store) -> None:
        here = self.place(store)
        with store.write(here) as tx:
            tx.put_receipt(Receipt("k", "d" * 64, 0, None, created_at=self.at(0), lease_until=self.at(60), holder="a"))
            assert tx.lease_receipt("k", self.at(90), holder="b") is False  # b does not hold it
            assert tx.lease_receipt("k", self.at(90), holder="a") is True
            assert tx.lease_receipt("k", self.at(200), expired_before=self.at(100), holder="b") is True  # a's lapsed
            assert tx.lease_receipt("k", self.at(300), holder="a") is False  # a was presumed dead: no renewal
            assert tx.finish_receipt("k", 201, {"by": "a"}, [], holder="a") is False
            assert tx.drop_receipt("k", holder="a") is False
            assert tx.finish_receipt("k", 201, {"by": "b"}, [], holder="b") is True
            tx.commit()
        with store.read(here) as tx:
            got = tx.get_receipt("k")
            assert got is not None and got.response == {"by": "b"}
