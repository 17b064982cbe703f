"""Fixtures of the integration tests: `store`, a fresh store of each kind a service runs on — the
in-memory reference store, SQLite and PostgreSQL (migrated to head) — for tests of the service
that must hold on every store."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from portal.adapters.memory.store import InMemoryStore
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
