"""The shared rate-limit counters (portal.adapters.sql.counters) on SQLite's side file and on
PostgreSQL's UNLOGGED table: an increment is atomic across connections (no two callers both get
under a limit of one), a window ends and starts again, and the keys are digests only."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from limits import parse
from limits.storage import storage_from_string
from limits.strategies import FixedWindowRateLimiter
from sqlalchemy import text
from sqlalchemy.engine import Engine

from portal.adapters.sql.counters import SqlCounters, counters_engine
from portal.adapters.sql.engine import make_engine


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def counters(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlCounters]:
    database: Engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    engine = counters_engine(database)
    assert engine is not None
    storage = storage_from_string("portal+sql://", engine=engine)
    assert isinstance(storage, SqlCounters)
    yield storage
    if engine is not database:
        engine.dispose()


def test_increments_from_many_threads_are_each_counted_once(counters: SqlCounters) -> None:
    seen: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(16)

    def hit() -> None:
        start.wait(10)
        for _ in range(5):
            got = counters.incr("k", 60)
            with lock:
                seen.append(got)

    threads = [threading.Thread(target=hit) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(seen) == list(range(1, 81)) and counters.get("k") == 80


def test_a_window_ends_and_a_limiter_lets_in_again(counters: SqlCounters) -> None:
    limiter = FixedWindowRateLimiter(counters)
    item = parse("2 per 1 second")
    assert [limiter.hit(item, "who") for _ in range(3)] == [True, True, False]
    time.sleep(1.1)
    assert limiter.hit(item, "who") is True
    assert limiter.hit(item, "who", cost=-1) is True and counters.get(item.key_for("who")) == 0
    counters.clear(item.key_for("who"))
    assert counters.get(item.key_for("who")) == 0


def test_the_sqlite_counters_live_in_a_file_of_their_own(sqlite_engine: Engine) -> None:
    engine = counters_engine(sqlite_engine)
    assert engine is not None and engine.url.database != sqlite_engine.url.database
    assert str(engine.url.database).endswith("memory.db-counters")
    with sqlite_engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM sqlite_master WHERE name = 'rate_limit_counters'")).scalar() == 0
    engine.dispose()


def _open_counters(database_path: str, start: Any, errors: Any) -> None:
    engine = make_engine(f"sqlite:///{database_path}")
    start.wait(30)
    try:
        made = counters_engine(engine)
        assert made is not None
        made.dispose()
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        errors.put(type(exc).__name__ + ": " + str(exc)[:200])
    engine.dispose()


def test_workers_booting_together_on_a_fresh_sqlite_file_all_open_the_counters(tmp_path: Path) -> None:
    # Gunicorn starts its workers at once, and each opens the new side file (WAL mode) and makes its
    # table on first use: none may fail with "database is locked" (SQLite retries neither a read of
    # the schema upgraded to a write nor the switch of a new file to WAL).
    # Each worker is forked, as gunicorn's are, from a server process that imported this module
    # once: still a process of its own that makes its own engine on the new file, without 32 new
    # interpreters each importing SQLAlchemy and the portal (most of this test's 9 s).
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    for attempt in range(4):
        path = tmp_path / f"memory-{attempt}.db"
        start, errors = context.Barrier(8), context.Queue()
        workers = [context.Process(target=_open_counters, args=(str(path), start, errors)) for _ in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        failures = [errors.get() for _ in range(errors.qsize())]
        assert failures == [] and all(w.exitcode == 0 for w in workers), failures
