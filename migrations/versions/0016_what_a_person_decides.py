"""What a person decides about each memory and what each answer used (issue 29):

- `memories.expires_at`: when it is forgotten (NULL: never); no read answers it after, and the
  sweep erases it as forget erases (indexed for the sweep, across places);
- `memories.withheld`: the apps that may not receive it ("don't use this"), a JSON list of app
  ids or ["*"] for every app (NULL: every app may);
- `memory_settings.learnt_days` and `tenants.learnt_days`: "forget what the assistant learns
  after N days unless pinned", the person's (NULL: the tenant's) and the tenant's default;
- `conversation_uses`: which memories were handed to which conversation of which app, and when;
  the conversation as a keyed digest of the assistant's reference, never its words. Pruned with
  the apps' uses, erased with the memory and with the person.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from portal.adapters.sql.tables import UTCDateTime

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("expires_at", UTCDateTime(), nullable=True))
    op.add_column("memories", sa.Column("withheld", sa.Text(), nullable=True))
    op.create_index("ix_memories_expires_at", "memories", ["expires_at"])
    op.add_column("memory_settings", sa.Column("learnt_days", sa.Integer(), nullable=True))
    op.add_column("tenants", sa.Column("learnt_days", sa.Integer(), nullable=True))
    op.create_table(
        "conversation_uses",
        sa.Column("owner_id", sa.String(200), primary_key=True),
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("app_id", sa.String(64), primary_key=True),
        sa.Column("conversation", sa.String(64), primary_key=True),
        sa.Column("memory_id", sa.String(64), primary_key=True),
        sa.Column("first_at", UTCDateTime(), nullable=False),
        sa.Column("last_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_conversation_uses_last_at", "conversation_uses", ["last_at"])


def downgrade() -> None:
    op.drop_index("ix_conversation_uses_last_at", table_name="conversation_uses")
    op.drop_table("conversation_uses")
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("learnt_days")
    with op.batch_alter_table("memory_settings") as batch:
        batch.drop_column("learnt_days")
    op.drop_index("ix_memories_expires_at", table_name="memories")
    with op.batch_alter_table("memories") as batch:
        batch.drop_column("withheld")
        batch.drop_column("expires_at")
