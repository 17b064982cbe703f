"""API key tokens, the same for every store of keys.

A key reads `mp_<id>_<secret>`. Only the SHA-256 of the secret is stored (the secret is 32 random
bytes, so a slow KDF would add nothing but latency); the plaintext is handed back once, at
creation, and cannot be recovered afterwards. Listings show the key's id and a short prefix made
of the id alone, never any part of the secret.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta

from portal.domain.options import new_id, utc_now
from portal.domain.people import PERMISSIONS, ApiKey

KEY_TAG = "mp"
PREFIX_LENGTH = 12
LAST_USED_EVERY = timedelta(minutes=1)
"""`verify` records use at most this often per key, so serving a request is not a write."""

_ID = re.compile(r"[0-9a-f]{32}")
_SECRET = re.compile(r"[A-Za-z0-9_-]{16,128}")
# Compared against when the id is unknown, so that a miss costs about what a hit does.
_DUMMY_HASH = hashlib.sha256(b"no such key").hexdigest()


def new_key(tenant_id: str, permissions: Iterable[str], name: str | None) -> tuple[ApiKey, str, str]:
    """A new key, its token (the plaintext, shown once) and the hash of its secret (what is kept).
    Refuses (ValueError) an unknown permission, no permission or a name over 200 characters."""
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
    return ApiKey(key_id, tenant_id, name, token[:PREFIX_LENGTH], wanted, utc_now(), None, None), token, hash_secret(secret)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def parse_token(token: str) -> tuple[str, str] | None:
    """(key id, secret) of a well-formed token, else None."""
    # The id is hex, so the first two underscores delimit it; the secret may hold more.
    parts = token.strip().split("_", 2) if isinstance(token, str) else []
    if len(parts) != 3 or parts[0] != KEY_TAG:
        return None
    _, key_id, secret = parts
    if not _ID.fullmatch(key_id) or not _SECRET.fullmatch(secret):
        return None
    return key_id, secret


def secret_matches(stored_hash: str | None, secret: str) -> bool:
    """Constant-time comparison; an unknown key (no stored hash) costs the same and never matches."""
    stored = stored_hash or _DUMMY_HASH
    return hmac.compare_digest(stored.encode("ascii"), hash_secret(secret).encode("ascii")) and stored_hash is not None


def use_to_record(key: ApiKey, now: datetime) -> bool:
    """Whether verifying `key` at `now` records its use (at most once per LAST_USED_EVERY)."""
    return key.last_used_at is None or now - key.last_used_at >= LAST_USED_EVERY
