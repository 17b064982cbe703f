"""The store contract on listing: order, cursors, filters, counts, inserts, exact-wording lookup
and the candidates for trimming.
"""

from __future__ import annotations

from typing import Any

import pytest

from portal.contract.base import ContractBase
from portal.domain.text import words_key
from portal.ports import Cursor, Filters, Store


class ListingContract(ContractBase):
    """Listing, counting and inserting memories in one place."""

    def test_list_is_newest_first_and_a_cursor_continues_after_it(self, store: Store) -> None:
        here = self.place(store)
        same = self.at(30)
        made = [self.memory(store, here, f"memory {i}", created_at=self.at(10 + i)) for i in range(5)]
        made += [self.memory(store, here, f"twin {i}", created_at=same) for i in range(3)]
        self.keep(store, here, *made)
        expected = [m.id for m in sorted(made, key=lambda m: (m.created_at, m.id), reverse=True)]
        with store.read(here) as tx:
            assert [m.id for m in tx.list(Filters())] == expected
            assert [m.id for m in tx.list(Filters(), limit=3)] == expected[:3]
            pages: list[str] = []
            cursor: Cursor | None = None
            while True:
                page = tx.list(Filters(), limit=2, after=cursor)
                if not page:
                    break
                pages += [m.id for m in page]
                cursor = Cursor(page[-1].created_at, page[-1].id)
            assert pages == expected
            twin = next(m for m in made if m.id == expected[1])
            assert [m.id for m in tx.list(Filters(), after=Cursor(twin.created_at, twin.id))] == expected[2:]

    def test_list_applies_every_filter(self, store: Store) -> None:
        here = self.place(store)
        goal = self.memory(store, here, "Run a marathon", kind="goal", created_at=self.at(1))
        unseen = self.memory(store, here, "Moved to Lyon", channel="background", seen=False, created_at=self.at(2))
        pinned = self.memory(store, here, "Vegetarian", kind="preference", pinned=True, created_at=self.at(3))
        old = self.memory(store, here, "Had a cat", state="archived", created_at=self.at(4))
        self.keep(store, here, goal, unseen, pinned, old)

        def listed(**kw: Any) -> set[str]:
            with store.read(here) as tx:
                return {m.id for m in tx.list(Filters(**kw))}

        assert listed() == {goal.id, unseen.id, pinned.id}
        assert listed(state="archived") == {old.id}
        assert listed(state=None) == {goal.id, unseen.id, pinned.id, old.id}
        assert listed(kinds=("goal", "preference")) == {goal.id, pinned.id}
        assert listed(kinds=()) == set()
        assert listed(channel="background") == {unseen.id}
        assert listed(channel="foreground") == {goal.id, pinned.id}
        assert listed(seen=False) == {unseen.id}
        assert listed(seen=True) == {goal.id, pinned.id}
        assert listed(pinned=True) == {pinned.id}
        assert listed(pinned=False) == {goal.id, unseen.id}
        assert listed(created_after=self.at(1)) == {unseen.id, pinned.id}
        assert listed(created_before=self.at(3)) == {goal.id, unseen.id}
        assert listed(state=None, created_after=self.at(2), created_before=self.at(4)) == {pinned.id}
        assert listed(state=None, kinds=("fact",), seen=True) == {old.id}

    def test_count_is_per_state(self, store: Store) -> None:
        here = self.place(store)
        self.add(store, here, "one", "two", "three")
        self.add(store, here, "four", state="archived")
        with store.read(here) as tx:
            assert (tx.count(), tx.count("active"), tx.count("archived")) == (3, 3, 1)

    def test_insert_answers_the_active_count_after_it(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        with store.write(here) as tx:
            assert tx.insert(self.memory(store, here, "first")) == 1
            assert tx.insert(self.memory(store, here, "second")) == 2
            assert tx.insert(self.memory(store, here, "shelved", state="archived")) == 2
            tx.commit()
        with store.write(here) as tx:
            assert tx.insert(self.memory(store, here, "third")) == 3
            tx.commit()
        with store.write(other) as tx:
            assert tx.insert(self.memory(store, other, "elsewhere")) == 1
            tx.commit()

    def test_an_id_is_inserted_once(self, store: Store) -> None:
        here = self.place(store)
        (kept,) = self.add(store, here, "original")
        with pytest.raises(Exception), store.write(here) as tx:  # noqa: B017 - any store error will do
            tx.insert(kept.copy(text="impostor"))
        assert self.ids(store, here) == [kept.id]
        self.assert_same(self.read(store, here, kept.id), kept)

    def test_find_words_finds_only_active_memories(self, store: Store) -> None:
        here = self.place(store)
        (active,) = self.add(store, here, "Likes green tea")
        (shelved,) = self.add(store, here, "Plays the cello", state="archived")
        with store.read(here) as tx:
            found = tx.find_words(words_key("likes GREEN tea!", store.words_secret))
            assert [m.id for m in found] == [active.id]
            assert tx.find_words(shelved.words_key) == []
            assert tx.find_words(words_key("Likes black tea", store.words_secret)) == []

    def test_trim_candidates_are_least_important_then_longest_unused(self, store: Store) -> None:
        here = self.place(store)
        unused = self.memory(store, here, "low, never used", importance=1, created_at=self.at(20))
        used_long_ago = self.memory(store, here, "low, used early", importance=1, created_at=self.at(30),
                                    last_used_at=self.at(10))
        used_lately = self.memory(store, here, "low, used lately", importance=1, created_at=self.at(5),
                                  last_used_at=self.at(40))
        middling = self.memory(store, here, "middling", importance=2, created_at=self.at(1))
        pinned = self.memory(store, here, "low but pinned", importance=1, pinned=True, created_at=self.at(2))
        shelved = self.memory(store, here, "low but archived", importance=1, state="archived", created_at=self.at(3))
        self.keep(store, here, unused, used_long_ago, used_lately, middling, pinned, shelved)
        with store.read(here) as tx:
            assert tx.trim_candidates(2) == [used_long_ago.id, unused.id]
            assert tx.trim_candidates(10) == [used_long_ago.id, unused.id, used_lately.id, middling.id]
