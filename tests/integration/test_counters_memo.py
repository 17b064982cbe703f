"""The rate-limit counters' memo (portal.adapters.sql.counters, issue 30): the answer's
X-RateLimit headers are told from the increment just made, in its thread, instead of two more reads.
It never decides a limit (the increment's own answer does: no caller gets past it, however the
headers are read in between), never tells one key's count for another's or one thread's to
another, and a counter cleared (limits' `clear`, flask-limiter's `reset`) is not told from before."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from limits import parse
from limits.storage import storage_from_string
from limits.strategies import FixedWindowRateLimiter
from sqlalchemy.engine import Engine

from portal.adapters.sql.counters import SqlCounters, counters_engine


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


def test_no_caller_gets_past_its_limit_however_the_headers_are_read(counters: SqlCounters) -> None:
    limiter = FixedWindowRateLimiter(counters)
    item = parse("5 per minute")
    let_in: list[bool] = []
    lock, start = threading.Lock(), threading.Barrier(8)

    def caller() -> None:
        start.wait(10)
        for _ in range(3):
            allowed = limiter.hit(item, "key:k1")
            limiter.get_window_stats(item, "key:k1")  # the headers: told from the memo
            limiter.test(item, "key:k1")
            with lock:
                let_in.append(allowed)

    threads = [threading.Thread(target=caller) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert let_in.count(True) == 5 and len(let_in) == 24
    assert not limiter.hit(item, "key:k1")


def test_the_memo_tells_only_its_own_key_in_its_own_thread(counters: SqlCounters) -> None:
    assert [counters.incr("key:a", 60) for _ in range(3)] == [1, 2, 3]
    assert counters.incr("key:b", 60) == 1
    assert counters.get("key:a") == 3  # read: the memo is b's
    told: list[int] = []
    other = threading.Thread(target=lambda: told.extend([counters.get("key:b"), counters.incr("key:a", 60)]))
    other.start()
    other.join(10)
    assert told == [1, 4]
    assert counters.get("key:b") == 1 and counters.get("key:a") == 4
    counters.incr("key:a", 60)
    assert counters.get("key:a") == 5 and counters.get("key:a") == 5  # told once, then read


def test_a_counter_cleared_is_not_told_from_before(counters: SqlCounters) -> None:
    assert [counters.incr("key:a", 60) for _ in range(2)] == [1, 2]
    counters.clear("key:a")
    assert counters.get("key:a") == 0
    assert counters.get_expiry("key:a") <= time.time() + 1
    counters.incr("key:b", 60)
    counters.reset()
    assert counters.get("key:b") == 0
