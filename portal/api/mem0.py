"""mem0's platform API, so an assistant written for mem0's clients (`MemoryClient(api_key=...,
host=<this server>)`) works by changing one URL, with our guarantees on every route.

The paths are the ones mem0's Python client 2.x sends (trailing slash included: httpx follows no
redirect), and the 1.x ones still in use. Keys are ours (`Authorization: Token <key>`, or Bearer):
their tenant, their app (a person who paused or blocked it is obeyed), their permissions. Every
answer is JSON; an error is `{"detail": ..., "code": ...}` with the status mem0's client turns into
the right exception (400/422 ValidationError, 401/403 AuthenticationError, 404 MemoryNotFoundError,
429 RateLimitError). The meaning of each field is in `portal.api.mem0_shapes`; each handler is one
service call, as the JSON API's are.
"""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, Flask, Response, request

from portal.api.auth import authenticate, service
from portal.api.mem0_shapes import (
    check_fields,
    history_items,
    hit_item,
    memory_item,
    messages_of,
    narrowed,
    unsupported,
)
from portal.api.problems import ApiProblem, install
from portal.api.registry import check_path, parse_json
from portal.domain.apps import app_of
from portal.domain.audit import AuditNote
from portal.domain.catalog import DEFAULT_LANGUAGE, message
from portal.domain.errors import Refused
from portal.domain.types import Place, Saved

PREFIXES = ("/v1/", "/v2/", "/v3/")
MAX_BODY = 1024 * 1024
PAGE_SIZE, MAX_PAGE_SIZE = 100, 200
READ, WRITE, ERASE, LEARN = "memories:read", "memories:write", "erasure", "consolidate"
JOB_STATUS = {"queued": "PENDING", "running": "RUNNING", "done": "SUCCEEDED", "failed": "FAILED"}

bp = Blueprint("mem0", __name__)


def is_mem0_path(path: str) -> bool:
    return path.startswith(PREFIXES)


def _json(value: Any, status: int = 200) -> Response:
    return Response(json.dumps(value, ensure_ascii=False), status=status, mimetype="application/json")


def _body() -> dict[str, Any]:
    raw = request.get_data(cache=True)
    if len(raw) > MAX_BODY:
        raise ApiProblem(413, "body_too_large", f"bodies are limited to {MAX_BODY} bytes")
    data = parse_json(raw or b"{}")
    if not isinstance(data, dict):
        raise ApiProblem(400, "invalid_request", "the body must be a JSON object")
    return data


def _person(key: Any, user_id: str) -> Place:
    check_path({"owner_id": user_id})
    return Place(user_id, key.tenant_id)


# ---------------------------------------------------------------------------------------- ping


@bp.get("/v1/ping/")
def ping() -> Response:
    """The client's check at start: it needs org_id and project_id (here the key's tenant and app)."""
    key = authenticate(None)
    return _json({"status": "ok", "message": "API key is valid", "org_id": key.tenant_id,
                  "project_id": app_of(key).id, "user_email": None})


# ---------------------------------------------------------------------------------------- adding


@bp.post("/v3/memories/add/")
@bp.post("/v1/memories/")
def add() -> Response:
    """`infer: false` keeps each message as written (a system message is not the person's); else the
    configured model learns from the conversation in the background: `{event_id, status: PENDING}`."""
    body = _body()
    check_fields(body, {"messages", "user_id", "filters", "infer"})
    filters = body.get("filters")
    if isinstance(filters, dict):
        check_fields(filters, {"user_id"})
    infer = body.get("infer", True)
    if not isinstance(infer, bool):
        raise ApiProblem(400, "invalid_request", "infer must be true or false")
    key = authenticate(LEARN if infer else WRITE)
    place = _person(key, narrowed(filters, body.get("user_id")).user_id)
    turns = messages_of(body.get("messages"))
    if infer:
        return _learn(place, turns)
    kept = [t["text"] for t in turns if t["role"] != "system"]
    if not kept:
        raise ApiProblem(400, "invalid_messages", "no user or assistant message to keep")
    outcomes = service().remember_many(place, kept)
    refusals = [o for o in outcomes if isinstance(o, Refused)]
    if len(refusals) == len(outcomes):
        raise refusals[0]  # nothing kept: the reason, as a 422 (403 for a blocked app)
    results = [_added(o) for o in outcomes if isinstance(o, Saved)]
    return _json({"status": "SUCCEEDED", "results": results,
                  "refused": [{"index": n, "code": o.code, "detail": message(f"refused.{o.code}", DEFAULT_LANGUAGE)}
                              for n, o in enumerate(outcomes) if isinstance(o, Refused)]})


