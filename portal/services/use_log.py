"""What the apps were handed, written off the request path (issue 30): a recall is a read.

Recall's hits (their last use time), the app's use counts and the conversation each memory served
(`portal.domain.uses.UseBatch`) are noted here, per place, and written by `Store.record_batch`:
with `every` 0, at once (one transaction per call, as a library expects); else by a thread of this
process every `every` seconds, one transaction per place whatever the number of recalls, and at
`close` (the server's shutdown). Before the person reads what the apps used (Connected apps, a
memory's page, Recent conversations, the download), that place's batch is written first
(`flush`), waiting for that place's batch the thread may be writing at that moment, so this
process answers what it handed out; another worker's lands within `every` seconds.

What a crash of the process loses: the uses noted since the last write (at most `every`
seconds of counts and use times), never a memory. An erasure never meets a use written back:
the batch is written under the place's lock, of the memories still there only, and a person's
erasure drops their waiting batch (`forget_owner`).
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Sequence
from datetime import datetime

from portal.domain.types import Place
from portal.domain.uses import UseBatch
from portal.ports import Store

log = logging.getLogger("portal.memory")
WAIT_FOR_WRITE = 5.0  # seconds a person's page waits for its place's batch in flight (the store slow: shown later)


class UseLog:
    def __init__(self, store: Store, every: float = 0.0) -> None:
        self.store = store
        self.every = every
        self._pending: dict[Place, UseBatch] = {}
        self._lock = threading.Lock()
        self._writing: dict[Place, int] = {}  # the places whose batch a thread is writing now
        self._written = threading.Condition(self._lock)
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._exit_hooked = False

    def note(self, place: Place, ids: Sequence[str], at: datetime, app_id: str | None = None,
             action: str | None = None, conversation: str | None = None, mark: bool = False) -> None:
        """These memories were handed out (see `UseBatch.note`): written now, or with the next batch."""
        if not ids or (not mark and (app_id is None or action is None)):
            return
        if self.every > 0:
            with self._lock:
                # Closed is looked at under the lock: a note that found the log open before `close`
                # took it would otherwise wait, after close's last write, for a write never to come.
                if not self._closed:
                    self._pending.setdefault(place, UseBatch()).note(ids, at, app_id, action, conversation, mark)
                    if self._thread is None:
                        self._start()
                    return
        self._write(place, UseBatch.of(ids, at, app_id, action, conversation, mark))

    def flush(self, place: Place | None = None) -> int:
        """Write what waits (for one place, or all); answers how many places were written. For one
        place it also waits (a few seconds at most) for its batch another thread is writing, so the
        person's page that asked shows what this process handed out."""
        with self._lock:
            if place is None:
                taken, self._pending = self._pending, {}
            else:
                taken = {place: self._pending.pop(place)} if place in self._pending else {}
            for where in taken:
                self._writing[where] = self._writing.get(where, 0) + 1
        left = list(taken)
        try:
            while left:
                self._write(left[0], taken[left[0]])
                self._written_now([left.pop(0)])
        finally:
            self._written_now(left)  # an error: the places not written are not in flight either
        if place is not None:
            with self._lock:
                self._written.wait_for(lambda: place not in self._writing, timeout=WAIT_FOR_WRITE)
        return len(taken)

    def _written_now(self, places: Sequence[Place]) -> None:
        with self._lock:
            for where in places:
                self._writing[where] -= 1
                if not self._writing[where]:
                    del self._writing[where]
            self._written.notify_all()

    def forget_owner(self, owner_id: str, scopes: Sequence[str] | None = None) -> None:
        """A person erased (in `scopes`, or everywhere): what waits for them is dropped, never written."""
        with self._lock:
            for place in [p for p in self._pending if p.owner_id == owner_id and (scopes is None or p.scope in scopes)]:
                del self._pending[place]

    def close(self) -> None:
        """Write what waits and stop the thread; later notes are written at once."""
        with self._lock:
            self._closed = True
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
        self.flush()

    def _start(self) -> None:
        # Started by a note (so after a server's fork: each worker has its own), ended once a
        # write found nothing new: an idle service keeps no thread.
        self._thread = threading.Thread(target=self._run, name="use-log", daemon=True)
        self._thread.start()
        if not self._exit_hooked:
            self._exit_hooked = True
            atexit.register(_close_if_alive, weakref.ref(self))  # a weak one: the hook keeps no service alive

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self.every)
            if self._closed:
                return
            self.flush()
            with self._lock:
                if not self._pending:  # nothing noted since: the thread ends, the next note starts one
                    self._thread = None
                    return

    def _write(self, place: Place, batch: UseBatch) -> None:
        if self.every <= 0:
            self.store.record_batch(place, batch)  # at once: as any write of the call, its errors are the call's
            return
        try:
            self.store.record_batch(place, batch)
        except Exception as exc:  # the store unreachable: these counts are lost, never a request
            log.warning("uses.not_written error=%s names=%d", type(exc).__name__, len(batch))


def _close_if_alive(log_ref: weakref.ReferenceType[UseLog]) -> None:
    """At the process's exit: what a log still alive gathered, written."""
    found = log_ref()
    if found is not None:
        found.close()


__all__ = ["UseLog"]
