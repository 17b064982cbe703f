"""Engines for SQLite and PostgreSQL, and the per-place write lock each one uses.

SQLite: WAL, a busy timeout, and write transactions opened with `BEGIN IMMEDIATE`, so several
processes on one file serialise their writes instead of failing half way. PostgreSQL: psycopg 3,
a pre-pinged pool, and `pg_advisory_xact_lock` on a hash of the place inside each write
transaction, so several app processes never interleave two writes to one person's memories.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError

log = logging.getLogger("portal.store")


def normalize_url(url: str | URL) -> URL:
    """postgres:// and postgresql:// go through psycopg 3; sqlite paths get their folder made."""
    parsed = make_url(url) if isinstance(url, str) else url
    if parsed.drivername in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    return parsed


def make_engine(url: str | URL, **kwargs: Any) -> Engine:
    """An engine ready for the store: see the module docstring for what each backend gets.

    Statement parameters never appear in SQLAlchemy's logs or in the text of its errors
    (`hide_parameters`): a failed write's traceback would otherwise print the person's words."""
    kwargs.setdefault("hide_parameters", True)
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(parsed, connect_args={"timeout": 60, "check_same_thread": False}, **kwargs)
        _sqlite_events(engine)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    kwargs.setdefault("pool_size", 5)
    kwargs.setdefault("max_overflow", 10)
    return create_engine(parsed, **kwargs)


def _sqlite_events(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's begin event decide how a transaction starts (deferred or IMMEDIATE).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if engine.url.database not in (None, "", ":memory:"):
            _write_ahead_log(cursor)
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        # Deleted rows are overwritten with zeros in the database pages, not only unlinked: what a
        # person erased is not left in free space (many builds default to this; never rely on it).
        cursor.execute("PRAGMA secure_delete=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        mode = connection.get_execution_options().get("sqlite_begin", "")
        connection.exec_driver_sql(f"BEGIN {mode}".strip())


def _write_ahead_log(cursor: Any) -> None:
    """Put the file in WAL mode. On a new file that several processes open at once (workers
    booting together), SQLite answers "database is locked" at once to all but one of them, without
    calling the busy handler: try again until the busy timeout, as the handler would have."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


BUSY_TIMEOUT_MS = 60_000
# How long the erasing request's own checkpoint waits for readers of older snapshots before leaving
# it to the janitor, and how long each of the janitor's tries waits.
CHECKPOINT_FIRST_WAIT_MS = 100
CHECKPOINT_WAIT_MS = 500


def checkpoint(engine: Engine, wait_ms: int = CHECKPOINT_WAIT_MS) -> bool:
    """SQLite: copy the write-ahead log into the database and truncate it to zero bytes, so the
    page images it held (with whatever rows they held) are gone from the `-wal` file. Answers False
    when readers of an older snapshot kept it from completing within `wait_ms`."""
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute(f"PRAGMA busy_timeout={wait_ms}")
        try:
            busy, _log, _done = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            cursor.close()
        return not busy
    finally:
        raw.close()


# The tables holding a person's rows (kept in step with tables.OWNER_TABLES by a test).
OWNER_TABLE_NAMES = ("memories", "memory_revisions", "memory_settings", "consolidation_refs", "idempotency_receipts",
                     "memory_tombstones", "memory_places", "app_controls", "app_uses", "conversation_uses",
                     "consolidation_jobs")
VACUUM_WAIT = "5s"


def vacuum_owner_tables(engine: Engine, tables: tuple[str, ...] = OWNER_TABLE_NAMES) -> bool:
    """PostgreSQL: VACUUM (INDEX_CLEANUP ON) these tables holding a person's rows, in autocommit.
    Plain VACUUM skips index cleanup when under 2% of a table's pages hold dead rows, which leaves
    an erased person's owner id in the indexes of a large table. Answers whether it ran.

    On a connection of the pool, given back as it was taken (its lock_timeout reset): after every
    forget a VACUUM runs, and a connection thrown away each time made the next request open a new
    one (docs/benchmarks.md, "Erasure's cleaning up"). One that cannot be reset is not given back."""
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql(f"SET lock_timeout = '{VACUUM_WAIT}'")
            try:
                conn.exec_driver_sql(f"VACUUM (INDEX_CLEANUP ON) {', '.join(t for t in tables if t in OWNER_TABLE_NAMES)}")
            finally:
                try:
                    conn.exec_driver_sql("RESET lock_timeout")
                except DBAPIError:
                    conn.invalidate()  # never back to the pool with this job's lock_timeout
                    raise
    except DBAPIError as exc:
        log.warning("erasure.vacuum_skipped error=%s", type(exc.orig).__name__)
    return True  # done, or left to autovacuum: not retried


def place_lock_key(owner_id: str, scope: str) -> str:
    """What the place's advisory lock is taken on (hashed by `hashtextextended(key, 0)`)."""
    return f"memory-place:{owner_id}\x1f{scope}"


def lock_place(connection: Connection, owner_id: str, scope: str) -> None:
    """Take the place's write lock for the rest of this transaction (PostgreSQL only; SQLite's
    `BEGIN IMMEDIATE` already serialises writers)."""
    if connection.dialect.name == "postgresql":
        connection.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": place_lock_key(owner_id, scope)}
        )


def is_postgres(engine: Engine | Connection) -> bool:
    return engine.dialect.name == "postgresql"
