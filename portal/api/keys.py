"""The API key a request's token stands for, read once per request."""

from __future__ import annotations

from typing import Any

from flask import current_app, request

SEEN = "portal.verified_keys"


def verified(token: str) -> Any:
    """The live key `token` stands for, or None; checked once per request (the rate limit's
    bucket and the endpoint's permission ask for the same key: one read of it, not two). Kept in
    the request's own environ, not in `g`: an application context pushed around several requests
    (a test, a command, a host serving the app in process) would keep a key revoked since."""
    seen: dict[str, Any] = request.environ.setdefault(SEEN, {})
    if token not in seen:
        seen[token] = current_app.extensions["api_keys"].verify(token)
    return seen[token]
