"""The store contract on writing: compare-and-set saves, revisions, removal, states, use and seen marks,
and tombstones that keep a forgotten id from coming back.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from portal.contract.base import MODEL, ContractBase
from portal.domain.types import Revision, Source
from portal.ports import Filters, Store


class WritingContract(ContractBase):
    """Changing, undoing and removing memories."""

    def test_save_is_compare_and_set_on_revision(self, store: Store) -> None:
        here = self.place(store)
        (first,) = self.add(store, here, "Lives in Ghent")
        second = first.copy(revision=2, text="Lives in Antwerp", updated_at=self.at(60), last_op="update",
                            embedding=self.embedding(0, 1), importance=4)
        with store.write(here) as tx:
            assert tx.save(second.copy(revision=3, text="stale"), 2) is False
            assert tx.save(second, 1) is True
            assert tx.save(second.copy(revision=3, text="late"), 1) is False
            tx.commit()
        self.assert_same(self.read(store, here, first.id), second)
        with store.write(here) as tx:
            assert tx.save(self.memory(store, here, "never inserted"), 1) is False
            tx.commit()
        assert self.ids(store, here) == [first.id]

    def test_revisions_pop_newest_first(self, store: Store) -> None:
        here = self.place(store)
        (memory,) = self.add(store, here, "Drinks coffee", sources=(Source("portal"),))
        one = self.revision(memory, 1, "Drinks tea")
        two = Revision(
            memory_id=memory.id, revision=2, text="Drinks green tea", kind="preference", importance=5,
            origin="inferred", sources=(Source("consolidation", "conv-1", (2, 4)),), written_at=self.at(70),
            embedding=self.embedding(0, 0, 1), op="replace",
        )
        with store.write(here) as tx:
            assert tx.pop_revision(memory.id) is None
            tx.push_revision(one)
            tx.push_revision(two)
            tx.commit()
        with store.read(here) as tx:
            history = tx.history(memory.id)
        assert [r.revision for r in history] == [2, 1]
        got = history[0]
        assert (got.memory_id, got.text, got.kind, got.importance, got.origin, got.sources, got.written_at, got.op) == (
            two.memory_id, two.text, two.kind, two.importance, two.origin, two.sources, two.written_at, two.op,
        )
        assert got.embedding is not None and got.embedding.model == MODEL
        np.testing.assert_allclose(got.embedding.vector, self.vector(0, 0, 1))
        assert history[1].text == "Drinks tea" and history[1].embedding is None
        with store.write(here) as tx:
            popped = tx.pop_revision(memory.id)
            assert popped is not None and popped.revision == 2 and popped.text == "Drinks green tea"
            assert [r.revision for r in tx.history(memory.id)] == [1]
            tx.commit()
        with store.read(here) as tx:
            assert [r.revision for r in tx.history(memory.id)] == [1]

    def test_remove_and_remove_all_count_memories_and_revisions(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        a, b, c = self.add(store, here, "alpha", "beta", "gamma")
        (elsewhere,) = self.add(store, other, "delta")
        with store.write(here) as tx:
            tx.push_revision(self.revision(a, 1))
            tx.push_revision(self.revision(a, 2))
            tx.push_revision(self.revision(c, 1))
            tx.commit()
        with store.write(other) as tx:
            tx.push_revision(self.revision(elsewhere, 1))
            tx.commit()
        with store.write(here) as tx:
            assert tx.remove([a.id, a.id, self.new_id()]) == (1, 2)
            assert tx.remove([a.id]) == (0, 0)
            assert tx.remove([]) == (0, 0)
            tx.commit()
        assert self.ids(store, here) == [c.id, b.id]
        with store.write(here) as tx:
            assert tx.remove_all() == (2, 1)
            assert tx.remove_all() == (0, 0)
            tx.commit()
        assert self.ids(store, here) == []
        with store.read(other) as tx:
            assert tx.count() == 1 and len(tx.history(elsewhere.id)) == 1

    def test_set_state_counts_what_changed(self, store: Store) -> None:
        here = self.place(store)
        a, b = self.add(store, here, "alpha", "beta")
        with store.write(here) as tx:
            assert tx.set_state([a.id, self.new_id()], "archived") == 1
            assert tx.set_state([a.id, b.id], "archived") == 1
            assert tx.set_state([], "archived") == 0
            tx.commit()
        with store.read(here) as tx:
            assert tx.count("archived") == 2 and tx.count() == 0
        with store.write(here) as tx:
            assert tx.set_state([b.id], "active") == 1
            tx.commit()
        assert self.ids(store, here, Filters()) == [b.id]

    def test_mark_used_touches_only_active_memories(self, store: Store) -> None:
        here = self.place(store)
        (active,) = self.add(store, here, "active")
        (shelved,) = self.add(store, here, "archived", state="archived")
        with store.write(here) as tx:
            assert tx.mark_used([active.id, shelved.id, self.new_id()], self.at(500)) == 1
            assert tx.mark_used([], self.at(500)) == 0
            tx.commit()
        got_active, got_shelved = self.read(store, here, active.id), self.read(store, here, shelved.id)
        assert got_active is not None and got_active.last_used_at == self.at(500)
        assert got_active.updated_at == active.updated_at and got_active.revision == 1
        assert got_shelved is not None and got_shelved.last_used_at is None

    def test_store_mark_used_answers_the_marked_memories_in_order(self, store: Store) -> None:
        here, there, _ = self.places3(store)
        first, second = self.add(store, here, "alpha", "beta")
        (shelved,) = self.add(store, here, "gamma", state="archived")
        (theirs,) = self.add(store, there, "delta")
        asked = [second.id, shelved.id, theirs.id, self.new_id(), first.id, second.id, 42, "bad\x00id"]
        marked = store.mark_used(here, asked, self.at(700))  # type: ignore[arg-type]
        assert [m.id for m in marked] == [second.id, first.id]
        assert all(m.last_used_at == self.at(700) and m.text in ("alpha", "beta") for m in marked)
        with store.read(here) as tx:
            assert tx.get(shelved.id).last_used_at is None  # type: ignore[union-attr]
            assert tx.get(first.id).last_used_at == self.at(700)  # type: ignore[union-attr]
        with store.read(there) as tx:
            assert tx.get(theirs.id).last_used_at is None  # type: ignore[union-attr]
        assert store.mark_used(here, [], self.at(701)) == []

    def test_store_mark_used_answers_whole_memories_with_their_vectors(self, store: Store) -> None:
        here = self.place(store)
        with_vector = self.memory(store, here, "has a vector", embedding=self.embedding(3, 4), kind="goal")
        bare = self.memory(store, here, "has none")
        self.keep(store, here, with_vector, bare)
        got = {m.id: m for m in store.mark_used(here, [with_vector.id, bare.id], self.at(702))}
        self.assert_same(got[with_vector.id], replace(with_vector, last_used_at=self.at(702)))
        self.assert_same(got[bare.id], replace(bare, last_used_at=self.at(702)))
        assert got[bare.id].embedding is None

    def test_mark_seen_counts_only_unseen(self, store: Store) -> None:
        here = self.place(store)
        a, b = self.add(store, here, "alpha", "beta", seen=False, channel="background")
        (c,) = self.add(store, here, "gamma")
        with store.write(here) as tx:
            assert tx.mark_seen([a.id, c.id, self.new_id()]) == 1
            tx.commit()
        assert self.ids(store, here, Filters(seen=False)) == [b.id]
        with store.write(here) as tx:
            assert tx.mark_seen([a.id, b.id]) == 1
            assert tx.mark_seen([]) == 0
            tx.commit()
        assert self.ids(store, here, Filters(seen=False)) == []

    def test_a_tombstoned_id_cannot_come_back(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        (memory,) = self.add(store, here, "Forget me")
        with store.write(here) as tx:
            assert tx.remove([memory.id]) == (1, 0)
            tx.tombstone([memory.id, memory.id], self.at(80))
            tx.tombstone([memory.id], self.at(81))
            tx.commit()
        with store.read(here) as tx:
            assert tx.is_tombstoned(memory.id) and not tx.is_tombstoned(self.new_id())
        with store.read(other) as tx:
            assert not tx.is_tombstoned(memory.id)
        with pytest.raises(Exception), store.write(here) as tx:  # noqa: B017 - any store error will do
            tx.insert(memory)
        assert self.read(store, here, memory.id) is None
