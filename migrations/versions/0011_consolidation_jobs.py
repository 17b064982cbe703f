"""Consolidation in the background: `consolidation_jobs` (a person's rows: erased with them; the
transcript encrypted like memories and cleared once the job is over) and, on PostgreSQL, huey's
queue tables (`huey_kv`, `huey_schedule`, `huey_task`, `huey_counter`: job ids only, never a
person's data), as huey's `PostgresStorage` makes them, so the app never needs the privilege to
create tables. On SQLite the queue is a file beside the database, made by huey.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from portal.adapters.sql.tables import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

HUEY = (
    "CREATE TABLE IF NOT EXISTS huey_kv (queue TEXT NOT NULL, key TEXT NOT NULL, value BYTEA NOT NULL, "
    "PRIMARY KEY (queue, key))",
    "CREATE TABLE IF NOT EXISTS huey_schedule (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, data BYTEA NOT NULL, "
    "timestamp DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS huey_schedule_queue_timestamp ON huey_schedule (queue, timestamp)",
    "CREATE TABLE IF NOT EXISTS huey_task (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, data BYTEA NOT NULL, "
    "priority DOUBLE PRECISION NOT NULL DEFAULT 0.0)",
    "CREATE INDEX IF NOT EXISTS huey_task_queue_priority_id ON huey_task (queue, priority DESC, id)",
    "CREATE TABLE IF NOT EXISTS huey_counter (queue TEXT NOT NULL, key TEXT NOT NULL, value BIGINT NOT NULL DEFAULT 0, "
    "PRIMARY KEY (queue, key))",
)


def upgrade() -> None:
    op.create_table(
        "consolidation_jobs",
        sa.Column("owner_id", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("ref", sa.String(200), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("app_id", sa.String(64), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("reason", sa.String(64), nullable=True),
        sa.Column("work", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("owner_id", "scope", "id", name="pk_consolidation_jobs"),
    )
    op.create_index("ix_consolidation_jobs_id", "consolidation_jobs", ["id"], unique=True)
    op.create_index("ix_consolidation_jobs_state_updated", "consolidation_jobs", ["state", "updated_at"])
    if op.get_bind().dialect.name == "postgresql":
        for statement in HUEY:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in ("huey_counter", "huey_task", "huey_schedule", "huey_kv"):
            op.execute(f"DROP TABLE IF EXISTS {table}")
    op.drop_index("ix_consolidation_jobs_state_updated", table_name="consolidation_jobs")
    op.drop_index("ix_consolidation_jobs_id", table_name="consolidation_jobs")
    op.drop_table("consolidation_jobs")
