"""Rate limits per API key (Flask-Limiter), answered as 429 problem+json with Retry-After."""

from __future__ import annotations

import hashlib
import os

from flask import Blueprint, Flask, request
from flask_limiter import Limiter


def _caller() -> str:
    # A digest of the presented token: one bucket per key, and a forged key id cannot drain
    # another key's bucket. Callers without a token share their address's bucket.
    token = request.headers.get("Authorization", "")
    if token:
        return "key:" + hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()[:32]
    return "addr:" + (request.remote_addr or "unknown")


def init_limits(app: Flask, bp: Blueprint) -> Limiter:
    limit = app.config.get("API_RATE_LIMIT") or os.environ.get("MEMORY_API_RATE_LIMIT", "1200/minute")
    limiter = Limiter(
        key_func=_caller,
        app=app,
        default_limits=[],
        storage_uri=app.config.get("RATELIMIT_STORAGE_URI", "memory://"),
        headers_enabled=True,
    )
    limiter.limit(limit)(bp)
    app.extensions["portal_limiter"] = limiter  # the portal's sign-in limit uses the same limiter
    return limiter
