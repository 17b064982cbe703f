"""The store contract on scopes (issue 39): an agent, app or run id a memory carries
(`portal.domain.attributes.ENTITY_NAMES`) is part of what the memory is. The same words, or the
same meaning, said under another scope are another memory: they neither reinforce nor replace the
one kept under the first, on every store, through the service. A memory of no scope (the person's
own) meets its repeats as it always did, and only those of no scope.

The store's part: `find_words` answers every active memory with those words, whatever they carry,
so that the service chooses the one of the same scope (the attributes are encrypted where the text
is: no store filters by them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from portal.contract.base import MODEL, ContractBase
from portal.domain.options import Options
from portal.domain.text import words_key
from portal.domain.types import Place
from portal.ports import Filters, Store
from portal.services.memory_service import MemoryService

ALL = Filters(state=None)


class _Meaning:
    """Every text means the same (one vector): whatever the words, a write meets the nearest memory."""

    model_id = MODEL

    def __init__(self, dimensions: int) -> None:
        self.vector = np.zeros(dimensions, dtype=np.float32)
        self.vector[0] = 1.0

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        return np.stack([self.vector for _ in texts]), self.model_id


class ScopesContract(ContractBase):
    """Duplicates, reinforcement and replacement within one scope only."""

    def scoped_service(self, store: Store) -> MemoryService:
        return MemoryService(store, embedder=_Meaning(self.vector_dimensions), clock=self.tick,
                             options=Options(on_duplicate="replace"))

    def scoped_texts(self, store: Store, place: Place) -> list[tuple[str, str | None]]:
        with store.read(place) as tx:
            return sorted((m.text, (m.attributes or {}).get("run_id")) for m in tx.list(ALL))

    def test_find_words_answers_every_active_memory_with_those_words(self, store: Store) -> None:
        here = self.place(store)
        first, second = self.add(store, here, "Likes green tea", "Likes GREEN tea!")
        self.add(store, here, "Likes green tea", state="archived")
        with store.read(here) as tx:
            found = tx.find_words(words_key("likes green tea", store.words_secret))
            assert sorted(m.id for m in found) == sorted([first.id, second.id])
            assert tx.find_words(words_key("Likes black tea", store.words_secret)) == []

    def test_the_same_words_under_another_run_are_another_memory(self, store: Store) -> None:
        here, service = self.place(store), self.scoped_service(store)
        a = service.remember(here, "Likes green tea", attributes={"run_id": "run-A"})
        b = service.remember(here, "Likes green tea", attributes={"run_id": "run-B"})
        assert (b.reinforced, b.replaced_id) == (False, None) and b.memory.id != a.memory.id
        again = service.remember(here, "likes green tea", attributes={"run_id": "run-B", "metadata": {"n": 1}})
        assert again.memory.id == b.memory.id  # met (metadata is no scope)
        agent = service.remember(here, "Likes green tea", attributes={"run_id": "run-B", "agent_id": "bot"})
        assert agent.memory.id not in (a.memory.id, b.memory.id)
        assert self.scoped_texts(store, here) == [("Likes green tea", "run-A"), ("Likes green tea", "run-B"),
                                                  ("likes green tea", "run-B")]  # run-B's, corrected

    def test_a_correction_under_another_run_replaces_nothing_of_the_first(self, store: Store) -> None:
        here, service = self.place(store), self.scoped_service(store)
        a = service.remember(here, "Owns 1 bike", attributes={"run_id": "run-A"})
        b = service.remember(here, "Owns 2 bikes", attributes={"run_id": "run-B"})
        assert b.replaced_id is None and b.memory.id != a.memory.id
        corrected = service.remember(here, "Owns 3 bikes", attributes={"run_id": "run-A"})
        assert corrected.replaced_id == a.memory.id  # within its own run, a correction replaces as before
        assert self.scoped_texts(store, here) == [("Owns 2 bikes", "run-B"), ("Owns 3 bikes", "run-A")]

    def test_a_memory_of_no_scope_meets_only_those_of_no_scope(self, store: Store) -> None:
        here, service = self.place(store), self.scoped_service(store)
        scoped = service.remember(here, "Lives in Lyon", attributes={"agent_id": "travel-bot"})
        own = service.remember(here, "Lives in Lyon")
        assert not own.reinforced and own.memory.id != scoped.memory.id
        assert service.remember(here, "Lives in Lyon").memory.id == own.memory.id
        moved = service.remember(here, "Lives in Paris")
        assert moved.replaced_id == own.memory.id
        with store.read(here) as tx:
            assert tx.get(scoped.memory.id).text == "Lives in Lyon"  # type: ignore[union-attr]

    def test_the_nearest_of_the_same_scope_is_met_behind_many_of_others(self, store: Store) -> None:
        here, service = self.place(store), self.scoped_service(store)
        mine = service.remember(here, "Rides to work", attributes={"run_id": "mine"})
        for n in range(6):
            service.remember(here, f"Rides to work {n}", attributes={"run_id": f"other-{n}"})
        met = service.remember(here, "Cycles to work", attributes={"run_id": "mine"})
        assert met.replaced_id == mine.memory.id
        with store.read(here) as tx:
            assert len(tx.list(ALL)) == 7