def _learn(place: Place, turns: list[dict[str, str]]) -> Response:
    svc = service()
    ref = f"mem0-{svc.id_factory()}"  # every add is a conversation of its own
    try:
        job = svc.consolidate_later(place, turns, ref)
    except Refused as exc:
        if exc.code != "queue_unavailable":
            raise
        done = svc.consolidate(place, turns, ref).to_json()  # no background worker here: now
        done.pop("summary", None)
        return _json({"status": "FAILED" if done["status"] == "failed" else "SUCCEEDED", "results": [], "counts": done})
    return _json({"event_id": job.id, "status": "PENDING",
                  "message": "Memory processing has been queued for background execution"})


def _added(saved: Saved) -> dict[str, Any]:
    event = "NONE" if saved.reinforced else "UPDATE" if saved.replaced_id else "ADD"
    m = saved.memory
    return {"id": m.id, "memory": m.text, "data": {"memory": m.text}, "event": event}


# ---------------------------------------------------------------------------------------- reading


@bp.post("/v3/memories/search/")
@bp.post("/v2/memories/search/")
@bp.post("/v1/memories/search/")
def search() -> Response:
    """Recall for the person of `filters`: at most `top_k` (10), scores 0 to 1, none below
    `threshold` (0.1). v3 answers `{"results": [...]}`, the older paths the bare list."""
    body = _body()
    check_fields(body, {"query", "filters", "top_k", "threshold", "user_id"})
    key = authenticate(READ)
    where = narrowed(body.get("filters"), body.get("user_id"))
    query, top_k, threshold = body.get("query"), body.get("top_k", 10), body.get("threshold", 0.1)
    if not isinstance(query, str) or not query.strip():
        raise ApiProblem(400, "invalid_request", "query must be a non-empty text")
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 100:
        raise ApiProblem(400, "invalid_request", "top_k must be 1 to 100")
    if not isinstance(threshold, int | float) or isinstance(threshold, bool) or not 0 <= threshold <= 1:
        raise ApiProblem(400, "invalid_request", "threshold must be between 0 and 1")
    hits = service().recall(_person(key, where.user_id), query, limit=top_k, after=where.after, before=where.before)
    results = [hit_item(h) for h in hits if h.score >= threshold]
    return _json({"results": results} if request.path.startswith("/v3/") else results)


@bp.post("/v3/memories/")
@bp.post("/v2/memories/")
def list_memories() -> Response:
    """One page (`page`, `page_size` in the query or body) of the person's memories, newest first."""
    body = _body()
    check_fields(body, {"filters", "page", "page_size", "user_id"})
    return _page(narrowed(body.get("filters"), body.get("user_id")), body)


@bp.get("/v1/memories/")
def list_memories_v1() -> Response:
    """The 1.x listing: the person in the query string."""
    check_fields(dict(request.args), {"user_id", "page", "page_size"})
    return _page(narrowed(None, request.args.get("user_id")), {})


def _page(where: Any, body: dict[str, Any]) -> Response:
    key = authenticate(READ)
    page = _number(request.args.get("page", body.get("page", 1)), "page", 1, 100_000)
    size = _number(request.args.get("page_size", body.get("page_size", PAGE_SIZE)), "page_size", 1, MAX_PAGE_SIZE)
    place, svc = _person(key, where.user_id), service()
    cursor, items = None, []
    for number in range(1, page + 1):  # the pages before the one asked for are walked by the cursor
        listed = svc.list(place, limit=size, cursor=cursor, created_after=where.after, created_before=where.before)
        items, cursor = listed.items, listed.next_cursor
        if cursor is None and number < page:
            items = []  # a page after the last one: empty
            break
    count = svc.count(place) if where.after is None and where.before is None else None
    base = request.base_url
    return _json({"count": count if count is not None else (page - 1) * size + len(items),
                  "next": f"{base}?page={page + 1}&page_size={size}" if cursor is not None else None,
                  "previous": f"{base}?page={page - 1}&page_size={size}" if page > 1 else None,
                  "results": [memory_item(m) for m in items]})


