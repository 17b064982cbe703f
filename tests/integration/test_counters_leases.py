"""Rate-limit leases (portal.adapters.sql.counters, issue 30): a process takes a few counts of a
large limit's window in one write and hands them out to its requests, so most API calls write no
counter. The limit still holds across processes: no count is handed out twice, so never more than
the limit get in, whatever the number of processes and threads; a small limit (or one near its
end) is counted one by one, exactly as before; what a lease holds unused is bounded and told.

Each "process" here is a storage on an engine of its own (its own connections, its own leases), as
each gunicorn worker has; SQLite's side file and PostgreSQL's UNLOGGED table alike."""

from __future__ import annotations

import threading
import time
from typing import Any

from limits import parse
from limits.strategies import FixedWindowRateLimiter

from portal.adapters.sql.counters import LEASE_MOST, LEASES_KEPT, lease_size, limit_of


def _flood(limiters: list[FixedWindowRateLimiter], item: Any, threads_each: int, hits_each: int) -> list[bool]:
    let_in: list[bool] = []
    lock = threading.Lock()
    start = threading.Barrier(len(limiters) * threads_each)

    def caller(limiter: FixedWindowRateLimiter) -> None:
        start.wait(30)
        for _ in range(hits_each):
            allowed = limiter.hit(item, "key:k1")
            with lock:
                let_in.append(allowed)

    threads = [threading.Thread(target=caller, args=(lim,)) for lim in limiters for _ in range(threads_each)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return let_in


def test_the_key_of_a_limit_from_the_limits_library_tells_its_amount() -> None:
    # The lease reads the limit from the key the limits library makes; if that format ever changes,
    # this fails (and meanwhile every count is taken one by one: exact, only slower).
    assert limit_of(parse("1200 per minute").key_for("api", "key:abc")) == 1200
    assert limit_of(parse("5/second").key_for("addr:0f")) == 5
    assert limit_of("key:a") is None and limit_of("LIMITER/x/abc/1/minute") is None


def test_a_lease_is_one_count_for_a_small_limit_and_near_the_end_of_a_large_one() -> None:
    assert lease_size(None, 0) == 1 and lease_size(60, 0) == 1
    assert lease_size(1200, 0) == LEASE_MOST and 1 < LEASE_MOST <= 16
    assert lease_size(1200, 1190) == 1 and lease_size(1200, 1300) == 1
    assert [lease_size(1200, seen) for seen in (0, 800, 1000, 1100)] == sorted(
        (lease_size(1200, seen) for seen in (0, 800, 1000, 1100)), reverse=True)


def test_a_large_limit_is_counted_in_leases_and_never_passed_across_processes(processes: Any) -> None:
    made = [processes() for _ in range(2)]
    limiters = [FixedWindowRateLimiter(storage) for storage, _ in made]
    item = parse("1200 per minute")  # the API's default
    let_in = _flood(limiters, item, threads_each=6, hits_each=125)  # 1,500 tries
    admitted = let_in.count(True)
    assert admitted <= 1200  # never past the limit
    assert admitted >= 1200 - (LEASE_MOST - 1) * 2  # at most what each process leased unused
    writes = sum(len(w) for _, w in made)
    assert writes < 1500 / 4, writes  # most requests wrote nothing


def test_a_small_limit_is_exact_across_processes(processes: Any) -> None:
    made = [processes() for _ in range(3)]
    limiters = [FixedWindowRateLimiter(storage) for storage, _ in made]
    let_in = _flood(limiters, parse("20 per minute"), threads_each=4, hits_each=5)
    assert let_in.count(True) == 20 and len(let_in) == 60


def test_counts_handed_out_are_each_once_and_end_with_their_window(processes: Any) -> None:
    (one, _), (two, _) = processes(), processes()
    key = parse("1000 per 2 second").key_for("key:w")
    seen = [one.incr(key, 2) for _ in range(5)] + [two.incr(key, 2) for _ in range(5)]
    assert len(set(seen)) == 10 and seen[:5] == sorted(seen[:5])
    assert one.get(key) == seen[4]  # told from the count this thread was handed last
    time.sleep(2.1)
    assert one.incr(key, 2) == 1  # a new window: the old lease is not handed out any more
    one.clear(key)
    assert one.incr(key, 2) == 1  # cleared: the lease went with it


def test_a_refund_is_counted_exactly(processes: Any) -> None:
    (one, _), (other, _) = processes(), processes()
    limiter = FixedWindowRateLimiter(one)
    item = parse("500 per minute")
    assert limiter.hit(item, "key:r") and limiter.hit(item, "key:r")
    shared = other.get(item.key_for("key:r"))  # read: what every process has taken, leases included
    assert shared == LEASE_MOST
    assert limiter.hit(item, "key:r", cost=-1)  # limits' refund: with the lease's unused counts
    assert other.get(item.key_for("key:r")) == 1  # two hits, one refund


def test_leases_of_thousands_of_callers_at_once_stay_bounded(processes: Any) -> None:
    # Many addresses in one window (each its own bucket) must not grow a worker's leases without
    # bound, nor make every new lease pay for going over thousands of them.
    (one, _), = (processes(),)
    keys = [parse("1200 per minute").key_for(f"addr:{i}") for i in range(5000)]
    for key in keys:
        assert one.incr(key, 60) == 1
    assert len(one._leases) <= LEASES_KEPT
    assert one.incr(keys[0], 60) == 2  # from its lease: kept
    assert one.incr(keys[-1], 60) == 2  # no room for its lease: counted one by one, nothing unused


def test_a_refund_after_its_window_ended_takes_nothing_from_the_next(processes: Any) -> None:
    (one, _), = (processes(),)
    key = parse("5 per 1 second").key_for("signin-pair", "a")
    assert one.incr(key, 1) == 1
    time.sleep(1.1)
    assert one.incr(key, 1, amount=-1) == 0  # the new window starts empty, not at -1
    assert [one.incr(key, 1) for _ in range(6)] == [1, 2, 3, 4, 5, 6]
