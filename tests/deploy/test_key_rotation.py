"""Key rotation (`portal.adapters.sql.rotation`): batched, resumable, and it mends the duplicate
keys the app wrote with the old digest key while both keys were configured."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from portal.adapters.cipher import CipherError, FernetCipher, generate_key
from portal.adapters.sql.rotation import RotationCounts, RotationError, rotate_keys, rows_to_visit
from portal.adapters.sql.store import SqlStore
from portal.adapters.sql.tables import memories
from portal.domain.types import Place, Saved
from portal.services.memory_service import MemoryService

HERE = Place("ada", "tenant-1")
TEXTS = ["Likes green tea", "Lives in Lyon", "Works as a nurse", "Plays the cello", "Keeps bees"]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest) -> Engine:
    return request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")


def seed(engine: Engine, key: str, texts: Sequence[str] = TEXTS) -> list[str]:
    service = MemoryService(SqlStore(engine, cipher=FernetCipher([key])))
    ids = []
    for text in texts:
        saved = service.remember(HERE, text)
        assert isinstance(saved, Saved)
        ids.append(saved.memory.id)
    return ids


def under(engine: Engine, key: str) -> set[str]:
    """Ids of the memories whose stored text this key alone reads."""
    only = FernetCipher([key])
    with engine.connect() as conn:
        return {row.id for row in conn.execute(select(memories.c.id, memories.c.text)) if only.uses_first_key(row.text)}


class Stop(Exception):
    pass


def test_a_stopped_rotation_keeps_its_batches_and_the_next_run_does_the_rest(engine: Engine) -> None:
    key_a, key_b = generate_key(), generate_key()
    ids = seed(engine, key_a)
    both = FernetCipher([key_b, key_a])
    store = SqlStore(engine, cipher=both)
    assert rows_to_visit(store) == 5

    def stop_after_first_batch(done: int) -> None:
        raise Stop

    with pytest.raises(Stop):
        rotate_keys(store, both, batch=2, progress=stop_after_first_batch)
    assert under(engine, key_b) == set(sorted(ids)[:2])  # the first batch, in id order, committed
    assert under(engine, key_a) == set(sorted(ids)[2:])

    assert rotate_keys(store, both, batch=2) == RotationCounts(memories=3, unchanged=2)
    assert under(engine, key_b) == set(ids)
    new_only = MemoryService(SqlStore(engine, cipher=FernetCipher([key_b])))
    assert {m.text for m in new_only.list(HERE).items} == set(TEXTS)
    for text in TEXTS:  # every duplicate key now follows the new digest key
        again = new_only.remember(HERE, text.upper())
        assert isinstance(again, Saved) and again.replaced_id is not None, text
    assert len(new_only.list(HERE).items) == len(TEXTS)


class SameVector:
    """An embedder (our own protocol boundary) that gives every text one vector: any two memories
    with a vector are then duplicates by meaning."""

    model_id = "same-vector"

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        return np.ones((len(texts), 8), dtype=np.float32), self.model_id


def test_a_row_the_app_rewrote_with_both_keys_gets_its_duplicate_key_mended(engine: Engine) -> None:
    key_a, key_b = generate_key(), generate_key()
    old = MemoryService(SqlStore(engine, cipher=FernetCipher([key_a])), embedder=SameVector())
    first = old.remember(HERE, "Likes green tea")
    assert isinstance(first, Saved)
    ids = [first.memory.id, *seed(engine, key_a, TEXTS[1:])]
    both = FernetCipher([key_b, key_a])
    app = MemoryService(SqlStore(engine, cipher=both), embedder=SameVector())
    # A duplicate by meaning is reinforced: the row is rewritten, its text under the new key, but its
    # duplicate key (computed from the words, with the old digest key) is carried over as it was.
    reinforced = app.remember(HERE, "Enjoys a cup of sencha", on_duplicate="reinforce")
    assert isinstance(reinforced, Saved) and reinforced.reinforced and reinforced.memory.id == ids[0]
    assert ids[0] in under(engine, key_b)

    counts = rotate_keys(SqlStore(engine, cipher=both), both)

    assert counts == RotationCounts(memories=5)
    again = MemoryService(SqlStore(engine, cipher=FernetCipher([key_b]))).remember(HERE, "likes green TEA")
    assert isinstance(again, Saved) and again.replaced_id == ids[0]


def test_rotation_refuses_a_bad_batch_and_reads_nothing_it_cannot_decrypt(sqlite_engine: Engine) -> None:
    key_a = generate_key()
    seed(sqlite_engine, key_a)
    stranger = FernetCipher([generate_key()])
    store = SqlStore(sqlite_engine, cipher=stranger)
    with pytest.raises(ValueError, match="batch"):
        rotate_keys(store, stranger, batch=0)
    with pytest.raises(Exception, match="MEMORY_ENCRYPTION_KEYS") as failed:
        rotate_keys(store, stranger)
    assert not isinstance(failed.value, CipherError) and "tea" not in str(failed.value)
    assert len(under(sqlite_engine, key_a)) == len(TEXTS)  # nothing was rewritten


def test_two_people_holding_the_same_memory_id_are_each_rotated_in_their_own_place(engine: Engine) -> None:
    """Memory ids are unique within their owner (the keys lead with the owner, migration 0012):
    the rotation pages and updates by owner and id, so neither row is skipped or touched as the other's."""
    key_a, key_b = generate_key(), generate_key()
    old = FernetCipher([key_a])
    for owner, text in (("ada", "Likes green tea"), ("bob", "Keeps bees"), ("cyd", "Plays the cello")):
        service = MemoryService(SqlStore(engine, cipher=old), id_factory=lambda: "0" * 32)
        saved = service.remember(Place(owner, "tenant-1"), text)
        assert isinstance(saved, Saved)
        service.update(Place(owner, "tenant-1"), saved.memory.id, text=text + " a lot")  # a second wording
    both = FernetCipher([key_b, key_a])
    assert rotate_keys(SqlStore(engine, cipher=both), both, batch=1) == RotationCounts(memories=3, revisions=3)
    new_only = SqlStore(engine, cipher=FernetCipher([key_b]))
    for owner, text in (("ada", "Likes green tea"), ("bob", "Keeps bees"), ("cyd", "Plays the cello")):
        with new_only.read(Place(owner, "tenant-1")) as tx:
            assert [m.text for m in tx.get_many(["0" * 32])] == [text + " a lot"]
            assert [r.text for r in tx.history("0" * 32)] == [text]


