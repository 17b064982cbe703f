"""The recall cache of the SQL store: a process keeps a place's ranking data between recalls and
never answers from data a write (in this process or another) has made stale.

"Another process" is a second `SqlStore` on the same database, with its own engine and cache, as
two gunicorn workers have. Every check runs on a SQLite file and on PostgreSQL+pgvector.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import event, select
from sqlalchemy.engine import Engine

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.janitor import settle_all
from portal.adapters.sql.store import SqlStore
from portal.adapters.sql.tables import memory_places
from portal.domain.options import Options
from portal.domain.recall.cache import RecallCache
from portal.domain.recall.index import Entry, PlaceIndex
from portal.domain.types import Embedding, Place, Saved
from portal.ports import Filters
from portal.services.memory_service import MemoryService

from ..fakes.embedders import HashEmbedder

HERE = Place("ada", "default")
ELSEWHERE = Place("ada", "work")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest) -> Engine:
    return request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")


@pytest.fixture
def second_engine(engine: Engine) -> Iterator[Engine]:
    """Another engine (another pool) on the same database: the other worker's."""
    other = make_engine(engine.url)
    yield other
    settle_all(30)
    other.dispose()


def service(engine: Engine, **options: object) -> MemoryService:
    return MemoryService(SqlStore(engine), embedder=HashEmbedder(), options=Options(**options))  # type: ignore[arg-type]


def words_only(engine: Engine) -> MemoryService:
    """A reader ranking by words alone, so that each check names exactly the memories expected."""
    return MemoryService(SqlStore(engine))


def closest(svc: MemoryService, place: Place, query: str) -> list[tuple[str, float]]:
    """The meaning ranking as the cache (or the database) holds it, with the fake embedder's vector."""
    probe = HashEmbedder()
    with svc.store.read(place) as tx:
        return tx.nearest(Embedding(probe.model_id, probe.vector(query)), 10, Filters())


def texts(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.memory.text for h in hits]


def saved(result: object) -> str:
    assert isinstance(result, Saved), result
    return result.memory.id


def cache_of(svc: MemoryService) -> RecallCache:
    cache = svc.store.recall_cache  # type: ignore[attr-defined]
    assert cache is not None
    return cache


def test_a_recall_reads_the_place_once_then_only_its_token(engine: Engine) -> None:
    worker = service(engine)
    for text in ("Plays chess on Sundays", "Likes green tea", "Lives in Ghent"):
        saved(worker.remember(HERE, text))
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))

    assert texts(worker.recall(HERE, "chess", limit=1, mark=False)) == ["Plays chess on Sundays"]
    cold = list(statements)
    statements.clear()
    assert texts(worker.recall(HERE, "green tea", limit=1, mark=False)) == ["Likes green tea"]

    assert len(cold) > len(statements)
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    # the token, then the hits themselves: nothing else is read for a recall on a warm cache
    assert len(reads) == 2, statements
    assert "memory_places" in reads[0]
    assert cache_of(worker).hits >= 1 and len(cache_of(worker)) == 1


def test_every_kind_of_write_by_another_worker_is_seen_at_the_next_recall(engine: Engine, second_engine: Engine) -> None:
    reader, writer = words_only(engine), service(second_engine)
    tea = saved(writer.remember(HERE, "Likes green tea"))
    saved(writer.remember(HERE, "Plays chess on Sundays"))
    assert texts(reader.recall(HERE, "tea", mark=False)) == ["Likes green tea"]
    assert closest(reader, HERE, "green tea")[0] == (tea, pytest.approx(2 / 6**0.5, abs=1e-5))

    saved(writer.remember(HERE, "Drinks rooibos tea at night"))
    assert set(texts(reader.recall(HERE, "tea", mark=False))) == {"Likes green tea", "Drinks rooibos tea at night"}

    edited = writer.update(HERE, tea, text="Likes black coffee")
    assert isinstance(edited, Saved)
    assert texts(reader.recall(HERE, "tea", mark=False)) == ["Drinks rooibos tea at night"]
    assert texts(reader.recall(HERE, "coffee", mark=False)) == ["Likes black coffee"]
    assert closest(reader, HERE, "black coffee")[0] == (tea, pytest.approx(2 / 6**0.5, abs=1e-5))

    writer.undo(HERE, tea)
    assert "Likes green tea" in texts(reader.recall(HERE, "tea", mark=False))
    assert reader.recall(HERE, "coffee", mark=False) == []

    writer.forget(HERE, tea)
    assert texts(reader.recall(HERE, "tea", mark=False)) == ["Drinks rooibos tea at night"]

    writer.forget_all(HERE)
    assert reader.recall(HERE, "tea", mark=False) == []
    assert reader.recall(HERE, "chess", mark=False) == []
    assert closest(reader, HERE, "chess") == []


