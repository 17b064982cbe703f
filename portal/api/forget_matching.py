"""Forget everything about a subject (issue 29, item 4): `POST /people/{owner_id}/forget-matching`,
a dry run that previews, then a confirmation by the previewed ids (portal.services.subject).

Its request and answer models live here, beside the one route they describe (the shared
`portal.api.schemas` is near the size a module keeps); the OpenAPI document is generated from
them like any other.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, RootModel, StringConstraints

from portal.api.auth import service
from portal.api.problems import ApiProblem
from portal.api.registry import Api, Call, Reply
from portal.api.schemas import Flag, Id, MemoryOut, Problem, Strict
from portal.domain.audit import AuditNote
from portal.domain.subjects import MAX_SUBJECT, PREVIEW_MAX


class ForgetMatchingIn(Strict):
    query: Annotated[str, StringConstraints(max_length=MAX_SUBJECT)] | None = Field(None, description=(
        "the subject, with dry_run: memories sharing a word with it, as close by meaning as the relevance floor, "
        "or mentioning a person it names"))
    dry_run: Flag = Field(False, description="true: only preview what matches, and get the token that confirms it")
    preview: Annotated[str, StringConstraints(max_length=60_000)] | None = Field(None, description=(
        "to confirm: the token a dry run answered (valid 30 minutes, for this person only)"))
    ids: list[Id] | None = Field(None, max_length=PREVIEW_MAX, description=(
        "to confirm: the previewed ids to forget (leave out those to keep)"))


class ForgetPreviewOut(BaseModel):
    """A dry run: the memories that match, the most relevant first, and the token to confirm them."""

    items: list[MemoryOut]
    preview: str
    more: bool = Field(..., description=f"more memories match than the {PREVIEW_MAX} listed: forget these, then "
                                        "preview again")


class ForgotMatchingOut(BaseModel):
    """A confirmation: what was forgotten, and what was not because it changed or went since the preview."""

    memories: int
    revisions: int = Field(..., description="earlier wordings erased with them")
    forgotten: list[str]
    changed: list[str] = Field(..., description="corrected since the preview, so kept: preview again to forget them")
    gone: list[str] = Field(..., description="forgotten already")


class ForgetMatchingOut(RootModel[ForgetPreviewOut | ForgotMatchingOut]):
    """A dry run's preview, or what a confirmation forgot."""


def register(api: Api) -> None:
    @api.route("POST", "/people/<owner_id>/forget-matching", summary="Forget everything about a subject: preview, then confirm",
               permission="memories:write", body=ForgetMatchingIn,
               responses={200: ForgetMatchingOut, 422: Problem}, receipts=False)
    def forget_matching(call: Call) -> Reply:
        """First `{"query": ..., "dry_run": true}`: the matching memories (active and archived, at most
        200) and a `preview` token; nothing changes, nothing is marked used. Then `{"preview": ..., "ids":
        [...]}`: exactly those of the previewed memories are forgotten as DELETE forgets them, in one
        audited transaction. An id the preview did not list refuses the whole request (422
        `not_previewed`); a token expired, altered or of another person is 422 `invalid_preview`; a
        memory corrected since the preview is kept and named in `changed`. Sending a confirmation again
        forgets nothing more (what went is `gone`), so no answer is stored for an Idempotency-Key.
        Allowed while the person or the app is paused, as forgetting is."""
        b: ForgetMatchingIn = call.body
        if b.dry_run:
            if b.preview is not None or b.ids is not None:
                raise ApiProblem(400, "invalid_request", "a dry run takes a query only: preview and ids confirm it")
            found = service().preview_forget_matching(call.place, b.query)
            out: ForgetPreviewOut | ForgotMatchingOut = ForgetPreviewOut(
                items=[MemoryOut.of(m) for m in found.items], preview=found.token, more=found.more)
        else:
            audit = AuditNote(call.key.id, "api_key", "person.forgot_matching")
            done = service().forget_matching(call.place, b.preview, b.ids, audit=audit)
            out = ForgotMatchingOut.model_validate(done.to_json())
        return Reply(200, ForgetMatchingOut(out))