def test_a_database_written_in_the_clear_is_encrypted_whole_and_searched_as_before(engine: Engine) -> None:
    """Issue 26: a PostgreSQL that ran without keys (allowed before) is switched to encryption by
    `rotate-keys --encrypt-plaintext`: every text, earlier wording, stored answer, job transcript
    and summary becomes a token of the first key, search terms go, duplicate keys become keyed;
    the app then reads and finds everything with the key alone. A token no key reads still stops it."""
    from portal.adapters.sql.tables import consolidation_jobs, memory_revisions
    from portal.domain.jobs import Job

    plain = MemoryService(SqlStore(engine))
    first = plain.remember(HERE, "Likes green tea")
    plain.update(HERE, first.memory.id, text="Likes green tea with mint")
    bees = plain.remember(HERE, "Keeps bees")
    now = plain.clock()
    with plain.store.write(HERE) as tx:
        tx.put_job(Job("job-1", HERE.owner_id, HERE.scope, "conv-1", "queued", 0, now, now, work={"transcript": "bees"}))
        tx.put_job(Job("job-2", HERE.owner_id, HERE.scope, "conv-2", "done", 1, now, now, result={"status": "done"},
                       summary="Talked about bees"))
        tx.commit()
    key = generate_key()
    cipher = FernetCipher([key])
    store = SqlStore(engine, cipher=cipher)
    with pytest.raises(Exception):  # noqa: B017, PT011 - without the flag, text in the clear reads as no key's token
        rotate_keys(store, cipher)
    counts = rotate_keys(store, cipher, batch=2, encrypt_plaintext=True)
    assert (counts.memories, counts.revisions, counts.jobs, counts.summaries) == (2, 1, 1, 1)
    with engine.connect() as conn:
        stored = [*conn.execute(select(memories.c.text)).scalars(), *conn.execute(select(memory_revisions.c.text)).scalars(),
                  *conn.execute(select(consolidation_jobs.c.work).where(consolidation_jobs.c.work.is_not(None))).scalars(),
                  *conn.execute(select(consolidation_jobs.c.summary).where(consolidation_jobs.c.summary.is_not(None))).scalars()]
        assert conn.execute(select(memories.c.search_text).where(memories.c.search_text.is_not(None))).first() is None
    assert len(stored) == 5 and all("tea" not in s and "bees" not in s for s in stored)
    encrypted = MemoryService(store)
    assert [h.memory.text for h in encrypted.recall(HERE, "bees")] == ["Keeps bees"]
    assert [r.text for r in encrypted.history(HERE, first.memory.id)] == ["Likes green tea with mint", "Likes green tea"]
    again = encrypted.remember(HERE, "KEEPS BEES!")
    assert again.replaced_id == bees.memory.id  # found by its words: the duplicate key is the keyed one now
    assert rotate_keys(store, cipher) == RotationCounts(unchanged=6)  # and the new wording
    with pytest.raises(RotationError, match="encrypted already"):  # it holds no text in the clear now
        rotate_keys(store, cipher, encrypt_plaintext=True)
    with pytest.raises(CipherError):
        FernetCipher([generate_key()]).decrypt(stored[0])
