"""Bearer API keys: the key fixes the tenant (scope) and the permissions."""

from __future__ import annotations

from typing import Any

from flask import current_app, g, request

from portal.api.keys import verified
from portal.api.problems import ApiProblem
from portal.domain.apps import app_of
from portal.domain.decisions import conversation_of
from portal.services.memory_service import MemoryService

# "Token" is how mem0's clients send a key (portal.api.mem0); both name the same keys.
SCHEMES = ("bearer", "token")


def authenticate(permission: str | None) -> Any:
    """The caller's API key, or a 401; a 403 when it lacks `permission`."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() not in SCHEMES or not token.strip():
        raise ApiProblem(401, "unauthorized", "send Authorization: Bearer <key>")
    key = verified(token.strip())
    if key is None:
        raise ApiProblem(401, "unauthorized", "unknown or revoked key")
    g.api_key_id = key.id
    g.api_key = key
    if permission and permission not in key.permissions:
        raise ApiProblem(403, "forbidden", f"this key lacks {permission}")
    return key


def service(conversation_ref: Any = None) -> MemoryService:
    """The service as the calling key's app sees it (`MemoryService.for_app`): what the person
    decided about that app holds — on every endpoint, and on an idempotent replay — and every use
    it makes is recorded, in the assistant's conversation `conversation_ref` when the request names
    one (recall, portrait, tool calls: a bad one raises InvalidArgument `invalid_conversation_ref`,
    answered 422); one view per request and conversation."""
    svc: MemoryService = current_app.extensions["memory_runtime"].service
    ref = conversation_of(conversation_ref)  # checked before anything uses it: any JSON may be sent
    key = g.get("api_key")
    if key is None:
        return svc
    views: dict[str | None, MemoryService] = g.setdefault("app_services", {})
    view = views.get(ref)
    if view is None:
        view = views[ref] = svc.for_app(app_of(key), ref)
    return view
