"""mem0's routes that name a memory by its id alone (get, history, update, delete), a person's
erasure (delete_all, entity deletion), the people of the tenant and a queued add's event
(portal.api.mem0 has the rest). Each is one service call, as the JSON API's are."""

from __future__ import annotations

from typing import Any

from flask import Response, request

from portal.api.auth import authenticate, service
from portal.api.mem0_base import ERASE, LEARN, READ, WRITE, body_of, bp, caller, json_answer, person, route
from portal.api.mem0_shapes import check_fields, history_items, memory_item, narrowed
from portal.api.problems import ApiProblem
from portal.api.registry import check_path
from portal.domain.attributes import ENTITY_NAMES, expiry_of_day
from portal.domain.audit import AuditNote
from portal.domain.catalog import DEFAULT_LANGUAGE, message
from portal.domain.errors import NotFound
from portal.domain.types import Place, Source

__all__ = ["bp"]  # the blueprint these routes join (portal.api registers it)
JOB_STATUS = {"queued": "PENDING", "running": "RUNNING", "done": "SUCCEEDED", "failed": "FAILED"}
EVENTS = {"added": "ADD", "corrected": "UPDATE", "reinforced": "NONE"}  # what a consolidation did, in mem0's words


def _located(memory_id: str, permission: str) -> tuple[Any, Place]:
    check_path({"memory_id": memory_id})
    key = authenticate(permission)
    return key, service().place_of(key.tenant_id, memory_id)


@route("/v1/memories/<memory_id>/", "GET")
def get_memory(memory_id: str) -> Response:
    _, place = _located(memory_id, READ)
    return json_answer(memory_item(service().get(place, memory_id)))


@route("/v1/memories/<memory_id>/history/", "GET")
def history(memory_id: str) -> Response:
    """The wordings kept, oldest first; a forgotten memory has none (404), its words are gone."""
    _, place = _located(memory_id, READ)
    svc = service()
    return json_answer(history_items(svc.get(place, memory_id), svc.history(place, memory_id)))


# ---------------------------------------------------------------------------------------- changing


@route("/v1/memories/<memory_id>/", "PUT")
def update(memory_id: str) -> Response:
    """A correction: the new wording is a new revision, checked by the rules as any write."""
    body = body_of()
    check_fields(body, {"text", "metadata", "categories", "expiration_date", "timestamp"})
    _, place = _located(memory_id, WRITE)
    text = body.get("text")
    if text is not None and not isinstance(text, str):
        raise ApiProblem(400, "invalid_request", "text must be a text")
    # A field sent as null takes its value away (mem0's update(expiration_date=None) sends that).
    attributes = {name: body[name] for name in ("metadata", "categories", "expiration_date", "timestamp") if name in body}
    if text is None and not attributes:
        return json_answer(memory_item(service().get(place, memory_id)))
    # A new expiration date is the memory's new expiry too (none: kept until forgotten).
    expiry = {"expires_at": expiry_of_day(body["expiration_date"])} if "expiration_date" in body else {}
    return json_answer(memory_item(service().update(place, memory_id, text=text, attributes=attributes or None,
                                              sources=(Source("api"),), **expiry).memory))


@route("/v1/memories/<memory_id>/", "DELETE")
def delete(memory_id: str) -> Response:
    """Forget: the memory, every earlier wording and its receipts, as the person's Forget does. mem0's
    `delete_linked=true` (also the memories this one superseded) asks nothing more here: a correction
    is a revision of the one memory, and they all go with it; the answer says so."""
    linked = request.args.get("delete_linked")
    if linked not in (None, "false", "False", "true", "True"):
        raise ApiProblem(400, "invalid_request", "delete_linked must be true or false")
    _, place = _located(memory_id, WRITE)
    service().forget(place, memory_id)
    return json_answer({"message": "Memory deleted successfully!" if linked not in ("true", "True") else
                        "Memory deleted successfully, with every earlier wording it had (a correction here is "
                        "a revision of the same memory)."})


