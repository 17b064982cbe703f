"""The in-memory reference store: what every other store must behave like (see `contract`).

Each place's data is an immutable snapshot; a write transaction works on a copy under the place's
lock and `commit()` swaps it in, so readers never see half a write and leaving without commit
rolls back for free.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from portal.domain.audit import AuditEntry
from portal.domain.recall.index import Entry, PlaceIndex
from portal.domain.text import terms
from portal.domain.types import Embedding, Memory, Place, PurgeCounts, Receipt, Revision
from portal.ports import Cursor, Filters, NeedsVector, Settings, StoreTx


@dataclass(frozen=True, slots=True)
class RefClaim:
    claimed_at: datetime
    state: str = "done"
    lease_until: datetime | None = None
    holder: str | None = None


@dataclass
class _PlaceData:
    memories: dict[str, Memory] = field(default_factory=dict)
    revisions: dict[str, list[Revision]] = field(default_factory=dict)
    settings: Settings | None = None
    refs: dict[str, RefClaim] = field(default_factory=dict)
    receipts: dict[str, Receipt] = field(default_factory=dict)
    tombstones: dict[str, datetime] = field(default_factory=dict)
    # Ranking terms of each memory's text, kept from snapshot to snapshot; dropped as soon as the
    # memory's text changes or the memory is removed (nothing of an erased text stays behind).
    terms: dict[str, builtins.list[str]] = field(default_factory=dict)
    # What recall ranks (the SQL stores' recall cache keeps the same), built from the active
    # memories on first use and kept until a write changes them (see `_Tx._w`).
    index: PlaceIndex | None = None

    def is_empty(self) -> bool:
        return not (self.memories or any(self.revisions.values()) or self.settings is not None or self.refs or self.receipts
                    or self.tombstones)

    def copy(self) -> _PlaceData:
        return _PlaceData(
            memories=dict(self.memories),
            revisions={k: list(v) for k, v in self.revisions.items()},
            settings=self.settings,
            refs=dict(self.refs),
            receipts=dict(self.receipts),
            tombstones=dict(self.tombstones),
            terms=dict(self.terms),
            # Valid until a write changes which memories are active, their text, kind, time or
            # vectors (see `_Tx._w`): a recall's mark_used must not throw it away.
            index=self.index,
        )


def matches(memory: Memory, filters: Filters) -> bool:
    """Whether a memory passes the filters (the in-process twin of the SQL WHERE clause)."""
    if filters.state is not None and memory.state != filters.state:
        return False
    if filters.kinds is not None and memory.kind not in filters.kinds:
        return False
    if filters.channel is not None and memory.channel != filters.channel:
        return False
    if filters.seen is not None and memory.seen != filters.seen:
        return False
    if filters.pinned is not None and memory.pinned != filters.pinned:
        return False
    if filters.created_after is not None and memory.created_at <= filters.created_after:
        return False
    return not (filters.created_before is not None and memory.created_at >= filters.created_before)


def newest_first(memory: Memory) -> tuple[datetime, str]:
    return (memory.created_at, memory.id)


class _Tx:
    def __init__(self, store: InMemoryStore, place: Place, data: _PlaceData, writable: bool) -> None:
        self.place = place
        self._store = store
        self._data = data
        self._writable = writable
        self._entries: builtins.list[AuditEntry] = []

    def commit(self) -> None:
        if self._writable:
            if self._data.is_empty():
                self._store._places.pop(self.place, None)  # nothing left that names the person
            else:
                self._store._places[self.place] = self._data
            self._data = self._data.copy()
            self._store.audit_entries.extend(self._entries)
            self._entries = []

    def purge(self) -> PurgeCounts:
        data = self._w(vectors=True)
        counts = PurgeCounts(
            len(data.memories), sum(len(v) for v in data.revisions.values()), 1 if data.settings is not None else 0,
            len(data.refs), len(data.receipts), len(data.tombstones),
        )
        self._data = _PlaceData()
        return counts

    def record(self, entry: AuditEntry) -> None:
        self._w()
        self._entries.append(entry)

    def _w(self, vectors: bool = False) -> _PlaceData:
        """The data to change; `vectors` when the change may alter what recall ranks (the active
        memories, their text, kind, time or vectors), which drops the place's index."""
        if not self._writable:
            raise RuntimeError("read transaction")
        if vectors:
            self._data.index = None
        return self._data

    # reading
    def get(self, memory_id: str) -> Memory | None:
        found = self._data.memories.get(memory_id) if isinstance(memory_id, str) else None
        return found.copy() if found else None

    def get_many(self, ids: Sequence[str]) -> builtins.list[Memory]:
        return [m for m in (self.get(i) for i in ids) if m is not None]

    def list(self, filters: Filters, limit: int | None = None, after: Cursor | None = None) -> builtins.list[Memory]:
        rows = [m for m in self._data.memories.values() if matches(m, filters)]
        if after is not None:
            key = (after.created_at, after.id)
            rows = [m for m in rows if newest_first(m) < key]
        rows.sort(key=newest_first, reverse=True)
        return [m.copy() for m in (rows if limit is None else rows[:limit])]

    def count(self, state: str = "active") -> int:
        return sum(1 for m in self._data.memories.values() if m.state == state)

    def find_words(self, words_key: str) -> Memory | None:
        for m in self._data.memories.values():
            if m.state == "active" and m.words_key == words_key:
                return m.copy()
        return None

    def _ranking(self, filters: Filters) -> tuple[PlaceIndex, Filters]:
        """An index to rank with, and the filters it has left to apply: the place's own index of
        its active memories (kept between writes) for filters it answers (kinds, times), else one
        made of the memories passing these filters, which need no more filtering."""
        if PlaceIndex.serves(filters):
            if self._data.index is None:
                self._data.index = self._indexed(m for m in self._data.memories.values() if m.state == "active")
            return self._data.index, filters
        return self._indexed(m for m in self._data.memories.values() if matches(m, filters)), Filters()

    def _indexed(self, memories: Iterable[Memory]) -> PlaceIndex:
        return PlaceIndex("", [Entry(m.id, m.kind, m.created_at, self._terms(m), m.embedding) for m in memories])

    def _terms(self, memory: Memory) -> builtins.list[str]:
        found = self._data.terms.get(memory.id)
        if found is None:
            found = self._data.terms[memory.id] = terms(memory.text)
        return found

    def nearest(self, query: Embedding, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]:
        index, left = self._ranking(filters)
        return index.nearest(query, limit, left)

    def mean_vector(self, model: str, dim: int, filters: Filters) -> np.ndarray | None:
        index, left = self._ranking(filters)
        return index.mean_vector(model, dim, left)

    def search_words(self, query: str, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]:
        index, left = self._ranking(filters)
        return index.search_words(query, limit, left)

    def embeddings(self, ids: Sequence[str]) -> dict[str, Embedding]:
        found = ((i, self._data.memories.get(i)) for i in ids if isinstance(i, str))
        return {i: m.embedding for i, m in found if m is not None and m.embedding is not None}

    def history(self, memory_id: str) -> builtins.list[Revision]:
        return list(reversed(self._data.revisions.get(memory_id, [])))

    def trim_candidates(self, count: int) -> builtins.list[str]:
        active = [m for m in self._data.memories.values() if m.state == "active" and not m.pinned]
        active.sort(key=lambda m: (m.importance, m.last_useful_at, m.id))
        return [m.id for m in active[:count]]

    # writing
    def insert(self, memory: Memory) -> int:
        data = self._w(vectors=True)
        if memory.id in data.memories or memory.id in data.tombstones:
            raise ValueError("id already used")
        data.memories[memory.id] = memory.copy()
        return self.count()

    def save(self, memory: Memory, expected_revision: int) -> bool:
        data = self._w(vectors=True)
        current = data.memories.get(memory.id)
        if current is None or current.revision != expected_revision:
            return False
        data.memories[memory.id] = memory.copy()
        if memory.text != current.text:
            data.terms.pop(memory.id, None)
        return True

    def push_revision(self, revision: Revision) -> None:
        self._w().revisions.setdefault(revision.memory_id, []).append(revision)

    def pop_revision(self, memory_id: str) -> Revision | None:
        stack = self._w().revisions.get(memory_id)
        return stack.pop() if stack else None

    def remove(self, ids: Sequence[str]) -> tuple[int, int]:
        data = self._w(vectors=True)
        memories = revisions = 0
        for i in set(ids):
            data.terms.pop(i, None)
            if data.memories.pop(i, None) is not None:
                memories += 1
            revisions += len(data.revisions.pop(i, []))
        return memories, revisions

    def remove_all(self) -> tuple[int, int]:
        return self.remove(list(self._data.memories))

    def set_state(self, ids: Sequence[str], state: str) -> int:
        data = self._w(vectors=True)
        changed = 0
        for i in ids:
            m = data.memories.get(i)
            if m is not None and m.state != state:
                data.memories[i] = replace(m, state=state)
                changed += 1
        return changed

    def mark_used(self, ids: Sequence[str], at: datetime) -> int:
        data = self._w()
        marked = 0
        for i in set(ids):
            m = data.memories.get(i) if isinstance(i, str) else None
            if m is not None and m.state == "active":
                data.memories[i] = replace(m, last_used_at=at)
                marked += 1
        return marked

    def mark_seen(self, ids: Sequence[str]) -> int:
        data = self._w()
        marked = 0
        for i in set(ids):
            m = data.memories.get(i) if isinstance(i, str) else None
            if m is not None and not m.seen:
                data.memories[i] = replace(m, seen=True)
                marked += 1
        return marked

    def tombstone(self, ids: Sequence[str], at: datetime) -> None:
        data = self._w()
        for i in ids:
            data.tombstones.setdefault(i, at)

    def is_tombstoned(self, memory_id: str) -> bool:
        return memory_id in self._data.tombstones

    def settings(self) -> Settings:
        return self._data.settings or Settings()

    def set_settings(self, settings: Settings) -> None:
        self._w().settings = settings

    def claim_ref(self, ref: str, at: datetime, lease_until: datetime | None = None, holder: str | None = None) -> bool:
        found = self._data.refs.get(ref)
        lapsed = found is not None and found.state == "running" and (found.lease_until is None or found.lease_until < at)
        if found is not None and not lapsed:
            return False
        state = "running" if lease_until is not None else "done"
        self._w().refs[ref] = RefClaim(at, state, lease_until, holder)
        return True

    def renew_ref(self, ref: str, holder: str, lease_until: datetime) -> bool:
        found = self._data.refs.get(ref)
        if found is None or found.state != "running" or found.holder != holder:
            return False
        self._w().refs[ref] = replace(found, lease_until=lease_until)
        return True

    def finish_ref(self, ref: str, holder: str) -> bool:
        found = self._data.refs.get(ref)
        if found is None or found.state != "running" or found.holder != holder:
            return False
        self._w().refs[ref] = replace(found, state="done", lease_until=None)
        return True

    def holds_ref(self, ref: str, holder: str) -> bool:
        found = self._data.refs.get(ref)
        return found is not None and found.state == "running" and found.holder == holder

    def release_ref(self, ref: str) -> bool:
        return self._w().refs.pop(ref, None) is not None

    def get_receipt(self, key: str) -> Receipt | None:
        return self._data.receipts.get(key)

    def put_receipt(self, receipt: Receipt) -> bool:
        if receipt.key in self._data.receipts:
            return False
        self._w().receipts[receipt.key] = receipt
        return True

    def finish_receipt(self, key: str, status: int, response: dict[str, Any] | None, memory_ids: Sequence[str],
                       holder: str | None = None) -> bool:
        current = self._data.receipts.get(key)
        if current is None or (holder is not None and current.holder != holder):
            return False
        self._w().receipts[key] = replace(current, status=status, response=response, memory_ids=tuple(memory_ids))
        return True

    def drop_receipt(self, key: str, holder: str | None = None) -> bool:
        found = self._data.receipts.get(key)
        if found is None or (holder is not None and found.holder != holder):
            return False
        return self._w().receipts.pop(key, None) is not None

    def lease_receipt(self, key: str, lease_until: datetime, expired_before: datetime | None = None,
                      holder: str | None = None) -> bool:
        found = self._data.receipts.get(key)
        if found is None or found.status != 0:
            return False
        if expired_before is not None:
            if found.lease_until is not None and found.lease_until >= expired_before:
                return False
            self._w().receipts[key] = replace(found, lease_until=lease_until, holder=holder)
            return True
        if holder is not None and found.holder != holder:
            return False
        self._w().receipts[key] = replace(found, lease_until=lease_until)
        return True



