"""The store contract on places and isolation: a memory comes back whole in its own place and nowhere
else, an odd id is simply not found, the store lists the places it holds, and a write that is not
committed leaves nothing behind.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest

from portal.contract.base import ALL, ContractBase
from portal.domain.types import Place, Source
from portal.ports import Filters, Settings, Store


class PlacesContract(ContractBase):
    """Places keep to themselves; transactions keep all or nothing."""

    # ================================================================== places

    def test_a_memory_comes_back_whole_in_its_place(self, store: Store) -> None:
        here = self.place(store)
        want = self.memory(
            store, here, "Élodie prefers C# over snake_case Python", kind="preference", importance=5,
            role="assistant", origin="inferred", channel="background", seen=False, pinned=True,
            last_used_at=self.at(3.5), last_op="replace", embedding=self.embedding(0.5, -0.25, 1.0),
            sources=(Source("consolidation", "conv-7", (0, 3)), Source("api")),
            created_at=self.at(1.000123), updated_at=self.at(2.000456),
            attributes={"agent_id": "bot-7", "metadata": {"topic": "code", "nested": {"n": [1, 2.5, None, True]}},
                        "categories": ["work", "préférences"], "expiration_date": "2030-01-31", "timestamp": 1700000000},
        )
        with store.write(here) as tx:
            assert tx.get(want.id) is None
            tx.insert(want)
            self.assert_same(tx.get(want.id), want)
            tx.commit()
        self.assert_same(self.read(store, here, want.id), want)
        with store.read(here) as tx:
            got = tx.get(want.id)
            assert got is not None and got.place == here
            assert got.created_at.utcoffset() == timedelta(0)
            self.assert_same(tx.list(Filters(state=None))[0], want)

    def test_the_people_of_a_tenant_are_listed_without_those_who_blocked_an_app(self, store: Store) -> None:
        here, other_owner, other_scope = self.places3(store)
        for place in (here, other_owner, other_scope):
            self.add(store, place, "one")
        assert store.people(here.scope) == sorted([here.owner_id, other_owner.owner_id])
        with store.write(other_owner) as tx:
            tx.set_app_control("app-1", "blocked", self.at(1))
            tx.commit()
        assert store.people(here.scope, hidden_from="app-1") == [here.owner_id]
        assert store.people(here.scope, hidden_from="app-2") == sorted([here.owner_id, other_owner.owner_id])
        assert store.people("\x00") == [] and store.people(self.new_id()) == []
        store.purge_owner(here.owner_id)
        assert store.people(here.scope) == [other_owner.owner_id]

    def test_what_is_kept_with_a_memory_changes_with_it_and_none_stays_none(self, store: Store) -> None:
        here = self.place(store)
        (plain,) = self.add(store, here, "no attributes")

        def kept() -> object:
            got = self.read(store, here, plain.id)
            assert got is not None
            return got.attributes

        assert kept() is None
        with store.write(here) as tx:
            assert tx.save(plain.copy(attributes={"run_id": "r-1"}), plain.revision)
            tx.commit()
        assert kept() == {"run_id": "r-1"}
        with store.write(here) as tx:
            assert tx.save(plain.copy(attributes=None), plain.revision)
            tx.commit()
        assert kept() is None

    def test_nothing_crosses_to_another_owner_or_scope(self, store: Store) -> None:
        here, other_owner, other_scope = self.places3(store)
        mine = self.memory(store, here, "Tea with oat milk", seen=False, embedding=self.embedding(1, 0))
        gone = self.new_id()
        with store.write(here) as tx:
            tx.insert(mine)
            tx.push_revision(self.revision(mine, 1, "Tea"))
            tx.tombstone([gone], self.at(9))
            tx.put_receipt(self.receipt("key-1", mine.id))
            tx.commit()
        for there in (other_owner, other_scope):
            with store.write(there) as tx:
                assert tx.get(mine.id) is None
                assert tx.get_many([mine.id]) == []
                assert tx.list(ALL) == []
                assert tx.count() == 0
                assert tx.find_words(mine.words_key) == []
                assert tx.nearest(self.embedding(1, 0), 5, Filters()) == []
                assert tx.search_words("tea oat milk", 5, Filters()) == []
                assert tx.search_words("oat", 5, ALL) == []
                assert tx.history(mine.id) == []
                assert tx.trim_candidates(5) == []
                assert tx.is_tombstoned(gone) is False
                assert tx.get_receipt("key-1") is None
                assert tx.mark_used([mine.id], self.at(20)) == 0
                assert tx.mark_seen([mine.id]) == 0
                assert tx.set_state([mine.id], "archived") == 0
                assert tx.save(mine.copy(revision=2, text="stolen"), 1) is False
                assert tx.pop_revision(mine.id) is None
                assert tx.remove([mine.id]) == (0, 0)
                assert tx.remove_all() == (0, 0)
                tx.commit()
        with store.read(here) as tx:
            self.assert_same(tx.get(mine.id), mine)
            assert [r.text for r in tx.history(mine.id)] == ["Tea"]
            assert tx.is_tombstoned(gone)
            receipt = tx.get_receipt("key-1")
            assert receipt is not None and receipt.response is not None and not receipt.redacted

    def test_an_id_of_another_shape_is_simply_not_found(self, store: Store) -> None:
        here = self.place(store)
        (real,) = self.add(store, here, "Walks the dog at seven")
        odd: list[Any] = [
            "", "not-an-id", "x" * 300, str(uuid4()), real.id + "x", real.id[:-1], "a\x00b", "\ud800",
            "' OR 1=1 --", "%", 42, None, b"bytes", 3.5, ("tuple",),
        ]
        with store.read(here) as tx:
            for value in odd:
                assert tx.get(value) is None, repr(value)
            assert [m.id for m in tx.get_many([*odd, real.id])] == [real.id]
            assert tx.get_many([]) == []

    def test_places_lists_each_place_holding_memories(self, store: Store) -> None:
        here, other_owner, other_scope = self.places3(store)
        for place in (here, other_owner, other_scope):
            self.add(store, place, "one", "two")
        listed = list(store.places())
        assert all(isinstance(p, Place) for p in listed)
        assert {here, other_owner, other_scope} <= set(listed)
        assert len([p for p in listed if p in (here, other_owner, other_scope)]) == 3
        store.purge_owner(other_owner.owner_id)
        assert other_owner not in set(store.places())
        assert {here, other_scope} <= set(store.places())

    def test_the_scopes_of_an_owner_are_those_keeping_anything_under_their_id(self, store: Store) -> None:
        """Where a person named by their owner id alone is (the operator's command line): every
        scope keeping anything of theirs, a setting alone too, and none once it is erased."""
        here, other_owner, other_scope = self.places3(store)
        self.add(store, here, "one")
        self.add(store, other_owner, "two")
        assert store.scopes_of(here.owner_id) == [here.scope]
        with store.write(other_scope) as tx:
            tx.set_settings(Settings(paused=True))
            tx.commit()
        assert store.scopes_of(here.owner_id) == sorted([here.scope, other_scope.scope])
        assert store.scopes_of(self.new_id()) == [] and store.scopes_of("\x00") == []
        store.purge_owner(here.owner_id, [here.scope])
        assert store.scopes_of(here.owner_id) == [other_scope.scope]
        assert store.scopes_of(other_owner.owner_id) == [other_owner.scope]

    def test_a_memory_named_by_its_id_alone_is_found_in_its_tenant_only(self, store: Store) -> None:
        """mem0's routes name a memory without its person: the tenant's place holding it, in any
        state, and never a place of another tenant; gone once the memory is."""
        here, other_owner, other_scope = self.places3(store)
        (mine,) = self.add(store, here, "one")
        (theirs,) = self.add(store, other_owner, "two")
        (archived,) = self.add(store, here, "three", state="archived")
        assert store.memory_place(here.scope, mine.id) == here
        assert store.memory_place(here.scope, theirs.id) == other_owner
        assert store.memory_place(here.scope, archived.id) == here
        assert store.memory_place(other_scope.scope, mine.id) is None  # another tenant's
        assert store.memory_place(here.scope, self.new_id()) is None and store.memory_place(here.scope, "\x00") is None
        with store.write(here) as tx:
            tx.remove([mine.id])
            tx.commit()
        assert store.memory_place(here.scope, mine.id) is None

    # ================================================================== transactions

    def test_leaving_a_write_without_commit_keeps_nothing(self, store: Store) -> None:
        here = self.place(store)
        kept, doomed = self.add(store, here, "kept", "doomed")
        with store.write(here) as tx:
            tx.push_revision(self.revision(kept, 1))
            tx.commit()
        with store.write(here) as tx:
            tx.insert(self.memory(store, here, "never kept"))
            assert tx.save(kept.copy(revision=2, text="changed"), 1)
            tx.push_revision(self.revision(kept, 2))
            tx.mark_used([kept.id], self.at(99))
            tx.set_state([kept.id], "archived")
            tx.remove([doomed.id])
            tx.tombstone([doomed.id], self.at(99))
            tx.set_settings(Settings(paused=True))
            tx.claim_ref("conv-9", self.at(99))
            tx.put_receipt(self.receipt("idem-9", kept.id))
            assert tx.count() == 1
        with store.read(here) as tx:
            assert {m.id for m in tx.list(ALL)} == {kept.id, doomed.id}
            self.assert_same(tx.get(kept.id), kept)
            assert [r.revision for r in tx.history(kept.id)] == [1]
            assert not tx.is_tombstoned(doomed.id)
            assert tx.settings().paused is False
            assert tx.get_receipt("idem-9") is None
        with store.write(here) as tx:
            assert tx.claim_ref("conv-9", self.at(100)) is True

    def test_an_error_inside_a_write_keeps_nothing(self, store: Store) -> None:
        here = self.place(store)
        with pytest.raises(RuntimeError, match="boom"), store.write(here) as tx:
            tx.insert(self.memory(store, here, "half written"))
            tx.set_settings(Settings(paused=True))
            raise RuntimeError("boom")
        with store.read(here) as tx:
            assert tx.count() == 0 and tx.settings().paused is False

    def test_a_read_does_not_see_an_uncommitted_write(self, store: Store) -> None:
        here = self.place(store)
        pending = self.memory(store, here, "pending")
        with store.write(here) as tx:
            tx.insert(pending)
            assert self.read(store, here, pending.id) is None
            tx.commit()
        assert self.read(store, here, pending.id) is not None
