"""The store contract suite: what any `Store` must do, checked through the protocol only.

Ship-with-the-package tests, so a third party can prove its own adapter. Subclass `StoreContract`
in a test module and give it a `store` fixture returning a fresh, empty store:

    class TestMyStore(StoreContract):
        vector_dimensions = 384

        @pytest.fixture
        def store(self, tmp_path):
            return MyStore(tmp_path / "db")

Options are class attributes and methods to override: `new_id()` (ids the store accepts),
`make_owner(name, store)` and `make_scope(name, store)` (for stores whose owner and scope are
foreign keys: create the row and answer its key; the same name must give the same value within one
store) and `vector_dimensions` (test vectors are padded to it). Lexical-search tests are skipped
when `store.searches_text` is False (text kept out of the store's reach, e.g. encrypted).

Only tests import this module; pytest is a test dependency, not a runtime one.
"""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import numpy as np

try:
    import pytest
except ImportError as exc:  # pragma: no cover - only without the test extras
    raise ImportError("portal.memory.contract is a pytest suite: install pytest to use it") from exc

from .ranking import bm25_top
from .store import Cursor, Filters, Settings, Store, StoreTx
from .text import words_key
from .types import Embedding, Memory, Place, PurgeCounts, Receipt, Revision, Source

START = datetime(2026, 1, 5, 8, 30, 0, 250_000, tzinfo=UTC)
ALL = Filters(state=None)
MODEL = "contract-model"


