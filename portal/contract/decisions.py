"""The store contract on what a person decides about each memory (issue 29): a memory past its
`expires_at` is in no answer of any read, by the store's clock, and `expired` finds it for the
sweep; a memory withheld from an app (`Filters.app`) is left out of that app's lists and rankings
and of its use marks; which memories served which conversation of which app, kept, counted, erased
with the memory and the person, pruned with the uses; the person's `learnt_days` setting.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta

import numpy as np

from portal.contract.base import ALL, ContractBase
from portal.domain.apps import App
from portal.domain.types import Memory, Place
from portal.domain.uses import UseBatch
from portal.ports import Filters, Settings, Store
from portal.services.memory_service import MemoryService

# App ids a LIKE pattern could misread: wildcards, a quote, a backslash.
ODD_APPS = ("app%", "ap_", 'a"pp', "a\\pp")
KAYAK, KAYAK_AGAIN, KAYAK_MEANT = "Rents a kayak on Sundays", "rents a KAYAK on sundays!", "Hires a kayak each Sunday"


class Meanings:
    """An embedder for the suite's service calls: the kayak sentences point one way (the third
    0.995 close to the first, a duplicate by meaning), every other text another."""

    model_id = "contract-meanings"

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in zip(out, texts, strict=True):
            row[:2] = (1.0, 0.0) if text.lower().startswith("rents") else (0.995, 0.0998) if "kayak" in text else (0, 1)
        return out, self.model_id


class DecisionsContract(ContractBase):
    """Expiry, "don't use this" and conversation uses, through the protocol."""

    @contextmanager
    def clock_at(self, store: Store, seconds: float) -> Iterator[None]:
        before = store.clock
        store.clock = lambda: self.at(seconds)
        try:
            yield
        finally:
            store.clock = before

    def seen_by_every_read(self, store: Store, place: Place, memory: Memory) -> dict[str, bool]:
        with store.read(place) as tx:
            return {
                "get": tx.get(memory.id) is not None,
                "get_many": bool(tx.get_many([memory.id])),
                "list": memory.id in [m.id for m in tx.list(Filters())],
                "list_all": memory.id in [m.id for m in tx.list(ALL)],
                "count": tx.count() == 1,
                "find_words": tx.find_words(memory.words_key) != [],
                "nearest": memory.id in [i for i, _ in tx.nearest(self.embedding(1, 0), 5, Filters())],
                "words": memory.id in [i for i, _ in self.search_words(store, tx, "kayak", 5, Filters())],
                "mean": tx.mean_vector(self.embedding(1, 0).model, self.vector_dimensions, Filters()) is not None,
            }

    def test_an_expired_memory_is_in_no_answer_and_the_sweep_finds_it(self, store: Store) -> None:
        here = self.place(store)
        (memory,) = self.add(store, here, "Rents a kayak on Sundays", expires_at=self.at(500),
                             embedding=self.embedding(1, 0))
        with self.clock_at(store, 499):
            assert all(self.seen_by_every_read(store, here, memory).values())
            assert store.expired(self.at(499), 10) == []
            assert [m.id for m in store.mark_used(here, [memory.id], self.at(499))] == [memory.id]
        with self.clock_at(store, 500):
            assert not any(self.seen_by_every_read(store, here, memory).values())
            assert store.mark_used(here, [memory.id], self.at(500)) == []
            assert store.expired(self.at(500), 10) == [(here, memory.id)]
            with store.write(here) as tx:
                assert tx.remove([memory.id]) == (1, 0)
                tx.commit()
            assert store.expired(self.at(10_000), 10) == []

    def test_an_expiry_is_kept_changed_and_cleared(self, store: Store) -> None:
        here = self.place(store)
        (memory,) = self.add(store, here, "Rents a kayak", expires_at=self.at(900))
        with self.clock_at(store, 10):
            self.assert_same(self.read(store, here, memory.id), memory)
            with store.write(here) as tx:
                assert tx.save(memory.copy(expires_at=None), memory.revision)
                tx.commit()
            assert self.read(store, here, memory.id).expires_at is None  # type: ignore[union-attr]
        with self.clock_at(store, 10_000):
            assert self.read(store, here, memory.id) is not None
            assert store.expired(self.at(10_000), 10) == []

    def test_expired_lists_every_place_soonest_first_up_to_the_limit(self, store: Store) -> None:
        here, other_owner, other_scope = self.places3(store)
        (late,) = self.add(store, here, "late", expires_at=self.at(300))
        (early,) = self.add(store, other_owner, "early", expires_at=self.at(100))
        (middle,) = self.add(store, other_scope, "middle", expires_at=self.at(200))
        self.add(store, here, "never")
        assert store.expired(self.at(1000), 10) == [(other_owner, early.id), (other_scope, middle.id), (here, late.id)]
        assert store.expired(self.at(1000), 2) == [(other_owner, early.id), (other_scope, middle.id)]
        assert store.expired(self.at(150), 10) == [(other_owner, early.id)]

    def test_a_withheld_memory_is_left_out_for_that_app_only(self, store: Store) -> None:
        here = self.place(store)
        free, from_all, from_one = self.add(store, here, "kayak one", "kayak two", "kayak three",
                                            embedding=self.embedding(1, 0))
        with store.write(here) as tx:
            tx.save(from_all.copy(withheld=("*",)), 1)
            tx.save(from_one.copy(withheld=("app-1", *ODD_APPS)), 1)
            tx.commit()
        everyone = {free.id, from_all.id, from_one.id}
        for app, expected in (
            (None, everyone), ("app-1", {free.id}), ("app-2", {free.id, from_one.id}),
            *((odd, {free.id}) for odd in ODD_APPS), ("app", {free.id, from_one.id}), ("a", {free.id, from_one.id}),
        ):
            filters = Filters(app=app)
            with store.read(here) as tx:
                assert {m.id for m in tx.list(filters)} == expected, app
                assert {i for i, _ in tx.nearest(self.embedding(1, 0), 10, filters)} == expected, app
                assert {i for i, _ in self.search_words(store, tx, "kayak", 10, filters)} == expected, app
            marked = store.mark_used(here, sorted(everyone), self.at(50), app_id=app)
            assert {m.id for m in marked} == expected, app
        with store.read(here) as tx:  # the person keeps and sees everything
            got = {m.id: m.withheld for m in tx.list(ALL)}
        assert got == {free.id: (), from_all.id: ("*",), from_one.id: ("app-1", *ODD_APPS)}

    def test_an_app_repeating_a_memory_withheld_from_it_reinforces_it_and_it_stays_withheld(self, store: Store) -> None:
        """Issue 38, item 17: the app's words (the same, or the same meaning) meet the memory the person
        withheld: it is reinforced, never a second memory the app could receive; the app is answered
        with its own words under that id as if they had just been kept (a first revision, its own
        channel, the moment it spoke), and nothing else the person keeps: not how often the memory
        was corrected, whether the assistant learnt it, nor when."""
        bot, moment = App("app-1", "Bot"), [self.at(10)]
        person = MemoryService(store, embedder=Meanings(self.vector_dimensions), clock=lambda: moment[0])
        for withheld_from in (None, bot.id):
            here = self.place(store, owner=f"owner-{withheld_from or 'all'}")
            moment[0] = self.at(10)
            learnt = person.remember(here, "Rents a kayak on Saturdays", importance=2, origin="inferred",
                                     channel="background", attributes={"metadata": {"club": "Ghent"}}).memory
            kept = person.update(here, learnt.id, text=KAYAK).memory
            person.set_use(here, kept.id, False, withheld_from)
            app = person.for_app(bot)
            for said, importance in ((KAYAK_AGAIN, 4), (KAYAK_MEANT, None)):
                moment[0] += timedelta(minutes=5)
                saved = app.remember(here, said, importance=importance, pinned=True)
                assert (saved.reinforced, saved.replaced_id, saved.memory.id) == (True, None, kept.id), said
                assert saved.memory.text == said and saved.memory.attributes is None and not saved.memory.usable_by(bot.id)
                shown = saved.memory
                assert (shown.revision, shown.channel, shown.origin, shown.created_at, shown.updated_at) == (
                    1, "foreground", "asserted", moment[0], moment[0]), said
            with store.read(here) as tx:
                (now,) = tx.list(ALL)
            assert (now.id, now.text, now.revision, now.importance, now.pinned) == (kept.id, KAYAK, 2, 4, False)
            assert (now.channel, now.created_at) == ("background", self.at(10))
            assert now.withheld == (("*",) if withheld_from is None else (bot.id,))
            assert app.list(here).items == [] and app.recall(here, "kayak sunday") == []

    def test_withholding_a_cached_memory_takes_it_out_of_the_next_ranking(self, store: Store) -> None:
        here = self.place(store)
        (memory,) = self.add(store, here, "kayak", embedding=self.embedding(1, 0))
        with store.read(here) as tx:  # a ranking fills whatever cache the store keeps
            assert [i for i, _ in tx.nearest(self.embedding(1, 0), 5, Filters(app="app-1"))] == [memory.id]
        with store.write(here) as tx:
            tx.save(memory.copy(withheld=("app-1",)), 1)
            tx.commit()
        with store.read(here) as tx:
            assert tx.nearest(self.embedding(1, 0), 5, Filters(app="app-1")) == []
            assert self.search_words(store, tx, "kayak", 5, Filters(app="app-1")) == []
            assert [i for i, _ in tx.nearest(self.embedding(1, 0), 5, Filters(app="app-2"))] == [memory.id]

    def test_conversations_keep_which_memories_each_was_given(self, store: Store) -> None:
        here, other_owner, _ = self.places3(store)
        a, b = self.add(store, here, "kayak", "tea")
        store.mark_used(here, [a.id, b.id], self.at(10), app_id="app-1", conversation="c1")
        store.record_batch(here, UseBatch.of([a.id], self.at(20), "app-1", "read", "c1"))
        store.record_batch(here, UseBatch.of([b.id, "no-such-id"], self.at(30), "app-2", "read", "c2"))
        store.mark_used(here, [a.id], self.at(40), app_id="app-1")  # no conversation named: none kept
        with store.read(here) as tx:
            found = tx.conversations()
            assert [(c.app_id, c.key, c.first_at, c.last_at, c.memory_ids) for c in found] == [
                ("app-2", "c2", self.at(30), self.at(30), (b.id,)),
                ("app-1", "c1", self.at(10), self.at(20), (a.id, b.id)),
            ]
            assert tx.conversations(limit=1)[0].key == "c2"
            assert [(c.app_id, c.conversations, c.last_at) for c in tx.conversation_counts(a.id)] == [
                ("app-1", 1, self.at(20))]
            assert [(c.app_id, c.conversations) for c in tx.conversation_counts(b.id)] == [("app-2", 1), ("app-1", 1)]
        with store.read(other_owner) as tx:
            assert tx.conversations() == [] and tx.conversation_counts(a.id) == []

    def test_a_forgotten_memory_leaves_its_conversations_and_erasure_takes_them_all(self, store: Store) -> None:
        here = self.place(store)
        a, b = self.add(store, here, "kayak", "tea")
        store.mark_used(here, [a.id, b.id], self.at(10), app_id="app-1", conversation="c1")
        with store.write(here) as tx:
            tx.remove([a.id])
            tx.commit()
        with store.read(here) as tx:
            assert [c.memory_ids for c in tx.conversations()] == [(b.id,)]
            assert tx.conversation_counts(a.id) == []
        counts = store.purge_owner(here.owner_id)
        assert counts.app_uses >= 2  # the app's use and the conversation's
        with store.read(here) as tx:
            assert tx.conversations() == []

    def test_conversations_are_pruned_with_the_uses(self, store: Store) -> None:
        here = self.place(store)
        a, b = self.add(store, here, "kayak", "tea")
        store.mark_used(here, [a.id], self.at(10), app_id="app-1", conversation="old")
        store.mark_used(here, [b.id], self.at(1000), app_id="app-1", conversation="new")
        assert store.prune_uses(self.at(500)) >= 2  # the old use and the old conversation
        with store.read(here) as tx:
            assert [c.key for c in tx.conversations()] == ["new"]

    def test_the_learnt_days_setting_is_kept_beside_the_pause(self, store: Store) -> None:
        here, other_owner, _ = self.places3(store)
        with store.write(here) as tx:
            tx.set_settings(Settings(paused=True, learnt_days=90))
            tx.commit()
        with store.read(here) as tx:
            assert tx.settings() == Settings(paused=True, learnt_days=90)
        with store.write(here) as tx:
            tx.set_settings(replace(tx.settings(), paused=False))
            tx.commit()
        with store.read(here) as tx:
            assert tx.settings() == Settings(paused=False, learnt_days=90)
        with store.read(other_owner) as tx:
            assert tx.settings().learnt_days is None
