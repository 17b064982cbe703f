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
from portal.adapters.sql.tables import OWNER_TABLES, metadata

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


def check_0017_stems_french_memories_as_french(engine: Engine) -> None:
    """0017: a French memory's search text (English stems before it) is worked out again with
    French stems and stops; an English one and an encrypted one are left as they are."""
    from datetime import UTC, datetime

    from sqlalchemy import insert, select

    from portal.adapters.sql.store import SqlStore
    from portal.adapters.sql.tables import memories
    from portal.domain.text import search_text, stem, words
    from portal.domain.types import Place
    from portal.ports import Filters

    upgrade(engine, "0016")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    base = {
        "owner_id": "ada", "scope": "default", "revision": 1, "words_key": "k", "kind": "fact",
        "importance": 3, "origin": "asserted", "sources": "[]", "channel": "foreground", "seen": True,
        "pinned": False, "state": "active", "last_op": "create", "created_at": now, "updated_at": now,
    }
    french, english = "Elle habitait à Lyon et aime le thé", "Painted two sunsets in Zürich"
    before = {t: " ".join(stem(w) for w in words(t)) for t in (french, english)}
    with engine.begin() as conn:
        conn.execute(insert(memories).values(id="m1", text=french, search_text=before[french], **base))
        conn.execute(insert(memories).values(id="m2", text=english, search_text=before[english], **base))
        conn.execute(insert(memories).values(id="m3", text="gAAAA-encrypted", search_text=None, **base))
    upgrade(engine)
    with engine.connect() as conn:
        stored = dict(conn.execute(select(memories.c.id, memories.c.search_text)).all())
    assert stored == {"m1": search_text(french), "m2": before[english], "m3": None}
    assert stored["m1"] != before[french] and "habit" in stored["m1"].split()
    with SqlStore(engine).read(Place("ada", "default")) as tx:
        assert [i for i, _ in tx.search_words("Où habite-t-elle ?", 5, Filters())] == ["m1"]


def test_sqlite_0017_stems_french_memories_as_french(sqlite_blank_engine: Engine) -> None:
    check_0017_stems_french_memories_as_french(sqlite_blank_engine)


@pytest.mark.postgres
def test_postgres_0017_stems_french_memories_as_french(pg_blank_engine: Engine) -> None:
    check_0017_stems_french_memories_as_french(pg_blank_engine)


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


def owner_less_keys(engine: Engine) -> list[tuple[str, str, list[str]]]:
    """The primary keys and unique indexes of the tables holding a person's rows that do not start
    with owner_id, as the database has them."""
    inspector = inspect(engine)
    found = []
    present = set(inspector.get_table_names())
    for table in OWNER_TABLES:
        if table.name not in present:  # made by a later migration than the one the database is at
            continue
        keys = [("primary key", inspector.get_pk_constraint(table.name)["constrained_columns"])]
        keys += [(i["name"], i["column_names"]) for i in inspector.get_indexes(table.name) if i["unique"]]
        keys += [(c["name"], c["column_names"]) for c in inspector.get_unique_constraints(table.name)]
        found += [(table.name, str(name), list(columns)) for name, columns in keys if columns[:1] != ["owner_id"]]
    return found


def test_every_key_of_a_persons_rows_starts_with_the_owner_in_the_models() -> None:
    """Citus (and PostgreSQL's hash partitioning) enforce a primary key or a unique index only when
    it holds the column the rows are spread by (docs/operations.md "Scaling past one database")."""
    from sqlalchemy import UniqueConstraint

    for table in OWNER_TABLES:
        assert [c.name for c in table.primary_key.columns][:1] == ["owner_id"], table.name
        for index in table.indexes:
            assert not index.unique or [c.name for c in index.columns][:1] == ["owner_id"], (table.name, index.name)
        for constraint in table.constraints:
            if isinstance(constraint, UniqueConstraint):
                assert [c.name for c in constraint.columns][:1] == ["owner_id"], (table.name, constraint.name)


# The keys 0012 changed, as the database has them: primary keys, and whether the job index is unique.
KEYED_BY_OWNER = {"memories": ["owner_id", "id"], "memory_revisions": ["owner_id", "memory_id", "revision"],
                  "ix_consolidation_jobs_id unique": False}
KEYED_BEFORE_0012 = {"memories": ["id"], "memory_revisions": ["memory_id", "revision"],
                     "ix_consolidation_jobs_id unique": True}


def changed_keys(engine: Engine) -> dict[str, Any]:
    inspector = inspect(engine)
    found: dict[str, Any] = {t: inspector.get_pk_constraint(t)["constrained_columns"] for t in ("memories", "memory_revisions")}
    (jobs,) = [i for i in inspector.get_indexes("consolidation_jobs") if i["name"] == "ix_consolidation_jobs_id"]
    found["ix_consolidation_jobs_id unique"] = bool(jobs["unique"])
    return found


