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
"""

from __future__ import annotations

import threading
import time
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
        self._incr = insert(rate_limit_counters).values(
            key=bindparam("key"), count=bindparam("amount"), expires_at=bindparam("ends"),
        ).on_conflict_do_update(
            index_elements=[C.key],
            set_={
                "count": case((live, C.count + bindparam("amount")), else_=bindparam("amount")),
                "expires_at": case((live, C.expires_at), else_=bindparam("ends")),
            },
        ).returning(C.count, C.expires_at)
        self._until_sweep = self.SWEEP_EVERY
        self._told = threading.local()

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return DBAPIError

    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        now = time.time()
        with self.engine.begin() as conn:
            count, expires_at = conn.execute(self._incr, {"key": key, "amount": amount, "now": now,
                                                          "ends": now + expiry}).one()
        count = int(count)
        # What the answer's headers ask for next (the count left and the window's end): told from
        # this write, once each, in this thread and within the second, instead of two more reads.
        self._told.last = {"key": key, "at": now, "get": count, "get_expiry": float(expires_at)}
        self._until_sweep -= 1
        if self._until_sweep <= 0:  # ended windows count nothing: their rows go now and then
            self._until_sweep = self.SWEEP_EVERY
            self.sweep()
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
        with self.engine.begin() as conn:
            return int(conn.execute(delete(rate_limit_counters)).rowcount)

    def clear(self, key: str) -> None:
        self._told.last = None
        with self.engine.begin() as conn:
            conn.execute(delete(rate_limit_counters).where(C.key == key))

    def sweep(self) -> int:
        """Delete the counters whose window ended (they count nothing any more)."""
        with self.engine.begin() as conn:
            return int(conn.execute(delete(rate_limit_counters).where(C.expires_at <= time.time())).rowcount)
