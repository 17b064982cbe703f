"""The ground mem0's routes stand on (portal.api.mem0 and portal.api.mem0_memory): their blueprint,
how a route reads its key, body and person, and how every answer under them is JSON with a
`detail`, the one field of an error mem0's clients read."""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, Response, request

from portal.api.auth import authenticate
from portal.api.mem0_shapes import one_id
from portal.api.problems import ApiProblem, install
from portal.api.registry import parse_json
from portal.domain.types import Place

PREFIXES = ("/v1/", "/v2/", "/v3/")
SETTINGS_PREFIXES = ("/api/v1/orgs/", "/api/v1/webhooks/")
MAX_BODY = 1024 * 1024
READ, WRITE, ERASE, LEARN = "memories:read", "memories:write", "erasure", "consolidate"

bp = Blueprint("mem0", __name__)


def is_mem0_path(path: str) -> bool:
    return path.startswith(PREFIXES)


def json_answer(value: Any, status: int = 200) -> Response:
    return Response(json.dumps(value, ensure_ascii=False), status=status, mimetype="application/json")


def body_of() -> dict[str, Any]:
    raw = request.get_data(cache=True)
    if len(raw) > MAX_BODY:
        raise ApiProblem(413, "body_too_large", f"bodies are limited to {MAX_BODY} bytes")
    data = parse_json(raw or b"{}")
    if not isinstance(data, dict):
        raise ApiProblem(400, "invalid_request", "the body must be a JSON object")
    return data


def person(key: Any, user_id: str) -> Place:
    """The person a route names (in its path, body or query), in the key's tenant, by mem0's one id
    rule (`mem0_shapes.one_id`: no `*`)."""
    return Place(one_id(user_id), key.tenant_id)


def caller() -> Any:
    """The caller's key, checked before anything it sent is read (a wrong key is told so first)."""
    return authenticate(None)


def allowed(key: Any, permission: str) -> None:
    if permission not in key.permissions:
        raise ApiProblem(403, "forbidden", f"this key lacks {permission}")


def route(rule: str, method: str) -> Any:
    """A route that answers with and without its trailing slash (a redirect is HTML mem0's client
    would not follow)."""
    return bp.route(rule, methods=[method], strict_slashes=False)


def as_json(response: Response) -> Response:
    """mem0's client reads `detail` only from application/json: the problem's body, that type."""
    if response.mimetype == "application/problem+json":
        response.mimetype = "application/json"
    return response


def is_mem0_settings_path(path: str) -> bool:
    """mem0's project, organization and webhook endpoints, under the prefix of our own JSON API."""
    return path.startswith(SETTINGS_PREFIXES)


def not_found_here() -> Response:
    """A path of mem0's API this server does not serve (feedback, exports, batches, summaries...):
    said so with its own code, never as a memory that does not exist."""
    return json_answer({"detail": "this server does not serve this endpoint of mem0's API", "code": "not_served"}, 404)


def settings_not_served() -> Response:
    """mem0's project and webhook settings (CrewAI's custom_categories, update_project, webhooks)."""
    return json_answer({"detail": "this server does not serve mem0's project, organization or webhook settings: "
                                  "what it keeps and learns is set by its operator (docs/operations.md, "
                                  "\"mem0's API\")", "code": "not_served"}, 404)


# Every error under these routes answered as JSON with its `detail` (set once: apps share the blueprint).
install(bp)
bp.after_request(as_json)
