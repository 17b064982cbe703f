"""Words that are kept only for a while (docs/operations.md, "What erasure removes"):

- `memory_revisions.expires_at`: an earlier wording a person's own edit replaced is kept only as
  long as its Undo is offered; the periodic task erases it once this time is past (NULL: kept
  until the person erases it, or `prune --history-older-than`).
- `consolidation_jobs.summary`: the model's summary of a background conversation, encrypted like
  memory text, kept apart from `result`, which now holds counts, ids and codes only. Summaries the
  old `result` column held in the clear are dropped here (not moved: a migration has no key to
  encrypt them with); on SQLite the rewrite zeroes the old bytes (secure_delete) and the upgrade
  truncates the write-ahead log afterwards.
- `encryption_check`: one token of a fixed probe, written with the first key by the first process
  that starts with `MEMORY_ENCRYPTION_KEYS`; every later start checks its keys read it, so a
  process with another key (one made for another instance folder, a typo) stops at once instead of
  writing text no other process can read (portal.adapters.sql.keycheck).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

from portal.adapters.sql.tables import UTCDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        bind.exec_driver_sql("PRAGMA secure_delete=ON")  # as the app's connections; an operator's may not
    op.add_column("memory_revisions", sa.Column("expires_at", UTCDateTime(), nullable=True))
    op.create_index("ix_memory_revisions_expires_at", "memory_revisions", ["expires_at"])
    op.add_column("consolidation_jobs", sa.Column("summary", sa.Text(), nullable=True))
    jobs = sa.table("consolidation_jobs", sa.column("owner_id", sa.String), sa.column("scope", sa.String),
                    sa.column("id", sa.String), sa.column("result", sa.Text))
    rows = bind.execute(sa.select(jobs.c.owner_id, jobs.c.scope, jobs.c.id, jobs.c.result)
                        .where(jobs.c.result.is_not(None))).all()
    for owner_id, scope, job_id, result in rows:
        try:
            data = json.loads(result)
        except ValueError:
            data = None
        if isinstance(data, dict) and "summary" not in data:
            continue
        kept = {k: v for k, v in data.items() if k != "summary"} if isinstance(data, dict) else None
        bind.execute(sa.update(jobs).where(jobs.c.owner_id == owner_id, jobs.c.scope == scope, jobs.c.id == job_id)
                     .values(result=None if kept is None else json.dumps(kept)))


    op.create_table(
        "encryption_check",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_encryption_check"),
    )


def downgrade() -> None:
    op.drop_table("encryption_check")
    with op.batch_alter_table("consolidation_jobs") as batch:
        batch.drop_column("summary")
    op.drop_index("ix_memory_revisions_expires_at", table_name="memory_revisions")
    with op.batch_alter_table("memory_revisions") as batch:
        batch.drop_column("expires_at")
