"""The API key a request's token stands for, read once per request."""

from __future__ import annotations

from typing import Any

from flask import current_app, g


def verified(token: str) -> Any:
    """The live key `token` stands for, or None; checked once per request (the rate limit's
    bucket and the endpoint's permission ask for the same key: one read of it, not two)."""
    seen: dict[str, Any] = g.setdefault("verified_keys", {})
    if token not in seen:
        seen[token] = current_app.extensions["api_keys"].verify(token)
    return seen[token]
