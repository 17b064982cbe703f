"""Idempotent writes: a retried request with the same key is applied once.

The first request with a key stores a pending receipt (under the place's write lock), runs, then
completes the receipt with its answer. A retry with the same key and the same request replays the
stored answer; with another request it is refused. A retry that arrives while the first is still
running waits for it. Receipts live in the store, so they survive a restart and are shared by
every process.

A receipt never holds a person's words (DESIGN §4, §11). `content_free` keeps of an answer only its
numbers, booleans and the strings of fields that hold ids, codes, kinds, states and times; every
memory in it is kept by reference (id and revision, without its text), and any other string (a
consolidation's summary, say) is dropped. A replay puts each memory's text back from the store,
and only while that memory is still at the revision the answer named: once it was forgotten,
corrected, overwritten in place or undone, the replay is `{"redacted": true}`. So nothing a person
erased or took back can come back through a replay, and erasing never has to find receipts.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from portal.domain.options import Clock, new_id, utc_now
from portal.domain.types import InvalidArgument, MemoryServiceError, Place, Receipt
from portal.ports import Store, StoreTx
from portal.services.leases import Renewing

PENDING = 0
KEY = re.compile(r"[\x21-\x7e]{1,200}")
REDACTED: dict[str, Any] = {"redacted": True}
# The only fields whose strings a receipt keeps: identifiers, codes, kinds, states and times, and
# catalog messages (our own sentences). Everything else a person or a model could have written.
STORED_STRINGS = frozenset({
    "id", "replaced_id", "ref", "next_cursor", "code", "reason", "status", "kind", "origin", "channel", "state",
    "match", "type", "title", "detail", "message", "created_at", "updated_at", "last_used_at", "written_at",
})
# What marks a memory kept by reference in a stored answer (its text removed).
MEMORY_REF = "$memory"


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


def request_hash(*parts: Any, secret: bytes = b"") -> str:
    """A stable digest of what a request asks for (method, path, body), keyed by the server's
    secret: the body holds a person's words, and a plain hash kept in the receipt would let anyone
    with the database (or a backup) test a guess of them."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hmac.new(secret, canonical.encode("utf-8"), hashlib.sha256).hexdigest()


def check_key(key: Any) -> str:
    """The key, if it is one (1 to 200 printable ASCII characters); `invalid_idempotency_key` otherwise."""
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise InvalidArgument("invalid_idempotency_key")
    return key


def is_memory(node: Mapping[str, Any]) -> bool:
    """A memory (or a revision of one) as answers carry it: an id, a revision and a text."""
    return "id" in node and "revision" in node and "text" in node


def content_free(body: Any) -> Any:
    """What a receipt keeps of an answer: see the module docstring."""
    if isinstance(body, dict):
        kept: dict[str, Any] = {}
        memory = is_memory(body)
        for name, value in body.items():
            if memory and name == "text":
                kept[name] = None
            elif isinstance(value, str):
                kept[name] = value if name in STORED_STRINGS else None
            else:
                kept[name] = content_free(value)
        if memory:
            kept[MEMORY_REF] = True
        return kept
    if isinstance(body, list):
        return [content_free(item) for item in body]
    if isinstance(body, str):
        return None  # a bare string is nobody's id
    return body


def referenced(stored: Any) -> Iterator[tuple[str, Any]]:
    """The (id, revision) of every memory a stored answer keeps by reference."""
    if isinstance(stored, dict):
        if stored.get(MEMORY_REF):
            yield str(stored.get("id")), stored.get("revision")
        for value in stored.values():
            yield from referenced(value)
    elif isinstance(stored, list):
        for item in stored:
            yield from referenced(item)


