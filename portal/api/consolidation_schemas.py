"""Request and response models of the JSON API's consolidation: a transcript in, what was learnt out, and
the background job that learns it when the model is slow."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints

from portal.api.schemas import Flag, Strict
from portal.domain.catalog import DEFAULT_LANGUAGE, message
from portal.services.jobs import MAX_ATTEMPTS


class Turn(Strict):
    role: Annotated[str, StringConstraints(max_length=32)] = "user"
    text: Annotated[str, StringConstraints(max_length=200_000)]
    name: Annotated[str, StringConstraints(max_length=200)] | None = None
    error: Flag = False


class ConsolidateIn(Strict):
    transcript: Annotated[str, StringConstraints(max_length=1_000_000)] | Annotated[list[Turn], Field(max_length=5000)]
    ref: Annotated[str, StringConstraints(min_length=1, max_length=200)] = Field(..., description=(
        "the conversation, learnt once per ref of the app that sends it (another app's conversation of the same "
        "ref is its own); kept only as a digest (a job's `ref`), never as sent"))
    role: Annotated[str, StringConstraints(max_length=64)] | None = None
    person_name: Annotated[str, StringConstraints(max_length=200)] | None = None
    language: Annotated[str, StringConstraints(max_length=16)] | None = None
    wait: Flag = Field(True, description=(
        "false (or the header Prefer: respond-async): answer 202 at once with a job to follow at its "
        "Location, learnt in the background and tried again while the model fails"))
    temporary: Flag = Field(False, description=(
        "true: a conversation that teaches nothing. Answered at once (200, whatever `wait` says: no job), "
        "status `temporary`: nothing is learnt, nothing is sent to the model, nothing of the conversation is "
        "kept and its ref is not used up (sent again without `temporary`, it is learnt as if for the first "
        "time). Recall stays allowed. The app's use is counted without a word, and the person sees that the "
        "app only reads. The AI switch stops nothing here; a pause answers `paused`, a block 403 `app_blocked`"))


class ConsolidateOut(BaseModel):
    status: Literal["done", "already", "paused", "empty", "unavailable", "failed", "temporary"] = Field(
        ..., description=(
            "done: learnt; already: this app consolidated this ref before; paused: the person (or they for this app) "
            "paused learning, nothing learnt; empty: nothing to read; unavailable: no model, or the AI is "
            "switched off; failed: see `reason`; temporary: the conversation was marked temporary, nothing was "
            "learnt from it and nothing of it was kept"))
    added: int
    corrected: int
    refused: int
    reinforced: int = Field(0, description="facts and corrections that repeated what was kept (nothing changed)")
    summary: str | None = Field(None, description="the model's summary; a replay for an Idempotency-Key has none")
    reason: str | None = Field(None, description=(
        "with failed: model, unreadable, cut, store, invalid_where or error (the ref is released: "
        "call again); with done: cut (the model's answer stopped half way; its whole facts were kept); "
        "with unavailable: ai_disabled"
    ))
    failed: int | None = None
    proposed: int | None = None
    detail: str | None = Field(None, description="what `reason` (or the status unavailable or temporary) means, in "
                                                 "words (English)")

    @classmethod
    def of(cls, data: dict[str, Any]) -> ConsolidateOut:
        """The synchronous answer (`ConsolidationResult.to_json()`), with its reason in words."""
        reason = data.get("reason") or (data.get("status") if data.get("status") in ("unavailable", "temporary") else None)
        return cls.model_validate({**data, "detail": message(f"consolidation.{reason}", DEFAULT_LANGUAGE) if reason else None})


class JobOut(BaseModel):
    id: str
    state: Literal["queued", "running", "done", "failed"]
    ref: str = Field(..., description=(
        "the conversation's key: a digest of the `ref` sent (the same recall keeps of a `conversation_ref`); "
        "the ref itself is not kept"))
    attempts: int
    max_attempts: int = Field(..., description="how many times the model is tried before the job fails")
    created_at: datetime
    updated_at: datetime
    result: ConsolidateOut | None = Field(
        None, description="once done (or failed): what the synchronous form answers; its summary only in the first "
                          "answer to the app that sent the job, and within MEMORY_JOB_SUMMARY_MINUTES of the job's end")
    reason: str | None = Field(None, description=(
        "why the last attempt failed, as a code; `unavailable` (no model set up where the job runs) and "
        "`ai_disabled` end the job at once, not tried again"))
    detail: str | None = Field(None, description="the reason in words, and whether the job is tried again (English)")

    @classmethod
    def of(cls, job: Any) -> JobOut:
        data = job.to_json()
        said = message(f"consolidation.{job.reason}", DEFAULT_LANGUAGE) if job.reason else None
        if said and job.state == "queued":
            said += f" It is tried again shortly (attempt {job.attempts} of {MAX_ATTEMPTS} failed)."
        elif said and job.state == "failed" and job.attempts >= MAX_ATTEMPTS:
            said += f" It was tried {job.attempts} times."
        result = ConsolidateOut.of(data["result"]).model_dump() if data["result"] is not None else None
        return cls.model_validate({**data, "result": result, "max_attempts": MAX_ATTEMPTS, "detail": said})
