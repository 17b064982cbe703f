"""Leases on work in progress: a pending idempotent request and a claimed conversation hold their
key for a while (`Options.lease_seconds`), and the request renews the hold while it runs. A worker
that dies renews nothing: once its lease has run out, a retry takes the work over instead of
waiting for ever (issue: "a killed worker leaves an idempotent request stuck for good")."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import TracebackType

log = logging.getLogger("portal.memory")


class Renewing:
    """Call `renew` every `every` seconds in a daemon thread while the `with` block runs. A renewal
    that fails is logged (its error's class only) and tried again at the next turn; one answering
    False (the hold was taken away: an erasure, a takeover) stops the renewals."""

    def __init__(self, renew: Callable[[], bool], every: float, name: str = "lease") -> None:
        self.renew = renew
        self.every = max(0.05, every)
        self.name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Renewing:
        self._thread = threading.Thread(target=self._run, name=f"renew-{self.name}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.every + 5)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                if not self.renew():
                    return
            except Exception as exc:  # a database blip: the next turn tries again
                log.warning("lease.renew_failed lease=%s error=%s", self.name, type(exc).__name__)
