"""SQLite finds a memory by its id through the primary key, and a person's memories through the
place index, from the first query of a new database (migration 0006's planner statistics): before
it, every lookup by id walked all of the person's memories (5 ms at 10,000 of them)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.engine import Engine

from portal.adapters.sql.store import SqlStore
from portal.adapters.sql.tables import memories
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
    assert "sqlite_autoindex_memories_1 (id=?)" in by_id, by_id
    place_scan = plan_of(sqlite_engine, select(M.id).where(M.owner_id == "ada", M.scope == "default", M.state == "active"))
    assert "ix_memories_place_state" in place_scan, place_scan

    # and the service still finds exactly those memories, in that person's place only
    with service.store.read(place) as tx:
        assert [m.id for m in tx.get_many(ids)] == ids
    with service.store.read(Place("bob", "default")) as tx:
        assert tx.get_many(ids) == []
