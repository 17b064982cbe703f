"""An attacker's review of the rate-limit leases (portal.adapters.sql.counters, issue 30).

The module's docstring promises that what a process holds of a window unused is at most
LEASE_MOST - 1 counts, and that refunds (the sign-in throttle's "a successful sign-in gives its
attempt back") are counted in the shared row. Two ways a lease's unused counts are thrown away for
the rest of the window instead, each time, without bound:
- a refund (`cost=-1`) on a leased key drops the lease: every successful sign-in under a sign-in
  limit configured at 128 or more (an office's LOGIN_ADDRESS_LIMIT) eats LEASE_MOST - 1 counts,
  so people who only ever typed the right password lock their address out;
- past 2,048 live leases a worker drops them all: callers from thousands of buckets (an IPv6 /48
  is 65,536 of them) make every other key in that worker lose its leases' counts again and again.

Each "process" is a storage on an engine of its own, as each gunicorn worker has."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from flask import Flask
from limits import parse

from portal.adapters.sql.counters import LEASE_MOST, SqlCounters
from portal.web.throttle import SignInThrottle


def _throttle(storage: SqlCounters, **config: str) -> SignInThrottle:
    app = Flask(__name__)
    app.config.update(SECRET_KEY="attack-review", **config)
    app.extensions["portal_limiter"] = SimpleNamespace(storage=storage)
    return SignInThrottle(app)


def test_successful_sign_ins_under_a_large_address_limit_do_not_lock_the_address_out(processes: Any) -> None:
    # An office behind one address raises LOGIN_ADDRESS_LIMIT (the default, 100, is below the lease
    # threshold). Forty colleagues each sign in once, with the right password: no failed attempt
    # at all, so the address's counter of failures must stay (about) empty.
    (worker, _), (other, _) = processes(), processes()
    throttle = _throttle(worker, LOGIN_ADDRESS_LIMIT="200 per hour")
    office = "203.0.113.7"
    for i in range(40):
        email = f"colleague{i}@office.example"
        assert throttle.attempt(email, office) is None, f"colleague {i} refused with no failed attempt"
        throttle.succeeded(email, office)
    address_key = throttle.limits["LOGIN_ADDRESS_LIMIT"].key_for(*throttle._counters("x@y.z", office, None)[1][1])
    left = other.get(address_key)  # what every worker sees of the address's failures
    assert left <= LEASE_MOST - 1, f"{left} failures counted against the address, none happened"


def test_a_refund_gives_back_what_the_lease_took(processes: Any) -> None:
    # limits' refund (`hit(cost=-1)`) on a key of a large limit: hit then refund, many times. Each
    # pair nets nothing, so the shared count must not grow past one lease's unused counts.
    (worker, _), (other, _) = processes(), processes()
    key = parse("500 per hour").key_for("signin-address", "a")
    for _ in range(20):
        assert worker.incr(key, 3600) <= 500
        worker.incr(key, 3600, amount=-1)
    shared = other.get(key)
    assert shared <= LEASE_MOST - 1, f"20 hits, 20 refunds: {shared} counted"


def test_thousands_of_other_callers_do_not_waste_a_keys_window(processes: Any) -> None:
    # The docstring: what a process holds unused is at most LEASE_MOST - 1 counts. A victim's key
    # asks twice; in between, 4,096 other buckets (unauthenticated callers from distinct
    # addresses or /64s each get one) ask once each, and the worker drops every live lease.
    (worker, _), (other, _) = processes(), processes()
    item = parse("1200 per minute")  # the API's default
    victim = item.key_for("key:victim", "api")
    assert worker.incr(victim, 60) == 1
    for i in range(4096):
        worker.incr(item.key_for(f"addr:{i}", "api"), 60)
    assert worker.incr(victim, 60) <= 1200
    admitted = 2
    taken = other.get(victim)  # the victim's window, as every worker counts it
    assert taken - admitted <= LEASE_MOST - 1, (
        f"the victim was let in {admitted} times and {taken} of its 1200 are gone")

