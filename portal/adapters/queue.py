"""The job queue on huey (https://huey.readthedocs.io), in the database the product runs on:
`PostgresHuey` (psycopg 3; `FOR UPDATE SKIP LOCKED`, tables made by migration 0011) on PostgreSQL,
`SqliteHuey` in a file beside the SQLite database. Chosen over procrastinate (PostgreSQL only)
because one library serves both databases the product runs on, the embedded default included; over
Celery, RQ and Dramatiq because they need a broker the product does not run.

A task carries a job's id and nothing else: the job (its place, its transcript, its state) is a row
of the person's place in the store (`portal.services.jobs`), erased with them, so nothing the queue
keeps names a person. huey keeps no results (`results=False`), and a task never raises with a
message of its own: a failure is logged by class, never by text (a traceback could quote a person's
words).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from huey import PostgresHuey, SqliteHuey, crontab
from huey.api import Huey
from sqlalchemy.engine import Engine

log = logging.getLogger("portal.jobs")

NAME = "memory-portal"


def make_huey(engine: Engine) -> Huey:
    """The huey of this database: PostgreSQL itself, or a file beside the SQLite one (a database
    in memory gets an in-memory queue: one process, the tests')."""
    if engine.dialect.name == "postgresql":
        dsn = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        # Polling (a consumer looks every 50 ms to 1 s when idle) rather than LISTEN: huey keeps one
        # LISTEN connection per worker thread, left open when the thread ends.
        return PostgresHuey(NAME, dsn=dsn, results=False, create_tables=False, utc=True, blocking=False)
    path = engine.url.database
    if not path or path == ":memory:":
        from huey import MemoryHuey

        return MemoryHuey(NAME, results=False, utc=True)
    return SqliteHuey(NAME, filename=str(Path(path).with_name(Path(path).name + "-jobs")), results=False, utc=True)


class HueyQueue:
    """`portal.domain.jobs.JobQueue` on huey, made on first use (a process that never queues a job
    never opens the queue); `bind(run)` gives it what runs a job (the service's `Jobs.run`,
    answering the seconds after which to try it again, or None)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._run: Callable[[str], float | None] | None = None
        self._stale: Callable[[], Sequence[str]] | None = None
        self._sweep: Callable[[], object] | None = None
        self._huey: Huey | None = None
        self._task: Any = None
        self._lock = threading.Lock()

    @property
    def huey(self) -> Huey:
        with self._lock:
            if self._huey is None:
                self._huey = make_huey(self.engine)
                self._task = self._huey.task(name="consolidate")(self._consolidate)
                self._huey.periodic_task(crontab(minute="*"), name="take_up")(self.take_up)
                self._huey.periodic_task(crontab(minute="*"), name="sweep")(self.sweep)
            return self._huey

    def _consolidate(self, job_id: str) -> None:
        if self._run is None:
            log.error("jobs.unbound id=%s", job_id)
            return
        try:
            delay = self._run(job_id)
        except Exception as exc:  # by class only: its text could quote a person's words
            log.error("jobs.failed id=%s error=%s", job_id, type(exc).__name__)
            delay = 30.0  # a store outage: the job is still there, try again later
        if delay is not None:
            self.enqueue(job_id, delay)

    def take_up(self) -> int:
        """Wake again the jobs a worker that died left queued or running (every minute, in every
        consumer: a job already taken is not run twice). Answers how many."""
        found = list(self._stale()) if self._stale is not None else []
        for job_id in found:
            self.enqueue(job_id)
        if found:
            log.info("jobs.taken_up count=%d", len(found))
        return len(found)

    def sweep(self) -> None:
        """Erase the words whose time is over (`Retention.sweep`: earlier wordings past their Undo,
        job summaries never read), every minute in every consumer. A failure is logged by class."""
        if self._sweep is None:
            return
        try:
            self._sweep()
        except Exception as exc:  # by class only; the next minute tries again
            log.error("jobs.sweep_failed error=%s", type(exc).__name__)

    def bind(self, run: Callable[[str], float | None], stale: Callable[[], Sequence[str]] | None = None,
             sweep: Callable[[], object] | None = None) -> None:
        self._run, self._stale, self._sweep = run, stale, sweep

    def enqueue(self, job_id: str, delay: float = 0.0) -> None:
        self.huey  # noqa: B018 - made on first use
        if delay > 0:
            self._task.schedule((job_id,), delay=delay)
        else:
            self._task(job_id)

    def pending(self) -> int:
        return int(self.huey.pending_count()) + int(self.huey.scheduled_count())

    def close(self) -> None:
        """Close the queue's connection (made again on next use)."""
        if self._huey is not None:
            self._huey.storage.close()


class Worker:
    """huey's consumer, its workers threads of this process: `run_forever()` for `memory-portal
    worker` (the main thread: huey's signal handlers stop it gracefully), or `start()` for a
    thread of `serve` on the embedded default, until `stop()`."""

    def __init__(self, queue: HueyQueue, workers: int = 2) -> None:
        # Periodic: `take_up` and `sweep` every minute. A graceful stop (SIGTERM: docker stop) lets the running
        # jobs finish, for at most 20 s (gunicorn's graceful timeout is 30).
        self.consumer: Any = queue.huey.create_consumer(workers=workers, worker_type="thread", periodic=True,
                                                        initial_delay=0.05, max_delay=1.0, check_worker_health=True,
                                                        graceful_signal="TERM", shutdown_timeout=20)

    def start(self) -> Worker:
        self.consumer._set_signal_handlers = lambda: None  # not the main thread: the host owns the signals
        self.consumer.start()
        return self

    def run_forever(self) -> None:
        self.consumer.run()

    def stop(self, graceful: bool = True) -> None:
        self.consumer.stop(graceful=graceful)
        self.consumer.huey.storage.close()


__all__ = ["HueyQueue", "Worker", "make_huey"]