def replayed(stored: Any, texts: Mapping[tuple[str, Any], str]) -> Any:
    """The stored answer with each memory's current text put back (`texts` by id and revision)."""
    if isinstance(stored, dict):
        if not stored.get(MEMORY_REF):
            return {name: replayed(value, texts) for name, value in stored.items()}
        return {
            name: texts[(str(stored.get("id")), stored.get("revision"))] if name == "text" else replayed(value, texts)
            for name, value in stored.items() if name != MEMORY_REF
        }
    if isinstance(stored, list):
        return [replayed(item, texts) for item in stored]
    return stored


def _replay(tx: StoreTx, receipt: Receipt) -> dict[str, Any] | None:
    """A finished receipt's answer, its memories as they are now; REDACTED when one of them is no
    longer at the revision it answered (or the receipt was redacted before receipts held no text)."""
    if receipt.redacted:
        return dict(REDACTED)
    if receipt.response is None:
        return None
    wanted = list(dict.fromkeys(referenced(receipt.response)))
    current = {m.id: m for m in tx.get_many([memory_id for memory_id, _ in wanted])} if wanted else {}
    texts: dict[tuple[str, Any], str] = {}
    for memory_id, revision in wanted:
        memory = current.get(memory_id)
        if memory is None or memory.revision != revision:
            return dict(REDACTED)
        texts[(memory_id, revision)] = memory.text
    answer: dict[str, Any] = replayed(receipt.response, texts)
    return answer


def once(
    store: Store,
    place: Place,
    key: str,
    digest: str,
    action: Callable[[], Answer],
    clock: Clock = utc_now,
    wait: float = 10.0,
    lease: float = 60.0,
) -> tuple[Answer, bool]:
    """Run `action` once for this key in this place; answers (answer, replayed).

    Answers of 5xx class are never stored (the action raised): the receipt is dropped so a retry
    runs again. The receipt holds the answer content-free (`content_free`); a replay answers it
    with the current text of its memories, or REDACTED once one of them changed or went — whatever
    the retry's body, so a replay never tells whether a guessed body was the one first sent.

    While the action runs, its pending receipt is held by a lease of `lease` seconds, renewed every
    third of that; a retry finding the first request's lease run out (its worker died) takes the
    key over and runs the action itself."""
    check_key(key)
    holder = new_id()  # this request's hold on the key
    deadline = time.monotonic() + wait
    while True:
        with store.write(place) as tx:
            existing = tx.get_receipt(key)
            now = clock()
            if existing is None:
                tx.put_receipt(Receipt(key, digest, PENDING, None, created_at=now, lease_until=_after(now, lease),
                                       holder=holder))
                tx.commit()
                break
            if existing.status != PENDING:
                body = _replay(tx, existing)
                if body == REDACTED:
                    return Answer(existing.status, body), True
                if existing.request_hash != digest:
                    raise KeyReused()
                return Answer(existing.status, body), True
            if existing.request_hash != digest:
                raise KeyReused()
            if tx.lease_receipt(key, _after(now, lease), expired_before=now, holder=holder):
                tx.commit()  # its request's worker died: this one takes the key over
                break
        if time.monotonic() > deadline:
            raise StillRunning()
        time.sleep(0.05)

    def renew() -> bool:
        with store.write(place) as tx:
            held = tx.lease_receipt(key, _after(clock(), lease), holder=holder)
            tx.commit()
        return held

    with Renewing(renew, lease / 3, "receipt"):
        try:
            answer = action()
        except BaseException:
            with store.write(place) as tx:
                tx.drop_receipt(key, holder)
                tx.commit()
            raise
    stored = content_free(answer.body)
    with store.write(place) as tx:
        # When the action erased the place (its own pending receipt went with it), nothing is
        # stored again: no row may name an erased person, and a retry finds nothing left to erase.
        # A request whose lease was taken over meanwhile (it was presumed dead) stores nothing: the
        # request that took the key over answers for it.
        tx.finish_receipt(key, answer.status, stored, [memory_id for memory_id, _ in dict.fromkeys(referenced(stored))],
                          holder)
        tx.commit()
    return answer, False


def _after(moment: datetime, seconds: float) -> datetime:
    return moment + timedelta(seconds=seconds)
