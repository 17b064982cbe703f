"""Consolidation refs kept as conversation keys (issue 38, item 25).

The `ref` a host sends with a conversation to consolidate may hold words ("talk about my divorce");
it was kept verbatim, in the clear even where text is encrypted: in `consolidation_refs`,
`consolidation_jobs` and the `consolidation` sources of memories and earlier wordings. The service
now keeps its conversation key instead (`portal.domain.decisions.conversation_key`, the digest
recall keeps of a `conversation_ref`); this rewrites the rows kept before
(`portal.adapters.sql.ref_keys`), so a conversation learnt before is still learnt once only and a
queued job runs under its key. The key is keyed with the secret `memory-portal db upgrade` hands
over (`words_secret`, from MEMORY_ENCRYPTION_KEYS) where the text is encrypted.

No schema change. The old values stay in PostgreSQL's table files until overwritten: run
`VACUUM FULL consolidation_refs, consolidation_jobs, memories, memory_revisions;` after upgrading.
Downgrade leaves the keys as they are (a digest cannot be undone): code from before would take
them for refs, and learn again, once, a conversation its host sends again.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import context, op

from portal.adapters.sql.ref_keys import rekey_refs

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    rekey_refs(op.get_bind(), context.config.attributes.get("words_secret"))


def downgrade() -> None:
    pass
