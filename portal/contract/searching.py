"""The store contract on searching: vectors by id, nearest neighbours and the mean direction of one
model and size, BM25 word search over one place, and the background work that keeps vectors current.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from portal.contract.base import ALL, MODEL, ContractBase
from portal.domain.recall.ranking import bm25_top
from portal.ports import Filters, Store


class SearchingContract(ContractBase):
    """Searching by meaning and by words; keeping vectors current."""

    # ================================================================== searching

    def test_embeddings_by_id_in_any_state_and_only_here(self, store: Store) -> None:
        here = self.place(store)
        active = self.memory(store, here, "active", embedding=self.embedding(1, 0))
        shelved = self.memory(store, here, "archived", embedding=self.embedding(0, 1), state="archived")
        bare = self.memory(store, here, "no vector")
        elsewhere = self.memory(store, self.place(store, owner="someone-else"), "theirs", embedding=self.embedding(1, 1))
        self.keep(store, here, active, shelved, bare)
        self.keep(store, self.place(store, owner="someone-else"), elsewhere)
        for opened in (store.read, store.write):
            with opened(here) as tx:
                found = tx.embeddings([shelved.id, active.id, bare.id, elsewhere.id, "missing", active.id])
                assert set(found) == {active.id, shelved.id}
                np.testing.assert_allclose(found[active.id].vector, self.embedding(1, 0).vector, atol=1e-6)
                assert found[shelved.id].model == self.embedding(0, 1).model
                assert tx.embeddings([]) == {}

    def test_nearest_compares_only_one_model_and_one_size(self, store: Store) -> None:
        here = self.place(store)
        same = self.memory(store, here, "same", embedding=self.embedding(1, 0))
        close = self.memory(store, here, "close", embedding=self.embedding(1, 1), kind="goal")
        square = self.memory(store, here, "square", embedding=self.embedding(0, 1))
        opposite = self.memory(store, here, "opposite", embedding=self.embedding(-1, 0))
        other_model = self.memory(store, here, "other model", embedding=self.embedding(1, 0, model="other-model"))
        other_size = self.memory(store, here, "other size", embedding=self.embedding(1, 0, extra=1))
        shelved = self.memory(store, here, "archived", embedding=self.embedding(1, 0), state="archived")
        bare = self.memory(store, here, "no vector")
        self.keep(store, here, same, close, square, opposite, other_model, other_size, shelved, bare)
        with store.read(here) as tx:
            found = tx.nearest(self.embedding(2, 0), 10, Filters())
            assert [i for i, _ in found] == [same.id, close.id, square.id, opposite.id]
            np.testing.assert_allclose([s for _, s in found], [1.0, 2**-0.5, 0.0, -1.0], atol=1e-4)
            assert [i for i, _ in tx.nearest(self.embedding(1, 0), 2, Filters())] == [same.id, close.id]
            assert [i for i, _ in tx.nearest(self.embedding(1, 0), 10, Filters(kinds=("goal",)))] == [close.id]
            assert [i for i, _ in tx.nearest(self.embedding(1, 0), 10, ALL)][:2] in (
                [same.id, shelved.id], [shelved.id, same.id],
            )
            assert [i for i, _ in tx.nearest(self.embedding(1, 0, model="other-model"), 10, Filters())] == [
                other_model.id
            ]
            assert [i for i, _ in tx.nearest(self.embedding(1, 0, extra=1), 10, Filters())] == [other_size.id]
            assert tx.nearest(self.embedding(1, 0, model="unknown-model"), 10, Filters()) == []

    def test_mean_vector_is_the_mean_direction_of_the_memories_searched(self, store: Store) -> None:
        here, elsewhere, _ = self.places3(store)
        east = self.memory(store, here, "east", embedding=self.embedding(3, 0))  # not unit length: counts as (1, 0)
        north = self.memory(store, here, "north", embedding=self.embedding(0, 1), kind="goal")
        other_model = self.memory(store, here, "other model", embedding=self.embedding(-1, 0, model="other-model"))
        other_size = self.memory(store, here, "other size", embedding=self.embedding(-1, 0, extra=1))
        shelved = self.memory(store, here, "archived", embedding=self.embedding(-1, -1), state="archived")
        bare = self.memory(store, here, "no vector")
        self.keep(store, here, east, north, other_model, other_size, shelved, bare)
        self.add(store, elsewhere, "far away", embedding=self.embedding(0, -1))
        dim = self.vector_dimensions
        with store.read(here) as tx:
            mean = tx.mean_vector(MODEL, dim, Filters())
            assert mean is not None and mean.dtype == np.float32 and mean.shape == (dim,)
            np.testing.assert_allclose(mean, self.vector(0.5, 0.5), atol=1e-5)
            for model, size, filters, want in (
                (MODEL, dim, Filters(kinds=("goal",)), self.vector(0, 1)),
                (MODEL, dim, ALL, self.vector((1 - 2**-0.5) / 3, (1 - 2**-0.5) / 3)),
                ("other-model", dim, Filters(), self.vector(-1, 0)),
                (MODEL, dim + 1, Filters(), self.vector(-1, 0, extra=1)),
            ):
                found = tx.mean_vector(model, size, filters)
                assert found is not None
                np.testing.assert_allclose(found, want, atol=1e-5)
            assert tx.mean_vector("unknown-model", dim, Filters()) is None
        with store.read(self.place(store, owner="nobody")) as tx:
            assert tx.mean_vector(MODEL, dim, Filters()) is None

    def test_search_words_folds_accents_and_case(self, store: Store) -> None:
        here = self.place(store)
        (cafe, _other) = self.add(store, here, "Crème brûlée at the Café in Zürich", "Hiking in the Alps")
        with store.read(here) as tx:
            assert [i for i, _ in self.search_words(store, tx, "CAFE zurich", 5, Filters())] == [cafe.id]
            assert [i for i, _ in self.search_words(store, tx, "crème", 5, Filters())] == [cafe.id]
            assert self.search_words(store, tx, "opera", 5, Filters()) == []
            assert self.search_words(store, tx, "", 5, Filters()) == []

    def test_search_words_ranks_the_doc_repeating_the_rarer_term_first(self, store: Store) -> None:
        here = self.place(store)
        coffees = self.add(store, here, "my coffee in the morning", "my coffee after lunch", "my coffee is strong")
        (chess,) = self.add(store, here, "chess and chess again, chess club")
        self.add(store, here, "nothing to see")
        with store.read(here) as tx:
            found = self.search_words(store, tx, "coffee chess", 10, Filters())
        ids = [i for i, _ in found]
        assert ids[0] == chess.id
        assert set(ids) == {chess.id, *(m.id for m in coffees)}
        scores = [s for _, s in found]
        assert scores == sorted(scores, reverse=True)

    def test_search_words_leaves_a_querys_stop_words_out(self, store: Store) -> None:
        here = self.place(store)
        self.add(store, here, "my coffee in the morning", "what did I say")
        (chess,) = self.add(store, here, "chess club on Tuesdays")
        (who,) = self.add(store, here, "who is it")
        with store.read(here) as tx:
            # "what", "did" and "my" are stop words: only "chess" tells the memories apart
            assert [i for i, _ in self.search_words(store, tx, "What did my chess club do?", 10, Filters())] == [chess.id]
            # a query of stop words alone still finds its words
            assert [i for i, _ in self.search_words(store, tx, "who is it", 10, Filters())][0] == who.id

    def test_search_words_meets_other_forms_of_a_word(self, store: Store) -> None:
        here = self.place(store)
        (painted,) = self.add(store, here, "Painted a sunset last week")
        (paints,) = self.add(store, here, "She paints every Sunday")
        self.add(store, here, "Walks the dog")
        with store.read(here) as tx:
            assert {i for i, _ in self.search_words(store, tx, "painting", 10, Filters())} == {painted.id, paints.id}
            assert [i for i, _ in self.search_words(store, tx, "sunsets", 10, Filters())] == [painted.id]

    def test_search_words_scores_are_bm25_over_the_place_alone(self, store: Store) -> None:
        here, other_owner, other_scope = self.places3(store)
        texts = [
            "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
            "Melanie: Painting is my way to relax, I painted a sunset last week.",
            "Caroline: The support group made me feel accepted.",
            "Melanie: The kids and I went camping near the lake.",
            "Caroline: I want to study counseling and work in mental health.",
        ]
        self.add(store, here, *texts)
        query = "When did Caroline go to the support group? Was it painted?"
        with store.read(here) as tx:
            before = self.search_words(store, tx, query, 10, Filters())
            listed = [(m.id, m.text) for m in tx.list(Filters())]
        # every store ranks with the reference BM25 on this place's memories...
        want = bm25_top(query, listed, 10)
        assert [i for i, _ in before] == [i for i, _ in want]
        np.testing.assert_allclose([s for _, s in before], [s for _, s in want], rtol=1e-9)
        # ...so other people's and other scopes' words weigh nothing on it
        for elsewhere in (other_owner, other_scope):
            self.add(store, elsewhere, *(f"support group number {n}" for n in range(20)), "Caroline")
        with store.read(here) as tx:
            after = self.search_words(store, tx, query, 10, Filters())
        assert [i for i, _ in after] == [i for i, _ in before]
        np.testing.assert_allclose([s for _, s in after], [s for _, s in before], rtol=1e-9)

    def test_search_words_falls_back_to_a_fragment(self, store: Store) -> None:
        here = self.place(store)
        (python, _) = self.add(store, here, "Writes Python every day", "Plays the piano")
        with store.read(here) as tx:
            assert [i for i, _ in self.search_words(store, tx, "pyth", 5, Filters())] == [python.id]

    def test_search_words_applies_filters(self, store: Store) -> None:
        here = self.place(store)
        (goal,) = self.add(store, here, "Learn the violin", kind="goal")
        (fact,) = self.add(store, here, "Owns a violin")
        (shelved,) = self.add(store, here, "Sold a violin", state="archived")
        with store.read(here) as tx:
            assert {i for i, _ in self.search_words(store, tx, "violin", 10, Filters())} == {goal.id, fact.id}
            assert {i for i, _ in self.search_words(store, tx, "violin", 10, ALL)} == {goal.id, fact.id, shelved.id}
            assert [i for i, _ in self.search_words(store, tx, "violin", 10, Filters(kinds=("goal",)))] == [goal.id]
            assert len(self.search_words(store, tx, "violin", 1, Filters())) == 1

    def test_search_words_each_answers_each_query_as_search_words_does(self, store: Store) -> None:
        """Several queries over one read of the place (forget matching's subject and the people it
        names): each answer is what `search_words` answers alone, under every filter, in a read
        transaction after a recall (the SQL stores' recall cache holds the place) and in a write one."""
        here = self.place(store)
        self.add(store, here, "Learn the violin with Anna", "Pythonista at heart", kind="goal")
        self.add(store, here, "Owns a violin", "Anna moved to Oslo", "Walks with Will and Anna")
        self.add(store, here, "Sold a violin to Will", state="archived")
        self.add(store, here, "Anna lent a violin", expires_at=self.at(-3600))  # kept no longer
        queries = ["violin", "anna", "will", "pyth", "oslo anna violin", "nothing here"]
        for filters in (Filters(), ALL, Filters(state="archived"), Filters(kinds=("goal",)), Filters(app="app-1")):
            with store.read(here) as tx:
                tx.search_words("warm", 5, Filters())  # a recall's word search: the place cached
                alone = [tx.search_words(q, 3, filters) for q in queries]
                assert tx.search_words_each(queries, 3, filters) == alone, filters
                assert tx.search_words_each([], 3, filters) == []
            with store.write(here) as tx:
                assert tx.search_words_each(queries, 3, filters) == alone, filters

    # ================================================================== vectors

    def test_needing_vector_lists_memories_without_a_current_vector(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        (bare,) = self.add(store, here, "no vector")
        (fresh,) = self.add(store, here, "fresh", embedding=self.embedding(1, model="m-new"))
        (stale,) = self.add(store, here, "stale", embedding=self.embedding(1, model="m-old"))
        (bare_there,) = self.add(store, other, "no vector there")
        (resized,) = self.add(store, other, "other size", embedding=self.embedding(1, model="m-new", extra=1))
        found = store.needing_vector("m-new", None, 100)
        assert {(n.place, n.id) for n in found} == {(here, bare.id), (here, stale.id), (other, bare_there.id)}
        item = next(n for n in found if n.id == stale.id)
        assert (item.revision, item.text, item.updated_at) == (1, "stale", stale.updated_at)
        by_size = store.needing_vector("m-new", self.vector_dimensions, 100)
        assert {n.id for n in by_size} == {bare.id, stale.id, bare_there.id, resized.id}
        assert fresh.id not in {n.id for n in by_size}
        assert len(store.needing_vector("m-new", None, 2)) == 2

    def test_set_embedding_refuses_a_memory_that_moved(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        (memory,) = self.add(store, here, "Likes jazz")
        vector = self.embedding(0, 1, model="m-new")
        assert store.set_embedding(here, memory.id, 2, memory.updated_at, vector) is False
        assert store.set_embedding(here, memory.id, 1, memory.updated_at + timedelta(seconds=1), vector) is False
        assert store.set_embedding(other, memory.id, 1, memory.updated_at, vector) is False
        assert store.set_embedding(here, self.new_id(), 1, memory.updated_at, vector) is False
        got = self.read(store, here, memory.id)
        assert got is not None and got.embedding is None
        assert store.set_embedding(here, memory.id, 1, memory.updated_at, vector) is True
        self.assert_same(self.read(store, here, memory.id), memory.copy(embedding=vector))
        assert store.needing_vector("m-new", None, 10) == []
