"""Consolidation in the background (`portal.domain.jobs`): a conversation is kept as a job, run by a
worker through the same `Consolidation` the synchronous form calls, and tried again with back-off
while the model fails.

Framework-free. The queue that wakes a worker is handed in (`JobQueue`, the `huey` adapter in
`portal.adapters.queue`); the job itself — its state, its encrypted transcript, its result — is a
row of the person's place in the store, so `GET .../jobs/{id}` reads it like any of their data and
their erasure takes it (a job that wakes for a person erased since finds nothing and ends). A job
runs as the app that sent it (`MemoryService.for_app`): a person who blocked or paused that app in
the meantime is obeyed when it runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from portal.domain.attributes import checked_attributes
from portal.domain.decisions import conversation_key
from portal.domain.errors import NotFound, Refused
from portal.domain.jobs import DONE, FAILED, QUEUED, RUNNING, Job, JobQueue, content_free
from portal.domain.types import Place, as_place

from .context import Context, pid
from .transcript import is_valid_ref, read_transcript

if TYPE_CHECKING:
    from .memory_service import MemoryService

log = logging.getLogger("portal.memory")

SUMMARY_MAX = 2000  # characters of the model's summary kept for the job's app
MAX_ATTEMPTS = 5  # the model is tried again after Options.job_retry_seconds, doubled each time: 2, 4, 8, 16 s


class Jobs:
    def __init__(self, ctx: Context, service: Callable[[str | None], MemoryService]) -> None:
        self.ctx = ctx
        self.service_for = service  # the service as the job's app sees it (None: no app)

    # ---------------------------------------------------------------- the host's side

    def submit(self, place: Place, transcript: Any, ref: Any, role: str | None = None, person_name: str | None = None,
               language: str | None = None, attributes: Any = None) -> Job:
        """Keep a conversation to be learnt in the background and wake a worker; answers the job
        (`queued`). Refused: `invalid_ref`, `invalid_transcript`, `app_blocked`, `ai_disabled`, `paused`; `queue_unavailable`
        when no queue is configured (the host answers synchronously then)."""
        ctx, place = self.ctx, as_place(place)
        ctx.admit(place)
        if not ctx.ai_enabled(place):
            raise Refused("ai_disabled")
        if ctx.queue is None:
            raise Refused("queue_unavailable")
        if not is_valid_ref(ref):
            raise Refused("invalid_ref")
        if read_transcript(transcript) is None:
            raise Refused("invalid_transcript")
        attributes = checked_attributes(attributes)  # refused now, not when the worker runs it
        now = ctx.clock()
        # The conversation is kept by its key (`conversation_key`), as the consolidation it runs keeps it.
        job = Job(ctx.id_factory(), place.owner_id, place.scope, conversation_key(ref, ctx.store.words_secret),
                  QUEUED, 0, now, now,
                  app_id=ctx.app.id if ctx.app else None,
                  work={"transcript": transcript, "role": role, "person_name": person_name, "language": language,
                        "attributes": attributes})
        with ctx.store.write(place) as tx:
            if tx.settings().paused:  # the person, or the app (AppTx): nothing of the conversation is kept
                raise Refused("paused")
            tx.put_job(job)
            tx.commit()
        ctx.queue.enqueue(job.id)
        log.info("job.queued place=%s id=%s", pid(place), job.id)
        return job

    def get(self, place: Place, job_id: str, take_summary: bool = True, wait: bool = False) -> Job:
        """The job with this id in this place, as the app that sent it sees it; NotFound for any
        other app's job, and for anyone else's. Never its transcript. With `wait`, a job not over
        yet is read again until it is, for at most `Options.job_wait_seconds` (mem0's
        `async_mode=False`): then it is answered as it is.

        The model's summary is handed over once, to the app that sent the job: the answer that
        carries it clears it (an erasure, in the same transaction); every later one carries none.
        With `take_summary` False (a HEAD, which answers no body) it stays where it is. A summary
        never read is erased after `summary_retention` (`Retention.sweep`)."""
        ctx, place = self.ctx, as_place(place)
        reader = ctx.app.id if ctx.app is not None else None
        job = self._read(place, job_id, time.monotonic() + (ctx.options.job_wait_seconds if wait else 0.0))
        if job is None or (reader is not None and job.app_id not in (None, reader)):
            raise NotFound("job")
        if job.summary is None or job.app_id != reader or not take_summary:
            return replace(job, work=None, summary=None)
        with ctx.store.write(place) as tx:
            job = tx.get_job(job_id)
            if job is None:
                raise NotFound("job")  # erased in between
            if job.summary is not None:
                tx.save_job(replace(job, summary=None))
                tx.commit()
        log.info("job.summary_taken place=%s id=%s", pid(place), job_id)
        return replace(job, work=None)

    def _read(self, place: Place, job_id: str, until: float) -> Job | None:
        """The job, read again (every 0.1 s, then less often) while it is not over, until `until`."""
        pause = 0.1
        while True:
            with self.ctx.store.read(place) as tx:
                job = tx.get_job(job_id)
            left = until - time.monotonic()
            if job is None or job.state in (DONE, FAILED) or left <= 0:
                return job
            time.sleep(min(pause, left))
            pause = min(pause * 1.5, 0.5)

    # ---------------------------------------------------------------- the worker's side

    def run(self, job_id: str) -> float | None:
        """Run one job (a worker woken by the queue). Answers the seconds after which it is to be
        tried again (the model failed and attempts are left, or another worker holds it: then once
        its lease is over), else None: done, failed for good, already over, or gone with its person. Never raises for a job's
        own failure; logs ids and codes only."""
        ctx = self.ctx
        place = ctx.store.job_place(job_id)
        if place is None:
            return None
        lease = timedelta(seconds=max(ctx.options.lease_seconds, 1) * 10)
        with ctx.store.write(place) as tx:
            job = tx.get_job(job_id)
            now = ctx.clock()
            if job is None or job.state in (DONE, FAILED) or job.work is None:
                return None
            if job.state == RUNNING and job.updated_at > now - lease:
                # Another worker has it, or had it and died: look again once its lease is over.
                return (job.updated_at + lease - now).total_seconds() + 1
            job = replace(job, state=RUNNING, attempts=job.attempts + 1, updated_at=now)
            tx.save_job(job)
            tx.commit()
        outcome, reason, retry, summary, taught = self._attempt(job, place)
        # The transcript goes once the job is over (an erasure: the store cleans up after it); the
        # result keeps counts and codes, the summary waits apart for the job's app (`get`).
        if retry:
            finished = replace(job, state=QUEUED, reason=reason, updated_at=ctx.clock())
        elif reason is not None:
            finished = replace(job, state=FAILED, reason=reason, result=content_free(outcome), work=None,
                               updated_at=ctx.clock())
        else:
            finished = replace(job, state=DONE, result=content_free(outcome), summary=summary, reason=None, work=None,
                               taught=taught, updated_at=ctx.clock())
        with ctx.store.write(place) as tx:
            if tx.get_job(job_id) is None:
                return None  # erased while it ran: nothing of it stays
            if finished.summary is not None and len(tx.get_many(list(taught))) < len(taught):
                # Something it taught was forgotten while it ran: the summary, which may say it, is not kept.
                finished = replace(finished, summary=None)
            tx.save_job(finished)
            tx.commit()
        log.info("job.%s place=%s id=%s attempts=%d reason=%s", finished.state, pid(place), job_id, job.attempts,
                 reason)
        return ctx.options.job_retry_seconds * 2 ** (job.attempts - 1) if retry else None

    def _attempt(self, job: Job, place: Place
                 ) -> tuple[dict[str, Any] | None, str | None, bool, str | None, tuple[str, ...]]:
        """One try of a job: (the synchronous answer, why it failed or None, whether to try again,
        the model's summary, the memories it taught). Only a model that failed is tried again, while attempts are left. A
        job that can never succeed where it runs is not: no model set up (`unavailable`), the AI
        switched off since it was sent (`ai_disabled`), the app blocked since (Refused)."""
        work = job.work or {}
        try:
            result = self.service_for(job.app_id).consolidate(
                place, work.get("transcript"), job.ref, role=work.get("role"), person_name=work.get("person_name"),
                language=work.get("language"), attributes=work.get("attributes"), digested=True)
        except Refused as refused:  # the person blocked the app since: it will not run
            return None, refused.code, False, None, ()
        outcome = result.kept_json()
        if result.status == "failed":
            return outcome, result.reason, job.attempts < MAX_ATTEMPTS, None, ()
        if result.status == "unavailable":
            return outcome, result.reason or "unavailable", False, None, ()
        return outcome, None, False, (result.summary or "")[:SUMMARY_MAX] or None, tuple(dict.fromkeys(result.taught))

    def stale(self, limit: int = 500) -> Sequence[str]:
        """Jobs a worker should take up: queued, or running longer than a lease without news (its
        worker died). For `memory-portal worker` at start: a queue may have lost their wake-up."""
        lease = timedelta(seconds=max(self.ctx.options.lease_seconds, 1) * 10)
        return self.ctx.store.unfinished_jobs(self.ctx.clock() - lease, limit)


__all__ = ["MAX_ATTEMPTS", "JobQueue", "Jobs"]
