"""A conversation's claim is the app's that had it (issue 38, review1).

`consolidation_refs` kept a claimed conversation by the person and its ref alone: two apps of a
tenant numbering their conversations alike ("conv-1"), the second app's conversation was answered
`already` and never learnt, the answer told it another app had a conversation of that ref, and a
paused app's conversation (marked done, nothing learnt) burnt the ref for every app. A claim now
names its app: `app_id` joins the primary key, `(owner_id, scope, ref, app_id)` ("" for the
person's own conversations, `portal.services.app_refs`).

Which app made a claim kept before cannot be told (a claim is a digest and a time). Each keeps
`app_id` "*" (`EVERY_APPS_CLAIM`): it holds for every app and the person, as it did before, so a
conversation learnt before the upgrade is still learnt once only, whoever sends it again. Only
claims made from now on are an app's own.

Going back keeps one claim per (person, ref), a `done` one where there is one (a conversation
learnt by any app stays learnt: nothing is learnt twice), and the old key.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from portal.adapters.sql.tables import EVERY_APPS_CLAIM

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

TABLE = "consolidation_refs"


def upgrade() -> None:
    with op.batch_alter_table(TABLE) as table:  # every claim kept so far: every app's
        table.add_column(sa.Column("app_id", sa.String(64), nullable=False, server_default=EVERY_APPS_CLAIM))
    with op.batch_alter_table(TABLE, recreate="auto") as table:  # from now on each claim names its app
        table.alter_column("app_id", existing_type=sa.String(64), existing_nullable=False, server_default=None)
        table.drop_constraint(f"pk_{TABLE}", type_="primary")
        table.create_primary_key(f"pk_{TABLE}", ["owner_id", "scope", "ref", "app_id"])


def downgrade() -> None:
    claims = sa.table(TABLE, *(sa.column(n) for n in ("owner_id", "scope", "ref", "app_id", "state")))
    other = claims.alias("other")

    def rank(c: Any) -> Any:
        return sa.case((c.state == "done", 0), else_=1)

    # A claim goes where the same conversation of the person has a better one: done before running,
    # then the lowest app id; one claim per (person, ref) is left.
    better = sa.exists().where(
        other.c.owner_id == claims.c.owner_id, other.c.scope == claims.c.scope, other.c.ref == claims.c.ref,
        sa.or_(rank(other.c) < rank(claims.c), sa.and_(rank(other.c) == rank(claims.c), other.c.app_id < claims.c.app_id)),
    )
    op.execute(claims.delete().where(better))
    with op.batch_alter_table(TABLE, recreate="auto") as table:
        table.drop_constraint(f"pk_{TABLE}", type_="primary")
        table.create_primary_key(f"pk_{TABLE}", ["owner_id", "scope", "ref"])
        table.drop_column("app_id")
