"""The store contract on a batch of uses (issue 30, `Store.record_batch`): what recalls handed out
in one place, written in one transaction — the hits' last use times (active memories still kept
only, never moved back in time), each app's counts added by day, each conversation's first and
last times — of the memories still there only, so a memory forgotten or a person erased while
the batch waited leaves no use behind; other places untouched.
"""

from __future__ import annotations

from portal.contract.base import ContractBase
from portal.domain.apps import READ, RECALLED, REMEMBERED
from portal.domain.uses import UseBatch
from portal.ports import Store


class UsesContract(ContractBase):
    """`Store.record_batch` and `StoreTx.apply_uses`, through the protocol."""

    def test_a_batch_marks_counts_and_serves_in_one_write(self, store: Store) -> None:
        here, other_owner, _ = self.places3(store)
        used, read, archived = self.add(store, here, "used one", "read one", "archived one")
        (elsewhere,) = self.add(store, other_owner, "someone else's")
        with store.write(here) as tx:
            tx.set_state([archived.id], "archived")
            tx.commit()
        batch = UseBatch()
        for seconds in (30, 10, 20):  # noted out of time order
            batch.note([used.id, archived.id, elsewhere.id], self.at(seconds), "app-1", RECALLED, "c1", mark=True)
        batch.note([read.id], self.at(15), "app-1", READ, "c2")
        batch.note([read.id], self.at(16), "app-2", READ)
        assert store.record_batch(here, batch) == 3  # used, read, archived: elsewhere is not here
        with store.read(here) as tx:
            assert tx.get(used.id).last_used_at == self.at(30)  # type: ignore[union-attr]
            assert tx.get(read.id).last_used_at == read.last_used_at  # type: ignore[union-attr]  # read, not used
            uses = sorted((u.app_id, u.memory_id, u.action, u.count, u.last_at) for u in tx.app_uses())
            conversations = {(c.key, c.memory_ids, c.first_at, c.last_at) for c in tx.conversations()}
        assert uses == sorted([("app-1", used.id, RECALLED, 3, self.at(30)), ("app-1", archived.id, RECALLED, 3, self.at(30)),
                               ("app-1", read.id, READ, 1, self.at(15)), ("app-2", read.id, READ, 1, self.at(16))])
        assert ("c2", (read.id,), self.at(15), self.at(15)) in conversations
        assert {c[0]: (c[2], c[3]) for c in conversations}["c1"] == (self.at(10), self.at(30))
        with store.read(here) as tx:  # not active: its use is counted, its time not moved
            assert tx.get(archived.id).last_used_at == archived.last_used_at  # type: ignore[union-attr]
        with store.read(other_owner) as tx:
            assert tx.app_uses() == [] and tx.get(elsewhere.id).last_used_at == elsewhere.last_used_at  # type: ignore[union-attr]

    def test_a_later_batch_adds_and_never_moves_a_time_back(self, store: Store) -> None:
        here = self.place(store)
        (memory,) = self.add(store, here, "used twice")
        store.record_batch(here, UseBatch.of([memory.id], self.at(50), "app-1", RECALLED, "c1", mark=True))
        store.record_batch(here, UseBatch.of([memory.id], self.at(40), "app-1", RECALLED, "c1", mark=True))
        with store.read(here) as tx:
            assert tx.get(memory.id).last_used_at == self.at(50)  # type: ignore[union-attr]
            assert [(u.count, u.last_at) for u in tx.app_uses()] == [(2, self.at(50))]
            assert [(c.first_at, c.last_at) for c in tx.conversations()] == [(self.at(40), self.at(50))]

    def test_a_batch_of_memories_gone_writes_nothing_of_them(self, store: Store) -> None:
        here = self.place(store)
        kept, forgotten = self.add(store, here, "kept", "forgotten")
        batch = UseBatch.of([kept.id, forgotten.id, self.new_id(), "not an id"], self.at(60), "app-1", RECALLED,
                            "c1", mark=True)
        with store.write(here) as tx:
            tx.remove([forgotten.id])
            tx.commit()
        assert store.record_batch(here, batch) == 1
        with store.read(here) as tx:
            assert {u.memory_id for u in tx.app_uses()} == {kept.id}
            assert [c.memory_ids for c in tx.conversations()] == [(kept.id,)]
        store.purge_owner(here.owner_id)
        assert store.record_batch(here, batch) == 0
        with store.read(here) as tx:
            assert (tx.app_uses(), tx.conversations(), tx.count()) == ([], [], 0)
        assert here not in set(store.places())
        assert store.record_batch(here, UseBatch()) == 0

    def test_writers_name_the_app_that_first_remembered_each_memory(self, store: Store) -> None:
        """Issue 38, item 5: which app wrote a memory (its row names it), from the apps' uses: the
        earliest `remembered` use of each memory asked for, here only; reads are no writing."""
        here, other_owner, _ = self.places3(store)
        first, second, read, mine = self.add(store, here, "first", "second", "read only", "mine")
        (elsewhere,) = self.add(store, other_owner, "someone else's")
        with store.write(here) as tx:
            tx.record_use("app-2", REMEMBERED, [first.id], self.at(20))  # a later telling by another app
            tx.record_use("app-1", REMEMBERED, [first.id, second.id], self.at(10))
            tx.record_use("app-3", READ, [read.id], self.at(5))
            tx.commit()
        with store.write(other_owner) as tx:
            tx.record_use("app-9", REMEMBERED, [elsewhere.id], self.at(1))
            tx.commit()
        with store.read(here) as tx:
            assert tx.writers([first.id, second.id, read.id, mine.id, elsewhere.id, "not an id"]) == {
                first.id: "app-1", second.id: "app-1"}
            assert tx.writers([]) == {}
