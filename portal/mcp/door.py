"""The door of the MCP server's HTTP endpoints (portal.mcp.http, portal.mcp.sse): every request is
authenticated before the SDK's transport sees it: `Authorization: Bearer <key>` (the same hashed API
keys as the JSON API; 401 without one or with an unknown or revoked one), the owner id of the path
checked by the one id rule (400 `invalid_owner`), the key's rate limit (429), the tenant taken from
the key and, on OpenMemory's URLs, the app the path names checked to be the key's own (403
`wrong_app`). A refusal at this door is a JSON-RPC error body (as the SDK's transport answers its
own HTTP errors, so MCP clients show it) with our code in `error.data.code`."""

from __future__ import annotations

import json
import math
import os
import time

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from portal.adapters.sql.counters import counters_storage
from portal.bootstrap import Runtime
from portal.domain.apps import app_named, app_of
from portal.domain.people import LANGUAGES
from portal.inputs import is_valid_id
from portal.mcp.server import REFUSED, Caller, caller_for

CALLER = "memory_portal.caller"  # the ASGI scope key the endpoint leaves the caller under
# Set on a message another worker of `serve` took and handed on (portal.mcp.sse): only the
# workers' own sockets set it, never a request from outside.
FORWARDED = "memory_portal.forwarded"
MAX_BODY = 64 * 1024  # as the JSON API's bodies (portal.api.registry.MAX_BODY): a tool call is small


class Door:
    """What every request to a person's endpoint passes first: the owner id of the path (the id
    rule), the key (401), the key's rate limit (429) and, with `named_apps`, that the app the path
    names is the key's own (403 `wrong_app`). Refuses with the answer itself, or gives the caller."""

    def __init__(self, runtime: Runtime, language: str, limit: KeyLimit) -> None:
        self.runtime, self.language, self.limit = runtime, language, limit

    async def admit(self, scope: Scope, receive: Receive, send: Send, named_apps: bool) -> Caller | None:
        params = scope.get("path_params", {})
        owner_id = params.get("user_id" if named_apps else "owner_id")
        if not is_valid_id(owner_id):
            await answer(400, "invalid_owner", "the owner id in the path is not valid")(scope, receive, send)
            return None
        headers = Headers(scope=scope)
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            await unauthorized("send Authorization: Bearer <key>")(scope, receive, send)
            return None
        key = await anyio.to_thread.run_sync(self.runtime.api_keys.verify, token.strip())
        if key is None:
            await unauthorized("unknown or revoked key")(scope, receive, send)
            return None
        # A message another worker took was counted there (portal.mcp.sse): once a request.
        wait = 0 if scope.get(FORWARDED) else await anyio.to_thread.run_sync(self.limit.hit, key.id)
        if wait:
            await answer(429, "rate_limited", "too many requests for this key", {"Retry-After": str(wait)})(
                scope, receive, send)
            return None
        if named_apps and app_named(params.get("client_name", ""), [key]) is None:
            own = app_of(key).name
            await answer(403, "wrong_app", f"this key acts as its own app only, {own!r}: name it in the address "
                                           f"(another app's calls need that app's own key)")(scope, receive, send)
            return None
        return caller_for(key, owner_id, chosen_language(headers.get("accept-language"), self.language))


class KeyLimit:
    """The JSON API's per-key rate limit (`MEMORY_API_RATE_LIMIT`, 1200/minute), counted with the
    `limits` library in the storage the API's counters use (Redis when RATELIMIT_STORAGE_URI names
    it, else the app's own database), so every MCP process together allows a key its limit once."""

    def __init__(self, runtime: Runtime) -> None:
        from limits import parse  # why: the HTTP transport only; stdio serves one person's own client
        from limits.storage import storage_from_string
        from limits.strategies import FixedWindowRateLimiter

        uri, options, _engine = counters_storage(runtime.config.ratelimit_storage_uri, runtime.engine)
        self.item = parse(os.environ.get("MEMORY_API_RATE_LIMIT", "1200/minute"))
        self.limiter = FixedWindowRateLimiter(storage_from_string(uri, **options))

    def hit(self, key_id: str) -> int:
        """Count one request of this key: 0 when it may go on, else the seconds until it may."""
        if self.limiter.hit(self.item, "mcp", key_id):
            return 0
        reset = self.limiter.get_window_stats(self.item, "mcp", key_id).reset_time
        return max(1, math.ceil(reset - time.time()))


def answer(status: int, code: str, sentence: str, headers: dict[str, str] | None = None) -> Response:
    """A refusal at the door: a JSON-RPC error (no request id) with our code in `data`."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": REFUSED, "message": sentence, "data": {"code": code}}}
    return Response(json.dumps(body), status_code=status, media_type="application/json", headers=headers)


def unauthorized(sentence: str) -> Response:
    return answer(401, "unauthorized", sentence, {"WWW-Authenticate": 'Bearer realm="memory-portal"'})


def chosen_language(header: str | None, default: str) -> str:
    """The language of an Accept-Language header that the catalog speaks, of the highest weight
    (the first of equal ones), else `default`."""
    chosen, weight = default, 0.0
    for part in (header or "").split(",")[:20]:
        tag, _, parameters = part.partition(";")
        language = tag.strip().split("-")[0].lower()
        q = _weight(parameters)
        if language in LANGUAGES and q > weight:
            chosen, weight = language, q
    return chosen


def _weight(parameters: str) -> float:
    name, _, value = parameters.strip().partition("=")
    if name.strip() != "q":
        return 1.0
    try:
        q = float(value)
    except ValueError:
        return 0.0
    return q if 0.0 <= q <= 1.0 else 0.0


__all__ = ["CALLER", "FORWARDED", "MAX_BODY", "Door", "KeyLimit", "answer", "chosen_language", "unauthorized"]
