"""Consolidation jobs: a conversation sent to be learnt in the background ("wait": false), and what
became of it. A job is a person's data (its transcript is kept encrypted like memories, and only
until the job is over) and goes with their erasure; its result holds counts and codes only.

States: `queued` (waiting, or waiting to be tried again after the model failed), `running`,
`done` (the result is the body the synchronous form answers) and `failed` (it failed every time it
was tried; `reason` says why, as a code).
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

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "ref": self.ref, "attempts": self.attempts,
                "created_at": self.created_at.isoformat(), "updated_at": self.updated_at.isoformat(),
                "result": self.result, "reason": self.reason}


__all__ = ["DONE", "FAILED", "QUEUED", "RUNNING", "STATES", "Job", "JobQueue"]
