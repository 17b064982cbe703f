"""Rate-limit counters every worker shares, in SQL: a storage for the `limits` library (which
Flask-Limiter and the sign-in throttle count with) when no Redis is configured.

One row a counter: its key (a digest: never an e-mail address, an IP address or a key's secret),
its count and when its window ends. `incr` is one upsert that starts a new window once the old one
ended and answers the count, so concurrent workers never both pass a limit of one.

Where it lives: on PostgreSQL, the UNLOGGED table `rate_limit_counters` of the app's database
(migration 0009: no WAL, emptied by a crash, which only forgets counts); with the embedded SQLite
default, a file of its own beside the database (`memory.db-counters`, WAL, no fsync), so a
counter's write never queues behind a memory's. Redis (`RATELIMIT_STORAGE_URI`) is the choice for
many machines.

Leases (issue 30): for a limit of at least LEASE_FROM a window, a process takes up to LEASE_MOST
counts in one write and hands them out to its requests one by one, so most API calls write no
counter. No count is handed out twice, so never more than the limit get in, across processes as
before. What a lease holds unused is the cost: at any moment at most LEASE_MOST - 1 counts a process
and key, fewer as the window fills (a lease is at most 1/LEASE_TAPER of what the process last saw
left, so one count near the end), and a process refuses early only while another holds such counts
(under 1% of the default 1,200 a minute). Unused counts are never thrown away while their window
lasts: a refund (the sign-in throttle gives a successful attempt back) writes them back with it,
and a process with LEASES_KEPT live leases counts new keys one by one rather than drop one. `clear`
and `reset` forget this process's leases only: another may still hand out a few counts of the old
row. Once a process has seen its key's window full it refuses without writing, looking again once a
second. Limits under LEASE_FROM (the sign-in throttle's defaults) are counted one by one.
"""

from __future__ import annotations

import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from limits.storage import Storage
from sqlalchemy import Column, Float, Integer, MetaData, String, Table, bindparam, case, delete, event, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError

from portal.adapters.sql.engine import make_engine

# Not in the product's metadata: on SQLite the table is in a file of its own (created here), on
# PostgreSQL migration 0009 makes it UNLOGGED, which SQLAlchemy's DDL cannot say.
counters_metadata = MetaData()
rate_limit_counters = Table(
    "rate_limit_counters",
    counters_metadata,
    Column("key", String(255), primary_key=True),
    Column("count", Integer, nullable=False),
    Column("expires_at", Float, nullable=False),
)
C = rate_limit_counters.c

LEASE_FROM = 128  # a smaller limit is counted one by one: exact, as each count is its own write
LEASE_MOST = 8  # the most counts one write takes for a process
LEASE_TAPER = 16  # a lease is at most 1/16 of what the window has left
LEASES_KEPT = 4096  # live leases a process keeps at most (then new keys are counted one by one)
FULL_RECHECK = 1.0  # seconds a process refuses a full window without writing, before it looks again
_UNITS = {"second", "minute", "hour", "day", "month", "year"}


def limit_of(key: str) -> int | None:
    """The amount of the limit a `limits` key counts (`RateLimitItem.key_for`: ".../{amount}/
    {multiples}/{granularity}"), None when the key does not say (then counted one by one)."""
    parts = key.rsplit("/", 3)
    if len(parts) != 4 or parts[3] not in _UNITS or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return int(parts[1]) or None


