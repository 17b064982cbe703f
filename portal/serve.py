"""Running the app on gunicorn from Python (`memory-portal serve`)."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

from gunicorn import util
from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger, SafeAtoms
from gunicorn.http import errors as http_errors
from gunicorn.workers.gthread import ThreadWorker
from gunicorn.workers.sync import SyncWorker

from portal.app import create_app
from portal.domain.text import warm_ranking

log = logging.getLogger("portal.serve")

# What gunicorn itself refuses, before the app sees the request: (status, reason, code). Answered
# as problem+json like every other error, and never with the request line echoed (its query
# string can hold a person's words).
REFUSED_BY_THE_SERVER: dict[type[Exception], tuple[int, str, str]] = {
    http_errors.LimitRequestLine: (414, "URI Too Long", "uri_too_long"),
    http_errors.LimitRequestHeaders: (431, "Request Header Fields Too Large", "headers_too_large"),
    http_errors.ForbiddenProxyRequest: (403, "Forbidden", "forbidden"),
    http_errors.UnsupportedTransferCoding: (501, "Not Implemented", "not_implemented"),
    http_errors.ExpectationFailed: (417, "Expectation Failed", "expectation_failed"),
}
BAD_REQUESTS = (
    http_errors.InvalidRequestLine, http_errors.InvalidRequestMethod, http_errors.InvalidHTTPVersion,
    http_errors.InvalidHeader, http_errors.InvalidHeaderName, http_errors.InvalidProxyLine,
    http_errors.InvalidSchemeHeaders, http_errors.ObsoleteFolding, http_errors.InvalidChunkSize,
    http_errors.ChunkMissingTerminator, http_errors.InvalidChunkExtension, http_errors.InvalidH2CPreface,
)


def problem_bytes(status: int, reason: str, code: str) -> bytes:
    body = json.dumps({"type": "about:blank", "title": reason, "status": status, "detail": None, "code": code})
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/problem+json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return (head + body).encode("latin-1")


class RefusalsAsProblems:
    """Answers the requests gunicorn itself refuses as problem+json (a mixin of the workers)."""

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        found = next((v for k, v in REFUSED_BY_THE_SERVER.items() if isinstance(exc, k)), None)
        if found is None and isinstance(exc, BAD_REQUESTS):
            found = (400, "Bad Request", "bad_request")
        if found is None:
            super().handle_error(req, client, addr, exc)  # type: ignore[misc]
            return
        # The error's class only: its text can quote the request line.
        log.warning("serve.refused status=%d error=%s", found[0], type(exc).__name__)
        try:
            util.write_nonblock(client, problem_bytes(*found))
        except OSError:
            log.debug("serve.refused_unsent")


class PortalWorker(RefusalsAsProblems, SyncWorker):  # type: ignore[misc]
    """gunicorn's sync worker: one request at a time per process."""


class PortalThreadWorker(RefusalsAsProblems, ThreadWorker):  # type: ignore[misc]
    """gunicorn's threaded worker, what `serve` runs: a request waiting on something else (a
    consolidation waiting seconds for the model, the database) holds one of the worker's threads,
    not the process, so recall keeps being answered beside it. The embedding model and the
    database calls release the GIL. Stopping, it ends its MCP streams at once (portal.mcp.in_serve),
    which would otherwise hold it for the whole graceful timeout."""

    def handle_exit(self, sig: Any, frame: Any) -> None:
        super().handle_exit(sig, frame)
        app = getattr(self, "wsgi", None)  # none yet while the worker boots
        end_streams = getattr(getattr(app, "wsgi_app", None), "end_streams", None)
        if end_streams is not None:
            end_streams()


def printable(text: str) -> str:
    """Text for a log line: every control character, and anything outside ASCII, as its escape
    (a backslash too, so an escape in the text cannot pass for one of ours)."""
    return text.encode("unicode_escape").decode("ascii")


class PrintableAtoms(SafeAtoms):  # type: ignore[misc]
    """gunicorn's access-log values, each printable: a request's path, header or method can then
    forge no line (`%0A`) and put no NUL or terminal escape into the log."""

    def __init__(self, atoms: dict[str, Any]) -> None:
        super().__init__({k: printable(v) if isinstance(v, str) else v for k, v in atoms.items()})


