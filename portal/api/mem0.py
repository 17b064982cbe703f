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

from typing import Any
from urllib.parse import urlencode

from flask import Flask, Response, request

from portal.api.auth import authenticate, service
from portal.api.mem0_base import (
    LEARN,
    READ,
    WRITE,
    allowed,
    body_of,
    bp,
    caller,
    json_answer,
    person,
    route,
)
from portal.api.mem0_memory import learnt
from portal.api.mem0_reads import LIST_FIELDS, SEARCH_FIELDS, beside, how_many, query_fields, whole, wrapped
from portal.api.mem0_shapes import (
    EXTRACTION_HINTS,
    attributes_of,
    check_fields,
    hit_item,
    memory_item,
    messages_of,
    narrowed,
)
from portal.api.problems import ApiProblem
from portal.domain.apps import app_of
from portal.domain.attributes import ENTITY_NAMES, NAMES, expiry_of_day, matches
from portal.domain.catalog import DEFAULT_LANGUAGE, message
from portal.domain.errors import Refused
from portal.domain.types import Place, Saved, Source

PAGE_SIZE, MAX_PAGE_SIZE = 100, 200
MAX_MESSAGES = 100  # one add keeps at most this many messages (/api/v1 keeps one text a request)
MAX_QUERY = 2000  # as /api/v1's recall


# ---------------------------------------------------------------------------------------- ping


@route("/v1/ping/", "GET")
def ping() -> Response:
    """The client's check at start: it needs org_id and project_id (here the key's tenant and app)."""
    key = authenticate(None)
    return json_answer({"status": "ok", "message": "API key is valid", "org_id": key.tenant_id,
                  "project_id": app_of(key).id, "user_email": None})


# ---------------------------------------------------------------------------------------- adding


@route("/v3/memories/add/", "POST")
@route("/v1/memories/", "POST")
def add() -> Response:
    """`infer: false` keeps each message as written (a system message is not the person's); else the
    configured model learns from the conversation in the background: `{event_id, status: PENDING}`."""
    key = caller()
    body = body_of()
    check_fields(body, {"messages", "user_id", "filters", "infer", *NAMES, *EXTRACTION_HINTS})
    filters = body.get("filters")
    if isinstance(filters, dict):
        check_fields(filters, {"user_id", *ENTITY_NAMES})
    infer, queued = body.get("infer", True), body.get("async_mode", True)
    if not isinstance(infer, bool) or not isinstance(queued, bool):
        raise ApiProblem(400, "invalid_request", "infer and async_mode must be true or false")
    allowed(key, LEARN if infer else WRITE)
    place = person(key, narrowed({"user_id": filters["user_id"]} if isinstance(filters, dict) and "user_id" in filters
                                  else None, body.get("user_id")).user_id)
    turns = messages_of(body.get("messages"))
    if len(turns) > MAX_MESSAGES:
        raise ApiProblem(400, "too_many_messages", f"an add takes at most {MAX_MESSAGES} messages")
    attributes = attributes_of(body, filters)
    if infer:
        return _learn(place, turns, attributes, wait=not queued)
    kept_at = [n for n, t in enumerate(turns) if t["role"] != "system"]  # a refusal names the message by its place
    kept = [turns[n]["text"] for n in kept_at]
    if not kept:
        raise ApiProblem(400, "invalid_messages", "no user or assistant message to keep")
    # mem0's direct import keeps what it is given: the very same words in the same scope are said
    # again (NONE), anything else is a memory of its own, never a replacement (issue 39).
    outcomes = service().remember_many(place, kept, attributes=attributes, sources=(Source("api"),),
                                       on_duplicate="same_words", expires_at=expiry_of_day(body.get("expiration_date")))
    refusals = [o for o in outcomes if isinstance(o, Refused)]
    if len(refusals) == len(outcomes):
        raise refusals[0]  # nothing kept: the reason, as a 422 (403 for a blocked app)
    results = [_added(o) for o in outcomes if isinstance(o, Saved)]
    return json_answer({"status": "SUCCEEDED", "results": results,
                  "refused": [{"index": n, "code": o.code, "detail": message(f"refused.{o.code}", DEFAULT_LANGUAGE)}
                              for n, o in zip(kept_at, outcomes, strict=True) if isinstance(o, Refused)]})


def _learn(place: Place, turns: list[dict[str, str]], attributes: dict[str, Any] | None, wait: bool) -> Response:
    """The model learns from the conversation as a background job: `{event_id, status: PENDING}`.
    With `wait` (mem0's `async_mode: false`) the answer waits for the job, at most
    `Options.job_wait_seconds`, and is its event (`mem0_memory.learnt`: the memories made), else
    still PENDING. Where no queue is set up it is learnt at once, and answered the same way."""
    svc = service()
    ref = f"mem0-{svc.id_factory()}"  # every add is a conversation of its own
    try:
        job = svc.consolidate_later(place, turns, ref, attributes=attributes)
    except Refused as exc:
        if exc.code != "queue_unavailable":
            raise
        done = svc.consolidate(place, turns, ref, attributes=attributes)  # no background worker: now
        over = done.status in ("failed", "unavailable", "paused")
        return json_answer(learnt(place, "failed" if over else "done", (done.reason or done.status) if over else None,
                                  done.kept_json()))
    if wait:
        job = svc.job(place, job.id, take_summary=False, wait=True)
        if job.state in ("done", "failed"):
            return json_answer({"event_id": job.id, **learnt(place, job.state, job.reason, job.result)})
    return json_answer({"event_id": job.id, "status": "PENDING",
                  "message": "Memory processing has been queued for background execution"})


