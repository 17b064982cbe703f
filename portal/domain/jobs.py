"""Consolidation jobs: a conversation sent to be learnt in the background ("wait": false), and what
became of it. A job is a person's data and goes with their erasure. Its transcript is kept encrypted like
memories, and only until the job is over; its result holds counts, ids and codes only. The model's
summary of the conversation is kept apart, encrypted too, for the app that sent the job to read
once: cleared when it is read, and after a short retention if it never is (the periodic task and
`prune`). Each clearing is an erasure (`portal.services.retention`).

States: `queued` (waiting, or waiting to be tried again after the model failed), `running`,
`done` (the result is the body the synchronous form answers) and `failed` (it failed every time it
was tried, or at once when it can never succeed where it runs: no model set up, `unavailable`, or
the AI switched off since, `ai_disabled`; `reason` says why, as a code).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
STATES = (QUEUED, RUNNING, DONE, FAILED)


class JobQueue(Protocol):
    """What wakes a worker for a job: now, or after `delay` seconds. It carries the job's id only."""

    def enqueue(self, job_id: str, delay: float = 0.0) -> None: ...


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    owner_id: str
    scope: str
    ref: str
    state: str
    attempts: int
    created_at: datetime
    updated_at: datetime
    app_id: str | None = None
    result: dict[str, Any] | None = None
    reason: str | None = None
    # What the job runs on, while it may still run: the transcript (a list of {role, text}) and the
    # host's settings. None once the job is over (nothing of the conversation is kept after it).
    work: dict[str, Any] | None = None
    # The model's summary, until the job's app has read it or it expired (see the module docstring).
    summary: str | None = None
    # The memories its run added, corrected or said again (ids only): erasing any of their words
    # erases the summary too, which may say them (the store, in the same transaction).
    taught: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The job as its app sees it: the summary is in the result only while this Job carries it
        (`portal.services.jobs` hands it over once)."""
        result = None if self.result is None else {**self.result, "summary": self.summary}
        return {"id": self.id, "state": self.state, "ref": self.ref, "attempts": self.attempts,
                "created_at": self.created_at.isoformat(), "updated_at": self.updated_at.isoformat(),
                "result": result, "reason": self.reason}


def content_free(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a job's stored result may hold: the synchronous answer's counts and codes, without the
    summary (kept apart, see `Job.summary`)."""
    return None if result is None else {k: v for k, v in result.items() if k != "summary"}


__all__ = ["DONE", "FAILED", "QUEUED", "RUNNING", "STATES", "Job", "JobQueue", "content_free"]
