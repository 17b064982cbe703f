"""Key rotation for MEMORY_ENCRYPTION_KEYS: re-encrypting stored text with the first key.

Rolling a key: put the new key first in MEMORY_ENCRYPTION_KEYS on every process (every key still
decrypts; new text is written with the first), run `memory-portal rotate-keys`, then drop the old
key. The run re-encrypts every memory text, revision text, stored idempotent answer, background
job's transcript and summary that an older key wrote, and recomputes each memory's duplicate key
(`words_key`, an HMAC keyed from the first encryption key), so duplicate detection keeps working
once the old key is gone.

Batched and resumable: each batch commits alone, a row the first key already reads (with a current
`words_key`) is left as it is, and a row the app rewrote in the meantime is left to the app (the
update is a compare-and-set on the stored token). Stopping half way and running again is safe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Column, Table, and_, func, select, tuple_, update

from portal.adapters.sql.keycheck import converting, has_probe, is_converting, renew_probe
from portal.adapters.sql.store import SqlStore
from portal.adapters.sql.tables import consolidation_jobs, idempotency_receipts, memories, memory_revisions
from portal.domain.text import words_key


class RotatingCipher(Protocol):
    digest_key: bytes

    def encrypt(self, text: str) -> str: ...
    def decrypt(self, token: str) -> str: ...
    def rotate(self, token: str) -> str: ...
    def uses_first_key(self, token: str) -> bool: ...


class RotationError(RuntimeError):
    """A stored token no configured key can read; the message names the row, never its text."""


@dataclass(frozen=True, slots=True)
class RotationCounts:
    """Rows re-encrypted (or given a new duplicate key) per table, and rows that needed nothing."""

    memories: int = 0
    revisions: int = 0
    receipts: int = 0
    jobs: int = 0  # a background job's transcript, while it may run
    summaries: int = 0  # a finished job's summary, until its app reads it
    attributes: int = 0  # what a host keeps with a memory besides its words
    unchanged: int = 0

    def to_json(self) -> dict[str, int]:
        return {"memories": self.memories, "revisions": self.revisions, "receipts": self.receipts, "jobs": self.jobs,
                "summaries": self.summaries, "attributes": self.attributes, "unchanged": self.unchanged}


@dataclass(frozen=True)
class _Target:
    """A table whose `column` holds encrypted text, paged through by its primary key (`key`, led by
    the owner); each update is pinned to the row's owner and scope as well, like every statement."""

    name: str
    table: Table
    column: Column[Any]
    words: bool = False

    @property
    def key(self) -> tuple[Column[Any], ...]:
        return tuple(self.table.primary_key.columns)

    @property
    def place_key(self) -> tuple[Column[Any], ...]:
        """The key, with the scope after the owner where the key lacks it."""
        scope = self.table.c.scope
        return self.key if scope in self.key else (self.key[0], scope, *self.key[1:])


TARGETS = (
    _Target("memories", memories, memories.c.text, words=True),
    _Target("attributes", memories, memories.c.attributes),
    _Target("revisions", memory_revisions, memory_revisions.c.text),
    _Target("receipts", idempotency_receipts, idempotency_receipts.c.response),
    _Target("jobs", consolidation_jobs, consolidation_jobs.c.work),
    _Target("summaries", consolidation_jobs, consolidation_jobs.c.summary),
)


def rows_to_visit(store: SqlStore) -> int:
    """How many rows a full run looks at (for a progress bar's total)."""
    with store.engine.connect() as conn:
        return sum(
            int(conn.execute(select(func.count()).select_from(t.table).where(t.column.is_not(None))).scalar_one())
            for t in TARGETS
        )


