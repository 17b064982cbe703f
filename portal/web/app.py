"""The Flask application factory: config, runtime (engine, store, service), blueprints, errors.

Nothing connects to a database or loads a model at import time; `create_app` wires everything,
and the embedding model loads on the first request that needs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask

from portal.bootstrap import Runtime, build_runtime
from portal.config import load_config, secret_key_for

ROOT = Path(__file__).resolve().parents[2]


def create_app(config: dict[str, Any] | None = None, runtime: Runtime | None = None) -> Flask:
    """Build the app. `config` overrides fields of the environment's Config (tests use it);
    `runtime` may be handed in whole (tests with a fake embedder)."""
    app = Flask("portal", template_folder=str(ROOT / "templates"), static_folder=str(ROOT / "static"))
    settings = runtime.config if runtime else load_config(overrides=config)
    app.config.update(
        SECRET_KEY=secret_key_for(settings),
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        MAX_CONTENT_LENGTH=1024 * 1024,
    )
    app.extensions["memory_runtime"] = runtime or build_runtime(settings)

    from portal.web.health import bp as health_bp

    app.register_blueprint(health_bp)

    from portal.api import init_app as init_api

    init_api(app)

    from portal.cli import register

    register(app)
    return app


def runtime_of(app: Flask) -> Runtime:
    runtime: Runtime = app.extensions["memory_runtime"]
    return runtime