class AccessLog(Logger):  # type: ignore[misc]
    """gunicorn's logger, whose access line's path (`%(U)s`) is the path as it came, still
    percent-encoded, as the MCP server logs it (portal.mcp.http.AccessLog), never the query
    string: it can hold a person's words."""

    atoms_wrapper_class = PrintableAtoms

    def atoms(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> dict[str, Any]:
        found: dict[str, Any] = super().atoms(resp, req, environ, request_time)
        found["U"] = str(environ.get("RAW_URI") or found.get("U") or "").partition("?")[0]
        return found


class _Counted:
    """A request's body stream that knows whether it was read to its end."""

    def __init__(self, stream: Any, length: int | None) -> None:
        self._stream, self._left, self._ended = stream, length, length == 0

    @property
    def finished(self) -> bool:
        return self._ended or (self._left is not None and self._left <= 0)

    def _seen(self, data: bytes, asked: int | None) -> bytes:
        if self._left is not None:
            self._left -= len(data)
        if not data and asked != 0:
            self._ended = True
        return data

    def read(self, size: int | None = -1) -> bytes:
        return self._seen(self._stream.read(size), size)

    def readline(self, size: int | None = -1) -> bytes:
        return self._seen(self._stream.readline(size), size)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def readlines(self, hint: int = -1) -> list[bytes]:
        return list(iter(self.readline, b""))

    def __iter__(self) -> Any:
        return iter(self.readline, b"")


class UnreadBodyCloses:
    """A request whose body the app left unread (a 413, a 401 before the body is read) closes its
    connection, and its answer says `Connection: close`. gunicorn would answer `keep-alive`, then
    drain at most 64 KiB of what is left, give up and close: a client reusing the connection met a
    closed socket. gunicorn drops a `Connection` header an app sets (hop-by-hop), so the close is
    asked of the response whose `start_response` this is, before the answer's first byte is sent."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        length = environ.get("CONTENT_LENGTH") or ""
        chunked = "chunked" in str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()
        body = _Counted(environ.get("wsgi.input"), None if chunked else int(length) if length.isdigit() else 0)
        environ["wsgi.input"] = body
        answer = self.app(environ, start_response)
        close = getattr(getattr(start_response, "__self__", None), "force_close", None)
        if not body.finished and close is not None:
            close()
        return answer


class PortalServer(BaseApplication):  # type: ignore[misc]
    """gunicorn with our app factory; each worker builds its own engine after the fork, and serves
    the MCP server under /mcp/ beside the portal (`mcp`: host, streams, sockets; portal.mcp.in_serve)."""

    def __init__(self, options: dict[str, Any], mcp: dict[str, Any] | None = None) -> None:
        self.options, self.mcp = options, mcp
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        app = create_app()
        app.wsgi_app = UnreadBodyCloses(app.wsgi_app)  # type: ignore[method-assign]
        if self.mcp is not None:
            # why: the MCP SDK (0.7 s to import) in serve's workers, not in every command that imports this module
            from portal.mcp.in_serve import McpInServe

            app.wsgi_app = McpInServe(app.wsgi_app, app.extensions["memory_runtime"], **self.mcp)  # type: ignore[method-assign]
        warm_up(app)
        jobs_in_worker(app)
        return app


def jobs_in_worker(app: Any) -> None:
    """On the embedded default (SQLite, or MEMORY_JOBS_IN_SERVE=on) each worker process also runs
    background consolidations, in a thread of its own; with PostgreSQL `memory-portal worker` runs
    them (compose's `worker` service)."""
    runtime = app.extensions["memory_runtime"]
    setting = runtime.config.jobs_in_serve
    if setting == "off" or (setting == "auto" and runtime.engine.dialect.name != "sqlite"):
        return
    from portal.adapters.queue import Worker  # why: huey, in the processes that run jobs only

    runtime.queue.take_up()  # what a worker stopped or killed left (and every minute after)
    app.extensions["jobs_worker"] = Worker(runtime.queue, workers=1).start()
    log.info("serve.jobs_worker threads=1")


def stop_jobs(server: Any, worker: Any) -> None:
    """gunicorn's worker_exit: let the worker's running jobs finish (for at most 20 s) before it
    ends, and write what its recalls handed out since the last batch."""
    app = getattr(worker, "wsgi", None)
    jobs = getattr(app, "extensions", {}).get("jobs_worker")
    if jobs is not None:
        jobs.stop(graceful=True)
    runtime = getattr(app, "extensions", {}).get("memory_runtime")
    if runtime is not None:
        runtime.service.ctx.uses.close()
    close_mcp = getattr(getattr(app, "wsgi_app", None), "close", None)
    if close_mcp is not None:
        close_mcp()


def warm_up(app: Any) -> None:
    """Load the embedding model before the worker takes requests, so nobody waits seconds for the
    first recall, nor for the tables of how common words are (portal.domain.commonness) and the
    language model (portal.domain.language): a few seconds in all.
    A failure here is logged and left to the per-request fallback."""
    warm_ranking()
    embedder = app.extensions["memory_runtime"].service.embedder
    if embedder is None:
        return
    try:
        embedder.embed(["warm up"], "query")
    except Exception as exc:  # the embedder may be remote and down: requests fall back to words
        app.logger.warning("embedder.warm_up_failed error=%s", type(exc).__name__)


def threads_per_worker(workers: int, cpus: int | None = None) -> int:
    """CPU threads each worker's embedding model may use: the machine's CPUs shared out.

    torch otherwise gives every process one thread per CPU, and several workers' spinning threads
    then fight over the same cores: on 2 CPUs a one-sentence query went from 12 ms to 400-700 ms
    under load (see docs/benchmarks.md, "Load test")."""
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cpus // max(1, workers))


def port_in_use(host: str, port: int) -> bool:
    """Whether another process listens on `host`:`port` already, tried as gunicorn binds it (with
    SO_REUSEADDR: a port a server just stopped left waiting is free). gunicorn alone would retry
    for 5 s, in a dozen log lines a script sends to a file, while a readiness check passes against
    the other server. A host that does not resolve is left to gunicorn to report."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError):
        return False
    family, kind, proto, _, address = found[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def control_socket_answers(path: Path) -> bool:
    """Whether a running server listens on the control socket at `path` (gunicorn unlinks what is
    there when it starts, and again when it stops: the file of a server killed outright is left,
    and answers no one)."""
    if not path.is_socket():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2)
        try:
            probe.connect(str(path))  # closed at once: gunicorn takes that as a client gone
        except OSError:
            return False
    return True


def run(host: str, port: int, workers: int, timeout: int = 60, threads: int = 8,
        control_socket: Path | None = None, mcp_streams: int = 8) -> None:
    """Serve until stopped. `control_socket`: where gunicorn's control socket listens (`gunicornc
    -s PATH`); `serve` puts it in the instance folder, one per server (`gunicorn.PORT.ctl`: the
    default is one path per user, and one path per instance would still be shared by the two
    servers of a blue/green restart, the first to stop unlinking the other's). `mcp_streams`: the
    MCP SSE streams a worker holds at most, each on a thread of its own beside the `threads` the
    portal's requests keep; the workers' sockets for their streams' messages are in a folder of
    this server's own (portal.mcp.sse)."""
    # Set before the workers fork and load the model; an operator's own setting wins.
    os.environ.setdefault("OMP_NUM_THREADS", str(threads_per_worker(workers)))
    sockets = Path(tempfile.mkdtemp(prefix="memory-portal-mcp-"))  # 0700: the server's user only
    try:
        _run(host, port, workers, timeout, threads, control_socket, {"host": host, "streams": mcp_streams,
                                                                      "sockets": sockets})
    finally:
        shutil.rmtree(sockets, ignore_errors=True)


def _run(host: str, port: int, workers: int, timeout: int, threads: int, control_socket: Path | None,
         mcp: dict[str, Any]) -> None:
    PortalServer(
        {
            "bind": f"{host}:{port}",
            "workers": max(1, workers),
            "timeout": timeout,
            "graceful_timeout": 30,
            "worker_class": "portal.serve.PortalThreadWorker",
            "threads": threads + mcp["streams"],
            "accesslog": "-",
            # Paths and status codes only: query strings can hold a person's words. The path as it
            # came, every control character escaped (AccessLog).
            "logger_class": "portal.serve.AccessLog",
            "access_log_format": '%(h)s "%(m)s %(U)s" %(s)s %(b)s %(M)sms',
            **({"control_socket": str(control_socket)} if control_socket else {"control_socket_disable": True}),
            "errorlog": "-",
            "worker_exit": stop_jobs,
        }, mcp,
    ).run()
