"""The store contract on rankings: equal scores fall by id, so that a recall answers the same
memories in the same order on every store, with or without the recall cache (DESIGN §5).

The documented key: best score first; equal scores (to 1e-6) by memory id, ascending. The checks
keep the memories in the reverse of id order, so a store answering in the order it keeps rows, or
in the order a partial sort leaves them, fails.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from portal.contract.base import MODEL, ContractBase
from portal.domain.options import Options
from portal.domain.types import Embedding, Memory, Place
from portal.ports import Filters, Store
from portal.services.memory_service import MemoryService


class TableEmbedder:
    """Vectors given by hand for the texts a check remembers and recalls."""

    model_id = MODEL

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        return np.stack([self.table[t] for t in texts]), self.model_id


class RankingContract(ContractBase):
    """Ties broken by id in the vector ranking, the word ranking and recall."""

    def reverse_kept(
        self, store: Store, place: Place, texts: Sequence[str], vectors: Sequence[Sequence[float]]
    ) -> list[str]:
        """Memories with these texts and vectors kept in descending id order; their ids, ascending."""
        ids = sorted(self.new_id() for _ in texts)
        memories = [
            self.memory(store, place, text, embedding=self.embedding(*vector)).copy(id=memory_id)
            for memory_id, text, vector in zip(ids, texts, vectors, strict=True)
        ]
        self.keep(store, place, *reversed(memories))
        return ids

    def test_nearest_breaks_ties_by_id_also_at_the_cut(self, store: Store) -> None:
        here = self.place(store)
        same = [(1.0, 1.0, 0.0)] * 6
        tied = self.reverse_kept(store, here, [f"twin {n}" for n in range(6)], same)
        best = self.reverse_kept(store, here, ["best"], [(1.0, 1.2, 0.0)])
        for opened in (store.read, store.write, store.read):  # twice: the cache's index, once made
            with opened(here) as tx:
                assert [i for i, _ in tx.nearest(self.embedding(1, 1.2), 10, Filters())] == best + tied
                assert [i for i, _ in tx.nearest(self.embedding(1, 1.2), 4, Filters())] == best + tied[:3]
                assert [i for i, _ in tx.nearest(self.embedding(1, 1), 2, Filters())] == tied[:2]

    def test_search_words_breaks_ties_by_id(self, store: Store) -> None:
        here = self.place(store)
        tied = self.reverse_kept(store, here, ["Has a cat called Miso"] * 4, [(1.0, 0.0)] * 4)
        self.add(store, here, "Likes green tea")
        for opened in (store.read, store.write):
            with opened(here) as tx:
                assert [i for i, _ in self.search_words(store, tx, "cat", 10, Filters())] == tied
                assert [i for i, _ in self.search_words(store, tx, "cat", 2, Filters())] == tied[:2]

    def test_recall_answers_the_documented_order(self, store: Store) -> None:
        """Through the service: identical memories by id, fused scores equal to 1e-6 by id, the
        same answer read again (from the cache, where there is one)."""
        here = self.place(store)
        texts = ["Has a cat called Miso"] * 4 + ["Has a dog", "Likes green tea"]
        vectors = [self.vector(1, 0.2)] * 4 + [self.vector(1, 0.2 + 1e-7), self.vector(0, 1)]
        embedder = TableEmbedder({"a pet cat": self.vector(1, 0.2)})
        embedder.table.update(zip(texts, vectors, strict=False))
        ids = sorted(self.new_id() for _ in texts)
        memories: list[Memory] = []
        for memory_id, text, vector in zip(ids, texts, vectors, strict=True):
            memories.append(self.memory(store, here, text, embedding=self.embedding(*vector)).copy(id=memory_id))
        self.keep(store, here, *reversed(memories))
        service = MemoryService(store, embedder, options=Options(feedback_memories=0, meaning_centering=0.0))
        first = [h.memory.id for h in service.recall(here, "a pet cat", limit=6, mark=False)]
        # "cat" is a word of the four cats only: they lead, in id order; then the dog (as close as
        # they are by meaning, to 1e-7, but no word in common), then the tea.
        assert first == ids
        assert [h.memory.id for h in service.recall(here, "a pet cat", limit=6, mark=False)] == first
        assert [h.memory.id for h in service.recall(here, "a pet cat", limit=2, mark=False)] == first[:2]

    def test_a_memory_scores_the_same_whatever_else_its_place_holds(self, store: Store) -> None:
        """Issue 39: a hit's score depends on the query and the memory alone, so a threshold means
        the same with 2 memories or 2,000: the same memory, alone with 2 others or among 2,000 (some
        closer to the query, some sharing its words), gets the same score, and a memory of neither
        meaning nor words scores low everywhere."""
        rng = np.random.default_rng(39)
        target, unrelated = "Lives in Lyon near the river", "Collects stamps"
        embedder = TableEmbedder({"where does she live": self.vector(1, 0.3, 0.2),
                                  target: self.vector(1, 0.6, 0.1), unrelated: self.vector(0, 0, 1)})
        others = [f"Lives in town number {n}" if n % 3 == 0 else f"Note {n} about something else" for n in range(2000)]
        embedder.table.update((t, rng.normal(size=self.vector_dimensions).astype(np.float32)) for t in others)
        embedder.table.update((t, self.vector(1, 0.3, 0.2 + 1e-3 * n)) for n, t in enumerate(others[:50]))
        service = MemoryService(store, embedder)
        scores = []
        for owner, rest in (("owner-small", others[-1:]), ("owner-large", others)):
            here = self.place(store, owner=owner)
            texts = [target, unrelated, *rest]
            self.keep(store, here, *(self.memory(store, here, t, embedding=Embedding(MODEL, embedder.table[t]))
                                     for t in texts))
            hits = {h.memory.text: h.score for h in service.recall(here, "where does she live", limit=100, mark=False)}
            scores.append((hits[target], hits.get(unrelated)))
        (small, small_unrelated), (large, large_unrelated) = scores
        assert abs(small - large) < 1e-6, scores
        assert small_unrelated is not None and small_unrelated < 0.1, scores  # no word, no meaning in common