def test_the_cap_archiving_memories_is_seen_by_another_worker(engine: Engine, second_engine: Engine) -> None:
    reader = words_only(engine)
    writer = service(second_engine, max_active=2)
    saved(writer.remember(HERE, "Old note about tea"))
    saved(writer.remember(HERE, "Plays chess"))
    assert texts(reader.recall(HERE, "tea", mark=False)) == ["Old note about tea"]
    saved(writer.remember(HERE, "Likes opera"))  # the cap archives the least useful: the tea note
    with writer.store.read(HERE) as tx:
        archived = [m.text for m in tx.list(Filters(state="archived"))]
    assert archived == ["Old note about tea"]
    assert reader.recall(HERE, "tea", mark=False) == []


def test_a_new_vector_from_reindex_is_seen_by_another_worker(engine: Engine, second_engine: Engine) -> None:
    words_only = MemoryService(SqlStore(second_engine))
    reader = service(engine)
    saved(words_only.remember(HERE, "Has a dog called Rex"))
    with reader.store.read(HERE) as tx:
        assert tx.nearest(Embedding("fake-hash-64", HashEmbedder().vector("dog")), 5, Filters()) == []
    assert service(second_engine).reindex() == 1
    with reader.store.read(HERE) as tx:
        assert len(tx.nearest(Embedding("fake-hash-64", HashEmbedder().vector("dog")), 5, Filters())) == 1


def test_erasure_drops_the_cached_place_here_at_once_and_elsewhere_at_next_use(
    engine: Engine, second_engine: Engine
) -> None:
    here, there = service(engine), service(second_engine)
    saved(here.remember(HERE, "Likes green tea"))
    saved(here.remember(ELSEWHERE, "Works on the tea project"))
    for worker in (here, there):
        assert worker.recall(HERE, "tea", mark=False) and worker.recall(ELSEWHERE, "tea", mark=False)
        assert len(cache_of(worker)) == 2

    here.purge_owner("ada")
    assert len(cache_of(here)) == 0  # the erasing worker keeps nothing of ada
    assert len(cache_of(there)) == 2  # the other still holds both places, unusable: their tokens are gone
    assert there.recall(HERE, "tea", mark=False) == []
    assert there.recall(ELSEWHERE, "tea", mark=False) == []
    assert len(cache_of(there)) == 0
    with engine.connect() as conn:
        assert conn.execute(select(memory_places)).all() == []


def test_a_place_written_again_after_erasure_is_never_served_from_before(engine: Engine, second_engine: Engine) -> None:
    reader, writer = words_only(engine), service(second_engine)
    saved(writer.remember(HERE, "Likes green tea"))
    assert texts(reader.recall(HERE, "tea", mark=False)) == ["Likes green tea"]
    writer.purge_owner("ada")
    saved(writer.remember(HERE, "Drinks tea with lemon"))
    assert texts(reader.recall(HERE, "tea", mark=False)) == ["Drinks tea with lemon"]


