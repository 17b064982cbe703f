"""A place's data in the in-memory store: the snapshot `_PlaceData` a transaction copies and
`commit()` swaps in, the consolidation claim `RefClaim` it keeps, and `matches`/`newest_first`,
the in-process twins of the SQL stores' WHERE clause and ORDER BY (see `.store`, `.transaction`).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime

from portal.domain.apps import AppUse
from portal.domain.jobs import Job
from portal.domain.recall.index import PlaceIndex
from portal.domain.types import Memory, PurgeCounts, Receipt, Revision
from portal.ports import Filters, Settings


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
    refs: dict[tuple[str, str], RefClaim] = field(default_factory=dict)  # by (app id, ref)
    receipts: dict[str, Receipt] = field(default_factory=dict)
    tombstones: dict[str, datetime] = field(default_factory=dict)
    # Connected apps: what the person decided about each app, and its uses (content-free).
    controls: dict[str, str] = field(default_factory=dict)
    uses: dict[tuple[str, str, str, date], AppUse] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict)
    # Which memories each conversation of each app was given: (app, conversation key, memory) →
    # (first, last); content-free, as the SQL stores' conversation_uses.
    conversations: dict[tuple[str, str, str], tuple[datetime, datetime]] = field(default_factory=dict)
    # Ranking terms of each memory's text, kept from snapshot to snapshot; dropped as soon as the
    # memory's text changes or the memory is removed (nothing of an erased text stays behind).
    terms: dict[str, builtins.list[str]] = field(default_factory=dict)
    # What recall ranks (the SQL stores' recall cache keeps the same), built from the active
    # memories on first use and kept until a write changes them (see `_Tx._w`).
    index: PlaceIndex | None = None

    def is_empty(self) -> bool:
        return not (self.memories or any(self.revisions.values()) or self.settings is not None or self.refs or self.receipts
                    or self.tombstones or self.controls or self.uses or self.jobs or self.conversations)

    def counts(self) -> PurgeCounts:
        """What erasing this place removes."""
        return PurgeCounts(len(self.memories), sum(len(v) for v in self.revisions.values()),
                           1 if self.settings is not None else 0, len(self.refs), len(self.receipts),
                           len(self.tombstones), len(self.uses) + len(self.conversations), len(self.controls),
                           len(self.jobs))

    def forget_taught(self, ids: Iterable[str] | None) -> None:
        """Erase the summary of each job that taught one of `ids` (None: any memory): their words go."""
        gone = None if ids is None else set(ids)
        for job in list(self.jobs.values()):
            if job.summary is not None and job.taught and (gone is None or not gone.isdisjoint(job.taught)):
                self.jobs[job.id] = replace(job, summary=None)

    def copy(self) -> _PlaceData:
        return _PlaceData(
            memories=dict(self.memories),
            revisions={k: list(v) for k, v in self.revisions.items()},
            settings=self.settings,
            refs=dict(self.refs),
            receipts=dict(self.receipts),
            tombstones=dict(self.tombstones),
            controls=dict(self.controls),
            uses=dict(self.uses),
            jobs=dict(self.jobs),
            conversations=dict(self.conversations),
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
    if filters.created_before is not None and memory.created_at >= filters.created_before:
        return False
    if filters.alive_at is not None and not memory.alive_at(filters.alive_at):
        return False
    return memory.usable_by(filters.app)


def newest_first(memory: Memory) -> tuple[datetime, str]:
    return (memory.created_at, memory.id)
