"""Whether a process's encryption keys are this database's: `encryption_check` (migration 0013)
holds a fixed probe encrypted with the first key of the first process that started with keys.
Every start compares: keys that cannot read it (another instance folder's development key, a typo,
a key dropped before `rotate-keys` finished) stop the process before it writes text no other
process could read; a process without keys stops where the text is encrypted; and a database that
still holds text no key reads (written without keys, or a conversion stopped half way) stops a
process with keys until `rotate-keys --encrypt-plaintext` has finished. `rotate-keys` writes the
probe again with the new first key.

Rows: id 1, the probe; id 2, present while `rotate-keys --encrypt-plaintext` runs (a conversion
stopped half way leaves it, and the check refuses until a run finishes)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Protocol

from sqlalchemy import delete, insert, inspect, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from portal.adapters.sql.tables import encryption_check, memories

PROBE = "memory-portal encryption check"
PROBE_ID, CONVERTING_ID = 1, 2
SAMPLE = 5  # memories read at each end of the table, in key order (a conversion runs in that order)
log = logging.getLogger("portal.config")


class KeyedCipher(Protocol):
    def encrypt(self, text: str) -> str: ...
    def decrypt(self, token: str) -> str: ...


class KeysMismatch(ValueError):
    """The keys (or their absence) do not fit the text this database holds; the message says which."""


CLEAR = ("this database holds text MEMORY_ENCRYPTION_KEYS cannot read: text written in the clear (a database that "
         "ran without keys, or a conversion stopped half way), or a key that is missing. With the app stopped, run "
         "`memory-portal rotate-keys --encrypt-plaintext` (docs/operations.md, \"Text at rest on PostgreSQL\")")
OTHER_KEY = ("MEMORY_ENCRYPTION_KEYS cannot read this database's text: it was written with another key (in "
             "development, a key made under another instance folder: instance/encryption_key; give every process "
             "the same MEMORY_ENCRYPTION_KEYS)")


def check_keys(engine: Engine, cipher: KeyedCipher | None) -> bool:
    """Raise KeysMismatch unless `cipher` reads this database's text (or, without one, its text is
    not encrypted); the first process with keys leaves its probe. Answers whether the check was
    made: True, or False when the database cannot be reached now (the caller checks again before
    the first transaction: `SqlStore.defer_keys_check`). A database not migrated yet has nothing to
    check (True)."""
    try:
        if not inspect(engine).has_table("encryption_check"):
            return True
        with engine.connect() as conn:
            kept = {row.id: row.token for row in conn.execute(select(encryption_check.c.id, encryption_check.c.token))}
    except OperationalError as exc:
        # INFO, not a warning: the store checks again before its first transaction, and whatever
        # then cannot reach the database says so itself (a request, or a command's one line).
        log.info("keys.not_checked error=%s", type(exc.orig).__name__)
        return False
    if CONVERTING_ID in kept:
        raise KeysMismatch(CLEAR)
    token = kept.get(PROBE_ID)
    if cipher is None:
        if token is not None:
            raise KeysMismatch("MEMORY_ENCRYPTION_KEYS is unset, but this database's text is encrypted: "
                               "set it to the keys the other processes use")
        return True
    if token is None:
        if not _reads_memories(engine, cipher):  # a database that ran without keys, or without a probe yet
            raise KeysMismatch(CLEAR)
        try:
            with engine.begin() as conn:
                conn.execute(insert(encryption_check).values(id=PROBE_ID, token=cipher.encrypt(PROBE),
                                                             created_at=datetime.now(UTC)))
        except IntegrityError:  # another process wrote it first: check against theirs
            pass
        token = _token(engine)
    if not _reads(cipher, token, PROBE):
        raise KeysMismatch(OTHER_KEY)
    return True


def converting(engine: Engine, running: bool) -> None:
    """Mark (or unmark) a conversion of text in the clear as running: the check refuses meanwhile."""
    with engine.begin() as conn:
        conn.execute(delete(encryption_check).where(encryption_check.c.id == CONVERTING_ID))
        if running:
            conn.execute(insert(encryption_check).values(id=CONVERTING_ID, token="", created_at=datetime.now(UTC)))


def has_probe(engine: Engine) -> bool:
    return _token(engine) is not None


def is_converting(engine: Engine) -> bool:
    with engine.connect() as conn:
        return conn.execute(select(encryption_check.c.id).where(encryption_check.c.id == CONVERTING_ID)).first() is not None


def renew_probe(engine: Engine, cipher: KeyedCipher) -> None:
    """Write the probe with the first key (after `rotate-keys`, so the old key can go)."""
    with engine.begin() as conn:
        token = cipher.encrypt(PROBE)
        if not conn.execute(update(encryption_check).where(encryption_check.c.id == PROBE_ID).values(token=token)).rowcount:
            conn.execute(insert(encryption_check).values(id=PROBE_ID, token=token, created_at=datetime.now(UTC)))


def _reads_memories(engine: Engine, cipher: KeyedCipher) -> bool:
    """Whether the key reads the first and the last memories in key order (a database whose text is
    in the clear, whatever its shape, has none it reads)."""
    key = (memories.c.owner_id, memories.c.id)
    with engine.connect() as conn:
        texts = [*conn.execute(select(memories.c.text).order_by(*key).limit(SAMPLE)).scalars(),
                 *conn.execute(select(memories.c.text).order_by(*(c.desc() for c in key)).limit(SAMPLE)).scalars()]
    return all(_reads(cipher, text, None) for text in texts)


def _reads(cipher: KeyedCipher, token: str | None, expected: str | None) -> bool:
    if token is None:
        return False
    try:
        said = cipher.decrypt(token)
    except Exception:  # a token of another key, or no token at all
        return False
    return expected is None or said == expected


def _token(engine: Engine) -> str | None:
    with engine.connect() as conn:
        found = conn.execute(select(encryption_check.c.token).where(encryption_check.c.id == PROBE_ID)).scalar_one_or_none()
    return None if found is None else str(found)