def test_the_cache_answers_as_the_database_does(engine: Engine) -> None:
    """The same rankings with the cache and without it, for recall's filters (kinds, time)."""
    cached, uncached = SqlStore(engine), SqlStore(engine, cache_bytes=0)
    svc = MemoryService(cached, embedder=HashEmbedder())
    kinds = ["fact", "preference", "goal"]
    words = ["tea", "chess", "Ghent", "coffee", "opera", "dog", "running", "Spanish", "Seville", "jazz"]
    rng = np.random.default_rng(7)
    made = []
    for i in range(60):
        text = " ".join(rng.choice(words, size=int(rng.integers(2, 6)))) + f" note {i}"
        result = svc.remember(HERE, text, kind=kinds[i % 3])
        if isinstance(result, Saved):
            made.append(result.memory)
    middle = sorted(m.created_at for m in made)[len(made) // 2]
    cases = [
        Filters(), Filters(kinds=("goal",)), Filters(kinds=("fact", "preference")),
        Filters(created_after=middle), Filters(created_before=middle, kinds=("fact",)),
    ]
    probe = HashEmbedder()
    for filters in cases:
        for query in ("tea chess", "Seville opera", "jaz", "note 7"):
            with cached.read(HERE) as a, uncached.read(HERE) as b:
                assert a.place_index(filters) is not None  # type: ignore[attr-defined]
                got_words, want_words = a.search_words(query, 10, filters), b.search_words(query, 10, filters)
                assert [i for i, _ in got_words] == [i for i, _ in want_words]
                assert [s for _, s in got_words] == pytest.approx([s for _, s in want_words])
                vector = Embedding(probe.model_id, probe.vector(query))
                got, want = a.nearest(vector, 10, filters), b.nearest(vector, 10, filters)
                assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
                mean_a = a.mean_vector(probe.model_id, probe.dim, filters)
                mean_b = b.mean_vector(probe.model_id, probe.dim, filters)
                assert (mean_a is None) == (mean_b is None)
                if mean_a is not None:
                    np.testing.assert_allclose(mean_a, mean_b, atol=1e-5)


def test_write_transactions_never_use_the_cache(engine: Engine) -> None:
    store = SqlStore(engine)
    svc = MemoryService(store, embedder=HashEmbedder())
    saved(svc.remember(HERE, "Likes green tea"))
    with store.read(HERE) as tx:
        assert tx.place_index(Filters()) is not None
    with store.write(HERE) as tx:
        assert tx.place_index(Filters()) is None


def index_of(size: int, token: str = "t") -> PlaceIndex:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    return PlaceIndex(token, [
        Entry(f"m{i}", "fact", when, ["tea"], Embedding("m", np.ones(4, np.float32))) for i in range(size)
    ])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_cache_keeps_to_its_size_dropping_the_least_recently_used() -> None:
    one = index_of(10)
    cache = RecallCache(max_bytes=3 * one.nbytes)
    for owner in ("a", "b", "c"):
        cache.put(Place(owner, "s"), index_of(10))
    assert cache.get(Place("a", "s"), "t") is not None  # "a" is now the most recently used
    cache.put(Place("d", "s"), index_of(10))
    assert cache.get(Place("b", "s"), "t") is None
    assert [cache.get(Place(o, "s"), "t") is not None for o in ("a", "c", "d")] == [True, True, True]
    assert cache.nbytes == 3 * one.nbytes
    cache.put(Place("huge", "s"), index_of(40))  # larger than the whole cache: not kept
    assert cache.get(Place("huge", "s"), "t") is None and len(cache) == 3


def test_the_cache_drops_an_idle_place_and_a_stale_token() -> None:
    clock = Clock()
    cache = RecallCache(max_bytes=10**9, idle_seconds=60, clock=clock)
    cache.put(Place("a", "s"), index_of(3))
    cache.put(Place("b", "s"), index_of(3))
    clock.now += 45
    assert cache.get(Place("a", "s"), "t") is not None
    clock.now += 30
    assert cache.sweep() == 1  # "b" was idle 75 s; "a" was used 30 s ago
    assert cache.get(Place("b", "s"), "t") is None
    assert cache.get(Place("a", "s"), "other-token") is None  # a write replaced the token
    assert len(cache) == 0 and cache.nbytes == 0


def test_index_memory_estimate_covers_what_it_holds() -> None:
    """`nbytes` is what the size bound counts: it must not be far below what an index really takes."""
    import tracemalloc

    rng = np.random.default_rng(1)
    entries = [
        Entry(f"{i:032x}", "fact", datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i),
              ["is", "learning", "spanish", "before", "a", "trip", "to", "seville", "in", "may"],
              Embedding("m", rng.standard_normal(384).astype(np.float32)))
        for i in range(1000)
    ]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    index = PlaceIndex("t", entries)
    index.search_words("spanish", 5, Filters())  # the word index is built on first use
    taken = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert index.nbytes >= 0.8 * taken, (index.nbytes, taken)


# ---------------------------------------------------------------- review: failing checks


def test_a_long_query_ranks_the_same_with_and_without_the_cache(engine: Engine) -> None:
    """The database ranks by a query's first 32 terms (search.MAX_QUERY_TERMS); the cached index
    must too, or a long query (the API takes 2,000 characters) answers differently per worker."""
    cached, uncached = SqlStore(engine), SqlStore(engine, cache_bytes=0)
    saved(MemoryService(cached).remember(HERE, "Likes green tea"))
    saved(MemoryService(cached).remember(HERE, "Plays jazz piano"))
    query = " ".join(f"topic{i}" for i in range(40)) + " tea"
    with cached.read(HERE) as a, uncached.read(HERE) as b:
        assert a.place_index(Filters()) is not None  # type: ignore[attr-defined]
        got, want = a.search_words(query, 10, Filters()), b.search_words(query, 10, Filters())
        assert [i for i, _ in got] == [i for i, _ in want]
    assert texts(MemoryService(cached).recall(HERE, query, mark=False)) == texts(
        MemoryService(uncached).recall(HERE, query, mark=False)
    )


