"""The place indexes (`portal.domain.recall.index.PlaceIndex`) one process keeps between recalls.

`RecallCache` keeps the indexes of one process: least recently used first out past a size in
bytes, and none kept longer than `idle_seconds` after its last use. A place erased here is dropped
at once (`drop_owner`); one erased by another process is dropped here at its next use (its token
is gone) or, at the latest, `idle_seconds` after its last use, by a sweeper thread.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable

from portal.domain.recall.index import PlaceIndex
from portal.domain.types import Place

log = logging.getLogger("portal.memory")


class Ticket:
    """A reader's claim to cache what it is about to read of a place: void once the place was
    forgotten or its owner erased in this process after the claim was taken (see RecallCache.put)."""

    __slots__ = ("place", "valid")

    def __init__(self, place: Place) -> None:
        self.place = place
        self.valid = True


class RecallCache:
    """The place indexes of one process, bounded in bytes and in idle time; thread-safe.

    A reader takes a `ticket` before it reads the place's token and memories, and hands it to
    `put`: a write or an erasure of the place in this process meanwhile voids it, so a recall that
    read a place just before it was erased never puts the erased data back after the erasure
    dropped it. (Other processes see the token change at their next touch of the place.)"""

    def __init__(
        self, max_bytes: int, idle_seconds: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_bytes = max_bytes
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[Place, tuple[PlaceIndex, float]] = OrderedDict()
        self._readers: set[Ticket] = set()
        self._bytes = 0
        self.hits = 0
        self.misses = 0
        _SWEEPER.watch(self)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, place: Place, token: str) -> PlaceIndex | None:
        """The place's index if it was read at this token; an index of another token is dropped."""
        with self._lock:
            found = self._entries.get(place)
            if found is None or found[0].token != token:
                if found is not None:
                    self._remove(place)
                self.misses += 1
                return None
            self._entries[place] = (found[0], self._clock())
            self._entries.move_to_end(place)
            self.hits += 1
            return found[0]

    def ticket(self, place: Place) -> Ticket:
        """Claim the right to cache what is about to be read of `place` (see the class docstring)."""
        ticket = Ticket(place)
        with self._lock:
            self._readers.add(ticket)
        return ticket

    def release(self, ticket: Ticket) -> None:
        with self._lock:
            self._readers.discard(ticket)

    def put(self, place: Place, index: PlaceIndex, ticket: Ticket | None = None) -> None:
        """Keep the place's index; with a `ticket`, only if nothing voided it since it was taken."""
        with self._lock:
            if ticket is not None:
                self._readers.discard(ticket)
                if not ticket.valid:
                    return
            if index.nbytes > self.max_bytes:
                return
            if place in self._entries:
                self._remove(place)
            self._entries[place] = (index, self._clock())
            self._bytes += index.nbytes
            while self._bytes > self.max_bytes:
                self._remove(next(iter(self._entries)))

    def forget(self, place: Place) -> None:
        """Drop the place's index, and void the tickets of readers of it still running."""
        with self._lock:
            for ticket in self._readers:
                if ticket.place == place:
                    ticket.valid = False
            if place in self._entries:
                self._remove(place)

    def drop_owner(self, owner_id: str) -> None:
        """Drop every index of this person (their erasure in this process), and void the tickets
        of readers of their places still running."""
        with self._lock:
            for ticket in self._readers:
                if ticket.place.owner_id == owner_id:
                    ticket.valid = False
            for place in [p for p in self._entries if p.owner_id == owner_id]:
                self._remove(place)

    def sweep(self) -> int:
        """Drop the indexes not used for `idle_seconds`; answers how many."""
        cutoff = self._clock() - self.idle_seconds
        with self._lock:
            stale = [p for p, (_, used) in self._entries.items() if used <= cutoff]
            for place in stale:
                self._remove(place)
        return len(stale)

    def clear(self) -> None:
        with self._lock:
            for ticket in self._readers:
                ticket.valid = False
            self._entries.clear()
            self._bytes = 0

    def reset_after_fork(self) -> None:
        """In a forked child: a fresh lock (the parent's may have been held by a thread the child
        does not have) and nothing kept (the parent's data is the parent's)."""
        self._lock = threading.Lock()
        self._entries = OrderedDict()
        self._readers = set()
        self._bytes = 0

    def _remove(self, place: Place) -> None:
        index, _ = self._entries.pop(place)
        self._bytes -= index.nbytes


class _Sweeper:
    """One daemon thread per process sweeping every live cache; started on first use, and again
    in a forked child (a worker of a server that made its caches before forking), whose caches
    start empty: a child keeps no thread of its parent, and may have copied a lock held."""

    def __init__(self, every: float = 15.0) -> None:
        self.every = every
        self._caches: weakref.WeakSet[RecallCache] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._pid: int | None = None

    def watch(self, cache: RecallCache) -> None:
        with self._lock:
            self._caches.add(cache)
            self._start()

    def _start(self) -> None:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            threading.Thread(target=self._run, name="recall-cache-sweeper", daemon=True).start()

    def after_fork(self) -> None:
        self._lock = threading.Lock()
        for cache in list(self._caches):
            cache.reset_after_fork()
        if len(self._caches):
            self._start()

    def _run(self) -> None:
        while True:
            time.sleep(self.every)
            with self._lock:
                caches = list(self._caches)
            for cache in caches:
                try:
                    cache.sweep()
                except Exception:  # one failure must not end sweeping for good
                    log.exception("recall cache sweep failed")


_SWEEPER = _Sweeper()
os.register_at_fork(after_in_child=_SWEEPER.after_fork)
