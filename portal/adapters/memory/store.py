"""The in-memory reference store: what every other store must behave like (see `contract`).

Each place's data is an immutable snapshot; a write transaction works on a copy under the place's
lock and `commit()` swaps it in, so readers never see half a write and leaving without commit
rolls back for free. The transaction is `.transaction._Tx`, a place's snapshot `.places._PlaceData`;
this module holds the store around them: its places and their locks, and the work across places.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime

from portal.adapters.memory.places import _PlaceData
from portal.adapters.memory.transaction import _Tx
from portal.domain.apps import RECALLED
from portal.domain.audit import AuditEntry
from portal.domain.jobs import DONE, FAILED, QUEUED, RUNNING
from portal.domain.options import utc_now
from portal.domain.types import Embedding, Memory, Place, PurgeCounts, Revision
from portal.domain.uses import UseBatch
from portal.ports import NeedsVector, StoreTx


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
        self.clock: Callable[[], datetime] = utc_now  # "now" for its reads (see SqlStore.clock)

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

    def mark_used(self, place: Place, ids: Sequence[str], at: datetime, app_id: str | None = None,
                  conversation: str | None = None) -> builtins.list[Memory]:
        with self.write(place) as tx:
            usable = [m.id for m in tx.get_many(list(dict.fromkeys(ids))) if m.usable_by(app_id)]
            tx.mark_used(usable, at)
            marked = [m for m in tx.get_many(usable) if m.state == "active"]
            if app_id is not None:
                tx.record_use(app_id, RECALLED, [m.id for m in marked], at)
                if conversation is not None:
                    tx.record_conversation(app_id, conversation, [m.id for m in marked], at)
            tx.commit()
        return marked

    def record_batch(self, place: Place, batch: UseBatch) -> int:
        if not batch:
            return 0
        with self.write(place) as tx:
            present = {m.id for m in tx.get_many(batch.ids())}
            tx.apply_uses(batch.only(present))
            tx.commit()
        return len(present)

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
        counts = PurgeCounts()
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
            counts = counts.plus(data.counts())
        return counts, taken

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

    def job_place(self, job_id: str) -> Place | None:
        found = [place for place, data in list(self._places.items()) if job_id in data.jobs]
        return found[0] if len(found) == 1 else None

    def people(self, scope: str, hidden_from: str | None = None) -> builtins.list[str]:
        return sorted(place.owner_id for place, data in list(self._places.items())
                      if place.scope == scope and data.memories
                      and (hidden_from is None or data.controls.get(hidden_from) != "blocked"))

    def scopes_of(self, owner_id: str) -> builtins.list[str]:
        return sorted({place.scope for place, data in list(self._places.items())
                       if place.owner_id == owner_id and any(data.counts().to_json().values())})

    def memory_place(self, scope: str, memory_id: str) -> Place | None:
        found = [place for place, data in list(self._places.items())
                 if place.scope == scope and memory_id in data.memories]
        return found[0] if len(found) == 1 else None

    def unfinished_jobs(self, before: datetime, limit: int) -> builtins.list[str]:
        found = [job for data in list(self._places.values()) for job in list(data.jobs.values())
                 if job.state in (QUEUED, RUNNING) and job.updated_at < before]
        return [job.id for job in sorted(found, key=lambda j: (j.updated_at, j.id))[:limit]]

    def prune_history(self, older_than: datetime) -> int:
        def prune(data: _PlaceData, kept: _PlaceData) -> int:
            pruned = 0
            for memory_id, stack in data.revisions.items():
                current = data.memories.get(memory_id)
                left = [r for r in stack if not _replaced_before(r, stack, current, older_than)]
                pruned += len(stack) - len(left)
                kept.revisions[memory_id] = left
            return pruned

        return self._prune_places(prune)

    def expire_revisions(self, now: datetime) -> int:
        def expire(data: _PlaceData, kept: _PlaceData) -> int:
            for memory_id, stack in data.revisions.items():
                kept.revisions[memory_id] = [r for r in stack if r.expires_at is None or r.expires_at > now]
            return sum(map(len, data.revisions.values())) - sum(map(len, kept.revisions.values()))

        return self._prune_places(expire)

    def expire_summaries(self, before: datetime) -> int:
        def expire(data: _PlaceData, kept: _PlaceData) -> int:
            over = [j for j in data.jobs.values() if j.state in (DONE, FAILED) and j.updated_at < before and j.summary]
            kept.jobs.update({j.id: replace(j, summary=None) for j in over})
            return len(over)

        return self._prune_places(expire)

    def prune_jobs(self, older_than: datetime) -> int:
        def prune(data: _PlaceData, kept: _PlaceData) -> int:
            kept.jobs = {i: j for i, j in data.jobs.items() if j.state not in (DONE, FAILED) or j.updated_at >= older_than}
            return len(data.jobs) - len(kept.jobs)

        return self._prune_places(prune)

    def prune_receipts(self, older_than: datetime) -> int:
        def prune(data: _PlaceData, kept: _PlaceData) -> int:
            kept.receipts = {key: r for key, r in data.receipts.items()
                             if r.status == 0 or r.created_at is None or r.created_at >= older_than}
            return len(data.receipts) - len(kept.receipts)

        return self._prune_places(prune)

    def prune_uses(self, older_than: datetime) -> int:
        def prune(data: _PlaceData, kept: _PlaceData) -> int:
            kept.uses = {key: u for key, u in data.uses.items() if u.last_at >= older_than}
            kept.conversations = {k: v for k, v in data.conversations.items() if v[1] >= older_than}
            return len(data.uses) - len(kept.uses) + len(data.conversations) - len(kept.conversations)

        return self._prune_places(prune)

    def _prune_places(self, prune: Callable[[_PlaceData, _PlaceData], int]) -> int:
        """Each place under its lock: `prune(data, kept)` takes rows out of `kept`, a copy of the
        place's data that then replaces it, and answers how many; a place left empty goes."""
        pruned = 0
        for place in list(self._places):
            with self._lock(place):
                data = self._places.get(place)
                if data is None:
                    continue
                kept = data.copy()
                pruned += prune(data, kept)
                if kept.is_empty():
                    self._places.pop(place, None)
                else:
                    self._places[place] = kept
        return pruned

    def expired(self, now: datetime, limit: int) -> builtins.list[tuple[Place, str]]:
        found = [(m.expires_at, place, m.id) for place, data in list(self._places.items())
                 for m in list(data.memories.values()) if m.expires_at is not None and m.expires_at <= now]
        return [(place, memory_id) for _, place, memory_id in sorted(found, key=lambda t: (t[0], t[1].owner_id, t[2]))][:limit]

    def archived_before(self, older_than: datetime, limit: int) -> builtins.list[tuple[Place, str]]:
        found = [
            (place, m.id)
            for place, data in list(self._places.items())
            for m in list(data.memories.values())
            if m.state == "archived" and m.updated_at < older_than
            and (m.last_used_at is None or m.last_used_at < older_than)
        ]
        return sorted(found, key=lambda pair: (pair[0].owner_id, pair[1]))[:limit]


def _replaced_before(revision: Revision, stack: builtins.list[Revision], current: Memory | None, cutoff: datetime) -> bool:
    """Whether an earlier wording was written, and replaced, before the cutoff (see Store.prune_history)."""
    if revision.written_at >= cutoff:
        return False
    later = any(r.revision > revision.revision and r.written_at < cutoff for r in stack)
    return later or (current is not None and current.updated_at < cutoff)

