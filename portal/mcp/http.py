"""The MCP server over streamable HTTP: one endpoint per person, `/mcp/people/<owner_id>`, as an
ASGI app (Starlette, served by uvicorn from `memory-portal mcp --http`); and OpenMemory's URL,
`/mcp/<client_name>/http/<user_id>`, with OpenMemory's tools (`portal.mcp.openmemory`) and JSON
answers, for the assistants configured for it.

On OpenMemory's URL `client_name` names the connected app the calls are made as, the one the
person sees and can pause or block, and a key acts as its own app, always: the name must be the
key's own (compared as key names make one app: case, accents and spaces folded). Any other name,
another app of the key's tenant included, is refused 403 `wrong_app` before anything is read: a URL
never lends a key another app's standing (a blocked or paused app, or one a memory is withheld
from, would otherwise act as an app the person trusts, and be recorded as it).

Every request is authenticated before the SDK's transport sees it: `Authorization: Bearer <key>`
(the same hashed API keys as the JSON API; 401 without one or with an unknown or revoked one), the
owner id of the path checked by the one id rule (400 `invalid_owner`), the tenant taken from the
key. The caller rides in the request's ASGI scope to the server's handlers, which read it from the
request that carried the message; nothing in a message can name another person.

The transport is stateless: no session is kept in this process between requests (each carries
its key, each is checked), so several processes can serve behind a load balancer, like the web
app's workers. A refusal at this door is a JSON-RPC error body (as the SDK's transport answers
its own HTTP errors, so MCP clients show it) with our code in `error.data.code`.

DNS rebinding: bound to a loopback address, only loopback `Host` and `Origin` headers are taken
(the SDK's own rule for 127.0.0.1); elsewhere the names given with `--allowed-host` (none given:
the check is off, as in the SDK, and every request still needs a key no web page knows).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio.to_thread
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from portal.adapters.sql.counters import counters_storage
from portal.bootstrap import Runtime
from portal.domain.apps import app_named, app_of
from portal.domain.catalog import DEFAULT_LANGUAGE
from portal.domain.people import LANGUAGES
from portal.inputs import is_valid_id
from portal.mcp.openmemory import build_openmemory_server
from portal.mcp.server import REFUSED, Caller, Context, build_server, caller_for, refused

log = logging.getLogger("portal.mcp")

PATH = "/mcp/people/{owner_id}"
OPENMEMORY_PATH = "/mcp/{client_name}/http/{user_id}"
CALLER = "memory_portal.caller"  # the ASGI scope key the endpoint leaves the caller under
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_BODY = 64 * 1024  # as the JSON API's bodies (portal.api.registry.MAX_BODY): a tool call is small


def http_app(runtime: Runtime, host: str = "127.0.0.1", language: str = DEFAULT_LANGUAGE,
             allowed_hosts: Sequence[str] = ()) -> Starlette:
    """The ASGI app: the per-person MCP endpoint and OpenMemory's over `runtime`."""

    async def resolve(ctx: Context) -> Caller:
        request = ctx.request
        caller = request.scope.get(CALLER) if isinstance(request, Request) else None
        if not isinstance(caller, Caller):  # never reached through the endpoint, which always sets it
            raise refused("unauthorized")
        return caller

    security = transport_security(host, allowed_hosts)
    manager = StreamableHTTPSessionManager(
        app=build_server(runtime, resolve), stateless=True, security_settings=security, max_request_body_size=MAX_BODY,
    )
    openmemory = StreamableHTTPSessionManager(  # as OpenMemory served it: stateless, JSON answers
        app=build_openmemory_server(runtime, resolve), stateless=True, json_response=True, security_settings=security,
        max_request_body_size=MAX_BODY,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run(), openmemory.run():
            yield

    async def not_here(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        return answer(status, "not_found" if status == 404 else "method_not_allowed", "no such endpoint")

    limit = KeyLimit(runtime)
    app = Starlette(routes=[Route(PATH, endpoint=PersonEndpoint(runtime, manager, language, limit)),
                            Route(OPENMEMORY_PATH, endpoint=PersonEndpoint(runtime, openmemory, language, limit,
                                                                           named_apps=True))],
                    lifespan=lifespan,
                    exception_handlers={404: not_here, 405: not_here})
    return app


class PersonEndpoint:
    """The door of one person's endpoint: checks the owner id and the key of every request (and,
    with `named_apps`, that the app the path names is the key's own), then hands it to the SDK's
    transport with the caller in its scope."""

    def __init__(self, runtime: Runtime, manager: StreamableHTTPSessionManager, language: str, limit: KeyLimit,
                 named_apps: bool = False) -> None:
        self.runtime, self.manager, self.language, self.limit = runtime, manager, language, limit
        self.named_apps = named_apps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") == "GET":
            # Stateless: no server message ever comes on a GET stream, which would stay open for nothing.
            await answer(405, "method_not_allowed", "this endpoint takes POST", {"Allow": "POST, DELETE"})(
                scope, receive, send)
            return
        params = scope.get("path_params", {})
        owner_id = params.get("user_id" if self.named_apps else "owner_id")
        if not is_valid_id(owner_id):
            await answer(400, "invalid_owner", "the owner id in the path is not valid")(scope, receive, send)
            return
        headers = Headers(scope=scope)
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            await unauthorized("send Authorization: Bearer <key>")(scope, receive, send)
            return
        key = await anyio.to_thread.run_sync(self.runtime.api_keys.verify, token.strip())
        if key is None:
            await unauthorized("unknown or revoked key")(scope, receive, send)
            return
        wait = await anyio.to_thread.run_sync(self.limit.hit, key.id)
        if wait:
            await answer(429, "rate_limited", "too many requests for this key", {"Retry-After": str(wait)})(
                scope, receive, send)
            return
        if self.named_apps and app_named(params.get("client_name", ""), [key]) is None:
            own = app_of(key).name
            await answer(403, "wrong_app", f"this key acts as its own app only, {own!r}: name it in the address "
                                           f"(another app's calls need that app's own key)")(scope, receive, send)
            return
        caller = caller_for(key, owner_id, chosen_language(headers.get("accept-language"), self.language))
        await self.manager.handle_request({**scope, CALLER: caller}, receive, send)


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


def transport_security(host: str, allowed_hosts: Sequence[str]) -> TransportSecuritySettings | None:
    """The SDK's DNS-rebinding check: loopback names on a loopback address, the given names elsewhere."""
    if host in LOOPBACK:
        hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts,
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    if allowed_hosts:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=list(allowed_hosts),
            allowed_origins=[f"{scheme}://{name}" for name in allowed_hosts for scheme in ("https", "http")],
        )
    return None


class AccessLog:
    """One line per request: method, path (never the query string: it could hold a person's words),
    status and time."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.monotonic(), 0

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            # The path as it came, still percent-encoded: no decoded control character can forge a line.
            raw = scope.get("raw_path") or str(scope.get("path", "")).encode("utf-8", "backslashreplace")
            path = raw.decode("ascii", "backslashreplace") if isinstance(raw, bytes) else "?"
            log.info("mcp.http method=%s path=%s status=%d ms=%d", scope.get("method"), path, status,
                     (time.monotonic() - started) * 1000)


def run_http(runtime: Runtime, host: str, port: int, language: str = DEFAULT_LANGUAGE,
             allowed_hosts: Sequence[str] = ()) -> None:
    """Serve the app on uvicorn until interrupted (SIGINT or SIGTERM)."""
    import uvicorn  # the HTTP server only: stdio never needs it

    if host not in LOOPBACK and not allowed_hosts:
        log.warning("mcp.http dns_rebinding_check=off host=%s (give --allowed-host)", host)
    app: Any = AccessLog(http_app(runtime, host, language, allowed_hosts))
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, lifespan="on",
                            server_header=False, timeout_graceful_shutdown=10)
    uvicorn.Server(config).run()


__all__ = ["CALLER", "OPENMEMORY_PATH", "PATH", "AccessLog", "chosen_language", "http_app", "run_http", "transport_security"]
