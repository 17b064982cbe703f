"""Initial schema: tenants, memories with revisions, settings, refs, receipts, tombstones.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from portal.adapters.sql.tables import UTCDateTime, VectorType

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    postgres = bind.dialect.name == "postgresql"
    if postgres:
        op.execute("CREATE EXTENSION IF NOT EXISTS vector")

    op.create_table(
        "tenants",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("ai_enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tenants"),
        sa.UniqueConstraint("name", name="uq_tenants_name"),
    )
    op.create_table(
        "memories",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("owner_id", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("search_text", sa.Text(), nullable=True),
        sa.Column("words_key", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("importance", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(64), nullable=True),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.Column("sources", sa.Text(), nullable=False),
        sa.Column("channel", sa.String(16), nullable=False),
        sa.Column("seen", sa.Boolean(), nullable=False),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("last_op", sa.String(16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        sa.Column("embedding_model", sa.String(200), nullable=True),
        sa.Column("embedding_dim", sa.Integer(), nullable=True),
        sa.Column("embedding", VectorType(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_memories"),
    )
    op.create_index("ix_memories_place_state", "memories", ["owner_id", "scope", "state"])
    op.create_index("ix_memories_place_created", "memories", ["owner_id", "scope", "created_at", "id"])
    op.create_index("ix_memories_place_words", "memories", ["owner_id", "scope", "words_key"])
    op.create_index("ix_memories_embedding_model", "memories", ["embedding_model"])

    op.create_table(
        "memory_revisions",
        sa.Column("memory_id", sa.String(64), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("importance", sa.Integer(), nullable=False),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.Column("sources", sa.Text(), nullable=False),
        sa.Column("op", sa.String(16), nullable=False),
        sa.Column("written_at", UTCDateTime(), nullable=False),
        sa.Column("embedding_model", sa.String(200), nullable=True),
        sa.Column("embedding", VectorType(), nullable=True),
        sa.PrimaryKeyConstraint("memory_id", "revision", name="pk_memory_revisions"),
    )
    op.create_index("ix_memory_revisions_place", "memory_revisions", ["owner_id", "scope"])

    op.create_table(
        "memory_settings",
        sa.Column("owner_id", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("owner_id", "scope", name="pk_memory_settings"),
    )
    op.create_table(
        "consolidation_refs",
        sa.Column("owner_id", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("ref", sa.String(200), nullable=False),
        sa.Column("claimed_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("owner_id", "scope", "ref", name="pk_consolidation_refs"),
    )
    op.create_table(
        "idempotency_receipts",
        sa.Column("owner_id", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("response", sa.Text(), nullable=True),
        sa.Column("memory_ids", sa.Text(), nullable=False),
        sa.Column("redacted", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("owner_id", "scope", "key", name="pk_idempotency_receipts"),
    )
    op.create_table(
        "memory_tombstones",
        sa.Column("owner_id", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("memory_id", sa.String(64), nullable=False),
        sa.Column("forgotten_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("owner_id", "scope", "memory_id", name="pk_memory_tombstones"),
    )

    if postgres:
        op.execute(
            "CREATE INDEX ix_memories_search_text_gin ON memories "
            "USING gin (to_tsvector('simple'::regconfig, coalesce(search_text, '')))"
        )
    else:
        # External-content FTS5 index over the folded text, kept in step by triggers.
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


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        for trigger in ("memories_fts_insert", "memories_fts_delete", "memories_fts_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS memories_fts")
    for table in (
        "memory_tombstones", "idempotency_receipts", "consolidation_refs", "memory_settings",
        "memory_revisions", "memories", "tenants",
    ):
        op.drop_table(table)