class StoreContract:
    """Subclass with a `store` fixture; every `test_*` here then runs against that store."""

    vector_dimensions: int = 4

    # ------------------------------------------------------------------ options

    def new_id(self) -> str:
        return uuid4().hex

    def make_owner(self, name: str, store: Store) -> str:
        return name

    def make_scope(self, name: str, store: Store) -> str:
        return name

    # ------------------------------------------------------------------ builders

    def place(self, store: Store, owner: str = "owner-a", scope: str = "scope-1") -> Place:
        return Place(self.make_owner(owner, store), self.make_scope(scope, store))

    def places3(self, store: Store) -> tuple[Place, Place, Place]:
        """Here, the same scope of another owner, and another scope of the same owner."""
        return self.place(store), self.place(store, owner="owner-b"), self.place(store, scope="scope-2")

    def at(self, seconds: float) -> datetime:
        return START + timedelta(seconds=seconds)

    def tick(self) -> datetime:
        self._ticks = getattr(self, "_ticks", 0) + 1
        return self.at(self._ticks)

    def vector(self, *values: float, extra: int = 0) -> np.ndarray:
        out = np.zeros(self.vector_dimensions + extra, dtype=np.float32)
        out[: len(values)] = values
        return out

    def embedding(self, *values: float, model: str = MODEL, extra: int = 0) -> Embedding:
        return Embedding(model, self.vector(*values, extra=extra))

    def memory(self, store: Store, place: Place, text: str, **changes: Any) -> Memory:
        created = changes.pop("created_at", None) or self.tick()
        memory = Memory(
            id=self.new_id(), owner_id=place.owner_id, scope=place.scope, revision=1, text=text,
            kind="fact", importance=3, created_at=created, updated_at=created,
            words_key=words_key(text, store.words_secret),
        )
        return memory.copy(**changes) if changes else memory

    def keep(self, store: Store, place: Place, *memories: Memory) -> list[Memory]:
        with store.write(place) as tx:
            for memory in memories:
                tx.insert(memory)
            tx.commit()
        return list(memories)

    def add(self, store: Store, place: Place, *texts: str, **changes: Any) -> list[Memory]:
        return self.keep(store, place, *(self.memory(store, place, t, **changes) for t in texts))

    def revision(self, memory: Memory, number: int, text: str | None = None) -> Revision:
        return Revision(
            memory_id=memory.id, revision=number, text=text or f"{memory.text} (rev {number})", kind=memory.kind,
            importance=memory.importance, origin=memory.origin, sources=memory.sources,
            written_at=self.at(100 + number), op="create" if number == 1 else "update",
        )

    def receipt(self, key: str, *memory_ids: str) -> Receipt:
        return Receipt(
            key=key, request_hash="h" * 64, status=201,
            response={"id": memory_ids[0] if memory_ids else None, "text": "Jana likes tea — très fort"},
            memory_ids=memory_ids, created_at=self.at(50),
        )

    @staticmethod
    def search_words(store: Store, tx: StoreTx, query: str, limit: int, filters: Filters) -> list[tuple[str, float]]:
        """The store's word search (in process when the database cannot read the text)."""
        return tx.search_words(query, limit, filters)

    # ------------------------------------------------------------------ checks

    @staticmethod
    def assert_same(got: Memory | None, want: Memory) -> None:
        assert got is not None, f"memory {want.id} is missing"
        for f in fields(Memory):
            if f.name != "embedding":
                assert getattr(got, f.name) == getattr(want, f.name), f.name
        if want.embedding is None:
            assert got.embedding is None
        else:
            assert got.embedding is not None
            assert got.embedding.model == want.embedding.model
            assert got.embedding.dim == want.embedding.dim
            np.testing.assert_allclose(got.embedding.vector, want.embedding.vector, rtol=1e-6)

    def read(self, store: Store, place: Place, memory_id: str) -> Memory | None:
        with store.read(place) as tx:
            return tx.get(memory_id)

    def ids(self, store: Store, place: Place, filters: Filters = ALL) -> list[str]:
        with store.read(place) as tx:
            return [m.id for m in tx.list(filters)]

    # ================================================================== places

    def test_a_memory_comes_back_whole_in_its_place(self, store: Store) -> None:
        here = self.place(store)
        want = self.memory(
            store, here, "Élodie prefers C# over snake_case Python", kind="preference", importance=5,
            role="assistant", origin="inferred", channel="background", seen=False, pinned=True,
            last_used_at=self.at(3.5), last_op="replace", embedding=self.embedding(0.5, -0.25, 1.0),
            sources=(Source("consolidation", "conv-7", (0, 3)), Source("api")),
            created_at=self.at(1.000123), updated_at=self.at(2.000456),
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
                assert tx.find_words(mine.words_key) is None
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
                assert tx.redact_receipts(mine.id) == 0
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

    # ================================================================== listing

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
            assert found is not None and found.id == active.id
            assert tx.find_words(shelved.words_key) is None
            assert tx.find_words(words_key("Likes black tea", store.words_secret)) is None

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

    # ================================================================== writing

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

    # ================================================================== settings, refs, receipts

    def test_settings_default_and_round_trip(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        with store.read(here) as tx:
            assert tx.settings() == Settings() and tx.settings().paused is False
        for paused in (True, True, False, True):
            with store.write(here) as tx:
                tx.set_settings(Settings(paused=paused))
                tx.commit()
            with store.read(here) as tx:
                assert tx.settings().paused is paused
        with store.read(other) as tx:
            assert tx.settings().paused is False

    def test_a_ref_is_claimed_once_until_released(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(1)) is True
            assert tx.claim_ref("conv-1", self.at(2)) is False
            tx.commit()
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(3)) is False
            assert tx.release_ref("conv-2") is False
            assert tx.release_ref("conv-1") is True
            tx.commit()
        with store.write(here) as tx:
            assert tx.claim_ref("conv-1", self.at(4)) is True
            tx.commit()
        with store.write(other) as tx:
            assert tx.claim_ref("conv-1", self.at(5)) is True
            tx.commit()

    def test_receipts_round_trip(self, store: Store) -> None:
        here = self.place(store)
        first, second = self.new_id(), self.new_id()
        receipt = Receipt(
            key="idem-1", request_hash="a" * 64, status=201,
            response={"memories": [{"id": first, "text": "Bonjour, ça va"}], "count": 2, "ok": True, "none": None},
            memory_ids=(first, second), created_at=self.at(5),
        )
        with store.write(here) as tx:
            assert tx.get_receipt("idem-1") is None
            tx.put_receipt(receipt)
            tx.put_receipt(Receipt(key="idem-2", request_hash="b" * 64, status=200, response=None,
                                   created_at=self.at(6)))
            tx.commit()
        with store.read(here) as tx:
            assert tx.get_receipt("idem-1") == receipt
            empty = tx.get_receipt("idem-2")
            assert empty is not None and empty.response is None and empty.memory_ids == () and not empty.redacted
            assert tx.get_receipt("idem-3") is None

    def test_a_pending_receipt_is_claimed_once_then_finished_or_dropped(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        done = self.new_id()
        pending = Receipt(key="idem-p", request_hash="c" * 64, status=0, response=None, created_at=self.at(7))
        with store.write(here) as tx:
            assert tx.put_receipt(pending) is True
            assert tx.put_receipt(pending) is False  # a second writer with the same key learns it is taken
            tx.commit()
        with store.write(other) as tx:
            assert tx.put_receipt(pending) is True  # keys are per place
            assert tx.drop_receipt("idem-p") is True
            tx.commit()
        with store.write(here) as tx:
            assert tx.finish_receipt("idem-p", 201, {"id": done}, [done]) is True
            assert tx.finish_receipt("missing", 201, None, []) is False
            tx.commit()
        with store.read(here) as tx:
            got = tx.get_receipt("idem-p")
            assert got is not None and (got.status, got.response, got.memory_ids) == (201, {"id": done}, (done,))
        with store.read(other) as tx:
            assert tx.get_receipt("idem-p") is None
        with store.write(here) as tx:
            assert tx.drop_receipt("idem-p") is True and tx.drop_receipt("idem-p") is False
            tx.commit()

    def test_redaction_touches_only_receipts_naming_the_memory(self, store: Store) -> None:
        here, other, _ = self.places3(store)
        target, neighbour = self.new_id(), self.new_id()
        with store.write(here) as tx:
            tx.put_receipt(self.receipt("only", target))
            tx.put_receipt(self.receipt("both", neighbour, target))
            tx.put_receipt(self.receipt("neighbour", neighbour))
            tx.put_receipt(self.receipt("none"))
            tx.commit()
        with store.write(other) as tx:
            tx.put_receipt(self.receipt("only", target))
            tx.commit()
        with store.write(here) as tx:
            assert tx.redact_receipts(target) == 2
            assert tx.redact_receipts(target) == 0
            tx.commit()
        with store.read(here) as tx:
            for key in ("only", "both"):
                got = tx.get_receipt(key)
                assert got is not None and got.response is None and got.redacted, key
                assert got.status == 201 and target in got.memory_ids
            for key in ("neighbour", "none"):
                got = tx.get_receipt(key)
                assert got is not None and got.response is not None and not got.redacted, key
        with store.read(other) as tx:
            got = tx.get_receipt("only")
            assert got is not None and got.response is not None and not got.redacted

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

    # ================================================================== erasure and vectors

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
        assert [memory_id for _, memory_id in found] == sorted(memory_id for _, memory_id in found)
        assert all(isinstance(place, Place) for place, _ in found)
        assert len(store.archived_before(self.at(1000), 1)) == 1
        assert store.archived_before(self.at(15), 10) == []
        assert {used.id, written.id, active.id}.isdisjoint(i for _, i in store.archived_before(self.at(1000), 10))
