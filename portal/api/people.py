"""Person-level endpoints: recall, portrait, consolidate, used/unseen/seen, settings, export, erasure."""

from __future__ import annotations

from flask import request, url_for

from portal.api.consolidation_schemas import ConsolidateIn, ConsolidateOut, JobOut
from portal.api.memories import service
from portal.api.registry import Api, Call, Reply
from portal.api.schemas import (
    ExportOut,
    HitOut,
    IdsIn,
    MarkedOut,
    MemoryOut,
    PortraitOut,
    PortraitQuery,
    Problem,
    PurgeOut,
    RecallIn,
    RecallOut,
    SettingsIn,
    SettingsOut,
    UnseenOut,
)
from portal.domain.audit import AuditNote
from portal.domain.errors import Refused

PERSON = "/people/<owner_id>"
CONSOLIDATE_MAX_BODY = 1024 * 1024


def register(api: Api) -> None:
    @api.route("POST", PERSON + "/recall", summary="Find the memories that best answer a query",
               permission="memories:read", body=RecallIn, responses={200: RecallOut, 422: Problem}, receipts=False)
    def recall(call: Call) -> Reply:
        """Meaning and words fused, best first; each hit says how it was found (`match`). With the AI
        switched off for the tenant, memories are found by their words only (`lexical`): no query is
        sent to the embedding model. `relevant_only`: no hit for a query about nothing kept.
        `conversation_ref`: the hits are recorded as given to that conversation of the app."""
        b: RecallIn = call.body
        hits = service(b.conversation_ref).recall(call.place, b.query, kinds=b.kinds, after=b.after, before=b.before,
                                                  limit=b.limit, min_similarity=b.min_similarity,
                                                  relevant_only=b.relevant_only)
        items = [HitOut(memory=MemoryOut.of(h.memory), score=h.score, match=h.match) for h in hits]  # type: ignore[arg-type]
        return Reply(200, RecallOut(items=items))

    @api.route("GET", PERSON + "/portrait", summary="Pinned and important memories for a system prompt",
               permission="memories:read", query=PortraitQuery, responses={200: PortraitOut, 422: Problem})
    def portrait(call: Call) -> Reply:
        """The person's pinned memories, then those of importance `min_importance` (4) or more, the most
        recently useful first, cut on a whole memory at `max_length` characters. `left_out` counts the
        person's other memories (less important, or no room left): recall finds them. Empty text with
        `left_out` above 0 means nothing is pinned or important enough yet, not that nothing is kept.
        It works with the AI off. `conversation_ref`: its memories are recorded as given to that
        conversation of the app."""
        q: PortraitQuery = call.query
        made = service(q.conversation_ref).portrait(call.place, max_length=q.max_length, min_importance=q.min_importance,
                                                    format=q.format, masked=q.masked, fill=q.fill)
        return Reply(200, PortraitOut(text=made.text, ids=made.ids, left_out=made.left_out))

    @api.route("POST", PERSON + "/consolidate", summary="Learn from a finished conversation (once per ref)",
               permission="consolidate", body=ConsolidateIn, max_body=CONSOLIDATE_MAX_BODY,
               responses={200: ConsolidateOut, 202: JobOut, 422: Problem})
    def consolidate(call: Call) -> Reply:
        """The configured model reads the conversation and what is kept, and its facts and corrections
        pass the same rules as a remember. With the AI switched off for the tenant: 422 `ai_disabled`,
        nothing sent to the model, nothing learnt, no job queued. `temporary`: a conversation that
        teaches nothing, answered at once (status `temporary`): nothing learnt, nothing of it kept,
        no job whatever `wait` says, and the person sees that the app only reads."""
        b: ConsolidateIn = call.body
        transcript = b.transcript if isinstance(b.transcript, str) else [t.model_dump() for t in b.transcript]
        if b.temporary:  # nothing to keep for later: there is nothing a job could do later either
            return Reply(200, ConsolidateOut.of(service().consolidate(call.place, transcript, b.ref,
                                                                      temporary=True).to_json()))
        if not b.wait or "respond-async" in request.headers.get("Prefer", "").replace(" ", "").split(","):
            job = service().consolidate_later(call.place, transcript, b.ref, role=b.role, person_name=b.person_name,
                                              language=b.language)
            where = url_for("api.job", owner_id=call.place.owner_id, job_id=job.id)
            return Reply(202, JobOut.of(job), headers={"Location": where, "Preference-Applied": "respond-async"})
        result = service().consolidate(call.place, transcript, b.ref, role=b.role, person_name=b.person_name,
                                       language=b.language)
        if result.status == "unavailable" and result.reason == "ai_disabled":
            raise Refused("ai_disabled")  # 422, in the words every other ai_disabled answer has
        return Reply(200, ConsolidateOut.of(result.to_json()))

    @api.route("GET", PERSON + "/jobs/<job_id>", summary="A background consolidation: queued, running, done or failed",
               permission="consolidate", responses={200: JobOut, 404: Problem})
    def job(call: Call) -> Reply:
        # A HEAD answers no body: it must not use up the summary the first GET hands over.
        return Reply(200, JobOut.of(service().job(call.place, call.path["job_id"], take_summary=request.method == "GET")))

    @api.route("POST", PERSON + "/used", summary="Mark memories as used (protects them from the cap)",
               permission="memories:write", body=IdsIn, responses={200: MarkedOut})
    def mark_used(call: Call) -> Reply:
        return Reply(200, MarkedOut(marked=service().mark_used(call.place, call.body.ids)))

    @api.route("GET", PERSON + "/unseen", summary="What was learnt in the background and not seen yet",
               permission="memories:read", responses={200: UnseenOut})
    def unseen(call: Call) -> Reply:
        return Reply(200, UnseenOut(items=[MemoryOut.of(m) for m in service().list_unseen(call.place, limit=200)]))

    @api.route("POST", PERSON + "/seen", summary="Mark background memories as seen", permission="memories:write",
               body=IdsIn, responses={200: MarkedOut})
    def mark_seen(call: Call) -> Reply:
        return Reply(200, MarkedOut(marked=service().mark_seen(call.place, call.body.ids)))

    @api.route("GET", PERSON + "/settings", summary="Whether learning is paused", permission="memories:read",
               responses={200: SettingsOut})
    def get_settings(call: Call) -> Reply:
        return Reply(200, SettingsOut(paused=service().is_paused(call.place)))

    @api.route("PUT", PERSON + "/settings", summary="Pause learning (the person resumes it)",
               permission="memories:write", body=SettingsIn, responses={200: SettingsOut, 403: Problem})
    def put_settings(call: Call) -> Reply:
        """Pause learning for the person, as they told the assistant (audited, content-free). Lifting
        their pause is theirs alone, in the portal: `{"paused": false}` is 403 `person_decides`."""
        svc, audit = service(), AuditNote(call.key.id, "api_key", "person.paused" if call.body.paused else "person.resumed")
        paused = svc.pause(call.place, audit) if call.body.paused else svc.resume(call.place, audit)
        return Reply(200, SettingsOut(paused=paused))

    @api.route("GET", PERSON + "/export", summary="Everything kept about a person in this tenant",
               permission="memories:read", responses={200: ExportOut})
    def export(call: Call) -> Reply:
        data = service().export(call.place)
        for memory in data["memories"]:  # the person's decisions about other apps are not this app's to read
            memory.pop("withheld_from", None)
        return Reply(200, ExportOut.model_validate(data))

    @api.route("DELETE", PERSON, summary="Erase a person: everything kept under this owner id in the key's tenant",
               permission="erasure", responses={200: PurgeOut}, receipts=False)
    def purge(call: Call) -> Reply:
        # A key reaches one tenant: owner ids are chosen by each tenant's backend, so "ada" here need
        # not be "ada" elsewhere. Erasure across every tenant is the support console's (by account).
        place = call.place
        # Audited, content-free, in the same transaction: which key erased which owner id, and counts.
        audit = AuditNote(call.key.id, "api_key", "person.erased")
        counts = service().purge_owner(place.owner_id, scopes=[place.scope], audit=audit)
        return Reply(200, PurgeOut.model_validate(counts.to_json()))
