"""A memory named by its id alone, within a tenant: mem0's routes (`GET /v1/memories/{id}/`) carry
no person, so the store finds the person by the memory (`Store.memory_place`) through this index
(on the id alone: with the scope too, SQLite's planner took it for a place's own lookups instead of
the owner-led primary key) instead of reading the tenant's every row.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_memories_id", "memories", ["id"])


def downgrade() -> None:
    op.drop_index("ix_memories_id", table_name="memories")
