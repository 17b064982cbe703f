"""The Store protocol: the narrow, place-bound storage the service is handed.

A store opens one transaction per service operation: `write(place)` takes the place's lock (in
process, `BEGIN IMMEDIATE` on SQLite, `pg_advisory_xact_lock` on PostgreSQL) and `read(place)`
reads a consistent snapshot. Every call on a transaction is bound to its place, so a memory of
another owner or scope is simply not there. Only `purge_owner` crosses scopes, on purpose.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np

from portal.domain.apps import AppUse, Conversation, ConversationCount
from portal.domain.audit import AuditEntry
from portal.domain.jobs import Job
from portal.domain.queries import Cursor, Filters, NeedsVector, Settings
from portal.domain.types import Embedding, Memory, Place, PurgeCounts, Receipt, Revision
from portal.domain.uses import UseBatch

__all__ = ["Cursor", "Filters", "NeedsVector", "Settings", "Store", "StoreTx", "as_vector"]  # the port's vocabulary


@runtime_checkable
class StoreTx(Protocol):
    """One transaction on one place. `commit()` keeps the changes; leaving without it rolls back."""

    place: Place

    def commit(self) -> None: ...

    # reading
    def get(self, memory_id: str) -> Memory | None:
        """The memory with this id in this place; None for any other id, including values that could
        never be an id (wrong type, a NUL, a lone surrogate): callers pass ids from URLs and JSON."""
        ...
    def get_many(self, ids: Sequence[str]) -> builtins.list[Memory]: ...
    def list(self, filters: Filters, limit: int | None = None, after: Cursor | None = None) -> builtins.list[Memory]: ...
    def count(self, state: str = "active", app: str | None = None) -> int:
        """How many memories in this state are kept now (and, with `app`, that app may receive)."""
        ...
    def find_words(self, words_key: str) -> builtins.list[Memory]:
        """Every active memory kept now with these folded words (`Memory.words_key`), oldest first,
        whatever attributes they carry: the service picks the one of the same scope (issue 39)."""
        ...
    def nearest(self, query: Embedding, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]: ...
    def mean_vector(self, model: str, dim: int, filters: Filters) -> np.ndarray | None:
        """The mean of the unit-length vectors of this model and size among the memories passing
        the filters (float32, not itself unit length); None when no memory has such a vector."""
        ...
    def search_words(self, query: str, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]:
        """BM25 of the query's terms over the place's memories passing the filters, best first (a
        fragment match when no term is found); see `portal.domain.recall.ranking.words_top`."""
        ...
    def search_words_each(self, queries: Sequence[str], limit: int,
                          filters: Filters) -> builtins.list[builtins.list[tuple[str, float]]]:
        """`search_words` of each query, from one read of the place (its active memories' terms
        from the recall cache where a store keeps one): what a preview naming many people asks."""
        ...
    def embeddings(self, ids: Sequence[str], app: str | None = None) -> dict[str, Embedding]:
        """The vectors of those of these memories (in any state, kept now, and with `app` usable
        by that app) that have one, by id."""
        ...
    def history(self, memory_id: str) -> builtins.list[Revision]: ...
    def trim_candidates(self, count: int) -> builtins.list[str]: ...

    # writing
    def insert(self, memory: Memory) -> int:
        """Add a new memory; answers how many active memories the place holds now (in the same query)."""
        ...
    # Each write that erases a memory's words (remove, remove_all, erase_history, a save with
    # last_op "in_place" or "undo") erases, in the same transaction, the summary of every job of
    # the place that taught that memory (`Job.taught`): the summary may say them.
    def save(self, memory: Memory, expected_revision: int) -> bool: ...
    def push_revision(self, revision: Revision) -> None: ...
    def pop_revision(self, memory_id: str) -> Revision | None: ...
    def erase_history(self, memory_id: str) -> int:
        """Erase every earlier wording of this memory (its current one stays); answers how many."""
        ...
    def remove(self, ids: Sequence[str]) -> tuple[int, int]: ...
    def remove_all(self) -> tuple[int, int]: ...
    def purge(self) -> PurgeCounts:
        """Erase everything this place holds: memories, revisions, settings, consolidation refs,
        idempotency receipts and tombstones; nothing that names the owner stays in the place."""
        ...
    def set_state(self, ids: Sequence[str], state: str) -> int: ...
    def mark_used(self, ids: Sequence[str], at: datetime) -> int: ...
    def mark_seen(self, ids: Sequence[str]) -> int: ...

    # tombstones
    def tombstone(self, ids: Sequence[str], at: datetime) -> None: ...
    def is_tombstoned(self, memory_id: str) -> bool: ...

    # settings and consolidation refs
    def settings(self) -> Settings: ...
    def set_settings(self, settings: Settings) -> None: ...
    # A conversation is the app's that had it: its ref is claimed and looked up under the app's id
    # (`app_id`; "" the person's own conversations), so another app's ref of the same spelling is
    # another conversation. `portal.services.apps.AppTx` passes its app's.
    def claim_ref(self, ref: str, at: datetime, lease_until: datetime | None = None, holder: str | None = None,
                  app_id: str = "") -> bool:
        """Claim a conversation ref: True when it was free, or `running` under a lease that ran out
        before `at` (a worker that died holding it: taken over). With `lease_until` the claim is
        `running`, held by `holder` until then (see renew_ref, finish_ref); without, it is `done`."""
        ...
    def renew_ref(self, ref: str, holder: str, lease_until: datetime, app_id: str = "") -> bool:
        """Extend a running claim this holder still has."""
        ...
    def finish_ref(self, ref: str, holder: str, app_id: str = "") -> bool:
        """The conversation was learnt: the claim is `done` for good (if this holder still has it)."""
        ...
    def holds_ref(self, ref: str, holder: str, app_id: str = "") -> bool:
        """Whether `holder` still holds a running claim of `ref` (an erasure takes claims away)."""
        ...
    def release_ref(self, ref: str, app_id: str = "") -> bool: ...

    # idempotency receipts
    def get_receipt(self, key: str) -> Receipt | None: ...
    def put_receipt(self, receipt: Receipt) -> bool:
        """Store a receipt unless one holds this key already (then False, nothing written)."""
        ...

    def finish_receipt(self, key: str, status: int, response: dict[str, Any] | None, memory_ids: Sequence[str],
                       holder: str | None = None) -> bool:
        """Complete a pending receipt (status 0) with the answer it stands for (only if `holder`,
        when given, still holds it)."""
        ...

    def drop_receipt(self, key: str, holder: str | None = None) -> bool: ...
    def lease_receipt(self, key: str, lease_until: datetime, expired_before: datetime | None = None,
                      holder: str | None = None) -> bool:
        """Hold a pending receipt until `lease_until`. Renewing (no `expired_before`): only while
        `holder` still holds it. Taking over (`expired_before`): only a lease that had run out by
        then (or none), which `holder` then holds."""
        ...

    # the audit trail, in the same unit of work as the change it records
    def record(self, entry: AuditEntry) -> None: ...

    # connected apps (portal.domain.apps): content-free, ids, actions, counts and times
    def app_control(self, app_id: str) -> str | None:
        """What the person decided about this app: `paused`, `blocked`, or None (free)."""
        ...
    def app_controls(self) -> dict[str, str]: ...
    def set_app_control(self, app_id: str, state: str | None, at: datetime) -> bool:
        """Pause or block an app (None: resume it); answers whether anything changed."""
        ...
    def record_use(self, app_id: str, action: str, memory_ids: Sequence[str], at: datetime) -> None:
        """Count one use of each of these memories by the app, in the day's bucket of `at` (UTC)."""
        ...
    def app_uses(self, memory_id: str | None = None) -> builtins.list[AppUse]:
        """The place's uses (of one memory when given), most recent first."""
        ...
    def writers(self, memory_ids: Sequence[str]) -> dict[str, str]:
        """Which app wrote each of these memories of the place: the app of its earliest `remembered`
        use (ties: the smaller app id), for those an app remembered and whose use is still kept."""
        ...
    def record_conversation(self, app_id: str, conversation: str, memory_ids: Sequence[str], at: datetime) -> None:
        """These memories were handed to this conversation (a digest, `decisions.conversation_key`)
        of the app at `at`: its first time kept, its last one moved."""
        ...
    def apply_uses(self, batch: UseBatch) -> None:
        """Write a batch of uses (`portal.domain.uses`): the hits' last use times (active ones still
        kept, never moved back in time), the apps' counts added, the conversations' first and last
        times. Of every memory it names: the caller keeps it to those still there."""
        ...
    def conversations(self, limit: int = 50) -> builtins.list[Conversation]:
        """The place's conversations, most recent first, each with the memories it was given (still
        there: forgetting a memory takes it out of every conversation)."""
        ...
    def conversation_counts(self, memory_id: str) -> builtins.list[ConversationCount]:
        """How many conversations of each app were given this memory, and when last."""
        ...

    # consolidation jobs (portal.services.jobs): `work` and `summary` kept as the store keeps text
    # (encrypted); `result` without its summary (`portal.domain.jobs.content_free`)
    def put_job(self, job: Job) -> None: ...
    def get_job(self, job_id: str) -> Job | None:
        """The job with this id in this place, its work and summary included; None for any other id."""
        ...
    def jobs(self) -> builtins.list[Job]:
        """Every job of the place, oldest first (the person's export)."""
        ...
    def save_job(self, job: Job) -> bool:
        """Write the job's state, attempts, result, reason, work, summary and time; False when it is
        gone. Clearing its work or summary is an erasure, cleaned up after as a forget is."""
        ...


