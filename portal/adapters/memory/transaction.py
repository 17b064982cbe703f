"""One transaction on one place of the in-memory store (`portal.ports.StoreTx`): reading and
ranking the place's snapshot, and writing to a copy of it that `commit()` swaps into the store.

A read transaction works on the committed snapshot itself and refuses to write; a write
transaction gets a copy under the place's lock (see `InMemoryStore.write`), so leaving without
commit rolls back for free.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from portal.adapters.memory.conversations import PlaceConversations
from portal.adapters.memory.places import RefClaim, _PlaceData, matches, newest_first
from portal.domain.audit import AuditEntry
from portal.domain.jobs import Job, content_free
from portal.domain.recall.index import Entry, PlaceIndex
from portal.domain.text import terms
from portal.domain.types import Embedding, Memory, Place, PurgeCounts, Receipt, Revision
from portal.ports import Cursor, Filters, Settings

if TYPE_CHECKING:
    from portal.adapters.memory.store import InMemoryStore


class _Tx(PlaceConversations):
    def __init__(self, store: InMemoryStore, place: Place, data: _PlaceData, writable: bool) -> None:
        self.place = place
        self._store = store
        self._data = data
        self._writable = writable
        self._entries: builtins.list[AuditEntry] = []
        self.now = store.clock()  # what it reads is what is still kept now (see Memory.alive_at)

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
        counts = self._w(vectors=True).counts()
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
        return found.copy() if found and found.alive_at(self.now) else None

    def get_many(self, ids: Sequence[str]) -> builtins.list[Memory]:
        return [m for m in (self.get(i) for i in ids) if m is not None]

    def list(self, filters: Filters, limit: int | None = None, after: Cursor | None = None) -> builtins.list[Memory]:
        filters = self._at_now(filters)
        rows = [m for m in self._data.memories.values() if matches(m, filters)]
        if after is not None:
            key = (after.created_at, after.id)
            rows = [m for m in rows if newest_first(m) < key]
        rows.sort(key=newest_first, reverse=True)
        return [m.copy() for m in (rows if limit is None else rows[:limit])]

    def count(self, state: str = "active", app: str | None = None) -> int:
        filters = self._at_now(Filters(state=state, app=app))
        return sum(1 for m in self._data.memories.values() if matches(m, filters))

    def find_words(self, words_key: str) -> builtins.list[Memory]:
        found = [m.copy() for m in self._data.memories.values()
                 if m.state == "active" and m.words_key == words_key and m.alive_at(self.now)]
        return sorted(found, key=lambda m: (m.created_at, m.id))

    def _at_now(self, filters: Filters) -> Filters:
        return filters if filters.alive_at is not None else replace(filters, alive_at=self.now)

    def _ranking(self, filters: Filters) -> tuple[PlaceIndex, Filters]:
        """An index to rank with, and the filters it has left to apply: the place's own index of
        its active memories (kept between writes) for filters it answers (kinds, times), else one
        made of the memories passing these filters, which need no more filtering."""
        filters = self._at_now(filters)
        if PlaceIndex.serves(filters):
            if self._data.index is None:
                self._data.index = self._indexed(m for m in self._data.memories.values() if m.state == "active")
            return self._data.index, filters
        return self._indexed(m for m in self._data.memories.values() if matches(m, filters)), Filters()

    def _indexed(self, memories: Iterable[Memory]) -> PlaceIndex:
        return PlaceIndex("", [Entry(m.id, m.kind, m.created_at, self._terms(m), m.embedding, m.expires_at, m.withheld)
                               for m in memories])

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

    def search_words_each(self, queries: Sequence[str], limit: int,
                          filters: Filters) -> builtins.list[builtins.list[tuple[str, float]]]:
        index, left = self._ranking(filters)  # made once for every query
        return [index.search_words(q, limit, left) for q in queries]

    def embeddings(self, ids: Sequence[str], app: str | None = None) -> dict[str, Embedding]:
        found = ((i, self._data.memories.get(i)) for i in ids if isinstance(i, str))
        return {i: m.embedding for i, m in found if m is not None and m.embedding is not None
                and m.alive_at(self.now) and m.usable_by(app)}

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
        if memory.last_op in ("in_place", "undo"):  # a wording overwritten or taken back: erased
            data.forget_taught([memory.id])
        return True

    def push_revision(self, revision: Revision) -> None:
        self._w().revisions.setdefault(revision.memory_id, []).append(revision)

    def pop_revision(self, memory_id: str) -> Revision | None:
        stack = self._w().revisions.get(memory_id)
        return stack.pop() if stack else None

    def erase_history(self, memory_id: str) -> int:
        if not self._data.revisions.get(memory_id):
            return 0
        data = self._w()
        data.forget_taught([memory_id])
        return len(data.revisions.pop(memory_id))

    def remove(self, ids: Sequence[str]) -> tuple[int, int]:
        data = self._w(vectors=True)
        memories = revisions = 0
        for i in set(ids):
            data.terms.pop(i, None)
            if data.memories.pop(i, None) is not None:
                memories += 1
            revisions += len(data.revisions.pop(i, []))
        gone = set(ids)
        data.conversations = {k: v for k, v in data.conversations.items() if k[2] not in gone}
        data.forget_taught(gone)
        return memories, revisions

    def remove_all(self) -> tuple[int, int]:
        self._w().forget_taught(None)
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
            if m is not None and m.state == "active" and m.alive_at(self.now):
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

    def claim_ref(self, ref: str, at: datetime, lease_until: datetime | None = None, holder: str | None = None,
                  app_id: str = "") -> bool:
        found = self._data.refs.get((app_id, ref))
        lapsed = found is not None and found.state == "running" and (found.lease_until is None or found.lease_until < at)
        if found is not None and not lapsed:
            return False
        state = "running" if lease_until is not None else "done"
        self._w().refs[(app_id, ref)] = RefClaim(at, state, lease_until, holder)
        return True

    def renew_ref(self, ref: str, holder: str, lease_until: datetime, app_id: str = "") -> bool:
        return self._held((app_id, ref), holder, lease_until=lease_until)

    def finish_ref(self, ref: str, holder: str, app_id: str = "") -> bool:
        return self._held((app_id, ref), holder, state="done", lease_until=None)

    def holds_ref(self, ref: str, holder: str, app_id: str = "") -> bool:
        found = self._data.refs.get((app_id, ref))
        return found is not None and found.state == "running" and found.holder == holder

    def _held(self, key: tuple[str, str], holder: str, **changes: Any) -> bool:
        if not self.holds_ref(key[1], holder, key[0]):
            return False
        self._w().refs[key] = replace(self._data.refs[key], **changes)
        return True

    def release_ref(self, ref: str, app_id: str = "") -> bool:
        return self._w().refs.pop((app_id, ref), None) is not None

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

    # consolidation jobs
    def put_job(self, job: Job) -> None:
        self._w().jobs[job.id] = replace(job, result=content_free(job.result))

    def get_job(self, job_id: str) -> Job | None:
        return self._data.jobs.get(job_id) if isinstance(job_id, str) else None

    def jobs(self) -> builtins.list[Job]:
        return sorted(self._data.jobs.values(), key=lambda j: (j.created_at, j.id))

    def save_job(self, job: Job) -> bool:
        if job.id not in self._data.jobs:
            return False
        self.put_job(job)
        return True
