"""The SQL store passes the store contract on SQLite and on PostgreSQL+pgvector, and once more with
a cipher, where the database must never hold the text in the clear."""

from __future__ import annotations

import base64
from itertools import count

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from portal.adapters.sql.store import SqlStore
from portal.adapters.sql.tables import idempotency_receipts, memories, memory_revisions
from portal.adapters.sql.uow import SqlRecords
from portal.contract import RecordsContract, StoreContract


class TestSqliteStore(StoreContract):
    @pytest.fixture
    def store(self, sqlite_engine: Engine) -> SqlStore:
        return SqlStore(sqlite_engine)


@pytest.mark.postgres
class TestPostgresStore(StoreContract):
    vector_dimensions = 8

    @pytest.fixture
    def store(self, pg_engine: Engine) -> SqlStore:
        return SqlStore(pg_engine)


class TestSqliteStoreWithoutCache(StoreContract):
    """Every ranking read from the database itself, as with `cache_bytes=0`."""

    @pytest.fixture
    def store(self, sqlite_engine: Engine) -> SqlStore:
        return SqlStore(sqlite_engine, cache_bytes=0)


@pytest.mark.postgres
class TestPostgresStoreWithoutCache(StoreContract):
    vector_dimensions = 8

    @pytest.fixture
    def store(self, pg_engine: Engine) -> SqlStore:
        return SqlStore(pg_engine, cache_bytes=0)


class PrefixCipher:
    """Reversible and readable by tests only: base64 behind a marker, so plaintext cannot hide."""

    digest_key = b"contract-test-digest-key-32bytes"

    def encrypt(self, text: str) -> str:
        return "enc:" + base64.b64encode(text.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> str:
        assert token.startswith("enc:"), "stored text was not encrypted"
        return base64.b64decode(token[4:]).decode("utf-8")


class TestEncryptedSqliteStore(StoreContract):
    @pytest.fixture
    def store(self, sqlite_engine: Engine) -> SqlStore:
        return SqlStore(sqlite_engine, cipher=PrefixCipher())

    def test_the_database_never_holds_the_text_in_the_clear(self, store: SqlStore) -> None:
        assert store.searches_text is False and store.words_secret == PrefixCipher.digest_key
        here = self.place(store)
        secret = "Jana's diagnosis is private"
        (memory,) = self.add(store, here, secret)
        with store.write(here) as tx:
            tx.push_revision(self.revision(memory, 1, "Jana's older diagnosis"))
            tx.put_receipt(self.receipt("idem-1", memory.id))
            tx.commit()
        with store.engine.connect() as conn:
            stored = conn.execute(select(memories.c.text, memories.c.search_text, memories.c.words_key)).one()
            old = conn.execute(select(memory_revisions.c.text)).scalar_one()
            response = conn.execute(select(idempotency_receipts.c.response)).scalar_one()
        for raw in (stored.text, old, response):
            assert raw.startswith("enc:") and "Jana" not in raw and "diagnosis" not in raw
        assert stored.search_text is None
        assert "jana" not in stored.words_key
        self.assert_same(self.read(store, here, memory.id), memory)


class TestSqliteStoreWithOddIds(StoreContract):
    """Ids holding LIKE wildcards and quotes: the store must match them exactly."""

    _ids = count(1)

    def new_id(self) -> str:
        return f'm_{next(self._ids)}%"\''

    @pytest.fixture
    def store(self, sqlite_engine: Engine) -> SqlStore:
        return SqlStore(sqlite_engine)



class TestSqliteRecords(RecordsContract):
    @pytest.fixture
    def store(self, sqlite_engine: Engine) -> SqlStore:
        return SqlStore(sqlite_engine)

    @pytest.fixture
    def records(self, store: SqlStore) -> SqlRecords:
        return SqlRecords(store)


@pytest.mark.postgres
class TestPostgresRecords(RecordsContract):
    @pytest.fixture
    def store(self, pg_engine: Engine) -> SqlStore:
        return SqlStore(pg_engine)

    @pytest.fixture
    def records(self, store: SqlStore) -> SqlRecords:
        return SqlRecords(store)