def _number(value: Any, name: str, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ApiProblem(400, "invalid_request", f"{name} must be a whole number") from None
    if not low <= number <= high:
        raise ApiProblem(400, "invalid_request", f"{name} must be {low} to {high}")
    return number


def _located(memory_id: str, permission: str) -> tuple[Any, Place]:
    check_path({"memory_id": memory_id})
    key = authenticate(permission)
    return key, service().place_of(key.tenant_id, memory_id)


@bp.get("/v1/memories/<memory_id>/")
def get_memory(memory_id: str) -> Response:
    _, place = _located(memory_id, READ)
    return _json(memory_item(service().get(place, memory_id)))


@bp.get("/v1/memories/<memory_id>/history/")
def history(memory_id: str) -> Response:
    """The wordings kept, oldest first; a forgotten memory has none (404), its words are gone."""
    _, place = _located(memory_id, READ)
    svc = service()
    return _json(history_items(svc.get(place, memory_id), svc.history(place, memory_id)))


# ---------------------------------------------------------------------------------------- changing


@bp.put("/v1/memories/<memory_id>/")
def update(memory_id: str) -> Response:
    """A correction: the new wording is a new revision, checked by the rules as any write."""
    body = _body()
    check_fields(body, {"text"})
    _, place = _located(memory_id, WRITE)
    text = body.get("text")
    if text is None:
        return _json(memory_item(service().get(place, memory_id)))
    return _json(memory_item(service().update(place, memory_id, text=text).memory))


@bp.delete("/v1/memories/<memory_id>/")
def delete(memory_id: str) -> Response:
    """Forget: the memory, every earlier wording and its receipts, as the person's Forget does."""
    if request.args.get("delete_linked") not in (None, "false", "False"):
        raise unsupported("delete_linked")
    _, place = _located(memory_id, WRITE)
    service().forget(place, memory_id)
    return _json({"message": "Memory deleted successfully!"})


@bp.delete("/v1/memories/")
def delete_all() -> Response:
    """Everything kept about the person in this tenant: the person's erasure (`erasure` permission).
    Narrower deletions (by agent, app, run, metadata) are refused: they would erase too much here."""
    args = dict(request.args)
    check_fields(args, {"user_id"})
    return _erase(narrowed(None, args.get("user_id")).user_id)


@bp.delete("/v2/entities/<kind>/<name>/")
@bp.delete("/v1/entities/<kind>/<name>/")
def delete_entity(kind: str, name: str) -> Response:
    if kind != "user":
        raise ApiProblem(404, "not_found", f"no {kind} is kept here: memories belong to people (user)")
    return _erase(name)


def _erase(user_id: str) -> Response:
    key = authenticate(ERASE)
    place = _person(key, user_id)
    service().purge_owner(place.owner_id, scopes=[place.scope], audit=AuditNote(key.id, "api_key", "person.erased"))
    return _json({"message": "Memories deleted successfully!"})


# ---------------------------------------------------------------------------------------- people, events


@bp.get("/v1/entities/")
def entities() -> Response:
    """The people of this tenant with memories this key's app may see (mem0's `users()`)."""
    key = authenticate(READ)
    people = service().people_in(key.tenant_id)
    results = [{"id": owner, "name": owner, "type": "user", "owner": key.tenant_id, "metadata": None,
                "created_at": None, "updated_at": None} for owner in people]
    return _json({"count": len(results), "next": None, "previous": None, "results": results,
                  "total_users": len(results), "total_agents": 0, "total_apps": 0, "total_runs": 0})


@bp.get("/v1/event/<event_id>/")
def event(event_id: str) -> Response:
    """A queued add (our background job): PENDING, RUNNING, SUCCEEDED or FAILED, with its counts."""
    check_path({"event_id": event_id})
    key = authenticate(LEARN)
    svc = service()
    job = svc.job(svc.job_place_of(key.tenant_id, event_id), event_id, take_summary=False)
    counts = {k: v for k, v in (job.result or {}).items() if k != "summary"}
    return _json({"id": job.id, "event_type": "ADD", "status": JOB_STATUS.get(job.state, "PENDING"), "results": [],
                  "counts": counts, "error": job.reason, "created_at": job.created_at.isoformat(),
                  "updated_at": job.updated_at.isoformat()})


# ---------------------------------------------------------------------------------------- errors


def as_json(response: Response) -> Response:
    """mem0's client reads `detail` only from application/json: the problem's body, that type."""
    if response.mimetype == "application/problem+json":
        response.mimetype = "application/json"
    return response


def not_found_here() -> Response:
    """A path of mem0's API this server does not serve (feedback, exports, webhooks...)."""
    return _json({"detail": "this server does not offer this endpoint of mem0's API", "code": "not_found"}, 404)


# Every error under these routes answered as JSON with its `detail` (set once: apps share the blueprint).
install(bp)
bp.after_request(as_json)


def init_app(app: Flask) -> Blueprint:
    app.register_blueprint(bp)
    return bp
