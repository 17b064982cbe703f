"""Search text holds ranking terms: folded words reduced to their English stem.

The word ranking now meets "painted", "painting" and "paints" as one term (Snowball English
stemmer, see portal/domain/text.py). `search_text` is worked out again from each memory's text;
the full-text indexes follow (SQLite through its update trigger, PostgreSQL's GIN index on the
expression). Rows kept encrypted have no search text and are left as they are.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from alembic import op

from portal.domain.text import search_text, words

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

BATCH = 1000


def _rewrite(compute: Callable[[str], str]) -> None:
    bind = op.get_bind()
    memories = sa.table("memories", sa.column("id", sa.String), sa.column("text", sa.Text), sa.column("search_text", sa.Text))
    after = ""
    while True:
        rows = bind.execute(
            sa.select(memories.c.id, memories.c.text, memories.c.search_text)
            .where(memories.c.search_text.is_not(None), memories.c.id > after)
            .order_by(memories.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        changed = [{"key": r.id, "value": compute(r.text)} for r in rows]
        changed = [c for c, r in zip(changed, rows, strict=True) if c["value"] != r.search_text]
        if changed:
            bind.execute(
                memories.update().where(memories.c.id == sa.bindparam("key")).values(search_text=sa.bindparam("value")),
                changed,
            )
        after = rows[-1].id


def upgrade() -> None:
    _rewrite(search_text)


def downgrade() -> None:
    _rewrite(lambda text: " ".join(words(text)))
