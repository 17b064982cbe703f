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

from alembic import op

from portal.adapters.sql.terms_rewrite import rewrite_search_text
from portal.domain.text import stem, words

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

def upgrade() -> None:
    # English stems, as this revision made them (0017 then stems French memories as French).
    rewrite_search_text(op.get_bind(), lambda text: " ".join(stem(w) for w in words(text)))


def downgrade() -> None:
    rewrite_search_text(op.get_bind(), lambda text: " ".join(words(text)))
