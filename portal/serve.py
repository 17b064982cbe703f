"""Running the app on gunicorn from Python (`memory-portal serve`)."""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
from typing import Any

from gunicorn import util
from gunicorn.app.base import BaseApplication
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
    database calls release the GIL."""


class PortalServer(BaseApplication):  # type: ignore[misc]
    """gunicorn with our app factory; each worker builds its own engine after the fork."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        app = create_app()
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


def run(host: str, port: int, workers: int, timeout: int = 60, threads: int = 8) -> None:
    # Set before the workers fork and load the model; an operator's own setting wins.
    os.environ.setdefault("OMP_NUM_THREADS", str(threads_per_worker(workers)))
    PortalServer(
        {
            "bind": f"{host}:{port}",
            "workers": max(1, workers),
            "timeout": timeout,
            "graceful_timeout": 30,
            "worker_class": "portal.serve.PortalThreadWorker",
            "threads": threads,
            "accesslog": "-",
            # Paths and status codes only: query strings can hold a person's words.
            "access_log_format": '%(h)s "%(m)s %(U)s" %(s)s %(b)s %(M)sms',
            "errorlog": "-",
            "worker_exit": stop_jobs,
        }
    ).run()
