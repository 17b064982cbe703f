"""SQLite planner statistics written by hand, for the migrations that shape the memory tables
(0006, 0012).

Without statistics (no ANALYZE has run, as in any new database) SQLite's planner prefers an index
on (owner_id, scope, ...) over the primary key for a lookup by memory id, and walks all of the
person's memories. SQLite documents writing `sqlite_stat1` by hand for this: the rows describe a
large database (many people, about a thousand memories each, an id naming one memory), the shape
every query is written for. A later ANALYZE (or PRAGMA optimize) replaces them with measured ones,
which lead to the same plans. PostgreSQL keeps its own statistics (autovacuum).

Migrations call this with the shapes of their time: change it only in ways that keep what each of
them writes (tests/integration/test_sqlite_plans.py checks the plans at head).
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

ROWS = 1_000_000
PER_PLACE = 1_000

# table -> index name (None: the primary key's own index) -> the average rows per value of each
# prefix of the index's columns
Shapes = dict[str, dict[str | None, str]]


def memory_table_shapes(memories_key: str, revisions_key: str) -> Shapes:
    """The shapes of the two memory tables, given those of their primary keys (which 0012 changed)."""
    return {
        "memories": {
            None: memories_key,
            "ix_memories_place_state": f"{PER_PLACE} {PER_PLACE} {PER_PLACE // 2}",
            "ix_memories_place_created": f"{PER_PLACE} {PER_PLACE} 1 1",
            "ix_memories_place_words": f"{PER_PLACE} {PER_PLACE} 1",
            "ix_memories_embedding_model": f"{ROWS // 2}",
        },
        "memory_revisions": {
            None: revisions_key,
            "ix_memory_revisions_place": f"{PER_PLACE} {PER_PLACE}",
        },
    }


def primary_key_index(bind: Connection, table: str) -> str | None:
    for row in bind.exec_driver_sql(f"PRAGMA index_list('{table}')"):
        if row[3] == "pk":  # seq, name, unique, origin, partial
            return str(row[1])
    return None


def write_statistics(bind: Connection, shapes: Shapes) -> None:
    """Replace the statistics of these tables with the described shapes (SQLite only)."""
    # ANALYZE makes the sqlite_stat1 table (it cannot be created otherwise); of a one-row table,
    # so that a large database is not scanned here.
    bind.exec_driver_sql("ANALYZE alembic_version")
    for table, indexes in shapes.items():
        bind.exec_driver_sql("DELETE FROM sqlite_stat1 WHERE tbl = ?", (table,))
        bind.exec_driver_sql("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, NULL, ?)", (table, str(ROWS)))
        for index, shape in indexes.items():
            name = index or primary_key_index(bind, table)
            if name is not None:
                bind.exec_driver_sql(
                    "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)", (table, name, f"{ROWS} {shape}")
                )
    # Load them into this connection too (new connections read them when they open).
    bind.exec_driver_sql("ANALYZE sqlite_schema")


def drop_statistics(bind: Connection, tables: tuple[str, ...]) -> None:
    for table in tables:
        bind.exec_driver_sql("DELETE FROM sqlite_stat1 WHERE tbl = ?", (table,))
