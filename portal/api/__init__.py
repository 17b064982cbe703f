"""The JSON API for the assistant backend, under /api/v1.

Thin shells over the service: the API key fixes the tenant (scope) and the permissions, the
person is the `owner_id` in the path, never taken from the body. Errors are problem+json with a
stable code; the OpenAPI 3.1 document is generated from the same declarations.
"""

from __future__ import annotations

from flask import Blueprint, Flask, request
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import HTTPException

from portal.api import forget_matching, mem0, mem0_memory, memories, meta, people, problems, tools
from portal.api.limits import init_limits
from portal.api.mem0_base import as_json, is_mem0_path
from portal.api.metrics import init_metrics
from portal.api.registry import Api

PREFIX = "/api/v1"


def build_api() -> tuple[Blueprint, Api]:
    bp = Blueprint("api", __name__, url_prefix=PREFIX)
    api = Api(bp, "memory portal API", "1.0.0")
    memories.register(api)
    people.register(api)
    forget_matching.register(api)
    tools.register(api)
    meta.register(api, bp, PREFIX)
    problems.install(bp)
    return bp, api


def init_app(app: Flask) -> Api:
    """Register the API blueprint, its rate limit, metrics and CSRF exemption."""
    bp, api = build_api()
    app.extensions["api_keys"] = app.extensions["memory_runtime"].api_keys
    app.extensions["api"] = api
    compatible = mem0.init_app(app)  # with mem0_memory's routes, which join the same blueprint
    assert mem0_memory.bp is compatible
    init_limits(app, bp, compatible)  # one limit per key, whichever API it calls
    init_metrics(app, bp)
    app.register_blueprint(bp)

    # Routing errors happen before a blueprint is chosen: answer them as problems under /api.
    def routing_error(exc: HTTPException) -> ResponseReturnValue:
        if request.path == PREFIX or request.path.startswith(PREFIX + "/"):
            return problems.http_problem(exc)
        if is_mem0_path(request.path):
            return as_json(problems.http_problem(exc))
        return exc

    app.register_error_handler(405, routing_error)
    return api
