"""OpenMemory's SSE URL, `/mcp/<client_name>/sse/<user_id>`: what OpenMemory's installer writes
(`npx @openmemory/install local http://HOST/mcp/<client>/sse/<user> --client <client>`) and its
dashboard shows, served with the SDK's own SSE transport (`mcp.server.sse.SseServerTransport`).

A GET opens the stream; its first event names where the client posts its messages:
`/mcp/<client_name>/sse/<user_id>/messages/<worker>/?session_id=<id>` (OpenMemory's own path for
them, plus the worker); each answer comes back on the stream. Every request, the GET and each post,
passes the same door as the HTTP URLs (portal.mcp.door: key, owner id, `wrong_app`), and a stream
is bound to the key, the person and the app that opened it: a post with another key, for another
person or naming another app finds no stream (404, as the SDK answers a session it does not have).

Several processes, one stream. A stream lives in the process whose thread holds it, and under
`memory-portal serve` gunicorn's workers share the port: a post lands on whichever worker accepts
its connection, which may well not be the stream's (a client that keeps its connection posts every
message through one worker, chosen when it connected). The worker that holds a stream is named in
the messages path, and each worker listens on a Unix socket of its own, `<sockets>/<pid>.sock`, in
a folder only the server's user can open (made by `serve` before it forks, removed when it stops).
A worker taking a post for another checks it at the door (a refusal is answered there, and the
post counts once against the key's rate limit), then hands it on, as it came, to that worker's
socket, where the SDK's transport takes it into the stream; the client gets that worker's answer
(202, or 404 when the stream is gone).
Chosen over handing the message (or its answer) through a shared store, the database or Redis:
nothing a person said is written anywhere, so there is nothing to encrypt, expire, or erase with
the person, and no polling. Measured on 2 workers (SQLite, 2 shared CPUs, 300 `search_memory` calls
each way on one stream): a post its stream's worker takes is answered 202 in 2.7 ms (median; p95
5.2) and its result is on the stream at 5.7 ms (p95 11.1); a post handed on, 7.7 ms (p95 13.0) and
8.5 ms (p95 15.5): the hop costs about 3-5 ms. It reaches the workers of one `serve` only: several
machines behind a load balancer need it to keep a client on one machine (sticky by client
address), or the streamable HTTP URL, stateless, which needs nothing.

Each stream holds one of a worker's threads for as long as it is open, so a worker takes at most
`streams` of them (`serve --mcp-streams`, default 8; `serve` gives each worker that many threads
more than its `--threads`, which the portal's requests keep). Beyond it a stream is refused 503
`too_many_streams` with `Retry-After`, at once.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel.server import Server
from mcp.server.sse import SseServerTransport
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from portal.mcp.door import CALLER, FORWARDED, MAX_BODY, Door, answer
from portal.mcp.server import Caller

log = logging.getLogger("portal.mcp")

SSE_PATH = "/mcp/{client_name}/sse/{user_id}"
MESSAGES_PATH = "/mcp/{client_name}/sse/{user_id}/messages/{worker}/"
STREAMS = 8  # streams a process holds at once, by default
WORKER = re.compile(r"[0-9]{1,10}")
HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade", b"content-length"}


class OpenMemorySse:
    """The SSE stream and its messages, for OpenMemory's server (`server`), in this process."""

    def __init__(self, door: Door, server: Server[Any], security: TransportSecuritySettings | None,
                 streams: int = STREAMS, sockets: Path | None = None) -> None:
        self.door, self.server, self.streams, self.sockets = door, server, streams, sockets
        self.worker = str(os.getpid())
        self.transport = SseServerTransport(f"/messages/{self.worker}/", security_settings=security,
                                            max_request_body_size=MAX_BODY)
        self.open = 0
        self.clients: dict[Path, httpx.AsyncClient] = {}

    def routes(self) -> list[Route]:
        return [Route(SSE_PATH, endpoint=Asgi(self.stream)), Route(MESSAGES_PATH, endpoint=Asgi(self.message))]

    async def stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        """GET: the door, a place among this process's streams, then the SDK's stream until the
        client goes."""
        if scope.get("method") != "GET":
            await answer(405, "method_not_allowed", "this endpoint takes GET (its stream names where to post)",
                         {"Allow": "GET"})(scope, receive, send)
            return
        caller = await self.door.admit(scope, receive, send, named_apps=True)
        if caller is None:
            return
        if self.open >= self.streams:  # one event loop runs every stream of the process: no race
            log.warning("mcp.sse refused=too_many_streams streams=%d", self.open)
            await answer(503, "too_many_streams", "this server holds as many streams as it can: try again later, or use "
                                                  "the streamable HTTP URL (/mcp/<client>/http/<user>)",
                         {"Retry-After": "30"})(scope, receive, send)
            return
        self.open += 1
        log.info("mcp.sse stream=open key=%s streams=%d", caller.key.id, self.open)
        # The messages path is the stream's own path, plus the SDK's endpoint (`messages/<worker>/`).
        opened = {**scope, "root_path": str(scope["path"]).rstrip("/"), "user": principal(caller), CALLER: caller}
        try:
            async with self.transport.connect_sse(opened, receive, send) as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())
        except ValueError:  # the SDK refused the request's Host or Origin, and answered it
            return
        finally:
            self.open -= 1
            log.info("mcp.sse stream=closed key=%s streams=%d", caller.key.id, self.open)

    async def message(self, scope: Scope, receive: Receive, send: Send) -> None:
        """POST: the door, then the SDK's transport here, or the stream's own worker."""
        if scope.get("method") != "POST":
            await answer(405, "method_not_allowed", "this endpoint takes POST", {"Allow": "POST"})(scope, receive, send)
            return
        caller = await self.door.admit(scope, receive, send, named_apps=True)
        if caller is None:
            return
        worker = scope.get("path_params", {}).get("worker", "")
        if worker == self.worker:
            await self.transport.handle_post_message({**scope, "user": principal(caller), CALLER: caller}, receive, send)
        elif self.sockets is not None and WORKER.fullmatch(worker) and not scope.get(FORWARDED):
            await self.hand_on(scope, receive, send, self.sockets / f"{worker}.sock")
        else:
            await no_stream()(scope, receive, send)

    def client_to(self, socket: Path) -> httpx.AsyncClient:
        """One client per worker's socket, kept (a client's TLS context alone costs tens of ms)."""
        client = self.clients.get(socket)
        if client is None:
            client = self.clients[socket] = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=str(socket)),
                                                              timeout=30)
        return client

    async def hand_on(self, scope: Scope, receive: Receive, send: Send, socket: Path) -> None:
        """The post, as it came, to the worker that holds its stream; that worker's answer back."""
        body = await read_body(receive)
        if body is None:
            await answer(413, "body_too_large", "a message is at most 64 KiB")(scope, receive, send)
            return
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        # a2wsgi gives the path decoded (no raw_path): encoded again, an app's name with accents, `?`
        # or `#` reaches the other worker as the client sent it.
        target = quote(str(scope["path"]), safe="/") + "?" + scope.get("query_string", b"").decode("latin-1")
        started = time.monotonic()
        try:
            got = await self.client_to(socket).post(f"http://worker{target}", content=body, headers=headers)
        except httpx.TransportError:
            await no_stream()(scope, receive, send)  # that worker is gone, and its streams with it
            return
        log.info("mcp.sse forwarded status=%d ms=%.1f", got.status_code, (time.monotonic() - started) * 1000)
        kept = {k: v for k, v in got.headers.items() if k.lower() in ("content-type", "retry-after", "www-authenticate")}
        await Response(got.content, status_code=got.status_code, headers=kept)(scope, receive, send)


class Asgi:
    """An ASGI endpoint for a route (Starlette takes a bare method for a request -> response one)."""

    def __init__(self, endpoint: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.endpoint(scope, receive, send)


def principal(caller: Caller) -> AuthenticatedUser:
    """Who opened a stream, as the SDK's transport compares it on every post to it: the key (in its
    tenant, as its own app) and the person."""
    return AuthenticatedUser(AccessToken(token="", client_id=caller.key.id, scopes=[], subject=caller.place.owner_id))


def no_stream() -> Response:
    return answer(404, "no_stream", "no such stream (it was closed): open the SSE URL again")


async def read_body(receive: Receive, limit: int = MAX_BODY) -> bytes | None:
    """The request's body, or None past `limit` bytes."""
    parts: list[bytes] = []
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        more = message.get("more_body", False)
    return b"".join(parts)


def socket_path(sockets: Path, pid: int | None = None) -> Path:
    return sockets / f"{pid if pid is not None else os.getpid()}.sock"


__all__ = ["MESSAGES_PATH", "SSE_PATH", "STREAMS", "OpenMemorySse", "socket_path"]
