"""Whether a process's encryption keys are this database's: one row, `encryption_check`, holds a
fixed probe encrypted with the first key of the first process that started with keys (migration
0013). Every start compares: keys that cannot read it (another instance folder's development key,
a typo, a key dropped before `rotate-keys` finished) stop the process before it writes text no
other process could read; a process without keys stops where the text is encrypted. `rotate-keys`
writes the probe again with the new first key."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Protocol

from sqlalchemy import insert, inspect, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from portal.adapters.cipher import looks_encrypted
from portal.adapters.sql.tables import encryption_check, memories

PROBE = "memory-portal encryption check"
log = logging.getLogger("portal.config")


class KeyedCipher(Protocol):
    def encrypt(self, text: str) -> str: ...
    def decrypt(self, token: str) -> str: ...


class KeysMismatch(ValueError):
    """The keys (or their absence) do not fit the text this database holds; the message says which."""


def check_keys(engine: Engine, cipher: KeyedCipher | None) -> None:
    """Raise KeysMismatch unless `cipher` reads this database's text (or, without one, its text is
    not encrypted). The first process with keys leaves its probe; a database not migrated yet has
    nothing to check, nor has one that cannot be reached now (the process starts and answers
    `/readyz` 503 meanwhile; the check is made at its next start)."""
    try:
        if not inspect(engine).has_table("encryption_check"):
            return
    except OperationalError as exc:
        log.warning("keys.not_checked error=%s", type(exc.orig).__name__)
        return
    token = _token(engine)
    if cipher is None:
        if token is not None:
            raise KeysMismatch("MEMORY_ENCRYPTION_KEYS is unset, but this database's text is encrypted: "
                               "set it to the keys the other processes use")
        return
    if token is None:
        with engine.connect() as conn:  # any memory: a database that ran without keys holds text in the clear
            sample = conn.execute(select(memories.c.text).limit(1)).scalar_one_or_none()
        if sample is not None and not looks_encrypted(sample):
            raise KeysMismatch("this database holds text in the clear, written without MEMORY_ENCRYPTION_KEYS: "
                               "with the app stopped, run `memory-portal rotate-keys --encrypt-plaintext` "
                               "(docs/operations.md, \"Text at rest on PostgreSQL\")")
        try:
            with engine.begin() as conn:
                conn.execute(insert(encryption_check).values(id=1, token=cipher.encrypt(PROBE), created_at=datetime.now(UTC)))
        except IntegrityError:  # another process wrote it first: check against theirs
            pass
        token = _token(engine)
    try:
        readable = token is not None and cipher.decrypt(token) == PROBE
    except Exception:  # a token of another key
        readable = False
    if not readable:
        raise KeysMismatch("MEMORY_ENCRYPTION_KEYS cannot read this database's text: it was written with another "
                           "key (in development, a key made under another instance folder: instance/encryption_key; "
                           "give every process the same MEMORY_ENCRYPTION_KEYS)")


def renew_probe(engine: Engine, cipher: KeyedCipher) -> None:
    """Write the probe with the first key (after `rotate-keys`, so the old key can go)."""
    if inspect(engine).has_table("encryption_check"):
        with engine.begin() as conn:
            token = cipher.encrypt(PROBE)
            if not conn.execute(update(encryption_check).where(encryption_check.c.id == 1).values(token=token)).rowcount:
                conn.execute(insert(encryption_check).values(id=1, token=token, created_at=datetime.now(UTC)))


def _token(engine: Engine) -> str | None:
    with engine.connect() as conn:
        found = conn.execute(select(encryption_check.c.token).where(encryption_check.c.id == 1)).scalar_one_or_none()
    return None if found is None else str(found)