def rotate_keys(
    store: SqlStore, cipher: RotatingCipher, batch: int = 500, progress: Callable[[int], None] | None = None,
    encrypt_plaintext: bool = False,
) -> RotationCounts:
    """Re-encrypt with the first key everything an older key wrote; see the module docstring.

    With `encrypt_plaintext`, for a database that ran without keys (or a conversion stopped half
    way): a value no configured key reads is text kept in the clear, whatever its shape, and is
    encrypted with the first key (a memory's search terms cleared, its duplicate key made keyed).
    List every key that ever wrote the database: a token of a key not listed would be taken for
    text and encrypted as it is. Marked as running in `encryption_check` until it finishes, so no
    process starts on a database half converted. Refused (RotationError) on a database whose keys
    check passed already (it holds no text in the clear). The rewritten rows are erasures of what
    they held: the store cleans up after them (SQLite's write-ahead log; PostgreSQL: VACUUM, and
    the bytes stay in free space until `VACUUM FULL`, docs/operations.md)."""
    if batch < 1:
        raise ValueError("batch must be positive")
    if encrypt_plaintext:
        if has_probe(store.engine) and not is_converting(store.engine):
            raise RotationError("this database's text is encrypted already (its keys check passed): "
                                "--encrypt-plaintext is for a database that ran without keys")
        converting(store.engine, True)
    changed: dict[str, int] = {}
    unchanged = 0
    for target in TARGETS:
        changed[target.name], skipped = _rotate_table(store, cipher, target, batch, progress, encrypt_plaintext)
        unchanged += skipped
    renew_probe(store.engine, cipher)  # the keys check reads the first key's token from now on
    if encrypt_plaintext:
        converting(store.engine, False)
    if any(changed.values()):
        store.after_erasure({t.table.name for t in TARGETS if changed[t.name]})
    return RotationCounts(**changed, unchanged=unchanged)


def _rotate_table(
    store: SqlStore, cipher: RotatingCipher, target: _Target, batch: int, progress: Callable[[int], None] | None,
    encrypt_plaintext: bool = False,
) -> tuple[int, int]:
    changed = unchanged = 0
    after: Sequence[Any] | None = None
    columns = [*target.place_key, target.column, *([memories.c.words_key] if target.words else [])]
    width = len(target.place_key)
    while True:
        query = select(*columns).where(target.column.is_not(None)).order_by(*target.key).limit(batch)
        if after is not None:
            query = query.where(tuple_(*target.key) > tuple_(*after))
        with store.maintenance() as conn:
            rows = conn.execute(query).all()
            for row in rows:
                key, token = tuple(row[:width]), row[width]
                if encrypt_plaintext and not _readable(cipher, token):
                    values = _encrypted(cipher, target, token)
                else:
                    values = _new_values(cipher, target, key, token, row[width + 1] if target.words else None)
                if not values:
                    unchanged += 1
                    continue
                where = and_(*(column == value for column, value in zip(target.place_key, key, strict=True)))
                # Compare-and-set on the token: a row the app rewrote meanwhile is the app's (and new).
                changed += conn.execute(update(target.table).where(where, target.column == token).values(**values)).rowcount
        if progress:
            progress(len(rows))
        if len(rows) < batch:
            return changed, unchanged
        last = rows[-1]._mapping
        after = tuple(last[column] for column in target.key)


def _new_values(
    cipher: RotatingCipher, target: _Target, key: tuple[Any, ...], token: str, stored_words_key: str | None
) -> dict[str, str]:
    try:
        plain = cipher.decrypt(token)
    except Exception:
        raise RotationError(
            f"{target.name} row {_describe(key)} cannot be read with any key of MEMORY_ENCRYPTION_KEYS "
            "(was an old key dropped before the rotation finished?); rows before it are rotated, "
            "run again once every old key is listed"
        ) from None
    values: dict[str, str] = {}
    if not cipher.uses_first_key(token):
        values[target.column.name] = cipher.rotate(token)
    if target.words:
        fresh = words_key(plain, cipher.digest_key)
        if fresh != stored_words_key:
            values["words_key"] = fresh
    return values


def _readable(cipher: RotatingCipher, token: str) -> bool:
    try:
        cipher.decrypt(token)
    except Exception:  # no configured key reads it
        return False
    return True


def _encrypted(cipher: RotatingCipher, target: _Target, plain: str) -> dict[str, Any]:
    """The values of a row whose text was stored in the clear, once encrypted with the first key."""
    values: dict[str, Any] = {target.column.name: cipher.encrypt(plain)}
    if target.words:
        values.update(words_key=words_key(plain, cipher.digest_key), search_text=None)
    return values


def _describe(key: tuple[Any, ...]) -> str:
    return "/".join(str(part) for part in key)