def _added(saved: Saved) -> dict[str, Any]:
    event = "NONE" if saved.reinforced else "UPDATE" if saved.replaced_id else "ADD"
    m = saved.memory
    return {"id": m.id, "memory": m.text, "data": {"memory": m.text}, "event": event}


# ---------------------------------------------------------------------------------------- reading


@route("/v3/memories/search/", "POST")
@route("/v2/memories/search/", "POST")
@route("/v1/memories/search/", "POST")
def search() -> Response:
    """Recall for the person of `filters` (and what the read names beside them, portal.api.mem0_reads):
    at most `top_k` (or `limit`; 10), scores 0 to 1, none below `threshold` (0.1). v3 answers
    `{"results": [...]}`, the older paths the bare list, unless `output_format` says which. An extra
    `conversation_ref` (mem0's client sends its extra arguments in the body) names the assistant's
    conversation the hits are for (422 `invalid_conversation_ref` for a bad one)."""
    key = caller()
    body = body_of()
    check_fields(body, SEARCH_FIELDS)
    allowed(key, READ)
    where = narrowed(body.get("filters"), body.get("user_id"), beside(body))
    query, top_k, threshold = body.get("query"), how_many(body, 100) or 10, body.get("threshold", 0.1)
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY:
        raise ApiProblem(400, "invalid_request", f"query must be a text of 1 to {MAX_QUERY} characters")
    if not isinstance(threshold, int | float) or isinstance(threshold, bool) or not 0 <= threshold <= 1:
        raise ApiProblem(400, "invalid_request", "threshold must be between 0 and 1")
    shape = wrapped(body, request.path.startswith("/v3/"))
    wanted, place, svc = where.wanted or {}, person(key, where.user_id), service(body.get("conversation_ref"))
    # Ranked without marking; only the hits answered are marked used (an app's "recalled").
    hits = svc.recall(place, query, limit=100 if wanted else top_k, after=where.after, before=where.before, mark=False)
    chosen = [h for h in hits if h.score >= threshold and matches(h.memory.attributes, wanted)][:top_k]
    svc.recalled(place, [h.memory.id for h in chosen])
    results = [hit_item(h) for h in chosen]
    return json_answer({"results": results} if shape else results)


@route("/v3/memories/", "POST")
@route("/v2/memories/", "POST")
def list_memories() -> Response:
    """One page (`page`, `page_size` in the query or body) of the person's memories, newest first;
    `top_k` or `limit` caps them all (the newest so many)."""
    caller()
    body = body_of()
    check_fields(body, LIST_FIELDS)
    where = narrowed(body.get("filters"), body.get("user_id"), beside(body))
    return json_answer(_page(where, {**body, **request.args}))


@route("/v1/memories/", "GET")
def list_memories_v1() -> Response:
    """The 1.x listing, all in the query string: a list, as mem0 answers it (npm's 2.x client and
    LangChain.js read nothing else), of the newest `limit` (100, at most 200); a page when both
    `page` and `page_size` are given, whose links keep the person and the filters."""
    caller()
    args = query_fields(request.args)
    check_fields(args, LIST_FIELDS)
    where = narrowed(None, args.get("user_id"), beside(args))
    if "page" in args and "page_size" in args:
        return json_answer(_page(where, {k: v for k, v in args.items() if k not in ("limit", "top_k")}))
    size = how_many(args, MAX_PAGE_SIZE) or whole(args.get("page_size", PAGE_SIZE), "page_size", 1, MAX_PAGE_SIZE)
    return json_answer(_page(where, {"page": args.get("page", 1), "page_size": size})["results"])


def _page(where: Any, given: dict[str, Any]) -> dict[str, Any]:
    key = authenticate(READ)
    page = whole(given.get("page", 1), "page", 1, 100_000)
    size = whole(given.get("page_size", PAGE_SIZE), "page_size", 1, MAX_PAGE_SIZE)
    cap = how_many(given, 1_000_000)
    shown, count = service().page(person(key, where.user_id), (page - 1) * size, size, created_after=where.after,
                                  created_before=where.before, attributes=where.wanted)
    if cap is not None:
        shown, count = shown[:max(0, cap - (page - 1) * size)], min(count, cap)
    return {"count": count, "next": _link(page + 1, size) if page * size < count else None,
            "previous": _link(page - 1, size) if page > 1 else None, "results": [memory_item(m) for m in shown]}


def _link(page: int, size: int) -> str:
    """The same request's address at another page: the person and every filter of its query kept."""
    kept = [(k, v) for k, v in request.args.items(multi=True) if k not in ("page", "page_size")]
    return f"{request.base_url}?{urlencode([*kept, ('page', page), ('page_size', size)])}"


def init_app(app: Flask) -> Any:
    """Register mem0's routes (this module's and portal.api.mem0_memory's, imported with the API) on `app`."""
    app.register_blueprint(bp)
    return bp
