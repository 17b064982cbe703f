"""Sessions that really end, and leases on work in progress.

- `users.session_epoch`: a sign-in session carries the epoch it began in; signing out, a password
  change and an admin's "end sessions" raise it, which ends every session of the account at once,
  in every worker (a copied cookie no longer opens anything).
- `idempotency_receipts.lease_until` / `holder` and `consolidation_refs.lease_until` / `state` /
  `holder`: a pending
  receipt and a claimed conversation ref are held by a lease the running request renews; when the
  worker holding one dies, the lease runs out and a retry takes the work over instead of waiting
  for ever. A claim's `holder` is a random token of the request that holds it, so a worker that was
  presumed dead cannot write for a claim taken over since. A ref's `state` is `running` while claimed and `done` once learnt (refs claimed before
  this revision are done).
- PostgreSQL: `rate_limit_counters`, UNLOGGED, the rate-limit counters every worker shares when no
  Redis is configured (`portal.adapters.sql.counters`; SQLite keeps them in a file of its own).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from portal.adapters.sql.tables import UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users") as table:
        table.add_column(sa.Column("session_epoch", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("idempotency_receipts") as table:
        table.add_column(sa.Column("lease_until", UTCDateTime(), nullable=True))
        table.add_column(sa.Column("holder", sa.String(32), nullable=True))
    with op.batch_alter_table("consolidation_refs") as table:
        table.add_column(sa.Column("state", sa.String(16), nullable=False, server_default="done"))
        table.add_column(sa.Column("lease_until", UTCDateTime(), nullable=True))
        table.add_column(sa.Column("holder", sa.String(32), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE UNLOGGED TABLE rate_limit_counters ("
            "key VARCHAR(255) PRIMARY KEY, count INTEGER NOT NULL, expires_at DOUBLE PRECISION NOT NULL)"
        )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS rate_limit_counters")
    with op.batch_alter_table("consolidation_refs") as table:
        table.drop_column("holder")
        table.drop_column("lease_until")
        table.drop_column("state")
    with op.batch_alter_table("idempotency_receipts") as table:
        table.drop_column("holder")
        table.drop_column("lease_until")
    with op.batch_alter_table("users") as table:
        table.drop_column("session_epoch")