@route("/v1/memories/", "DELETE")
def delete_all() -> Response:
    """Everything kept about the person in this tenant: the person's erasure; narrowed by an agent,
    app or run id, only the memories that carry it are forgotten. Both need `erasure`."""
    caller()
    if any(len(request.args.getlist(name)) > 1 for name in request.args):
        raise ApiProblem(400, "one_person", "each of user_id, agent_id, app_id and run_id is given once")
    args = dict(request.args)
    check_fields(args, {"user_id", *ENTITY_NAMES})
    where = narrowed({k: v for k, v in args.items() if k in ENTITY_NAMES} or None, args.get("user_id"))
    if not where.wanted:
        return _erase(where.user_id)
    key = authenticate(ERASE)
    place, svc = person(key, where.user_id), service()
    every, _ = svc.page(place, 0, 1_000_000, attributes=where.wanted)
    gone = svc.forget_many(place, [m.id for m in every])
    return json_answer({"message": f"{gone} memories deleted successfully!"})


@route("/v2/entities/<kind>/<name>/", "DELETE")
@route("/v1/entities/<kind>/<name>/", "DELETE")
def delete_entity(kind: str, name: str) -> Response:
    if kind != "user":
        raise ApiProblem(404, "not_found", f"no {kind} is kept here: memories belong to people (user)")
    return _erase(name)


def _erase(user_id: str) -> Response:
    """Every memory of the person in this tenant and all that names them (the person's own "erase
    everything"): their pause and their decision about each app stay, so an app never frees itself
    from a pause or a block by erasing. Erasing the account is the support console's."""
    key = authenticate(ERASE)
    place = person(key, user_id)
    service().forget_all(place, audit=AuditNote(key.id, "api_key", "person.erased"))
    return json_answer({"message": "Memories deleted successfully!"})


# ---------------------------------------------------------------------------------------- people, events


@route("/v1/entities/", "GET")
def entities() -> Response:
    """The people of this tenant with memories this key's app may see (mem0's `users()`)."""
    key = authenticate(READ)
    people = service().people_in(key.tenant_id)
    results = [{"id": owner, "name": owner, "type": "user", "owner": key.tenant_id, "metadata": None,
                "created_at": None, "updated_at": None} for owner in people]
    return json_answer({"count": len(results), "next": None, "previous": None, "results": results,
                  "total_users": len(results), "total_agents": 0, "total_apps": 0, "total_runs": 0})


@route("/v1/event/<event_id>/", "GET")
def event(event_id: str) -> Response:
    """A queued add (our background job): PENDING, RUNNING, SUCCEEDED or FAILED (with the reason's
    `code` and its words in `error`), and the memories it made, as they are now."""
    check_path({"event_id": event_id})
    key = authenticate(LEARN)
    svc = service()
    place = svc.job_place_of(key.tenant_id, event_id)
    job = svc.job(place, event_id, take_summary=False)
    return json_answer({"id": job.id, "event_type": "ADD", **learnt(place, job.state, job.reason, job.result),
                        "created_at": job.created_at.isoformat(), "updated_at": job.updated_at.isoformat()})


def learnt(place: Place, state: str, reason: str | None, result: dict[str, Any] | None) -> dict[str, Any]:
    """What an add the model learnt from became (a job's state, reason and result, or the same of a
    consolidation run at once): its status, its counts, and in `results` each memory it made
    (`{id, memory, event: ADD|UPDATE|NONE}`, as mem0's). The result keeps ids and codes only; the
    words are read now, so a memory forgotten (or withheld from the app) since is not there."""
    kept = result or {}
    made: dict[str, dict[str, Any]] = {}
    for one in kept.get("made") or ():
        if one["id"] in made:
            continue
        try:
            memory = service().get(place, one["id"])
        except NotFound:
            continue
        made[memory.id] = {"id": memory.id, "memory": memory.text, "data": {"memory": memory.text},
                           "event": EVENTS.get(one["event"], "NONE")}
    words = (message(f"consolidation.{reason}", DEFAULT_LANGUAGE) or message(reason, DEFAULT_LANGUAGE) or reason
             if reason else None)
    return {"status": JOB_STATUS.get(state, "PENDING"), "results": list(made.values()),
            "counts": {k: v for k, v in kept.items() if k not in ("summary", "made")}, "code": reason,
            "error": words}
