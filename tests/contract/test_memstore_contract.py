"""The in-memory reference store passes the store contract it defines, with the default options and
with every option overridden (as a third party with foreign-key places and other ids would)."""

from __future__ import annotations

from itertools import count

import pytest

from portal.adapters.memory.records import InMemoryRecords
from portal.adapters.memory.store import InMemoryStore
from portal.contract import RecordsContract, StoreContract
from portal.ports import Store


class TestInMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> InMemoryStore:
        return InMemoryStore()


class TestInMemoryStoreWithEveryOption(StoreContract):
    """Owners and scopes made like foreign keys, sequential ids, longer vectors: the suite must rely
    on the options alone, never on the names or shapes it uses by default."""

    vector_dimensions = 16
    _sequence = count(1)

    def new_id(self) -> str:
        return f"memory-{next(self._sequence):06d}"

    def make_owner(self, name: str, store: Store) -> str:
        return self._key("owner", name, store)

    def make_scope(self, name: str, store: Store) -> str:
        return self._key("scope", name, store)

    def _key(self, table: str, name: str, store: Store) -> str:
        made: dict[tuple[str, str], str] = store.__dict__.setdefault("made_keys", {})
        return made.setdefault((table, name), f"{table}-{len(made) + 1}")

    @pytest.fixture
    def store(self) -> InMemoryStore:
        return InMemoryStore()


class TestInMemoryRecords(RecordsContract):
    @pytest.fixture
    def store(self) -> InMemoryStore:
        return InMemoryStore()

    @pytest.fixture
    def records(self, store: InMemoryStore) -> InMemoryRecords:
        return InMemoryRecords(store)