def lease_size(limit: int | None, seen: int) -> int:
    """How many counts to take in one write when `seen` were taken of the window by the last look."""
    if limit is None or limit < LEASE_FROM:
        return 1
    return max(1, min(LEASE_MOST, (limit - seen) // LEASE_TAPER))


@dataclass
class _Lease:
    next: int  # the next count to hand out
    last: int  # the last count this lease holds
    ends: float  # when the window it was taken in ends
    seen: int  # the shared count when it was taken
    at: float  # when


def counters_engine(database: Engine) -> Engine | None:
    """Where the counters of this database's app live: PostgreSQL itself, SQLite a file beside it;
    None for an in-memory SQLite database (one process: the limits library's memory storage)."""
    if database.dialect.name == "postgresql":
        return database
    path = database.url.database
    if not path or path == ":memory:":
        return None
    engine = make_engine(make_url(f"sqlite:///{Path(path).with_name(Path(path).name + '-counters')}"))

    @event.listens_for(engine, "connect")
    def _fast(dbapi_connection: Any, _record: Any) -> None:
        # Counts lost in a power cut cost a few extra tries: no fsync on every request.
        dbapi_connection.cursor().execute("PRAGMA synchronous=OFF")

    # In a BEGIN IMMEDIATE transaction: workers booting together all make the table, and a plain
    # create_all reads the schema first, then its write fails at once with "database is locked"
    # (SQLite does not wait on a read upgraded to a write); an immediate one waits its turn.
    with engine.connect() as conn, conn.execution_options(sqlite_begin="IMMEDIATE").begin():
        counters_metadata.create_all(conn)
    return engine


def counters_storage(uri: str, database: Engine) -> tuple[str, dict[str, Any], Engine | None]:
    """The `limits` storage URI and options for rate-limit counters: `uri` when one is configured
    (Redis), else this database's counters (`counters_engine`, also answered, so its owner can
    dispose of it), else the limits library's memory storage."""
    if uri:
        return uri, {}, None
    engine = counters_engine(database)
    if engine is None:
        return "memory://", {}, None
    return f"{SqlCounters.STORAGE_SCHEME[0]}://", {"engine": engine}, engine


class SqlCounters(Storage):
    """`limits` storage on a SQLAlchemy engine (`storage_from_string("portal+sql://", engine=...)`)."""

    STORAGE_SCHEME = ["portal+sql"]

    SWEEP_EVERY = 500  # increments between two sweeps of ended windows, in a process

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False, **options: Any) -> None:
        super().__init__(uri, wrap_exceptions=wrap_exceptions)
        self.engine: Engine = options["engine"]
        # Built once: building and compiling the upsert on every request cost 4x its run (0.33 ms
        # against 0.09 on SQLite), on the path of every API call.
        insert = pg_insert if self.engine.dialect.name == "postgresql" else sqlite_insert
        live = C.expires_at > bindparam("now")
        # A new window starts from `fresh`, the amount but never below 0: a refund arriving just
        # after its window ended gives back nothing of the next one.
        self._incr = insert(rate_limit_counters).values(
            key=bindparam("key"), count=bindparam("fresh"), expires_at=bindparam("ends"),
        ).on_conflict_do_update(
            index_elements=[C.key],
            set_={
                "count": case((live, C.count + bindparam("amount")), else_=bindparam("fresh")),
                "expires_at": case((live, C.expires_at), else_=bindparam("ends")),
            },
        ).returning(C.count, C.expires_at)
        self._until_sweep = self.SWEEP_EVERY
        self._told = threading.local()
        self._leases: dict[str, _Lease] = {}
        self._leases_lock = threading.Lock()  # the dict's own: never held over a write
        self._pruned_at = 0.0
        self._key_locks = [threading.Lock() for _ in range(64)]  # a key's threads queue for its one write

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return DBAPIError

    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        limit = limit_of(key)
        if lease_size(limit, 0) == 1:
            count, ends = self._write(key, expiry, amount, time.time())
            return self._tell(key, count, ends)
        with self._key_locks[zlib.crc32(key.encode()) % 64]:
            now = time.time()
            with self._leases_lock:
                lease = self._leases.get(key)
                if lease is not None and lease.ends <= now:
                    lease = None
                room = lease is not None or self._room(now)
            if amount != 1:  # a refund (or a cost): to the shared row, with this process's lease's
                # unused counts given back in the same write, so a hit and its refund net nothing
                with self._leases_lock:
                    self._leases.pop(key, None)
                unused = lease.last - lease.next + 1 if lease is not None and lease.next <= lease.last else 0
                count, ends = self._write(key, expiry, amount - unused, now)
                return self._tell(key, count, ends)
            if lease is not None:
                if lease.next <= lease.last:
                    lease.next += 1
                    return self._tell(key, lease.next - 1, lease.ends)
                if lease.seen >= (limit or 0) and now - lease.at < FULL_RECHECK:
                    return self._tell(key, lease.seen + 1, lease.ends)  # full: refused, no write
            # Without room for its lease (thousands of callers at once), one count: nothing unused.
            size = lease_size(limit, lease.seen if lease is not None else 0) if room else 1
            count, ends = self._write(key, expiry, size, now)
            if room:
                with self._leases_lock:
                    self._leases[key] = _Lease(count - size + 2, count, ends, count, now)
            return self._tell(key, count - size + 1, ends)

    def _room(self, now: float) -> bool:
        """Whether a new key's lease may be kept (under the dict's lock). At LEASES_KEPT, the
        leases that hold nothing (window ended, or every count handed out) go, at most once a
        second: a live lease is never dropped, as its unused counts would be lost to its key."""
        if len(self._leases) < LEASES_KEPT:
            return True
        if now - self._pruned_at >= 1.0:
            self._pruned_at = now
            self._leases = {k: v for k, v in self._leases.items() if v.ends > now and v.next <= v.last}
        return len(self._leases) < LEASES_KEPT

    def _write(self, key: str, expiry: float, amount: int, now: float) -> tuple[int, float]:
        """Add `amount` to the shared count (a new window if the last one ended): the count and
        the window's end."""
        with self.engine.begin() as conn:
            count, expires_at = conn.execute(self._incr, {"key": key, "amount": amount, "fresh": max(amount, 0),
                                                          "now": now, "ends": now + expiry}).one()
        self._until_sweep -= 1
        if self._until_sweep <= 0:  # ended windows count nothing: their rows go now and then
            self._until_sweep = self.SWEEP_EVERY
            self.sweep()
        return int(count), float(expires_at)

    def _tell(self, key: str, count: int, ends: float) -> int:
        # What the answer's headers ask for next (the count and the window's end): told from this
        # increment, once each, in this thread and within the second, instead of two more reads.
        self._told.last = {"key": key, "at": time.time(), "get": count, "get_expiry": ends}
        return count

    def _just_written(self, key: str, what: str) -> Any:
        last = getattr(self._told, "last", None)
        if last is None or last["key"] != key or what not in last or time.time() - last["at"] > 1:
            return None
        return last.pop(what)

    def get(self, key: str) -> int:
        told = self._just_written(key, "get")
        if told is not None:
            return int(told)
        with self.engine.connect() as conn:
            found = conn.execute(select(C.count).where(C.key == key, C.expires_at > time.time())).scalar()
        return int(found or 0)

    def get_expiry(self, key: str) -> float:
        told = self._just_written(key, "get_expiry")
        if told is not None:
            return float(told)
        with self.engine.connect() as conn:
            found = conn.execute(select(C.expires_at).where(C.key == key)).scalar()
        return float(found) if found is not None else time.time()

    def check(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.execute(select(1))
            return True
        except DBAPIError:
            return False

    def reset(self) -> int | None:
        self._told.last = None  # what this thread's last increment told is gone with it
        with self._leases_lock:
            self._leases.clear()
        with self.engine.begin() as conn:
            return int(conn.execute(delete(rate_limit_counters)).rowcount)

    def clear(self, key: str) -> None:
        self._told.last = None
        with self._leases_lock:
            self._leases.pop(key, None)
        with self.engine.begin() as conn:
            conn.execute(delete(rate_limit_counters).where(C.key == key))

    def sweep(self) -> int:
        """Delete the counters whose window ended (they count nothing any more)."""
        with self.engine.begin() as conn:
            return int(conn.execute(delete(rate_limit_counters).where(C.expires_at <= time.time())).rowcount)
