"""What the apps were handed in one place, gathered to be written at once (issue 30): the memories
marked used (recall's hits: their last use time), each app's use counts by day, and which
conversation of the app each memory served. Content-free: ids, codes, counts and times.

A recall is a read: what it hands out is noted here and written later, in one transaction per
place, by `Store.record_batch` (`portal.services.use_log`). Noting the same memory twice adds its
counts and keeps its latest time (its first one, for a conversation)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

UseKey = tuple[str, str, str, date]  # app id, memory id, action, day (UTC)
ServedKey = tuple[str, str, str]  # app id, conversation digest, memory id


@dataclass
class UseBatch:
    used: dict[str, datetime] = field(default_factory=dict)  # memory id: its latest use (recall's hits)
    counts: dict[UseKey, tuple[int, datetime]] = field(default_factory=dict)  # how many times, and when last
    served: dict[ServedKey, tuple[datetime, datetime]] = field(default_factory=dict)  # first and last time

    @classmethod
    def of(cls, ids: Sequence[str], at: datetime, app_id: str | None = None, action: str | None = None,
           conversation: str | None = None, mark: bool = False) -> UseBatch:
        batch = cls()
        batch.note(ids, at, app_id, action, conversation, mark)
        return batch

    def note(self, ids: Sequence[str], at: datetime, app_id: str | None = None, action: str | None = None,
             conversation: str | None = None, mark: bool = False) -> None:
        """These memories were handed out at `at`: marked used (`mark`), counted as the app's
        `action` and, with `conversation`, as served to it; each memory once however often named."""
        day = at.astimezone(UTC).date()
        for memory_id in dict.fromkeys(ids):
            if mark:
                self.used[memory_id] = max(self.used.get(memory_id, at), at)
            if app_id is None or action is None:
                continue
            count, last = self.counts.get((app_id, memory_id, action, day), (0, at))
            self.counts[(app_id, memory_id, action, day)] = (count + 1, max(last, at))
            if conversation is not None:
                first, last = self.served.get((app_id, conversation, memory_id), (at, at))
                self.served[(app_id, conversation, memory_id)] = (min(first, at), max(last, at))

    def merge(self, other: UseBatch) -> None:
        """Add what `other` noted (its counts added, the earliest and latest times kept)."""
        for memory_id, at in other.used.items():
            self.used[memory_id] = max(self.used.get(memory_id, at), at)
        for key, (count, last) in other.counts.items():
            before, was = self.counts.get(key, (0, last))
            self.counts[key] = (before + count, max(was, last))
        for served, (first, last) in other.served.items():
            was_first, was_last = self.served.get(served, (first, last))
            self.served[served] = (min(was_first, first), max(was_last, last))

    def ids(self) -> list[str]:
        """Every memory named, in no particular order."""
        return list({*self.used, *(k[1] for k in self.counts), *(k[2] for k in self.served)})

    def only(self, kept: Collection[str]) -> UseBatch:
        """What it noted of these memories only (those still there: an erasure leaves none behind)."""
        return UseBatch({i: at for i, at in self.used.items() if i in kept},
                        {k: v for k, v in self.counts.items() if k[1] in kept},
                        {k: v for k, v in self.served.items() if k[2] in kept})

    def __bool__(self) -> bool:
        return bool(self.used or self.counts or self.served)

    def __len__(self) -> int:
        return len(self.used) + len(self.counts) + len(self.served)


__all__ = ["ServedKey", "UseBatch", "UseKey"]
