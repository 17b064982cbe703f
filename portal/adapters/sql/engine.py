"""Engines for SQLite and PostgreSQL, and the per-place write lock each one uses.

SQLite: WAL, a busy timeout, and write transactions opened with `BEGIN IMMEDIATE`, so several
processes on one file serialise their writes instead of failing half way. PostgreSQL: psycopg 3,
a pre-pinged pool, and `pg_advisory_xact_lock` on a hash of the place inside each write
transaction, so several app processes never interleave two writes to one person's memories.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import URL, Connection, Engine, make_url


def normalize_url(url: str | URL) -> URL:
    """postgres:// and postgresql:// go through psycopg 3; sqlite paths get their folder made."""
    parsed = make_url(url) if isinstance(url, str) else url
    if parsed.drivername in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    return parsed


def make_engine(url: str | URL, **kwargs: Any) -> Engine:
    """An engine ready for the store: see the module docstring for what each backend gets."""
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
        if engine.url.database not in (None, "", ":memory:"):
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        mode = connection.get_execution_options().get("sqlite_begin", "")
        connection.exec_driver_sql(f"BEGIN {mode}".strip())


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
