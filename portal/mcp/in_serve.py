"""The MCP server inside `memory-portal serve`, on the portal's own port: gunicorn's threaded
workers speak WSGI, the MCP SDK's transports ASGI, and a2wsgi (a maintained ASGI-under-WSGI bridge)
runs the ASGI app (portal.mcp.http) on an event loop of the worker's own, in a thread of its own.
A request under `/mcp/` goes there, every other one to the portal, in the same worker.

What a2wsgi leaves to us:
- the app's lifespan (the streamable HTTP managers' task groups), entered here when the worker
  loads and left when it exits;
- a client that goes away while its SSE stream waits: WSGI tells an app only when a write fails
  (the SDK's keep-alive comment, every 15 s), so the connection is watched on the loop, and a
  stream whose client closed it ends at once, its thread and its place freed;
- the worker's own socket, where the other workers hand on the messages of its streams
  (portal.mcp.sse): a uvicorn server on the same loop, the one that runs the streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from pathlib import Path
from typing import Any

from a2wsgi.asgi import ASGIMiddleware, ASGIResponder
from starlette.applications import Starlette

from portal.bootstrap import Runtime
from portal.mcp.door import FORWARDED
from portal.mcp.http import http_app
from portal.mcp.sse import socket_path

log = logging.getLogger("portal.mcp")

PREFIX = "/mcp/"


class McpInServe:
    """WSGI: `/mcp/...` to the MCP app (through a2wsgi), anything else to `portal`."""

    def __init__(self, portal: Any, runtime: Runtime, host: str, streams: int, sockets: Path | None) -> None:
        self.portal = portal
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="mcp-loop", daemon=True).start()
        self.app = http_app(runtime, host, streams=streams, sockets=sockets)
        self.stop = asyncio.Event()
        started = threading.Event()
        self.lifespan = asyncio.run_coroutine_threadsafe(self._lifespan(started), self.loop)
        if not started.wait(30):
            raise RuntimeError("the MCP app did not start")
        self.sockets = sockets
        self.listener = self._listen(sockets) if sockets is not None else None
        self.bridge = WatchedBridge(self.app, loop=self.loop)  # type: ignore[arg-type]  # a2wsgi's ASGI types are its own

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if str(environ.get("PATH_INFO", "")).startswith(PREFIX):
            return self.bridge(environ, start_response)
        return self.portal(environ, start_response)

    async def _lifespan(self, started: threading.Event) -> None:
        async with self.app.router.lifespan_context(self.app):
            started.set()
            await self.stop.wait()

    def _listen(self, sockets: Path) -> Any:
        """This worker's socket for the messages the other workers hand on, served on the loop."""
        import uvicorn  # why: only serve's workers with MCP listen on a socket of their own

        path = socket_path(sockets)
        path.unlink(missing_ok=True)  # a dead worker's whose pid this one has now
        config = uvicorn.Config(Forwarded(self.app), uds=str(path), lifespan="off", log_config=None, access_log=False,
                                server_header=False, timeout_graceful_shutdown=2)
        server = uvicorn.Server(config)
        asyncio.run_coroutine_threadsafe(server.serve(), self.loop)
        return server

    def close(self) -> None:
        """Leave the lifespan and the socket (gunicorn's worker_exit)."""
        if self.listener is not None:
            self.listener.should_exit = True
        self.loop.call_soon_threadsafe(self.stop.set)
        with contextlib.suppress(Exception):
            self.lifespan.result(10)
        if self.sockets is not None:
            socket_path(self.sockets).unlink(missing_ok=True)


class Forwarded:
    """The app as the workers' sockets serve it: a message another worker took, checked and counted."""

    def __init__(self, app: Starlette) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app({**scope, FORWARDED: True} if scope["type"] == "http" else scope, receive, send)


class WatchedBridge(ASGIMiddleware):  # type: ignore[misc]
    """a2wsgi's bridge, whose requests end when their client goes (see the module docstring)."""

    def __call__(self, environ: Any, start_response: Any) -> Any:
        responder = WatchedResponder(self.app, self.loop, self.wait_time)
        return responder.respond(environ, start_response)


class WatchedResponder(ASGIResponder):  # type: ignore[misc]
    """One request: a2wsgi's, plus the watch of its connection while it streams."""

    task: asyncio.Task[None] | None = None

    async def start_asgi_app(self, environ: Any) -> asyncio.Task[None]:
        self.task = await super().start_asgi_app(environ)
        return self.task

    def respond(self, environ: Any, start_response: Any) -> Any:
        connection = environ.get("gunicorn.socket")
        watching = environ.get("REQUEST_METHOD") == "GET" and isinstance(connection, socket.socket)
        chunks = self(environ, start_response)
        try:
            for chunk in chunks:
                if watching:  # from the first byte on: the stream is open
                    self.loop.call_soon_threadsafe(self._watch, connection)  # type: ignore[arg-type]
                    watching = False
                yield chunk
        finally:
            if connection is not None and isinstance(connection, socket.socket):
                self.loop.call_soon_threadsafe(self._unwatch, connection)
            task = self.task
            if task is not None and not task.done():  # gunicorn closed us (the client went while we wrote)
                self.loop.call_soon_threadsafe(task.cancel)

    def _watch(self, connection: socket.socket) -> None:
        with contextlib.suppress(ValueError, OSError):
            self.loop.add_reader(connection.fileno(), self._readable, connection)

    def _unwatch(self, connection: socket.socket) -> None:
        with contextlib.suppress(ValueError, OSError):
            self.loop.remove_reader(connection.fileno())

    def _readable(self, connection: socket.socket) -> None:
        """The connection of a stream became readable: its client closed it (or sent more, which a
        stream never reads: then it is watched no longer)."""
        self._unwatch(connection)
        try:
            gone = connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            gone = False
        except OSError:
            gone = True
        if gone and self.task is not None and not self.task.done():
            self.task.cancel()
            self.loop.create_task(self._hang_up())

    async def _hang_up(self) -> None:
        """Wake the worker's thread, which waits for the stream's next message: there is none."""
        await self.sync_event_set_lock.acquire()
        self.sync_event.set({"type": "http.response.disconnect"})


__all__ = ["McpInServe"]
