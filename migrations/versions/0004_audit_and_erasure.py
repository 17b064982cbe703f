"""Audit log (content-free) and erasure requests.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from portal.adapters.sql.tables import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("actor_id", sa.String(64), nullable=True),
        sa.Column("actor_role", sa.String(16), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("subject_owner_id", sa.String(200), nullable=True),
        sa.Column("scope", sa.String(200), nullable=True),
        sa.Column("counts", sa.Text(), nullable=True),
        sa.Column("ticket", sa.String(200), nullable=True),
        sa.Column("reason_code", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
    )
    op.create_index("ix_audit_log_at", "audit_log", ["at"])
    op.create_index("ix_audit_log_scope_at", "audit_log", ["scope", "at"])
    op.create_index("ix_audit_log_subject", "audit_log", ["subject_owner_id"])
    op.create_table(
        "erasure_requests",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("subject_owner_id", sa.String(200), nullable=False),
        sa.Column("subject_user_id", sa.String(64), nullable=True),
        sa.Column("ticket", sa.String(200), nullable=True),
        sa.Column("received_at", UTCDateTime(), nullable=False),
        sa.Column("requested_by", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
        sa.Column("completed_by", sa.String(64), nullable=True),
        sa.Column("counts", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_erasure_requests"),
    )
    op.create_index("ix_erasure_requests_tenant_state", "erasure_requests", ["tenant_id", "state"])


def downgrade() -> None:
    op.drop_index("ix_erasure_requests_tenant_state", table_name="erasure_requests")
    op.drop_table("erasure_requests")
    op.drop_index("ix_audit_log_subject", table_name="audit_log")
    op.drop_index("ix_audit_log_scope_at", table_name="audit_log")
    op.drop_index("ix_audit_log_at", table_name="audit_log")
    op.drop_table("audit_log")
