"""The store contract on erasure and retention: purging an owner, pruning old history and receipts,
and finding archived memories left untouched since a cutoff.
"""

from __future__ import annotations

from dataclasses import replace

from portal.contract.base import ALL, ContractBase
from portal.domain.types import Memory, Place, PurgeCounts, Receipt, Revision
from portal.ports import Settings, Store


class RetentionContract(ContractBase):
    """Erasing an owner and letting old rows go."""

    # ================================================================== erasure

    def test_purge_owner_erases_every_row_of_that_owner_only(self, store: Store) -> None:
        doomed = [self.place(store, "owner-z", "scope-1"), self.place(store, "owner-z", "scope-2")]
        kept = self.place(store, "owner-a", "scope-1")
        for place in [*doomed, kept]:
            first, _second = self.add(store, place, f"one of {place.scope}", f"two of {place.scope}")
            with store.write(place) as tx:
                tx.push_revision(self.revision(first, 1))
                tx.set_settings(Settings(paused=True))
                assert tx.claim_ref("conv-1", self.at(1))
                tx.put_receipt(self.receipt("idem-1", first.id))
                tx.tombstone([self.new_id()], self.at(2))
                tx.commit()
        counts = store.purge_owner(doomed[0].owner_id)
        assert counts == PurgeCounts(memories=4, revisions=2, settings=2, refs=2, receipts=2, tombstones=2)
        for place in doomed:
            with store.write(place) as tx:
                assert tx.list(ALL) == [] and tx.settings().paused is False
                assert tx.get_receipt("idem-1") is None
                assert tx.claim_ref("conv-1", self.at(3)) is True
        assert not set(doomed) & set(store.places())
        with store.read(kept) as tx:
            assert tx.count() == 2 and tx.settings().paused is True
            assert tx.get_receipt("idem-1") is not None
            assert sum(len(tx.history(m.id)) for m in tx.list(ALL)) == 1
        with store.write(kept) as tx:
            assert tx.claim_ref("conv-1", self.at(3)) is False
        assert store.purge_owner(self.make_owner("owner-z", store)) == PurgeCounts()

    # ================================================================== retention

    def written(self, memory: Memory, number: int, at: float) -> Revision:
        return replace(self.revision(memory, number), written_at=self.at(at))

    def history_of(self, store: Store, place: Place, memory_id: str) -> list[int]:
        with store.read(place) as tx:
            return [r.revision for r in tx.history(memory_id)]

    def test_prune_history_drops_wordings_replaced_before_the_cutoff(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        # Settled long ago: both earlier wordings were replaced before the cutoff.
        (settled,) = self.add(store, here, "Lives in Lyon", created_at=self.at(10), updated_at=self.at(500))
        # Changed after the cutoff: the wording that change replaced stays, so it can still be undone.
        (recent,) = self.add(store, here, "Lives in Paris", created_at=self.at(10), updated_at=self.at(2000))
        (there,) = self.add(store, other, "Likes jazz", created_at=self.at(10), updated_at=self.at(500))
        with store.write(here) as tx:
            tx.push_revision(self.written(settled, 1, 100))
            tx.push_revision(self.written(settled, 2, 300))
            tx.push_revision(self.written(recent, 1, 100))
            tx.push_revision(self.written(recent, 2, 300))
            tx.push_revision(self.written(recent, 3, 1500))
            tx.commit()
        with store.write(other) as tx:
            tx.push_revision(self.written(there, 1, 100))
            tx.commit()
        assert store.prune_history(self.at(50)) == 0
        assert self.history_of(store, here, recent.id) == [3, 2, 1]

        assert store.prune_history(self.at(1000)) == 4
        assert self.history_of(store, here, settled.id) == []
        assert self.history_of(store, here, recent.id) == [3, 2]
        assert self.history_of(store, other, there.id) == []
        for place, memory in ((here, settled), (here, recent), (other, there)):
            self.assert_same(self.read(store, place, memory.id), memory)  # current wordings untouched
        assert store.prune_history(self.at(1000)) == 0
        with store.write(here) as tx:
            popped = tx.pop_revision(recent.id)
            assert popped is not None and popped.revision == 3
            tx.commit()

    def test_prune_receipts_drops_completed_receipts_created_before_the_cutoff(self, store: Store) -> None:
        here, other, _ = self.places3(store)

        def receipt(key: str, status: int, at: float, redacted: bool = False) -> Receipt:
            response = None if status == 0 or redacted else {"ok": True}
            return Receipt(key=key, request_hash="h" * 64, status=status, response=response,
                           created_at=self.at(at), redacted=redacted)

        with store.write(here) as tx:
            tx.put_receipt(receipt("old-done", 201, 10))
            tx.put_receipt(receipt("old-redacted", 201, 20, redacted=True))
            tx.put_receipt(receipt("old-pending", 0, 10))
            tx.put_receipt(receipt("new-done", 201, 2000))
            tx.commit()
        with store.write(other) as tx:
            tx.put_receipt(receipt("old-done", 200, 10))
            tx.commit()
        assert store.prune_receipts(self.at(5)) == 0
        assert store.prune_receipts(self.at(1000)) == 3
        with store.read(here) as tx:
            assert tx.get_receipt("old-done") is None and tx.get_receipt("old-redacted") is None
            pending, new = tx.get_receipt("old-pending"), tx.get_receipt("new-done")
            assert pending is not None and pending.status == 0
            assert new is not None and new.response == {"ok": True}
        with store.read(other) as tx:
            assert tx.get_receipt("old-done") is None
        assert store.prune_receipts(self.at(1000)) == 0
        with store.write(here) as tx:
            assert tx.put_receipt(receipt("old-done", 201, 3000)) is True  # the key is free again
            tx.commit()

    def test_archived_before_lists_archived_memories_untouched_since_the_cutoff(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        long_ago = dict(created_at=self.at(10), updated_at=self.at(20))
        old, used, written, active = self.keep(
            store, here,
            self.memory(store, here, "old and archived", state="archived", **long_ago),
            self.memory(store, here, "archived, used lately", state="archived", last_used_at=self.at(2000), **long_ago),
            self.memory(store, here, "archived, written lately", state="archived", created_at=self.at(10),
                        updated_at=self.at(2000)),
            self.memory(store, here, "old but active", **long_ago),
        )
        (there,) = self.keep(store, other, self.memory(store, other, "archived there", state="archived", **long_ago))
        found = store.archived_before(self.at(1000), 10)
        assert set(found) == {(here, old.id), (other, there.id)}
        assert found == sorted(found, key=lambda pair: (pair[0].owner_id, pair[1]))  # by owner, then id
        assert all(isinstance(place, Place) for place, _ in found)
        assert len(store.archived_before(self.at(1000), 1)) == 1
        assert store.archived_before(self.at(15), 10) == []
        assert {used.id, written.id, active.id}.isdisjoint(i for _, i in store.archived_before(self.at(1000), 10))

    def test_earlier_wordings_expire_in_every_place_and_a_memorys_history_can_be_erased(self, store: Store) -> None:
        here, other_owner, other_scope = self.places3(store)
        stacks = {}
        for place in (here, other_owner, other_scope):
            (memory,) = self.add(store, place, f"Lives in Lyon ({place.scope})")
            with store.write(place) as tx:
                tx.push_revision(replace(self.revision(memory, 1), expires_at=self.at(10)))  # a person's edit
                tx.push_revision(replace(self.revision(memory, 2), expires_at=None))  # the assistant's
                tx.push_revision(replace(self.revision(memory, 3), expires_at=self.at(30)))
                tx.commit()
            stacks[place] = memory
        assert store.expire_revisions(self.at(5)) == 0
        assert store.expire_revisions(self.at(10)) == 3  # due at the time itself
        for place, memory in stacks.items():
            assert self.history_of(store, place, memory.id) == [3, 2]
            with store.read(place) as tx:
                assert [r.expires_at for r in tx.history(memory.id)] == [self.at(30), None]
        with store.write(here) as tx:
            assert tx.erase_history(stacks[here].id) == 2
            assert tx.erase_history(stacks[here].id) == 0 and tx.erase_history("\x00") == 0
            assert tx.get(stacks[here].id) is not None  # the current wording stays
            tx.commit()
        assert self.history_of(store, here, stacks[here].id) == []
        assert self.history_of(store, other_owner, stacks[other_owner].id) == [3, 2]
        assert store.expire_revisions(self.at(40)) == 2
