"""An account may hold no language: none chosen (issue 38).

Accounts made without a language held "en", so a person whose browser asks for French read the
portal in English once signed in, though they never chose it. `users.language` may now be NULL:
none chosen, the browser's language (Accept-Language) until the person picks one. Accounts kept
before keep what they hold (a choice cannot be told from the old default, and none is guessed
away); on the way back, an account with no choice gets the old default.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users") as table:
        table.alter_column("language", existing_type=sa.String(8), nullable=True)


def downgrade() -> None:
    op.execute(sa.text("UPDATE users SET language = 'en' WHERE language IS NULL"))
    with op.batch_alter_table("users") as table:
        table.alter_column("language", existing_type=sa.String(8), nullable=False)
