"""SQLite: planner statistics that make a lookup by memory id use the primary key.

Without statistics (no ANALYZE has run, as in any new database) SQLite's planner prefers an index
on (owner_id, scope, ...) over the primary key for `WHERE owner_id = ? AND scope = ? AND id IN
(...)`: every get, get_many, mark_used and save then walked all of the person's memories (5 ms
for one lookup at 10,000 memories, see docs/benchmarks.md). SQLite documents writing
`sqlite_stat1` by hand for this: the rows below describe a large database (many people, about a
thousand memories each, an id naming one memory), which is the shape every query is written for.
A later ANALYZE (or PRAGMA optimize) replaces them with measured ones, which lead to the same plans.
PostgreSQL keeps its own statistics (autovacuum); nothing changes there.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

ROWS = 1_000_000
PER_PLACE = 1_000
# index name (None: the primary key's own index) -> the average rows per value of each prefix of its columns
SHAPES = {
    "memories": {
        None: "1",
        "ix_memories_place_state": f"{PER_PLACE} {PER_PLACE} {PER_PLACE // 2}",
        "ix_memories_place_created": f"{PER_PLACE} {PER_PLACE} 1 1",
        "ix_memories_place_words": f"{PER_PLACE} {PER_PLACE} 1",
        "ix_memories_embedding_model": f"{ROWS // 2}",
    },
    "memory_revisions": {
        None: "3 1",
        "ix_memory_revisions_place": f"{PER_PLACE} {PER_PLACE}",
    },
}


def _primary_key_index(bind: sa.engine.Connection, table: str) -> str | None:
    for row in bind.exec_driver_sql(f"PRAGMA index_list('{table}')"):
        if row[3] == "pk":  # seq, name, unique, origin, partial
            return str(row[1])
    return None


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    # ANALYZE makes the sqlite_stat1 table (it cannot be created otherwise); of a one-row table,
    # so that a large database is not scanned here.
    bind.exec_driver_sql("ANALYZE alembic_version")
    for table, shapes in SHAPES.items():
        bind.exec_driver_sql("DELETE FROM sqlite_stat1 WHERE tbl = ?", (table,))
        bind.exec_driver_sql("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, NULL, ?)", (table, str(ROWS)))
        for index, shape in shapes.items():
            name = index or _primary_key_index(bind, table)
            if name is not None:
                bind.exec_driver_sql(
                    "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)", (table, name, f"{ROWS} {shape}")
                )
    # Load them into this connection too (new connections read them when they open).
    bind.exec_driver_sql("ANALYZE sqlite_schema")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    bind.exec_driver_sql("DELETE FROM sqlite_stat1 WHERE tbl IN ('memories', 'memory_revisions')")
