"""SQLite finds a memory (and a memory's wordings) by its id through the primary key, led by the
owner since migration 0012, and a person's memories through the place index, from the first query
of a new database (the planner statistics of migrations 0006 and 0012): before them, every lookup
by id walked all of the person's memories (5 ms at 10,000 of them)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.engine import Engine

from portal.adapters.sql.store import SqlStore
from portal.adapters.sql.tables import memories, memory_revisions
from portal.domain.options import Options
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

M = memories.c


def plan_of(engine: Engine, statement) -> str:
    sql = str(statement.compile(engine, compile_kwargs={"literal_binds": True}))
    with engine.connect() as conn:
        return " | ".join(row[3] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql))


def test_lookups_by_id_use_the_primary_key_and_place_scans_the_place_index(sqlite_engine: Engine) -> None:
    service = MemoryService(SqlStore(sqlite_engine), options=Options(max_active=None))
    place = Place("ada", "default")
    saved = service.remember_many(place, [f"Keeps note number {i} about the garden" for i in range(300)],
                                  on_duplicate="keep")
    ids = [s.memory.id for s in saved[:5]]  # type: ignore[union-attr]

    by_id = plan_of(sqlite_engine, select(memories).where(M.owner_id == "ada", M.scope == "default", M.id.in_(ids)))
    assert "sqlite_autoindex_memories_1 (owner_id=? AND id=?)" in by_id, by_id
    R = memory_revisions.c
    wordings = plan_of(sqlite_engine, select(R.revision).where(R.owner_id == "ada", R.scope == "default",
                                                               R.memory_id == ids[0]).order_by(R.revision.desc()))
    assert "sqlite_autoindex_memory_revisions_1 (owner_id=? AND memory_id=?)" in wordings, wordings
    place_scan = plan_of(sqlite_engine, select(M.id).where(M.owner_id == "ada", M.scope == "default", M.state == "active"))
    assert "ix_memories_place_state" in place_scan, place_scan

    # and the service still finds exactly those memories, in that person's place only
    with service.store.read(place) as tx:
        assert [m.id for m in tx.get_many(ids)] == ids
    with service.store.read(Place("bob", "default")) as tx:
        assert tx.get_many(ids) == []


def test_maintenance_scans_walk_the_primary_key_in_its_order(sqlite_engine: Engine) -> None:
    """reindex and retention page through every place's memories in the order of the primary key
    (owner, then id), so a batch reads its rows in index order and stops at its limit: no sort of
    the whole table behind each batch."""
    from datetime import UTC, datetime

    from sqlalchemy import event

    store = SqlStore(sqlite_engine)
    sent: list[tuple[str, object]] = []

    def capture(conn: object, cursor: object, sql: str, params: object, context: object, many: bool) -> None:
        if sql.lstrip().upper().startswith("SELECT") and "FROM memories" in sql:
            sent.append((sql, params))

    event.listen(sqlite_engine, "before_cursor_execute", capture)
    try:
        store.needing_vector("a-model", 384, 100)
        store.archived_before(datetime(2026, 1, 1, tzinfo=UTC), 100)
    finally:
        event.remove(sqlite_engine, "before_cursor_execute", capture)
    assert len(sent) == 2
    with sqlite_engine.connect() as conn:
        for sql, params in sent:
            plan = " | ".join(row[3] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params))
            assert "sqlite_autoindex_memories_1" in plan and "TEMP B-TREE" not in plan, plan
