"""Memory endpoints: remember, list, get, correct, undo, forget, history."""

from __future__ import annotations

import re

from flask import request

from portal.api.auth import service
from portal.api.problems import ApiProblem
from portal.api.registry import Api, Call, Reply
from portal.api.schemas import (
    HistoryOut,
    ListQuery,
    MemoryOut,
    PageOut,
    Problem,
    RememberIn,
    RevisionOut,
    SavedOut,
    UndoOut,
    UpdateIn,
)
from portal.domain.audit import AuditNote
from portal.domain.errors import Conflict
from portal.domain.types import Source

MEMORY = "/people/<owner_id>/memories/<memory_id>"
IF_MATCH = re.compile(r'^\s*(?:W/)?"?(\d{1,9})"?\s*$')


def register(api: Api) -> None:
    @api.route("POST", "/people/<owner_id>/memories", summary="Remember something about a person",
               permission="memories:write", body=RememberIn, responses={201: SavedOut, 409: Problem, 422: Problem},
               redactable=True)
    def remember(call: Call) -> Reply:
        """A host's explicit write: kept as sent (cleaned, checked by the rules), or 422 with the
        refusal's code. With the AI switched off for the tenant it is still kept, without a vector
        (nothing is sent to the embedding model); `memory-portal reindex` gives it one once the AI is
        back. A paused person's memory refuses it (`paused`)."""
        b: RememberIn = call.body
        outcome = service().remember(
            call.place, b.text, kind=b.kind, importance=b.importance, role=b.role, explicit=b.explicit,
            on_duplicate=b.on_duplicate, pinned=b.pinned, sources=(Source("api"),), person_name=b.person_name,
            expires_at=b.expires_at,
        )
        out = SavedOut(memory=MemoryOut.of(outcome.memory), replaced_id=outcome.replaced_id, reinforced=outcome.reinforced)
        return Reply(201, out)

    @api.route("GET", "/people/<owner_id>/memories", summary="List a person's memories, newest first",
               permission="memories:read", query=ListQuery, responses={200: PageOut})
    def list_memories(call: Call) -> Reply:
        q: ListQuery = call.query
        page = service().list(
            call.place, state=q.state, kinds=[q.kind] if q.kind else None, channel=q.channel, seen=q.seen,
            limit=q.limit, cursor=q.cursor,
        )
        return Reply(200, PageOut(items=[MemoryOut.of(m) for m in page.items], next_cursor=page.next_cursor))

    @api.route("GET", MEMORY, summary="One memory; its ETag is the revision", permission="memories:read",
               responses={200: MemoryOut}, etag=True)
    def get_memory(call: Call) -> Reply:
        memory = service().get(call.place, call.path["memory_id"])
        return Reply(200, MemoryOut.of(memory))

    @api.route("PATCH", MEMORY, summary="Correct a memory (a new revision; If-Match for compare-and-set), its "
                                        "expiry, or whether apps may use it",
               permission="memories:write", body=UpdateIn, responses={200: MemoryOut, 409: Problem, 422: Problem},
               etag=True, redactable=True)
    def update_memory(call: Call) -> Reply:
        """`use` false: "don't use this", the memory is withheld from every app, no new revision (`use`
        true from an app changes nothing: the person allows it again). With other fields, the
        correction is written first (If-Match checks it), then the use, each in its own unit of work;
        `use` alone checks If-Match against the memory as it is."""
        b: UpdateIn = call.body
        expected = None
        if request.headers.get("If-Match") is not None:
            matched = IF_MATCH.match(request.headers["If-Match"])
            if not matched:
                raise ApiProblem(400, "invalid_if_match", 'If-Match takes the ETag, like "3"')
            expected = int(matched.group(1))
        memory_id, svc = call.path["memory_id"], service()
        changes = b.model_fields_set - {"use"}
        memory = None
        if b.use is None or changes:
            extra = {"expires_at": b.expires_at} if "expires_at" in changes else {}
            memory = svc.update(call.place, memory_id, text=b.text, kind=b.kind, importance=b.importance,
                                pinned=b.pinned, expected_revision=expected, in_place=b.in_place,
                                sources=(Source("api"),), **extra).memory
        if b.use is not None:
            if memory is None and expected is not None:
                current = svc.reading.get(call.place, memory_id, use=False)
                if current.revision != expected:
                    raise Conflict(current.revision)
            memory = svc.set_use(call.place, memory_id, b.use, audit=AuditNote(call.key.id, "api_key", "memory.use_changed"))
        assert memory is not None  # written by one of the two: `use` is None, or it is set
        return Reply(200, MemoryOut.of(memory))

    @api.route("POST", MEMORY + "/undo", summary="Take back the last write to a memory", permission="memories:write",
               responses={200: UndoOut, 422: Problem}, redactable=True)
    def undo_memory(call: Call) -> Reply:
        outcome = service().undo(call.place, call.path["memory_id"])
        memory = MemoryOut.of(outcome.memory) if outcome.memory else None
        return Reply(200, UndoOut(memory=memory))

    @api.route("DELETE", MEMORY, summary="Forget a memory: every revision and vector, for good",
               permission="memories:write", responses={204: None})
    def forget_memory(call: Call) -> Reply:
        service().forget(call.place, call.path["memory_id"])
        return Reply(204)

    @api.route("GET", MEMORY + "/history", summary="A memory's revisions, newest first", permission="memories:read",
               responses={200: HistoryOut})
    def memory_history(call: Call) -> Reply:
        revisions = service().history(call.place, call.path["memory_id"])
        return Reply(200, HistoryOut(items=[RevisionOut.model_validate(r.to_json()) for r in revisions]))
