"""Connected apps: what a person decided about each app (paused, blocked) and the apps' uses of
their memories, content-free (ids, actions, day buckets, counts and times). Both tables are a
person's rows: erased with them, and `app_uses` pruned by `last_at`.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from portal.adapters.sql.tables import UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "app_controls",
        sa.Column("owner_id", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("app_id", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("owner_id", "scope", "app_id", name="pk_app_controls"),
    )
    op.create_table(
        "app_uses",
        sa.Column("owner_id", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("app_id", sa.String(64), nullable=False),
        sa.Column("memory_id", sa.String(64), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("last_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("owner_id", "scope", "app_id", "memory_id", "action", "day", name="pk_app_uses"),
    )
    op.create_index("ix_app_uses_last_at", "app_uses", ["last_at"])


def downgrade() -> None:
    op.drop_index("ix_app_uses_last_at", table_name="app_uses")
    op.drop_table("app_uses")
    op.drop_table("app_controls")
