"""French memories' search text holds French stems (issue 31).

A memory in French (portal.domain.language) is now stemmed and stopped as French (Snowball's
French stemmer, accents folded): its `search_text` is worked out again from its text. English
memories are not touched (nor on the way back). Rows kept encrypted have no search
text (their terms are worked out from the text when ranked) and are left as they are.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

from portal.adapters.sql.terms_rewrite import rewrite_search_text
from portal.domain.language import FRENCH
from portal.domain.text import search_text, stem, text_language, words

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    rewrite_search_text(op.get_bind(), lambda text: search_text(text) if text_language(text) == FRENCH else None)


def downgrade() -> None:
    rewrite_search_text(op.get_bind(), lambda text: " ".join(stem(w) for w in words(text))
                        if text_language(text) == FRENCH else None)
