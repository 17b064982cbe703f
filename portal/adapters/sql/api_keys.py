"""API keys for the JSON API: each fixes a tenant and a set of permissions.

A key reads `mp_<id>_<secret>`. Only the SHA-256 of the secret is stored (the secret is 32 random
bytes, so a slow KDF would add nothing but latency); the plaintext is handed back once, by
`create`, and cannot be recovered afterwards. Listings show the key's id and a short prefix made
of the id alone, never any part of the secret.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy import insert, or_, select, update
from sqlalchemy.engine import Engine, RowMapping

from portal.adapters.sql.tables import api_keys, tenants
from portal.domain.options import new_id, utc_now

PERMISSIONS = ("memories:read", "memories:write", "consolidate", "erasure")

KEY_TAG = "mp"
PREFIX_LENGTH = 12
LAST_USED_EVERY = timedelta(minutes=1)
"""`verify` records use at most this often per key, so serving a request is not a write."""

_ID = re.compile(r"[0-9a-f]{32}")
_SECRET = re.compile(r"[A-Za-z0-9_-]{16,128}")
# Compared against when the id is unknown, so that a miss costs about what a hit does.
_DUMMY_HASH = hashlib.sha256(b"no such key").hexdigest()


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    tenant_id: str
    name: str | None
    prefix: str
    permissions: frozenset[str]
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None

    def allows(self, permission: str) -> bool:
        return permission in self.permissions


class ApiKeys:
    """Making, checking, revoking and listing API keys; no method ever returns a stored secret."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create(self, tenant_id: str, permissions: Iterable[str], name: str | None = None) -> tuple[ApiKey, str]:
        """A new key for `tenant_id` with `permissions`, and its plaintext — the only time it is
        available. Refuses (ValueError) an unknown permission, no permission, or an unknown tenant."""
        wanted = frozenset(p.strip() for p in permissions)
        unknown = sorted(wanted - set(PERMISSIONS))
        if unknown:
            raise ValueError(f"unknown permission {unknown[0]!r} (known: {', '.join(PERMISSIONS)})")
        if not wanted:
            raise ValueError("an API key needs at least one permission")
        name = (name or "").strip() or None
        if name is not None and len(name) > 200:
            raise ValueError("an API key's name is at most 200 characters")
        key_id = new_id()
        secret = secrets.token_urlsafe(32)
        token = f"{KEY_TAG}_{key_id}_{secret}"
        key = ApiKey(key_id, tenant_id, name, token[:PREFIX_LENGTH], wanted, utc_now(), None, None)
        with self.engine.begin() as conn:
            if conn.execute(select(tenants.c.id).where(tenants.c.id == tenant_id)).first() is None:
                raise ValueError(f"no tenant {tenant_id!r}")
            conn.execute(
                insert(api_keys).values(
                    id=key.id, tenant_id=key.tenant_id, name=key.name, prefix=key.prefix,
                    secret_hash=_hash(secret), permissions=" ".join(sorted(wanted)),
                    created_at=key.created_at, last_used_at=None, revoked_at=None,
                )
            )
        return key, token

    def verify(self, token: str) -> ApiKey | None:
        """The live key `token` stands for, or None when it is malformed, unknown, wrong or revoked.
        The secret is compared in constant time; use is recorded at most once per LAST_USED_EVERY."""
        parsed = _parse(token)
        if parsed is None:
            return None
        key_id, secret = parsed
        with self.engine.connect() as conn:
            row = conn.execute(select(api_keys).where(api_keys.c.id == key_id)).mappings().first()
        stored = row["secret_hash"] if row else _DUMMY_HASH
        matches = hmac.compare_digest(stored.encode("ascii"), _hash(secret).encode("ascii"))
        if row is None or not matches or row["revoked_at"] is not None:
            return None
        key = _api_key(row)
        now = utc_now()
        if key.last_used_at is None or now - key.last_used_at >= LAST_USED_EVERY:
            cutoff = now - LAST_USED_EVERY
            with self.engine.begin() as conn:
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
        with self.engine.begin() as conn:
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
        with self.engine.connect() as conn:
            return [_api_key(r) for r in conn.execute(query).mappings()]


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _parse(token: str) -> tuple[str, str] | None:
    # The id is hex, so the first two underscores delimit it; the secret may hold more.
    parts = token.strip().split("_", 2) if isinstance(token, str) else []
    if len(parts) != 3 or parts[0] != KEY_TAG:
        return None
    _, key_id, secret = parts
    if not _ID.fullmatch(key_id) or not _SECRET.fullmatch(secret):
        return None
    return key_id, secret


def _api_key(row: RowMapping) -> ApiKey:
    return ApiKey(
        row["id"], row["tenant_id"], row["name"], row["prefix"], frozenset(row["permissions"].split()),
        row["created_at"], row["last_used_at"], row["revoked_at"],
    )
