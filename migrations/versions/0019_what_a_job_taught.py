"""What a background job taught (issue 38, item 24): `consolidation_jobs.taught`, the ids of the
memories its run added, corrected or said again (a JSON list; ids only). Erasing the words of any
of them (a forget, forget matching, an undo, an expiry, an in-place edit, erasing earlier wordings)
erases the job's summary in the same transaction, since the summary may say them. Jobs over before
this migration have none: their summaries go when read, or with their retention (an hour).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("consolidation_jobs", sa.Column("taught", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("consolidation_jobs") as batch:
        batch.drop_column("taught")
