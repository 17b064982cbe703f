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

from alembic import op

from portal.adapters.sql.planner import drop_statistics, memory_table_shapes, write_statistics

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# the primary key (id) names one memory; (memory_id, revision): about 3 wordings per memory, then one
SHAPES = memory_table_shapes("1", "3 1")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        write_statistics(bind, SHAPES)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        drop_statistics(bind, ("memories", "memory_revisions"))
