"""Place tokens: one row per place, replaced by every write that changes what recall ranks.

A process keeps each place's ranking data (vectors, terms) between recalls and checks this token,
one primary-key read, instead of reading every memory of the person again. Existing places get a
token now; from here on every write replaces its place's token.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_places",
        sa.Column("owner_id", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("token", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("owner_id", "scope", name="pk_memory_places"),
    )
    op.execute(
        sa.text(
            "INSERT INTO memory_places (owner_id, scope, token) "
            "SELECT DISTINCT owner_id, scope, :token FROM memories"
        ).bindparams(token=secrets.token_hex(16))
    )


def downgrade() -> None:
    op.drop_table("memory_places")
