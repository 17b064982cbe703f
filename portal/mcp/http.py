"""The MCP server over HTTP, as an ASGI app (Starlette): one endpoint per person,
`/mcp/people/<owner_id>` (streamable HTTP), and OpenMemory's URLs for the assistants configured for
it, with OpenMemory's tools (`portal.mcp.openmemory`): `/mcp/<client_name>/http/<user_id>`
(streamable HTTP, JSON answers) and `/mcp/<client_name>/sse/<user_id>` (SSE, what OpenMemory's
installer writes: portal.mcp.sse). `memory-portal serve` serves it on the portal's own port
(portal.mcp.in_serve); `memory-portal mcp --http` alone on uvicorn.

On OpenMemory's URLs `client_name` names the connected app the calls are made as, the one the
person sees and can pause or block, and a key acts as its own app, always: the name must be the
key's own (compared as key names make one app: case, accents and spaces folded). Any other name,
another app of the key's tenant included, is refused 403 `wrong_app` before anything is read: a URL
never lends a key another app's standing (a blocked or paused app, or one a memory is withheld
from, would otherwise act as an app the person trusts, and be recorded as it).

Every request passes the door (portal.mcp.door: the key, the owner id, the app) before the SDK's
transport sees it. The caller rides in the request's ASGI scope to the server's handlers, which
read it from the request that carried the message; nothing in a message can name another person.

Streamable HTTP is stateless: no session is kept between requests (each carries its key, each is
checked), so several processes can serve behind a load balancer, like the web app's workers. SSE
keeps a stream open in one process: portal.mcp.sse says how its messages reach it.

DNS rebinding: bound to a loopback address, only loopback `Host` and `Origin` headers are taken
(the SDK's own rule for 127.0.0.1); elsewhere the names given with `--allowed-host` (none given:
the check is off, as in the SDK, and every request still needs a key no web page knows).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from portal.bootstrap import Runtime
from portal.domain.catalog import DEFAULT_LANGUAGE
from portal.mcp.door import CALLER, MAX_BODY, Door, KeyLimit, answer, chosen_language
from portal.mcp.openmemory import build_openmemory_server
from portal.mcp.server import Caller, Context, build_server, refused
from portal.mcp.sse import SSE_PATH, STREAMS, OpenMemorySse

log = logging.getLogger("portal.mcp")

PATH = "/mcp/people/{owner_id}"
OPENMEMORY_PATH = "/mcp/{client_name}/http/{user_id}"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def http_app(runtime: Runtime, host: str = "127.0.0.1", language: str = DEFAULT_LANGUAGE,
             allowed_hosts: Sequence[str] = (), streams: int = STREAMS, sockets: Path | None = None) -> Starlette:
    """The ASGI app over `runtime`: the per-person MCP endpoint and OpenMemory's two, streamable HTTP
    and SSE (at most `streams` SSE streams at once in this process; `sockets`: the folder where
    each worker of `serve` listens for the messages of its streams, portal.mcp.sse)."""

    async def resolve(ctx: Context) -> Caller:
        request = ctx.request
        caller = request.scope.get(CALLER) if isinstance(request, Request) else None
        if not isinstance(caller, Caller):  # never reached through the endpoint, which always sets it
            raise refused("unauthorized")
        return caller

    security = transport_security(host, allowed_hosts)
    openmemory_server = build_openmemory_server(runtime, resolve)
    manager = StreamableHTTPSessionManager(
        app=build_server(runtime, resolve), stateless=True, security_settings=security, max_request_body_size=MAX_BODY,
    )
    openmemory = StreamableHTTPSessionManager(  # as OpenMemory served it: stateless, JSON answers
        app=openmemory_server, stateless=True, json_response=True, security_settings=security,
        max_request_body_size=MAX_BODY,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run(), openmemory.run():
            yield

    async def not_here(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        return answer(status, "not_found" if status == 404 else "method_not_allowed", "no such endpoint")

    door = Door(runtime, language, KeyLimit(runtime))
    sse = OpenMemorySse(door, openmemory_server, security, streams, sockets)
    app = Starlette(routes=[Route(PATH, endpoint=PersonEndpoint(door, manager)),
                            Route(OPENMEMORY_PATH, endpoint=PersonEndpoint(door, openmemory, named_apps=True)),
                            *sse.routes()],
                    lifespan=lifespan,
                    exception_handlers={404: not_here, 405: not_here})
    app.state.sse = sse
    return app


class PersonEndpoint:
    """The door of one person's endpoint (with `named_apps`, OpenMemory's), then the SDK's
    transport with the caller in the request's scope."""

    def __init__(self, door: Door, manager: StreamableHTTPSessionManager, named_apps: bool = False) -> None:
        self.door, self.manager, self.named_apps = door, manager, named_apps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") == "GET":
            # Stateless: no server message ever comes on a GET stream, which would stay open for nothing.
            await answer(405, "method_not_allowed", "this endpoint takes POST", {"Allow": "POST, DELETE"})(
                scope, receive, send)
            return
        caller = await self.door.admit(scope, receive, send, self.named_apps)
        if caller is not None:
            await self.manager.handle_request({**scope, CALLER: caller}, receive, send)


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


__all__ = ["CALLER", "OPENMEMORY_PATH", "PATH", "SSE_PATH", "AccessLog", "chosen_language", "http_app", "run_http",
           "transport_security"]
