"""The store contract on connected apps: what a person decided about each app, and the apps' uses
of their memories — bound to the place, counted per day, erased with the person, pruned by age,
and enforced through `AppStore` (a blocked app opens nothing, a paused one changes nothing).
"""

from __future__ import annotations

import pytest

from portal.contract.base import ALL, ContractBase
from portal.domain.apps import NO_MEMORY, TEMPORARY, App, AppUse
from portal.domain.errors import Refused
from portal.domain.types import Place
from portal.domain.uses import UseBatch
from portal.ports import Store
from portal.services.apps import AppStore, note_reads
from portal.services.memory_service import MemoryService


class AppsContract(ContractBase):
    """Per-app controls and uses, content-free and bound to their place."""

    def test_app_controls_are_set_changed_and_lifted_in_their_place_only(self, store: Store) -> None:
        here, other_owner, other_scope = self.places3(store)
        with store.write(here) as tx:
            assert tx.app_control("app-1") is None
            assert tx.set_app_control("app-1", "paused", self.at(1)) is True
            assert tx.set_app_control("app-1", "paused", self.at(2)) is False  # nothing changed
            assert tx.set_app_control("app-2", "blocked", self.at(2)) is True
            tx.commit()
        with store.write(here) as tx:
            assert tx.app_controls() == {"app-1": "paused", "app-2": "blocked"}
            assert tx.set_app_control("app-1", "blocked", self.at(3)) is True
            assert tx.set_app_control("app-2", None, self.at(3)) is True
            assert tx.set_app_control("app-3", None, self.at(3)) is False
            tx.commit()
        with store.read(here) as tx:
            assert tx.app_controls() == {"app-1": "blocked"} and tx.app_control("app-1") == "blocked"
        for place in (other_owner, other_scope):
            with store.read(place) as tx:
                assert tx.app_controls() == {} and tx.app_control("app-1") is None

    def test_uses_are_counted_per_app_memory_action_and_day(self, store: Store) -> None:
        here, other_owner, _ = self.places3(store)
        a, b = self.add(store, here, "one", "two")
        with store.write(here) as tx:
            tx.record_use("app-1", "recalled", [a.id, b.id, a.id], self.at(1))  # a once: one use per call
            tx.record_use("app-1", "recalled", [a.id], self.at(5))
            tx.record_use("app-2", "read", [b.id], self.at(6))
            tx.record_use("app-1", "recalled", [a.id], self.at(86_400 * 2))  # another day
            tx.record_use("app-1", "read", [], self.at(7))  # nothing used: nothing kept
            tx.commit()
        with store.read(here) as tx:
            uses = tx.app_uses()
            assert [(u.app_id, u.memory_id, u.action, u.count) for u in uses] == [
                ("app-1", a.id, "recalled", 1), ("app-2", b.id, "read", 1), ("app-1", a.id, "recalled", 2),
                ("app-1", b.id, "recalled", 1),
            ]
            assert uses[2].last_at == self.at(5) and uses[2].day == self.at(1).date()
            assert [(u.app_id, u.action) for u in tx.app_uses(b.id)] == [("app-2", "read"), ("app-1", "recalled")]
        with store.read(other_owner) as tx:
            assert tx.app_uses() == [] and tx.app_uses(a.id) == []

    def test_erasure_takes_the_uses_and_controls_and_prune_the_old_uses(self, store: Store) -> None:
        doomed, kept, _ = self.places3(store)
        for place in (doomed, kept):
            (memory,) = self.add(store, place, f"of {place.owner_id}")
            with store.write(place) as tx:
                tx.record_use("app-1", "read", [memory.id], self.at(1))
                tx.record_use("app-1", "recalled", [memory.id], self.at(86_400 * 10))
                tx.set_app_control("app-1", "paused", self.at(1))
                tx.commit()
        counts = store.purge_owner(doomed.owner_id)
        assert (counts.app_uses, counts.app_controls) == (2, 1)
        with store.read(doomed) as tx:
            assert tx.app_uses() == [] and tx.app_controls() == {}
        assert store.prune_uses(self.at(86_400 * 5)) == 1
        with store.read(kept) as tx:
            assert [u.action for u in tx.app_uses()] == ["recalled"] and tx.app_controls() == {"app-1": "paused"}
        assert store.prune_uses(self.at(86_400 * 5)) == 0

    def test_a_use_of_no_memory_is_counted_and_goes_as_every_use_goes(self, store: Store) -> None:
        """A conversation an app kept temporary is a use of no memory (NO_MEMORY): counted per day
        like any use, named by no memory's uses, erased with the person and pruned by age."""
        here, other_owner, _ = self.places3(store)
        (memory,) = self.add(store, here, "one")
        with store.write(here) as tx:
            tx.record_use("app-1", TEMPORARY, [NO_MEMORY], self.at(1))
            tx.record_use("app-1", TEMPORARY, [NO_MEMORY], self.at(2))
            tx.record_use("app-1", TEMPORARY, [NO_MEMORY], self.at(86_400 * 10))
            tx.record_use("app-1", "recalled", [memory.id], self.at(3))
            tx.commit()
        with store.read(here) as tx:
            assert [(u.memory_id, u.action, u.count) for u in tx.app_uses()] == [
                (NO_MEMORY, TEMPORARY, 1), (memory.id, "recalled", 1), (NO_MEMORY, TEMPORARY, 2)]
            assert [u.action for u in tx.app_uses(memory.id)] == ["recalled"]
        assert store.prune_uses(self.at(86_400 * 5)) == 2
        with store.read(here) as tx:
            assert [(u.memory_id, u.count) for u in tx.app_uses()] == [(NO_MEMORY, 1)]
        with store.read(other_owner) as tx:
            assert tx.app_uses() == []
        assert store.purge_owner(here.owner_id).app_uses == 1
        with store.read(here) as tx:
            assert tx.app_uses() == []

    def test_a_blocked_app_opens_nothing_and_a_paused_one_changes_nothing(self, store: Store) -> None:
        """A paused app may still read and take away (remove, as a forget the person asked for),
        never change or add."""
        here, other_owner, _ = self.places3(store)
        (memory,) = self.add(store, here, "kept")
        with store.write(here) as tx:
            tx.set_app_control("blocked-app", "blocked", self.at(1))
            tx.set_app_control("paused-app", "paused", self.at(1))
            tx.commit()
        blocked = AppStore(store, App("blocked-app", "Blocked"), lambda: self.at(2))
        for opening in (lambda: blocked.read(here), lambda: blocked.write(here)):
            with pytest.raises(Refused) as refused, opening():
                pass
            assert refused.value.code == "app_blocked"
        with pytest.raises(Refused):
            blocked.mark_used(here, [memory.id], self.at(2))
        with pytest.raises(Refused):
            blocked.purge_owner(here.owner_id, [here.scope])
        with blocked.read(other_owner) as tx:  # the block is this person's, not another's
            assert tx.list(ALL) == []
        paused = AppStore(store, App("paused-app", "Paused"), lambda: self.at(3))
        with paused.write(here) as tx:
            assert tx.settings().paused is True and tx.get(memory.id) is not None
            for change in (lambda: tx.save(memory.copy(importance=5), memory.revision),
                           lambda: tx.set_state([memory.id], "archived"), lambda: tx.mark_seen([memory.id]),
                           lambda: tx.set_app_control("paused-app", None, self.at(3))):
                with pytest.raises(Refused):
                    change()
        assert [m.id for m in paused.mark_used(here, [memory.id], self.at(3))] == [memory.id]  # it may read
        with store.read(here) as tx:
            assert tx.settings().paused is False  # the person's own pause is untouched
            assert tx.count() == 1
            assert [(u.app_id, u.action) for u in tx.app_uses(memory.id)] == [("paused-app", "recalled")]
        with paused.write(here) as tx:
            assert tx.remove([memory.id]) == (1, 0)
            tx.commit()
        with store.read(here) as tx:
            assert ("paused-app", "forgot") in [(u.app_id, u.action) for u in tx.app_uses(memory.id)]

    def test_a_use_is_not_recorded_for_memories_gone_since_they_were_read(self, store: Store) -> None:
        """Reads are recorded after they answered: an erasure landing between leaves no use behind."""
        here = self.place(store)
        (memory,) = self.add(store, here, "kept")
        view = MemoryService(store, clock=lambda: self.at(5)).for_app(App("reader", "Reader"))
        store.purge_owner(here.owner_id)
        note_reads(view.ctx, here, "read", [memory.id])
        with store.read(here) as tx:
            assert tx.app_uses() == []
        assert here not in set(store.places())

    def test_mark_used_for_an_app_and_record_batch_count_what_is_there_only(self, store: Store) -> None:
        here, other_owner, _ = self.places3(store)
        active, archived = self.add(store, here, "active one", "archived one")
        (elsewhere,) = self.add(store, other_owner, "someone else's")
        with store.write(here) as tx:
            tx.set_state([archived.id], "archived")
            tx.commit()
        marked = store.mark_used(here, [active.id, archived.id, elsewhere.id, "no-such-id"], self.at(1), app_id="app-1")
        assert [m.id for m in marked] == [active.id]
        counted = store.record_batch(here, UseBatch.of([archived.id, elsewhere.id, active.id, "\x00"], self.at(2), "app-1",
                                                       "read"))
        assert counted == 2  # any state, this place's only
        with store.read(here) as tx:
            assert sorted((u.memory_id, u.action) for u in tx.app_uses()) == sorted(
                [(active.id, "recalled"), (archived.id, "read"), (active.id, "read")])
        with store.read(other_owner) as tx:
            assert tx.app_uses() == []
        assert store.mark_used(here, [active.id], self.at(3)) and len(self.uses(store, here)) == 3  # no app: no use

    def uses(self, store: Store, place: Place) -> list[AppUse]:
        with store.read(place) as tx:
            return tx.app_uses()