@runtime_checkable
class Store(Protocol):
    """Storage for memories. `searches_text` is False when text is kept out of the database's reach
    (a cipher), so lexical ranking must happen in process; `words_secret` keys the duplicate hash.
    `clock` is "now" for its transactions: no read answers a memory whose `expires_at` is that
    moment or before (get, lists, counts, rankings, duplicates, use marks), erased or not yet."""

    searches_text: bool
    words_secret: bytes | None
    clock: Callable[[], datetime]

    def write(self, place: Place) -> AbstractContextManager[StoreTx]: ...
    def read(self, place: Place, snapshot: bool = True) -> AbstractContextManager[StoreTx]:
        """A consistent snapshot of the place; `snapshot=False` lets a store skip that guarantee
        (each read may see writes committed since the one before) where it costs round trips."""
        ...
    def mark_used(self, place: Place, ids: Sequence[str], at: datetime, app_id: str | None = None,
                  conversation: str | None = None) -> builtins.list[Memory]:
        """Mark the active ones of these memories used at `at` and answer them as they are now
        (in `ids` order, with the new use time); unknown, archived or other people's ids are
        skipped. A transaction of its own, which may skip the wait for durability: a use time is a
        hint (for the cap and the portrait's order), and a crash losing it costs nothing that
        matters. With `app_id`, that app's `recalled` uses of the marked memories are counted in
        the same transaction, under the place's write lock (an erasure leaves none behind), and with
        `conversation` too, that they served that conversation of the app (`record_conversation`)."""
        ...
    def record_batch(self, place: Place, batch: UseBatch) -> int:
        """Write what the apps were handed in this place (`StoreTx.apply_uses`), of the memories
        still there (any state) only, in a transaction of its own under the place's write lock: an
        erasure landing since they were handed out leaves no use behind. It may skip the wait for
        durability, as `mark_used`. Answers how many of the memories it names were there."""
        ...
    def purge_owner(self, owner_id: str, scopes: Sequence[str] | None = None, record: AuditEntry | None = None) -> PurgeCounts:
        """Erase everything of this owner: in every scope, or only in `scopes` when given; `record`
        (its counts filled in) is written in the same transaction."""
        ...
    def needing_vector(self, model: str, dim: int | None, limit: int) -> builtins.list[NeedsVector]: ...
    def set_embedding(
        self, place: Place, memory_id: str, revision: int, updated_at: datetime, embedding: Embedding
    ) -> bool:
        """Store a vector only if the memory is still the one that was embedded (same revision and
        write time), so a vector computed for old text never lands on new text."""
        ...
    def places(self) -> Iterator[Place]: ...
    def audit_trail(self) -> builtins.list[AuditEntry]:
        """Every audit entry written through this store's transactions, oldest first."""
        ...

    # retention (maintenance across places; see MemoryService.prune)
    def prune_history(self, older_than: datetime) -> int:
        """Delete, in every place, earlier wordings written before `older_than` whose replacement
        (the next revision kept, or the memory as it is now) was written before it too. A memory's
        current text is never touched, and the wording a recent change replaced stays, so that change
        can still be undone. Answers how many revisions were deleted."""
        ...
    def expire_revisions(self, now: datetime) -> int:
        """Erase, in every place, the earlier wordings whose `expires_at` is `now` or before, as
        forget erases. Answers how many."""
        ...
    def expire_summaries(self, before: datetime) -> int:
        """Clear, in every place, the summaries of jobs over (done or failed) and not written since
        `before`: a summary never read is not kept. Answers how many."""
        ...
    def prune_jobs(self, older_than: datetime) -> int:
        """Delete, in every place, the jobs over and not written since `older_than`. Answers how many."""
        ...
    def prune_receipts(self, older_than: datetime) -> int:
        """Delete, in every place, completed idempotency receipts created before `older_than`; a
        pending one (its request may still be running) stays. Answers how many were deleted."""
        ...
    def job_place(self, job_id: str) -> Place | None:
        """The place a job belongs to (a worker is woken with its id alone); None when it is gone.
        The one lookup of a person's rows by another key than the place: a job id is random. An id
        two places hold (keys hold the owner, so nothing refuses it) names neither: None."""
        ...
    def people(self, scope: str, hidden_from: str | None = None) -> builtins.list[str]:
        """The owner ids of tenant `scope` holding memories (active or archived), sorted; with
        `hidden_from` (an app id), not those who blocked that app. For an API that lists people
        (mem0's `users()`): one statement, whatever the number of people."""
        ...
    def scopes_of(self, owner_id: str) -> builtins.list[str]:
        """The scopes keeping anything under this owner id (a memory, a wording, a setting, a use, a
        job, a tombstone...: what `purge_owner` erases), sorted: where a person named by their
        owner id alone is to be found (the operator's command line)."""
        ...
    def memory_place(self, scope: str, memory_id: str) -> Place | None:
        """The place in tenant `scope` holding memory `memory_id`, in any state: for an API that
        names a memory by its id alone (mem0's). None when no person of the tenant holds it, or when
        two do (a memory id is random; an id two places hold names neither)."""
        ...
    def unfinished_jobs(self, before: datetime, limit: int) -> builtins.list[str]:
        """Ids of jobs queued or running and not written since `before`, oldest first (maintenance)."""
        ...
    def prune_uses(self, older_than: datetime) -> int:
        """Delete, in every place, the apps' uses last counted before `older_than`. Answers how many."""
        ...
    def expired(self, now: datetime, limit: int) -> builtins.list[tuple[Place, str]]:
        """Up to `limit` memories, in every place, whose `expires_at` is `now` or before, as (place,
        id), soonest expired first. Reads only: the service erases them under each place's lock (an
        expired memory cannot be changed back: no read answers it)."""
        ...
    def archived_before(self, older_than: datetime, limit: int) -> builtins.list[tuple[Place, str]]:
        """Up to `limit` archived memories, in every place, neither written nor used since
        `older_than` (`updated_at` and `last_used_at` both before it), as (place, id) by owner, then id.
        Reads only: the service erases them under each place's write lock."""
        ...


def as_vector(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """A contiguous float32 vector, the one form every store keeps."""
    return np.ascontiguousarray(np.asarray(values, dtype=np.float32).reshape(-1))
