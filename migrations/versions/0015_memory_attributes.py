"""What a host keeps with a memory besides its words (issue 28: mem0's agent_id, app_id, run_id,
metadata, categories, expiration_date, timestamp): `memories.attributes`, JSON encrypted as the
text is (NULL for a memory with none). It lives in the memory's row, so forgetting the memory
erases it with the words, through the same secure path.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("attributes", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("memories") as batch:
        batch.drop_column("attributes")
