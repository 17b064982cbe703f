"""Running the app on gunicorn from Python (`memory-portal serve`)."""

from __future__ import annotations

import os
from typing import Any

from gunicorn.app.base import BaseApplication


class PortalServer(BaseApplication):  # type: ignore[misc]
    """gunicorn with our app factory; each worker builds its own engine after the fork."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from portal.web.app import create_app

        app = create_app()
        warm_up(app)
        return app


def warm_up(app: Any) -> None:
    """Load the embedding model before the worker takes requests, so nobody waits seconds for the
    first recall. A failure here is logged and left to the per-request fallback."""
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


def run(host: str, port: int, workers: int, timeout: int = 60) -> None:
    # Set before the workers fork and load the model; an operator's own setting wins.
    os.environ.setdefault("OMP_NUM_THREADS", str(threads_per_worker(workers)))
    PortalServer(
        {
            "bind": f"{host}:{port}",
            "workers": max(1, workers),
            "timeout": timeout,
            "graceful_timeout": 30,
            "accesslog": "-",
            # Paths and status codes only: query strings can hold a person's words.
            "access_log_format": '%(h)s "%(m)s %(U)s" %(s)s %(b)s %(M)sms',
            "errorlog": "-",
        }
    ).run()
