"""Idempotent writes: a retried request with the same key is applied once.

The first request with a key stores a pending receipt (under the place's write lock), runs, then
completes the receipt with its answer. A retry with the same key and the same request replays the
stored answer; with another request it is refused. A retry that arrives while the first is still
running waits for it. Receipts live in the store, so they survive a restart and are shared by
every process.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .ports import Clock, utc_now
from .store import Store
from .types import InvalidArgument, MemoryServiceError, Place, Receipt

PENDING = 0
KEY = re.compile(r"[\x21-\x7e]{1,200}")


class KeyReused(MemoryServiceError):
    """The key was used before for another request."""

    code = "idempotency_key_reused"


class StillRunning(MemoryServiceError):
    """The first request with this key has not finished yet."""

    code = "idempotency_in_progress"


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: dict[str, Any] | None
    memory_ids: tuple[str, ...] = ()


def request_hash(*parts: Any) -> str:
    """A stable digest of what a request asks for (method, path, body)."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def once(
    store: Store,
    place: Place,
    key: str,
    digest: str,
    action: Callable[[], Answer],
    clock: Clock = utc_now,
    wait: float = 10.0,
) -> tuple[Answer, bool]:
    """Run `action` once for this key in this place; answers (answer, replayed).

    Answers of 5xx class are never stored (the action raised): the receipt is dropped so a retry
    runs again. A redacted receipt (its memory was forgotten since) replays with no body."""
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise InvalidArgument("invalid_idempotency_key")
    deadline = time.monotonic() + wait
    while True:
        with store.write(place) as tx:
            existing = tx.get_receipt(key)
            if existing is None:
                tx.put_receipt(Receipt(key, digest, PENDING, None, created_at=clock()))
                tx.commit()
                break
        if existing.request_hash != digest:
            raise KeyReused()
        if existing.status != PENDING:
            body = existing.response if not existing.redacted else {"redacted": True}
            return Answer(existing.status, body, existing.memory_ids), True
        if time.monotonic() > deadline:
            raise StillRunning()
        time.sleep(0.05)
    try:
        answer = action()
    except BaseException:
        with store.write(place) as tx:
            tx.drop_receipt(key)
            tx.commit()
        raise
    with store.write(place) as tx:
        if not tx.finish_receipt(key, answer.status, answer.body, answer.memory_ids):
            # The action erased the place's receipts (a person's erasure took its own pending one
            # with it): keep the answer, counts only, so a retry replays instead of erasing again.
            tx.put_receipt(Receipt(key, digest, answer.status, answer.body, answer.memory_ids, created_at=clock()))
        tx.commit()
    return answer, False