class InMemoryStore:
    """Reference store for tests and single-process use; text is searched in process."""

    searches_text = True
    words_secret: bytes | None = None

    def __init__(self) -> None:
        self._places: dict[Place, _PlaceData] = {}
        # The audit entries written with the changes they record (a SQL store keeps them in its
        # audit log table).
        self.audit_entries: builtins.list[AuditEntry] = []
        self._locks: dict[Place, threading.RLock] = {}
        self._guard = threading.Lock()

    def _lock(self, place: Place) -> threading.RLock:
        with self._guard:
            return self._locks.setdefault(place, threading.RLock())

    @contextmanager
    def write(self, place: Place) -> Iterator[StoreTx]:
        with self._lock(place):
            yield _Tx(self, place, self._places.get(place, _PlaceData()).copy(), writable=True)

    @contextmanager
    def read(self, place: Place, snapshot: bool = True) -> Iterator[StoreTx]:
        yield _Tx(self, place, self._places.get(place, _PlaceData()), writable=False)

    def mark_used(self, place: Place, ids: Sequence[str], at: datetime) -> builtins.list[Memory]:
        with self.write(place) as tx:
            tx.mark_used(ids, at)
            marked = [m for m in tx.get_many(list(dict.fromkeys(ids))) if m.state == "active"]
            tx.commit()
        return marked

    def purge_owner(self, owner_id: str, scopes: Sequence[str] | None = None, record: AuditEntry | None = None) -> PurgeCounts:
        counts, _taken = self.take_owner(owner_id, scopes)
        if record is not None:
            self.audit_entries.append(replace(record, counts=counts.to_json()))
        return counts

    def take_owner(self, owner_id: str, scopes: Sequence[str] | None, hold: bool = False,
                   ) -> tuple[PurgeCounts, dict[Place, _PlaceData]]:
        """Remove the owner's places (in `scopes`, or all) and answer their counts and their data.
        With `hold`, each place's lock stays held (a writer of that place waits) until `release`,
        which puts the data back or lets it go: an in-memory unit of work rolled back or committed."""
        memories = revisions = settings = refs = receipts = tombstones = 0
        taken: dict[Place, _PlaceData] = {}
        chosen = [p for p in list(self._places) if p.owner_id == owner_id and (scopes is None or p.scope in scopes)]
        for place in chosen:
            lock = self._lock(place)
            lock.acquire()
            try:
                data = taken[place] = self._places.pop(place, _PlaceData())
            finally:
                if not hold:
                    lock.release()
            memories += len(data.memories)
            revisions += sum(len(v) for v in data.revisions.values())
            settings += 1 if data.settings is not None else 0
            refs += len(data.refs)
            receipts += len(data.receipts)
            tombstones += len(data.tombstones)
        return PurgeCounts(memories, revisions, settings, refs, receipts, tombstones), taken

    def release(self, taken: dict[Place, _PlaceData], restore: bool) -> None:
        """Let go of places `take_owner(hold=True)` took: put their data back first with `restore`."""
        for place, data in taken.items():
            if restore:
                self._places[place] = data
            self._lock(place).release()

    def needing_vector(self, model: str, dim: int | None, limit: int) -> builtins.list[NeedsVector]:
        out: builtins.list[NeedsVector] = []
        for place, data in list(self._places.items()):
            for m in sorted(data.memories.values(), key=lambda m: m.id):
                e = m.embedding
                if e is None or e.model != model or (dim is not None and e.dim != dim):
                    out.append(NeedsVector(place, m.id, m.revision, m.text, m.updated_at))
                    if len(out) >= limit:
                        return out
        return out

    def set_embedding(
        self, place: Place, memory_id: str, revision: int, updated_at: datetime, embedding: Embedding
    ) -> bool:
        with self.write(place) as tx:
            current = tx.get(memory_id)
            if current is None or current.revision != revision or current.updated_at != updated_at:
                return False
            tx.save(current.copy(embedding=embedding), revision)
            tx.commit()
            return True

    def places(self) -> Iterator[Place]:
        return iter(list(self._places))

    def audit_trail(self) -> builtins.list[AuditEntry]:
        return list(self.audit_entries)

    def prune_history(self, older_than: datetime) -> int:
        pruned = 0
        for place in list(self._places):
            with self._lock(place):
                data = self._places.get(place)
                if data is None:
                    continue
                kept_data = data.copy()
                for memory_id, stack in data.revisions.items():
                    current = data.memories.get(memory_id)
                    kept = [r for r in stack if not _replaced_before(r, stack, current, older_than)]
                    pruned += len(stack) - len(kept)
                    kept_data.revisions[memory_id] = kept
                self._places[place] = kept_data
        return pruned

    def prune_receipts(self, older_than: datetime) -> int:
        pruned = 0
        for place in list(self._places):
            with self._lock(place):
                data = self._places.get(place)
                if data is None:
                    continue
                kept_data = data.copy()
                kept_data.receipts = {
                    key: r for key, r in data.receipts.items()
                    if r.status == 0 or r.created_at is None or r.created_at >= older_than
                }
                pruned += len(data.receipts) - len(kept_data.receipts)
                self._places[place] = kept_data
        return pruned

    def archived_before(self, older_than: datetime, limit: int) -> builtins.list[tuple[Place, str]]:
        found = [
            (place, m.id)
            for place, data in list(self._places.items())
            for m in list(data.memories.values())
            if m.state == "archived" and m.updated_at < older_than
            and (m.last_used_at is None or m.last_used_at < older_than)
        ]
        return sorted(found, key=lambda pair: pair[1])[:limit]


def _replaced_before(revision: Revision, stack: builtins.list[Revision], current: Memory | None, cutoff: datetime) -> bool:
    """Whether an earlier wording was written, and replaced, before the cutoff (see Store.prune_history)."""
    if revision.written_at >= cutoff:
        return False
    later = any(r.revision > revision.revision and r.written_at < cutoff for r in stack)
    return later or (current is not None and current.updated_at < cutoff)