def test_an_encrypted_store_ranks_a_fragment_match_the_same_with_and_without_the_cache(engine: Engine) -> None:
    """With a cipher, the uncached word search ranks the listing (newest first) and the cache its
    entries in id order: a fragment match, where hits score alike, then names other memories."""
    from cryptography.fernet import Fernet

    from portal.adapters.cipher import FernetCipher

    cipher = FernetCipher([Fernet.generate_key().decode()])
    cached, uncached = SqlStore(engine, cipher=cipher), SqlStore(engine, cipher=cipher, cache_bytes=0)
    ids = iter(f"m{i:02d}" for i in range(10))
    svc = MemoryService(cached, id_factory=lambda: next(ids))
    for text in ("Likes jazz", "Jazzy shoes", "Jazzercise on Mondays"):
        saved(svc.remember(HERE, text))
    with cached.read(HERE) as a, uncached.read(HERE) as b:
        assert a.place_index(Filters()) is not None  # type: ignore[attr-defined]
        got, want = a.search_words("jaz", 2, Filters()), b.search_words("jaz", 2, Filters())
        assert [i for i, _ in got] == [i for i, _ in want]


def test_a_naive_time_filter_gets_the_same_answer_with_and_without_the_cache(engine: Engine) -> None:
    """The database refuses a naive time (UTCDateTime: "naive datetime"); the cache read it as the
    process's local time instead, so the answer depended on the cache and on TZ."""

    def outcome(store: SqlStore) -> object:
        try:
            return texts(MemoryService(store).recall(HERE, "tea", after=datetime(2000, 1, 1), mark=False))
        except Exception as exc:  # noqa: BLE001
            return type(exc).__name__

    saved(words_only(engine).remember(HERE, "Likes green tea"))
    assert outcome(SqlStore(engine)) == outcome(SqlStore(engine, cache_bytes=0))