def test_sqlite_every_key_of_a_persons_rows_starts_with_the_owner(sqlite_engine: Engine) -> None:
    assert owner_less_keys(sqlite_engine) == [] and changed_keys(sqlite_engine) == KEYED_BY_OWNER


@pytest.mark.postgres
def test_postgres_every_key_of_a_persons_rows_starts_with_the_owner(pg_engine: Engine) -> None:
    assert owner_less_keys(pg_engine) == [] and changed_keys(pg_engine) == KEYED_BY_OWNER


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)


def check_0012_keys_by_owner_and_keeps_every_row(engine: Engine) -> None:
    """0012: the memory tables are keyed by owner first and the job index is no longer unique; every
    row comes through, the store reads it, and going back restores the old keys."""
    from datetime import UTC, datetime

    import numpy as np
    from sqlalchemy import MetaData, Table, insert, select
    from sqlalchemy.exc import IntegrityError

    from portal.adapters.sql.store import SqlStore
    from portal.adapters.sql.tables import consolidation_jobs, memories, memory_revisions
    from portal.domain.decisions import conversation_key
    from portal.domain.types import Place

    upgrade(engine, "0011")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    vector = np.linspace(-1, 1, 384, dtype=np.float32)
    memory = {"search_text": "swim sunday", "embedding_model": "m", "embedding_dim": 384, "embedding": vector,
              "revision": 2, "words_key": "k", "kind": "fact", "importance": 3, "origin": "asserted",
              "sources": "[]", "channel": "foreground", "seen": True, "pinned": False, "state": "active",
              "last_op": "in_place", "created_at": now, "updated_at": now, "scope": "default"}
    wording = {"kind": "fact", "importance": 3, "origin": "asserted", "sources": "[]", "op": "create",
               "written_at": now, "scope": "default"}
    job = {"scope": "default", "ref": "conv-1", "state": "queued", "attempts": 0, "created_at": now, "updated_at": now}
    with engine.begin() as conn:
        conn.execute(insert(memories), [dict(memory, id="m1", owner_id="ada", text="Swims on Sundays"),
                                        dict(memory, id="m2", owner_id="bob", text="Keeps bees")])
        conn.execute(insert(memory_revisions), [dict(wording, memory_id="m1", revision=1, owner_id="ada", text="Swims"),
                                                dict(wording, memory_id="m2", revision=1, owner_id="bob", text="Bees")])
        conn.execute(insert(consolidation_jobs).values(id="j1", owner_id="ada", **job))

    def everything() -> list[list[tuple[Any, ...]]]:
        """Every row of the three tables, as the schema of the moment has them (read by reflection)."""
        with engine.connect() as conn:
            now_tables = [Table(t.name, MetaData(), autoload_with=conn) for t in (memories, memory_revisions, consolidation_jobs)]
            return [[tuple(v.tobytes() if isinstance(v, np.ndarray) else v for v in r)
                     for r in conn.execute(select(t).order_by(*(t.c[c.name] for c in head.primary_key.columns)))]
                    for t, head in zip(now_tables, (memories, memory_revisions, consolidation_jobs), strict=True)]

    before = everything()
    assert changed_keys(engine) == KEYED_BEFORE_0012
    upgrade(engine, "0012")
    assert everything() == before and owner_less_keys(engine) == [] and changed_keys(engine) == KEYED_BY_OWNER
    upgrade(engine)
    # 0018 keeps the job's ref as its conversation key, and going back leaves it so (a digest stays one).
    before[2] = [tuple(conversation_key(v, None) if v == "conv-1" else v for v in row) for row in before[2]]
    store = SqlStore(engine)
    with store.read(Place("ada", "default")) as tx:
        found = tx.get_many(["m1", "m2"])
        assert [m.text for m in found] == ["Swims on Sundays"]
        assert found[0].embedding is not None and np.allclose(found[0].embedding.vector, vector)
        assert [r.text for r in tx.history("m1")] == ["Swims"] and tx.history("m2") == []
    assert store.job_place("j1") == Place("ada", "default")
    downgrade(engine, "0011")
    assert everything() == before and changed_keys(engine) == KEYED_BEFORE_0012
    upgrade(engine, "0012")
    assert everything() == before and changed_keys(engine) == KEYED_BY_OWNER
    # Now one id may name a memory of each of two people; going back below 0012 then refuses, whole.
    with engine.begin() as conn:
        conn.execute(insert(memories).values(dict(memory, id="m1", owner_id="bob", text="Runs")))
    with pytest.raises(IntegrityError):
        downgrade(engine, "0011")
    assert changed_keys(engine) == KEYED_BY_OWNER and len(everything()[0]) == 3


