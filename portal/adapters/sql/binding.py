"""What the SQL repositories run on: an engine (each call its own transaction) or the connection of
a unit of work (the calls join its transaction, which the unit of work commits or rolls back)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection, Engine

Bind = Engine | Connection


@contextmanager
def writing(bind: Bind) -> Iterator[Connection]:
    """A connection to write on: the unit of work's own, or a new transaction committed on leaving
    (on SQLite opened with BEGIN IMMEDIATE: a deferred one that reads first and then writes fails
    at once with "database is locked" when another process writes, whatever the busy timeout)."""
    if isinstance(bind, Connection):
        yield bind
        return
    if bind.dialect.name == "sqlite":
        with bind.connect() as plain, plain.execution_options(sqlite_begin="IMMEDIATE").begin():
            yield plain
        return
    with bind.begin() as conn:
        yield conn


@contextmanager
def reading(bind: Bind) -> Iterator[Connection]:
    """A connection to read on: the unit of work's own (it sees the unit's writes), or a new one."""
    if isinstance(bind, Connection):
        yield bind
        return
    with bind.connect() as conn:
        yield conn
