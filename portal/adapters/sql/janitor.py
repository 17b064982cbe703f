"""What an erasure leaves to clean after its commit, off the request's path: one daemon thread per
store (started in the process that needs it, so a forked worker gets its own).

- `checkpoint` (SQLite): the write-ahead log is copied into the database and truncated. Tried at
  once by the erasing request with a short wait (portal.adapters.sql.engine.checkpoint); while a
  reader of an older snapshot keeps it from completing, tried again here every half second until
  it does, whether or not anything else is written.
- `vacuum` (PostgreSQL, after a person's erasure): VACUUM (INDEX_CLEANUP ON) of the tables that
  hold a person's rows, so a request never waits on VACUUM's locks.

`settle(timeout)` waits until nothing is left to do (the command line calls it before exiting, and
the tests before they scan the files).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable

log = logging.getLogger("portal.store")
RETRY_EVERY = 0.5
_ALL: weakref.WeakSet[Janitor] = weakref.WeakSet()


def settle_all(timeout: float = 30.0) -> bool:
    """Wait for every store's janitor in this process (before a database is dropped or a process
    ends with work still asked for)."""
    deadline = time.monotonic() + timeout
    return all(j.settle(max(0.0, deadline - time.monotonic())) for j in list(_ALL))


class Janitor:
    def __init__(self, tasks: dict[str, Callable[[], bool]], spacing: dict[str, float] | None = None) -> None:
        """`tasks`: name → a function answering whether it got done (False: try again later);
        `spacing`: name → the fewest seconds between two runs of that task (asked for meanwhile, it
        runs once when they are over)."""
        self.tasks = tasks
        self.spacing = spacing or {}
        self._last: dict[str, float] = {}
        self._wanted: set[str] = set()
        self._busy = False
        self._cv = threading.Condition()
        self._pid: int | None = None
        _ALL.add(self)

    def ask(self, task: str) -> None:
        with self._cv:
            if self._pid != os.getpid():  # first use in this process (or in a forked child)
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="erasure-janitor", daemon=True).start()
            elif task in self._wanted:
                return  # asked for already: waking the thread again would only cost the request time
            self._wanted.add(task)
            self._cv.notify_all()

    def settle(self, timeout: float = 30.0) -> bool:
        """Wait until every task asked for is done; answers whether it was within `timeout`."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._wanted or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(min(left, RETRY_EVERY))
        return True

    @property
    def pending(self) -> frozenset[str]:
        with self._cv:
            return frozenset(self._wanted)

    def _due_in(self, name: str, now: float) -> float:
        return self._last.get(name, -1e9) + self.spacing.get(name, 0.0) - now

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._wanted:
                    self._cv.wait()
                now = time.monotonic()
                todo = {name for name in self._wanted if self._due_in(name, now) <= 0}
                if not todo:  # each ran less than its spacing ago: once it is over
                    self._cv.wait(min(self._due_in(name, now) for name in self._wanted))
                    continue
                self._wanted, self._busy = self._wanted - todo, True
            left: set[str] = set()
            for name in sorted(todo):
                try:
                    done = self.tasks[name]()
                except Exception as exc:  # a database blip: try again at the next turn
                    log.warning("erasure.cleanup_failed task=%s error=%s", name, type(exc).__name__)
                    done = False
                self._last[name] = time.monotonic()
                if not done:
                    left.add(name)
            with self._cv:
                self._wanted |= left
                self._busy = False
                self._cv.notify_all()
            if left:
                time.sleep(RETRY_EVERY)
