"""No second copy of a person's words, and no words in stored answers.

- SQLite: the FTS5 index over `search_text` goes (its table, shadow tables and triggers). An FTS5
  delete only adds a tombstone: the terms of an erased memory stayed in `memories_fts_data` until a
  merge happened to rewrite that segment, and a backup copied them. Word ranking now reads the
  place's terms from `memories.search_text` through the place index, as on PostgreSQL.
- PostgreSQL: the GIN index on `to_tsvector(search_text)` goes. No query read it (the place's terms
  are read through the place index), and its pages kept an erased memory's words until VACUUM.
- Idempotency receipts completed before this revision held whole answers, memory text included;
  they are redacted now (a replay answers `{"redacted": true}`). From here on a receipt holds no
  words (see `portal.services.idempotency`).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TRIGGERS = ("memories_fts_insert", "memories_fts_delete", "memories_fts_update")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_memories_search_text_gin")
    else:
        for trigger in TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        # The shadow tables go with the virtual table; with secure_delete on (the engine sets it)
        # their pages are zeroed as they are freed.
        op.execute("DROP TABLE IF EXISTS memories_fts")
    op.execute("UPDATE idempotency_receipts SET response = NULL, redacted = TRUE WHERE status <> 0")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute(
            "CREATE INDEX ix_memories_search_text_gin ON memories "
            "USING gin (to_tsvector('simple'::regconfig, coalesce(search_text, '')))"
        )
        return
    op.execute(
        "CREATE VIRTUAL TABLE memories_fts USING fts5("
        "search_text, content='memories', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')"
    )
    op.execute(
        "CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN "
        "INSERT INTO memories_fts(rowid, search_text) VALUES (new.rowid, coalesce(new.search_text, '')); END"
    )
    op.execute(
        "CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN "
        "INSERT INTO memories_fts(memories_fts, rowid, search_text) "
        "VALUES ('delete', old.rowid, coalesce(old.search_text, '')); END"
    )
    op.execute(
        "CREATE TRIGGER memories_fts_update AFTER UPDATE OF search_text ON memories BEGIN "
        "INSERT INTO memories_fts(memories_fts, rowid, search_text) "
        "VALUES ('delete', old.rowid, coalesce(old.search_text, '')); "
        "INSERT INTO memories_fts(rowid, search_text) VALUES (new.rowid, coalesce(new.search_text, '')); END"
    )
    op.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
