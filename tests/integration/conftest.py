"""Fixtures of the integration tests: `store`, a fresh store of each kind a service runs on — the
in-memory reference store, SQLite and PostgreSQL (migrated to head) — for tests of the service
that must hold on every store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from limits.storage import storage_from_string
from sqlalchemy import event
from sqlalchemy.engine import Engine

from portal.adapters.memory.store import InMemoryStore
from portal.adapters.sql.counters import SqlCounters, counters_engine
from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.store import SqlStore


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        return InMemoryStore()
    return SqlStore(request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine"))


START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Clock:
    """The services' clock in a test: `now` set by the test."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def processes(request: pytest.FixtureRequest) -> Iterator[Callable[[], tuple[SqlCounters, list[str]]]]:
    """Makes a "process" of the rate-limit counters (as each gunicorn worker is one): its storage on
    an engine of its own, and the counter writes it made; on SQLite's side file and PostgreSQL."""
    database: Engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    engines: list[Engine] = []

    def make() -> tuple[SqlCounters, list[str]]:
        first = counters_engine(database)  # makes the SQLite side file's table
        assert first is not None
        engine = make_engine(first.url)
        if first is not database:
            first.dispose()
        engines.append(engine)
        writes: list[str] = []

        @event.listens_for(engine, "before_cursor_execute")
        def _seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            if statement.lstrip().upper().startswith("INSERT"):
                writes.append(statement)

        storage = storage_from_string("portal+sql://", engine=engine)
        assert isinstance(storage, SqlCounters)
        return storage, writes

    yield make
    for engine in engines:
        engine.dispose()
