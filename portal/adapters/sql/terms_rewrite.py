"""Work out `search_text` again for every memory kept in the clear: what a migration does when
the ranking terms change (0005: English stems; 0017: French memories' French stems). Rows kept
encrypted have no search text and are left as they are; the full-text indexes follow (SQLite
through its update trigger, PostgreSQL's GIN index on the expression)."""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

BATCH = 1000


def rewrite_search_text(bind: Connection, compute: Callable[[str], str | None]) -> int:
    """`search_text = compute(text)` where it differs (None: left as it is), in batches of BATCH by
    id; answers how many."""
    memories = sa.table("memories", sa.column("id", sa.String), sa.column("text", sa.Text),
                        sa.column("search_text", sa.Text))
    after, changed_count = "", 0
    while True:
        rows = bind.execute(
            sa.select(memories.c.id, memories.c.text, memories.c.search_text)
            .where(memories.c.search_text.is_not(None), memories.c.id > after)
            .order_by(memories.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return changed_count
        changed = [{"key": r.id, "value": value} for r in rows
                   if (value := compute(r.text)) is not None and value != r.search_text]
        if changed:
            bind.execute(
                memories.update().where(memories.c.id == sa.bindparam("key")).values(search_text=sa.bindparam("value")),
                changed,
            )
            changed_count += len(changed)
        after = rows[-1].id