@pytest.mark.postgres
def test_marking_used_never_deadlocks_with_a_write_to_the_same_memories(pg_engine: Engine) -> None:
    """Store.mark_used on PostgreSQL skips the place's advisory lock: its one UPDATE locks rows in
    scan order while a write transaction holds one of them and then wants another it holds; one
    of the two is aborted (deadlock_detected): a failed recall, or a failed remember/update."""
    import threading
    import time

    from sqlalchemy import text as sql

    store = SqlStore(pg_engine)
    svc = MemoryService(store)
    a, b = saved(svc.remember(HERE, "Likes green tea")), saved(svc.remember(HERE, "Plays chess"))
    errors: list[str] = []
    for first, second in ((a, b), (b, a)):
        marker = threading.Thread(
            target=lambda: _capture(errors, lambda: store.mark_used(HERE, [a, b], datetime.now(UTC)))
        )
        try:
            with store.write(HERE) as tx:
                one = tx.get(first)
                assert one is not None
                assert tx.save(one.copy(updated_at=datetime.now(UTC)), one.revision)
                marker.start()
                deadline = time.monotonic() + 5
                with pg_engine.connect() as probe:  # wait until the marker waits on a lock
                    while time.monotonic() < deadline and not probe.execute(sql(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND wait_event_type = 'Lock'"
                    )).scalar_one():
                        time.sleep(0.02)
                two = tx.get(second)
                assert two is not None
                assert tx.save(two.copy(updated_at=datetime.now(UTC)), two.revision)
                tx.commit()
        except Exception as exc:  # noqa: BLE001
            errors.append(f"write: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        marker.join(10)
    assert errors == []


def _capture(errors: list[str], call: object) -> None:
    try:
        call()  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001
        errors.append(f"mark_used: {type(exc).__name__}: {str(exc).splitlines()[0]}")


def test_a_cache_made_before_a_fork_is_swept_in_the_child() -> None:
    """The sweeper is a thread, and a forked child keeps none of its parent's threads; it is
    started again only when a new RecallCache is made. A cache made before the fork (gunicorn
    --preload, uWSGI without lazy-apps) then keeps idle places, an erased person's included,
    forever in the child, against the module's promise of `idle_seconds` at the latest."""
    import os
    import threading

    cache = RecallCache(max_bytes=10**9, idle_seconds=60)
    pid = os.fork()
    if pid == 0:  # the child: use the cache, then look for a sweeper
        code = 1
        try:
            cache.put(Place("a", "s"), index_of(2))
            assert cache.get(Place("a", "s"), "t") is not None
            code = 0 if any(t.name == "recall-cache-sweeper" and t.is_alive() for t in threading.enumerate()) else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "no sweeper thread in the forked child"


def test_index_memory_estimate_covers_an_index_read_from_the_database(engine: Engine) -> None:
    """As the test above, but for an index the store reads itself: each vector is then held twice
    (the row's own array, kept by `_embeddings`, and the stacked matrix) and each memory's terms are
    strings of its own, so the index took over twice its `nbytes` (the bound MEMORY_RECALL_CACHE_MB
    sets is then exceeded as much)."""
    import gc
    import tracemalloc

    from portal.domain.text import words_key
    from portal.domain.types import Memory

    store = SqlStore(engine)
    rng = np.random.default_rng(1)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with store.write(HERE) as tx:
        for i in range(1000):
            text = f"Is learning Spanish before a trip to Seville in May, note {i}"
            tx.insert(Memory(
                id=f"{i:032x}", owner_id=HERE.owner_id, scope=HERE.scope, revision=1, text=text, kind="fact",
                importance=3, created_at=now + timedelta(seconds=i), updated_at=now, last_op="create",
                embedding=Embedding("m", rng.standard_normal(384).astype(np.float32)), words_key=words_key(text),
            ))
        tx.commit()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    with store.read(HERE) as tx:
        index = tx.place_index(Filters())  # type: ignore[attr-defined]
        assert index is not None
        index.search_words("spanish", 5, Filters())
    gc.collect()
    taken = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert index.nbytes >= 0.8 * taken, (index.nbytes, taken)


@pytest.mark.postgres
def test_a_search_without_marking_never_answers_a_memory_archived_meanwhile(
    pg_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recall reads without a snapshot: another worker's cap may archive a hit between the ranking
    and the read of the hits (forced here by doing that write just before the read)."""
    from portal.adapters.sql.transaction import SqlTx

    svc = words_only(pg_engine)
    coffee = saved(svc.remember(HERE, "I drink coffee every morning"))
    saved(svc.remember(HERE, "I walk the dog at noon"))
    other = SqlStore(make_engine(pg_engine.url))
    real_get_many = SqlTx.get_many

    def archived_meanwhile(self: SqlTx, ids: list[str]) -> list:  # type: ignore[type-arg]
        with other.write(HERE) as tx:
            tx.set_state([coffee], "archived")
            tx.commit()
        return real_get_many(self, ids)

    monkeypatch.setattr(SqlTx, "get_many", archived_meanwhile)
    try:
        assert svc.recall(HERE, "coffee", mark=False) == []
    finally:
        other.engine.dispose()


def test_a_place_over_the_cache_budget_ranks_for_each_asker_what_it_may_receive(engine: Engine) -> None:
    """A place too big to keep is indexed for one recall, from what its asker may receive only:
    the same rankings as the cached index's view and as the database, for apps withheld from
    differently, an expiry passed, and the person, asked one after the other in one transaction."""
    cached, small, uncached = SqlStore(engine), SqlStore(engine, cache_bytes=1), SqlStore(engine, cache_bytes=0)
    svc = MemoryService(cached, embedder=HashEmbedder())
    made = [saved(svc.remember(HERE, f"tea chess opera note {i}", kind="fact")) for i in range(12)]
    svc.set_use(HERE, made[1], False, None)
    svc.set_use(HERE, made[2], False, "app-1")
    svc.set_use(HERE, made[3], False, "app-2")
    soon = datetime.now(UTC) + timedelta(days=1)
    with cached.write(HERE) as tx:
        memory = tx.get(made[4])
        assert memory is not None and tx.save(memory.copy(expires_at=soon), memory.revision)
        tx.commit()
    probe = HashEmbedder()
    vector = Embedding(probe.model_id, probe.vector("tea opera"))
    later = datetime.now(UTC) + timedelta(days=2)
    askers = [Filters(app="app-1"), Filters(app="app-2"), Filters(), Filters(app="app-1", alive_at=later),
              Filters(app="app-3")]
    with cached.read(HERE) as a, small.read(HERE) as b, uncached.read(HERE) as c:
        for filters in askers:
            answers = [(sorted(i for i, _ in tx.nearest(vector, 20, filters)),
                        sorted(i for i, _ in tx.search_words("tea opera", 20, filters)),
                        sorted(tx.embeddings(made, app=filters.app))) for tx in (a, b, c)]
            assert answers[0] == answers[1] == answers[2], filters
        assert b.place_index(b.at_now(Filters(app="app-1"))) is not None  # type: ignore[attr-defined]
