"""The erasure world's expiry (issue 29, item 3): memories that carry an expiry, set when remembered
and when corrected (with an earlier wording, so revisions exist), one handed to a conversation of
an app (its reference full of words, kept as a digest only); then, as the way `expiry`, every
memory given an expiry a few seconds ahead, time passing, and a real `memory-portal worker`
process (huey's periodic `sweep`, enqueued as the consumer starts and then every minute) erasing
them as forget erases. The world's own process never sweeps them: the test waits for the
worker to leave no memory row of the person, then looks everywhere as after any other way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text

from portal.domain.apps import App
from portal.domain.options import utc_now

if TYPE_CHECKING:
    from .erasure_world import Person

BIN = Path(sys.executable).parent / "memory-portal"
CONVERSATION_APP = App("app-zk81", "Zed's assistant")
AHEAD = timedelta(days=365)  # what `seed` writes expires long after the run
SOON = 3.0  # seconds: the way `expiry` moves every memory's expiry this close


def expiring(p: Person, w: dict[str, str]) -> None:
    """Part of `seed`: a memory remembered with an expiry, one whose expiry comes with a correction
    (its earlier wording a revision), and a recall in a conversation whose reference holds a word."""
    service, place = p.world.runtime.service, p.place
    service.remember(place, f"Rows a {w['remember with expiry']} canoe", expires_at=service.clock() + AHEAD)
    first = service.remember(place, f"Feeds the {w['update with expiry: before']} cat").memory
    service.update(place, first.id, text=f"Feeds the {w['update with expiry: after']} cat",
                   expires_at=service.clock() + AHEAD)
    assert len(service.history(place, first.id)) == 2
    app = service.for_app(CONVERSATION_APP, conversation_ref=f"Chat about {w['conversation ref']} and the canoe")
    assert app.recall(place, w["remember with expiry"])
    assert [m.id for c, ms in service.conversations(place) for m in ms]


def worker_env(p: Person) -> dict[str, str]:
    """The world's instance as `memory-portal worker` reads it: its database (the same file or
    PostgreSQL database) and its instance folder (the development encryption key is there)."""
    runtime = p.world.runtime
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "RATELIMIT_"))}
    env.update(MEMORY_INSTANCE_PATH=str(runtime.config.instance_path), MEMORY_EMBEDDER="none",
               MEMORY_SECRET_KEY="k" * 40,
               MEMORY_DATABASE_URL=runtime.engine.url.render_as_string(hide_password=False))
    return env


def rows_left(p: Person) -> int:
    with p.world.runtime.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM memories WHERE owner_id = :o AND scope = :s"),
                                {"o": p.place.owner_id, "s": p.place.scope}).scalar_one())


def expire_all(p: Person, words: list[str]) -> None:
    """The way `expiry`: every memory expires in SOON seconds (the clock real again: the worker's
    is), none is answered once it passed, and a real worker process erases them."""
    service, place = p.world.runtime.service, p.place
    service.clock = utc_now
    at = utc_now() + timedelta(seconds=SOON)
    ids = p.ids()
    for memory_id in ids:
        service.update(place, memory_id, expires_at=at)
    assert ids and rows_left(p) == len(ids)
    time.sleep(max(0.0, (at - utc_now()).total_seconds()) + 0.1)
    assert p.ids() == [] and service.count(place) == 0  # expired: no read answers them
    assert rows_left(p) == len(ids)  # nothing swept them in this process
    log = Path(p.world.runtime.config.instance_path) / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen([str(BIN), "worker", "--workers", "1"], env=worker_env(p), stdout=out,
                                  stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while rows_left(p) and time.monotonic() < deadline and worker.poll() is None:
                time.sleep(0.2)
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(30)
    said = log.read_text(encoding="utf-8", errors="replace")
    assert rows_left(p) == 0, said[-2000:]
    assert not [w for w in words if w in said], said[-2000:]  # its log: counts, never words


__all__ = ["expire_all", "expiring"]
