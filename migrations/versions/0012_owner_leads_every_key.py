"""Every key of a table holding a person's rows starts with owner_id, the column a sharded schema
spreads them by (docs/operations.md "Scaling past one database"): Citus, like PostgreSQL's hash
partitioning, enforces a primary key or a unique index only when it holds that column.

- `memories`: primary key `(id)` becomes `(owner_id, id)`; a memory id is unique within its owner.
- `memory_revisions`: `(memory_id, revision)` becomes `(owner_id, memory_id, revision)`.
- `consolidation_jobs`: the index on `id` (a worker finds a job's place by it) is no longer unique.

Every statement already names the owner with an id (tests/integration/test_owner_in_every_statement.py),
so the new keys serve every lookup the old ones served. SQLite rebuilds the two tables (batch mode;
the copy runs with secure_delete on, as every connection of the app does, so the old pages are
zeroed) and gets the planner statistics of 0006 again, described for the new keys.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

from portal.adapters.sql.planner import PER_PLACE, Shapes, memory_table_shapes, write_statistics

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

KEYS = {
    "memories": (("id",), ("owner_id", "id")),
    "memory_revisions": (("memory_id", "revision"), ("owner_id", "memory_id", "revision")),
}


def shapes(keyed_by_owner: bool) -> Shapes:
    """The planner statistics for the keys: led by the owner, about a thousand rows each."""
    if keyed_by_owner:
        return memory_table_shapes(f"{PER_PLACE} 1", f"{PER_PLACE} 3 1")
    return memory_table_shapes("1", "3 1")  # 0006's


def _rekey(new: bool) -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        # The rebuild frees the old tables' pages: zeroed, or a later erasure would leave the words
        # they held in the file (the app's connections set this too; an operator's may not).
        bind.exec_driver_sql("PRAGMA secure_delete=ON")
    for table, (old_key, new_key) in KEYS.items():
        with op.batch_alter_table(table, recreate="auto") as batch:
            batch.drop_constraint(f"pk_{table}", type_="primary")
            batch.create_primary_key(f"pk_{table}", list(new_key if new else old_key))
    if bind.dialect.name == "sqlite":
        write_statistics(bind, shapes(new))


def upgrade() -> None:
    _rekey(True)
    op.drop_index("ix_consolidation_jobs_id", table_name="consolidation_jobs")
    op.create_index("ix_consolidation_jobs_id", "consolidation_jobs", ["id"])


def downgrade() -> None:
    op.drop_index("ix_consolidation_jobs_id", table_name="consolidation_jobs")
    op.create_index("ix_consolidation_jobs_id", "consolidation_jobs", ["id"], unique=True)
    _rekey(False)
