"""Portal accounts: sign-in with Argon2id password hashes, roles, tenants and owner ids.

The accounts of a tenant also answer `names_of(place)`: the names of the other people of that
tenant, which a memory about this person must not carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import RowMapping

from portal.adapters.passwords import DISABLED, hash_password, verify_password
from portal.adapters.sql.binding import Bind, reading, writing
from portal.adapters.sql.tables import tenants, users
from portal.domain.options import new_id, utc_now
from portal.domain.people import AccountError, User, check_language, check_new_account, check_password
from portal.domain.types import Place


class Accounts:
    def __init__(self, bind: Bind) -> None:
        self.bind = bind

    def create(
        self, email: str, name: str, tenant_id: str, role: str, password: str, owner_id: str | None = None,
        language: str | None = None,
    ) -> User:
        email = check_new_account(email, name, role, password, owner_id, language)
        user_id = new_id()
        row = {
            "id": user_id, "email": email, "name": name.strip(), "password_hash": hash_password(password), "role": role,
            "tenant_id": tenant_id, "owner_id": owner_id or user_id, "language": language, "created_at": utc_now(),
            "last_visit_at": None, "session_epoch": 0,
        }
        with writing(self.bind) as conn:
            if conn.execute(select(tenants.c.id).where(tenants.c.id == tenant_id)).first() is None:
                raise AccountError("unknown_tenant")
            # ON CONFLICT DO NOTHING, not a caught unique violation: PostgreSQL logs a violation's
            # key, and the e-mail address would stay in the server's log after the account's erasure.
            dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
            # RETURNING, not rowcount: an INSERT's rowcount is -1 on PostgreSQL here (psycopg).
            if conn.execute(dialect_insert(users).values(**row).on_conflict_do_nothing().returning(users.c.id)).first() is None:
                raise AccountError("email_taken")
        return _user(row)

    def end_sessions(self, user_id: str) -> bool:
        """End every sign-in session of the account, in every worker (raises its epoch)."""
        with writing(self.bind) as conn:
            done = conn.execute(
                update(users).where(users.c.id == user_id).values(session_epoch=users.c.session_epoch + 1)
            ).rowcount
        return bool(done)

    def set_password(self, user_id: str, password: str) -> bool:
        """A new password, and every session of the account ended."""
        check_password(password)
        with writing(self.bind) as conn:
            done = conn.execute(update(users).where(users.c.id == user_id).values(
                password_hash=hash_password(password), session_epoch=users.c.session_epoch + 1)).rowcount
        return bool(done)

    def disable(self, user_id: str) -> bool:
        """No password opens the account any more, and every session of it ends."""
        with writing(self.bind) as conn:
            done = conn.execute(update(users).where(users.c.id == user_id).values(
                password_hash=DISABLED, session_epoch=users.c.session_epoch + 1)).rowcount
        return bool(done)

    def get(self, user_id: str) -> User | None:
        with reading(self.bind) as conn:
            row = conn.execute(select(users).where(users.c.id == user_id)).mappings().first()
        return _user(row) if row else None

    def find(self, query: str, tenant_ids: list[str] | None = None) -> list[User]:
        """Accounts whose e-mail, name or owner id matches (staff search), within `tenant_ids`."""
        needle = query.strip().lower()
        # autoescape: "%" and "_" typed by staff are characters, not wildcards matching every account.
        condition = or_(users.c.email.contains(needle, autoescape=True), users.c.name.icontains(needle, autoescape=True),
                        users.c.owner_id == query.strip())
        statement = select(users).where(condition).order_by(users.c.email).limit(50)
        if tenant_ids is not None:
            statement = statement.where(users.c.tenant_id.in_(tenant_ids))
        with reading(self.bind) as conn:
            return [_user(r) for r in conn.execute(statement).mappings()]

    def of_owner(self, owner_id: str, tenant_ids: list[str] | None = None) -> list[User]:
        statement = select(users).where(users.c.owner_id == owner_id).order_by(users.c.email)  # ix_users_owner_id
        if tenant_ids is not None:
            statement = statement.where(users.c.tenant_id.in_(tenant_ids))
        with reading(self.bind) as conn:
            return [_user(r) for r in conn.execute(statement).mappings()]

    def authenticate(self, email: str, password: str) -> User | None:
        """The account for these credentials, or None; the same work is done for unknown e-mails."""
        with reading(self.bind) as conn:
            row = conn.execute(select(users).where(users.c.email == email.strip().lower())).mappings().first()
        if not verify_password(row["password_hash"] if row else None, password):
            return None
        return _user(row) if row else None

    def set_language(self, user_id: str, language: str) -> None:
        check_language(language)
        with writing(self.bind) as conn:
            conn.execute(update(users).where(users.c.id == user_id).values(language=language))

    def mark_visit(self, user_id: str, at: datetime) -> None:
        with writing(self.bind) as conn:
            conn.execute(update(users).where(users.c.id == user_id).values(last_visit_at=at))

    def delete(self, user_id: str) -> bool:
        """Remove an account (erasure of the person): its e-mail, name and password hash go with it."""
        with writing(self.bind) as conn:
            return bool(conn.execute(delete(users).where(users.c.id == user_id)).rowcount)

    def staff(self, tenant_ids: list[str] | None = None) -> list[User]:
        """Staff and admin accounts (of these tenants)."""
        statement = select(users).where(users.c.role.in_(("staff", "admin"))).order_by(users.c.email)
        if tenant_ids is not None:
            statement = statement.where(users.c.tenant_id.in_(tenant_ids))
        with reading(self.bind) as conn:
            return [_user(r) for r in conn.execute(statement).mappings()]

    def names_of(self, place: Place) -> list[str]:
        """The other people of this place's tenant: a memory of this person must not name them."""
        with reading(self.bind) as conn:
            rows = conn.execute(
                select(users.c.name).where(and_(users.c.tenant_id == place.scope, users.c.owner_id != place.owner_id))
            )
            return [r.name for r in rows]


def _user(row: RowMapping | Mapping[str, Any]) -> User:
    return User(
        id=str(row["id"]), email=str(row["email"]), name=str(row["name"]), role=str(row["role"]),
        tenant_id=str(row["tenant_id"]), owner_id=str(row["owner_id"]),
        language=str(row["language"]) if row["language"] is not None else None,
        created_at=row["created_at"],  # type: ignore[arg-type]
        last_visit_at=row["last_visit_at"],  # type: ignore[arg-type]
        session_epoch=int(str(row.get("session_epoch") or 0)),
        disabled=str(row.get("password_hash") or "").startswith(DISABLED),
    )
