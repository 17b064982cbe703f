"""The base of the store contract: the options a store's test class overrides, and the builders and
checks every topic module of the suite uses (`portal.contract`).
"""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import numpy as np

from portal.domain.text import words_key
from portal.domain.types import Embedding, Memory, Place, Receipt, Revision
from portal.ports import Filters, Store, StoreTx

START = datetime(2026, 1, 5, 8, 30, 0, 250_000, tzinfo=UTC)
ALL = Filters(state=None)
MODEL = "contract-model"


class ContractBase:
    """Options, builders and checks; the topic mixins inherit them, `StoreContract` composes the mixins."""

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
