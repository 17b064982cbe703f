"""Alembic environment: runs the migrations against the URL or connection it is handed."""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import pool

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.tables import UTCDateTime, VectorType, metadata

config = context.config
target_metadata = metadata

# Objects that only one dialect has and that the models do not describe: SQLite's FTS5 table
# (and its shadow tables) and PostgreSQL's full-text expression index.
# memories_fts: before 0008; rate_limit_counters: UNLOGGED, see portal.adapters.sql.counters;
# huey_*: the job queue's own tables and indexes (PostgreSQL, migration 0011; portal.adapters.queue)
UNMODELLED = ("memories_fts", "rate_limit_counters", "huey_")
UNMODELLED_INDEXES = ("ix_memories_search_text_gin",)


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    if type_ == "table" and name and name.startswith(UNMODELLED):
        return False
    return not (type_ == "index" and name is not None and (name in UNMODELLED_INDEXES or name.startswith("huey_")))


def compare_type(ctx: Any, inspected: Any, metadata_column: Any, inspected_type: Any, metadata_type: Any) -> bool | None:
    # Our decorated types map to BLOB/vector and TIMESTAMP per dialect; the migration uses the same
    # decorators, so only the undecorated columns need the default comparison.
    if isinstance(metadata_type, (VectorType, UTCDateTime)):
        return False
    return None


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(config.get_main_option("sqlalchemy.url"), poolclass=pool.NullPool)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


def _run(connection: Any) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        include_object=include_object,
        compare_type=compare_type,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
