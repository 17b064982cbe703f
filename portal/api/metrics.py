"""Prometheus metrics for the API: request counts and latencies by route and status — ids and
codes only, never a path with a person's id in it, never text."""

from __future__ import annotations

import time

from flask import Blueprint, Flask, Response, g
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

REGISTRY = CollectorRegistry()
REQUESTS = Counter("memory_api_requests", "API requests by route and status", ["route", "status"], registry=REGISTRY)
LATENCY = Histogram(
    "memory_api_request_seconds", "API request latency by route", ["route"], registry=REGISTRY,
    buckets=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


def init_metrics(app: Flask, bp: Blueprint) -> None:
    @bp.before_request
    def _start() -> None:
        g.api_started = time.perf_counter()

    @bp.after_request
    def _count(response: Response) -> Response:
        route = g.get("api_route") or "unmatched"
        REQUESTS.labels(route, str(response.status_code)).inc()
        if "api_started" in g:
            LATENCY.labels(route).observe(time.perf_counter() - g.api_started)
        return response

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(generate_latest(REGISTRY), mimetype=CONTENT_TYPE_LATEST)
