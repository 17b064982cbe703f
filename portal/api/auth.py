"""Bearer API keys: the key fixes the tenant (scope) and the permissions."""

from __future__ import annotations

from typing import Any

from flask import current_app, g, request

from portal.api.problems import ApiProblem


def authenticate(permission: str | None) -> Any:
    """The caller's API key, or a 401; a 403 when it lacks `permission`."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiProblem(401, "unauthorized", "send Authorization: Bearer <key>")
    key = current_app.extensions["api_keys"].verify(token.strip())
    if key is None:
        raise ApiProblem(401, "unauthorized", "unknown or revoked key")
    g.api_key_id = key.id
    if permission and permission not in key.permissions:
        raise ApiProblem(403, "forbidden", f"this key lacks {permission}")
    return key