def test_sqlite_0012_keys_by_owner_and_keeps_every_row(sqlite_blank_engine: Engine) -> None:
    check_0012_keys_by_owner_and_keeps_every_row(sqlite_blank_engine)


@pytest.mark.postgres
def test_postgres_0012_keys_by_owner_and_keeps_every_row(pg_blank_engine: Engine) -> None:
    check_0012_keys_by_owner_and_keeps_every_row(pg_blank_engine)


def test_sqlite_0012_leaves_no_copy_of_a_persons_words_for_a_later_erasure_to_miss(sqlite_blank_engine: Engine) -> None:
    """0012 rebuilds the memory tables on SQLite: the old tables' pages are freed, not removed from
    the file. They must hold nothing then (secure_delete), or an erasure after the migration would
    leave the words the copy was made of."""
    from datetime import UTC, datetime
    from pathlib import Path

    from sqlalchemy import insert

    from portal.adapters.sql.store import SqlStore
    from portal.adapters.sql.tables import memories, memory_revisions
    from portal.services.memory_service import MemoryService
    from tests.security.scans import words_in_files

    upgrade(sqlite_blank_engine, "0011")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    base = {"scope": "default", "kind": "fact", "importance": 3, "origin": "asserted", "sources": "[]"}
    with sqlite_blank_engine.begin() as conn:
        for i, (owner, said, earlier) in enumerate((("ada", "zqpelican", "zqheron"), ("bob", "xvotter", "xvbadger"))):
            conn.execute(insert(memories).values(
                id=f"m{i}", owner_id=owner, revision=2, text=f"Watches the {said}", search_text=f"watch the {said}",
                words_key="k", channel="foreground", seen=True, pinned=False, state="active", last_op="update",
                created_at=now, updated_at=now, **base))
            conn.execute(insert(memory_revisions).values(
                memory_id=f"m{i}", revision=1, owner_id=owner, text=f"Watches the {earlier}", op="create",
                written_at=now, **base))
    # Run by a connection of the operator's own (no secure_delete of the app's): 0012 sets it itself.
    from sqlalchemy import create_engine, event

    theirs = create_engine(sqlite_blank_engine.url)
    event.listen(theirs, "connect", lambda dbapi, _record: dbapi.execute("PRAGMA secure_delete=OFF"))
    upgrade(theirs)
    theirs.dispose()
    database = Path(str(sqlite_blank_engine.url.database))
    # The rebuild went through the write-ahead log; the upgrade leaves it truncated, not at that size.
    assert Path(f"{database}-wal").stat().st_size == 0
    store = SqlStore(sqlite_blank_engine)
    MemoryService(store).purge_owner("ada")
    assert store.settle(30)
    assert words_in_files(database, ["zqpelican", "zqheron"], "after the erasure") == []
    # The scan can fail: the person kept is still there, words and earlier wordings.
    assert len(words_in_files(database, ["xvotter", "xvbadger"], "kept")) >= 2


def check_0020_lets_an_account_hold_no_language(engine: Engine) -> None:
    """0020: `users.language` may be NULL (none chosen: the browser's); an account kept before keeps
    what it holds; going back gives an account with no choice the old default."""
    from datetime import UTC, datetime

    from sqlalchemy import insert, select

    from portal.adapters.sql.tables import tenants, users

    upgrade(engine, "0019")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    account = {"password_hash": "x", "role": "member", "tenant_id": "t1", "created_at": now}
    with engine.begin() as conn:
        conn.execute(insert(tenants).values(id="t1", name="Acme", ai_enabled=True, created_at=now))
        conn.execute(insert(users).values(id="u1", email="ada@x.example", name="Ada", owner_id="u1", language="fr",
                                          **account))
    upgrade(engine)
    with engine.begin() as conn:
        conn.execute(insert(users).values(id="u2", email="bo@x.example", name="Bo", owner_id="u2", language=None,
                                          **account))
    with engine.connect() as conn:
        assert dict(conn.execute(select(users.c.id, users.c.language)).all()) == {"u1": "fr", "u2": None}
    downgrade(engine, "0019")
    with engine.connect() as conn:
        assert dict(conn.execute(select(users.c.id, users.c.language)).all()) == {"u1": "fr", "u2": "en"}


def test_sqlite_0020_lets_an_account_hold_no_language(sqlite_blank_engine: Engine) -> None:
    check_0020_lets_an_account_hold_no_language(sqlite_blank_engine)


@pytest.mark.postgres
def test_postgres_0020_lets_an_account_hold_no_language(pg_blank_engine: Engine) -> None:
    check_0020_lets_an_account_hold_no_language(pg_blank_engine)
