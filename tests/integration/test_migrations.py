"""Alembic owns the schema: `upgrade` builds it on a fresh SQLite and a fresh PostgreSQL, running it
again changes nothing, and autogenerate finds no difference between the models and the database."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.environment import EnvironmentContext
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Column, Integer, MetaData, Table, inspect, text
from sqlalchemy.engine import Engine

from portal.adapters.sql.migrate import alembic_config, current_revision, head_revision, upgrade
from portal.adapters.sql.tables import metadata

TABLES = {
    "tenants", "memories", "memory_revisions", "memory_settings", "consolidation_refs",
    "idempotency_receipts", "memory_tombstones", "api_keys",
}


def schema_differences(engine: Engine, target: MetaData = metadata) -> list[Any]:
    """Autogenerate's comparison, run inside migrations/env.py so that it uses the very
    include_object and compare_type the migrations use."""
    config = alembic_config(engine)
    script = ScriptDirectory.from_config(config)
    found: list[Any] = []

    def compare(_revision: Any, context: MigrationContext) -> list[Any]:
        assert context.opts["include_object"] is not None and context.opts["compare_type"] is not None
        found.extend(compare_metadata(context, target))
        return []

    with engine.connect() as conn:
        config.attributes["connection"] = conn
        with EnvironmentContext(config, script, fn=compare):
            script.run_env()
    return found


def with_canary() -> MetaData:
    copy = MetaData()
    for table in metadata.tables.values():
        table.to_metadata(copy)
    Table("canary", copy, Column("id", Integer, primary_key=True))
    return copy


def check_upgraded_twice(engine: Engine) -> None:
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == head_revision() is not None
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    assert set(inspect(engine).get_table_names()) >= TABLES
    assert schema_differences(engine) == []
    # The comparison can fail: a table the database lacks is reported.
    added = [d for d in schema_differences(engine, with_canary()) if d[0] == "add_table"]
    assert [d[1].name for d in added] == ["canary"]


def test_sqlite_upgrade_is_idempotent_and_matches_the_models(sqlite_blank_engine: Engine) -> None:
    check_upgraded_twice(sqlite_blank_engine)
    with sqlite_blank_engine.connect() as conn:
        # No second copy of the words (0008): no full-text table, no shadow tables, no triggers.
        leftovers = set(conn.execute(text("SELECT name FROM sqlite_master WHERE name LIKE 'memories_fts%'")).scalars())
        triggers = set(conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'")).scalars())
    assert leftovers == set() and triggers == set()


@pytest.mark.postgres
def test_postgres_upgrade_is_idempotent_and_matches_the_models(pg_blank_engine: Engine) -> None:
    check_upgraded_twice(pg_blank_engine)
    with pg_blank_engine.connect() as conn:
        extension = conn.execute(text("SELECT extname FROM pg_extension WHERE extname = 'vector'")).scalar()
        gin = conn.execute(
            text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_memories_search_text_gin'")
        ).scalar()
    assert extension == "vector"
    assert gin is None  # dropped by 0008: nothing read it, and its pages kept erased words


def check_0005_rewrites_search_text_as_terms(engine: Engine) -> None:
    """0005: search text written before it (folded words) is worked out again as ranking terms;
    an encrypted row (no search text) is left alone."""
    from datetime import UTC, datetime

    from sqlalchemy import insert, select

    from portal.adapters.sql.store import SqlStore
    from portal.adapters.sql.tables import memories
    from portal.domain.text import search_text, words
    from portal.domain.types import Place
    from portal.ports import Filters

    upgrade(engine, "0004")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    base = {
        "owner_id": "ada", "scope": "default", "revision": 1, "words_key": "k", "kind": "fact",
        "importance": 3, "origin": "asserted", "sources": "[]", "channel": "foreground", "seen": True,
        "pinned": False, "state": "active", "last_op": "create", "created_at": now, "updated_at": now,
    }
    painted = "Painted two sunsets in Zürich"
    with engine.begin() as conn:
        conn.execute(insert(memories).values(id="m1", text=painted, search_text=" ".join(words(painted)), **base))
        conn.execute(insert(memories).values(id="m2", text="gAAAA-encrypted", search_text=None, **base))
    upgrade(engine)
    with engine.connect() as conn:
        stored = dict(conn.execute(select(memories.c.id, memories.c.search_text)).all())
    assert stored == {"m1": search_text(painted), "m2": None}
    assert stored["m1"] == "paint two sunset in zurich"
    with SqlStore(engine).read(Place("ada", "default")) as tx:
        assert [i for i, _ in tx.search_words("painting a sunset", 5, Filters())] == ["m1"]


def test_sqlite_0005_rewrites_search_text_as_terms(sqlite_blank_engine: Engine) -> None:
    check_0005_rewrites_search_text_as_terms(sqlite_blank_engine)


@pytest.mark.postgres
def test_postgres_0005_rewrites_search_text_as_terms(pg_blank_engine: Engine) -> None:
    check_0005_rewrites_search_text_as_terms(pg_blank_engine)


def check_0008_redacts_the_receipts_that_held_answers(engine: Engine) -> None:
    """0008: receipts completed before it held whole answers (memory text included): their answer
    goes and they replay as redacted; a pending one is left to finish."""
    from datetime import UTC, datetime

    from sqlalchemy import insert, select

    from portal.adapters.sql.tables import idempotency_receipts

    upgrade(engine, "0007")
    base = {"owner_id": "ada", "scope": "default", "request_hash": "h", "memory_ids": "[]", "redacted": False,
            "created_at": datetime(2026, 1, 1, tzinfo=UTC)}
    with engine.begin() as conn:
        conn.execute(insert(idempotency_receipts).values(
            key="done", status=201, response='{"memory": {"text": "Had surgery on her knee"}}', **base))
        conn.execute(insert(idempotency_receipts).values(key="pending", status=0, response=None, **base))
    upgrade(engine)
    with engine.connect() as conn:
        rows = {r.key: (r.status, r.response, r.redacted) for r in conn.execute(select(idempotency_receipts))}
    assert rows == {"done": (201, None, True), "pending": (0, None, False)}


def test_sqlite_0008_redacts_the_receipts_that_held_answers(sqlite_blank_engine: Engine) -> None:
    check_0008_redacts_the_receipts_that_held_answers(sqlite_blank_engine)


@pytest.mark.postgres
def test_postgres_0008_redacts_the_receipts_that_held_answers(pg_blank_engine: Engine) -> None:
    check_0008_redacts_the_receipts_that_held_answers(pg_blank_engine)
