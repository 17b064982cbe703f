"""Rate limits (Flask-Limiter on the `limits` library), with counters every worker shares.

The counters live in Redis when RATELIMIT_STORAGE_URI names it, otherwise in the app's own
database (portal.adapters.sql.counters): with N workers or N machines a key still gets its limit
once, not N times. The API answers 429 problem+json with Retry-After; the portal's sign-in
throttle (portal.web.throttle) counts in the same storage.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import os
import time
from typing import Any

from flask import Blueprint, Flask, current_app, request
from flask_limiter import HeaderNames, Limiter

from portal.adapters.sql.counters import counters_storage
from portal.api.keys import verified


def _caller() -> str:
    """One bucket per API key that verifies (a forged key id names no key, so it cannot drain
    another key's bucket); callers with no valid key share their address's bucket, so junk tokens
    make no counters of their own. The address is a keyed digest: no IP address is stored."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() in ("bearer", "token") and token.strip():  # as portal.api.auth reads it
        key = verified(token.strip())
        if key is not None:
            return f"key:{key.id}"
    secret = str(current_app.config["SECRET_KEY"]).encode()
    return "addr:" + hmac.new(secret, client_network(request.remote_addr).encode(), hashlib.sha256).hexdigest()[:32]


def client_network(address: str | None) -> str:
    """What a client's address counts as: itself for IPv4, its /64 for IPv6 (whoever has one
    address of a /64 has 2**64 of them)."""
    try:
        parsed = ipaddress.ip_address(address or "")
    except ValueError:
        return address or "unknown"
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


def storage_settings(app: Flask) -> tuple[str, dict[str, Any]]:
    """The `limits` storage URI and options for this app's counters."""
    runtime = app.extensions["memory_runtime"]
    uri, options, engine = counters_storage(app.config.get("RATELIMIT_STORAGE_URI") or runtime.config.ratelimit_storage_uri,
                                            runtime.engine)
    if engine is not None:
        app.extensions["counters_engine"] = engine
    return uri, options


def init_limits(app: Flask, bp: Blueprint, *more: Blueprint) -> Limiter:
    limit = app.config.get("API_RATE_LIMIT") or os.environ.get("MEMORY_API_RATE_LIMIT", "1200/minute")
    uri, options = storage_settings(app)
    limiter = Limiter(
        key_func=_caller,
        app=app,
        default_limits=[],
        storage_uri=uri,
        storage_options=options,
        strategy="fixed-window",
        headers_enabled=True,
        # Retry-After belongs to 429 and 503 answers only (the 429 handler sets it, from the limit);
        # on every other answer the same number is told as X-RateLimit-Retry-After.
        header_name_mapping={HeaderNames.RETRY_AFTER: "X-RateLimit-Retry-After"},
    )
    # One limit per key for the whole API, not one per endpoint.
    shared = limiter.shared_limit(limit, scope="api")
    for blueprint in (bp, *more):
        shared(blueprint)
    app.extensions["portal_limiter"] = limiter  # the portal's sign-in throttle counts in its storage
    return limiter


def seconds_until_reset(app: Flask) -> int:
    """For a 429: seconds until the limit that was hit lets the caller in again (at least 1)."""
    current = app.extensions["portal_limiter"].current_limit
    if current is None:
        return 1
    return max(1, math.floor(current.reset_at - time.time()))
