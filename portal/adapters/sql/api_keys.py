"""API keys for the JSON API, in SQL: each fixes a tenant and a set of permissions (tokens and
their hashes: `portal.adapters.keys`)."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import replace

from sqlalchemy import insert, or_, select, update
from sqlalchemy.engine import RowMapping

from portal.adapters.keys import LAST_USED_EVERY, new_key, parse_token, secret_matches, use_to_record
from portal.adapters.sql.binding import Bind, reading, writing
from portal.adapters.sql.tables import api_keys, tenants
from portal.domain.options import utc_now
from portal.domain.people import ApiKey


class ApiKeys:
    """Making, checking, revoking and listing API keys; no method ever returns a stored secret."""

    def __init__(self, bind: Bind) -> None:
        self.bind = bind

    def create(self, tenant_id: str, permissions: Iterable[str], name: str | None = None) -> tuple[ApiKey, str]:
        """A new key for `tenant_id` with `permissions`, and its plaintext — the only time it is
        available. Refuses (ValueError) an unknown permission, no permission, or an unknown tenant."""
        key, token, secret_hash = new_key(tenant_id, permissions, name)
        with writing(self.bind) as conn:
            if conn.execute(select(tenants.c.id).where(tenants.c.id == tenant_id)).first() is None:
                raise ValueError(f"no tenant {tenant_id!r}")
            conn.execute(
                insert(api_keys).values(
                    id=key.id, tenant_id=key.tenant_id, name=key.name, prefix=key.prefix,
                    secret_hash=secret_hash, permissions=" ".join(sorted(key.permissions)),
                    created_at=key.created_at, last_used_at=None, revoked_at=None,
                )
            )
        return key, token

    def verify(self, token: str) -> ApiKey | None:
        """The live key `token` stands for, or None when it is malformed, unknown, wrong or revoked.
        The secret is compared in constant time; use is recorded at most once per LAST_USED_EVERY."""
        parsed = parse_token(token)
        if parsed is None:
            return None
        key_id, secret = parsed
        with reading(self.bind) as conn:
            row = conn.execute(select(api_keys).where(api_keys.c.id == key_id)).mappings().first()
        if not secret_matches(row["secret_hash"] if row else None, secret) or row is None or row["revoked_at"] is not None:
            return None
        key = _api_key(row)
        now = utc_now()
        if use_to_record(key, now):
            cutoff = now - LAST_USED_EVERY
            with writing(self.bind) as conn:
                # Conditional, so concurrent requests with one key write at most once between them.
                conn.execute(
                    update(api_keys)
                    .where(api_keys.c.id == key.id)
                    .where(or_(api_keys.c.last_used_at.is_(None), api_keys.c.last_used_at <= cutoff))
                    .values(last_used_at=now)
                )
            key = replace(key, last_used_at=now)
        return key

    def revoke(self, key_id: str) -> bool:
        """Revoke the key for good; False when there is no such key or it was revoked already."""
        with writing(self.bind) as conn:
            done = conn.execute(
                update(api_keys)
                .where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
                .values(revoked_at=utc_now())
            ).rowcount
        return bool(done)

    def list(self, tenant_id: str | None = None) -> builtins.list[ApiKey]:
        """Keys (revoked ones included), oldest first, of one tenant or of all."""
        query = select(api_keys).order_by(api_keys.c.created_at, api_keys.c.id)
        if tenant_id is not None:
            query = query.where(api_keys.c.tenant_id == tenant_id)
        with reading(self.bind) as conn:
            return [_api_key(r) for r in conn.execute(query).mappings()]


def _api_key(row: RowMapping) -> ApiKey:
    return ApiKey(
        row["id"], row["tenant_id"], row["name"], row["prefix"], frozenset(row["permissions"].split()),
        row["created_at"], row["last_used_at"], row["revoked_at"],
    )
