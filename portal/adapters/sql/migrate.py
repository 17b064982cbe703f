"""Applying the Alembic migrations from code (`memory-portal db upgrade`, tests, start-up checks)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy.engine import Engine

from portal.adapters.sql.engine import checkpoint
from portal.adapters.sql.vector_extension import require_supported

MIGRATIONS = Path(__file__).resolve().parents[3] / "migrations"


def alembic_config(engine: Engine | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if engine is not None:
        config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database to `revision` (idempotent: an up-to-date database is left as it is).

    On SQLite, once migrations ran, the write-ahead log is checkpointed and truncated. On
    PostgreSQL it first refuses, with VectorExtensionError, a server whose pgvector is missing
    or older than the code needs, before any migration runs.
    """
    config = alembic_config(engine)
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            require_supported(conn)
        before = MigrationContext.configure(conn).get_current_revision()
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
        ran = MigrationContext.configure(conn).get_current_revision() != before
    if ran and engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:"):
        # A migration that rewrites tables (0012) leaves their whole size in the write-ahead log:
        # copied into the file and the log truncated, so it is not kept at that size.
        checkpoint(engine)


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def known_revision(revision: str) -> bool:
    """Whether `revision` is one of this code's migrations (a database migrated by a newer release
    is at one it does not know)."""
    try:
        return ScriptDirectory.from_config(alembic_config()).get_revision(revision) is not None
    except CommandError:
        return False
