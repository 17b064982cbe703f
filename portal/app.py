"""The composition root: the runtime (engine, stores, services) and the Flask app around it — the
portal's blueprints, the JSON API, security, throttling and the one error handler per family.

Nothing connects to a database or loads a model at import time; `create_app` wires everything,
and the embedding model loads on the first request that needs it. The command line is its own
shell (portal.cli): `portal.create_app`, the app `flask --app portal` finds, adds its commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from portal import api
from portal.bootstrap import Runtime, build_runtime
from portal.config import load_config, secret_key_for
from portal.web import account, admin, auth, decisions, errors, forget_about, health, labels, memories, portrait, staff
from portal.web.render import kind_label
from portal.web.security import csrf, init_security
from portal.web.throttle import init_throttle

ROOT = Path(__file__).resolve().parents[1]


def create_app(config: dict[str, Any] | None = None, runtime: Runtime | None = None) -> Flask:
    """Build the app. `config` overrides fields of the environment's Config (tests use it);
    `runtime` may be handed in whole (tests with a fake embedder)."""
    app = Flask("portal", template_folder=str(ROOT / "templates"), static_folder=str(ROOT / "static"))
    config = dict(config or {})
    # Upper-case keys are Flask settings (API_RATE_LIMIT, WTF_CSRF_ENABLED, ...); the rest override
    # fields of the environment's Config.
    flask_settings = {k: config.pop(k) for k in list(config) if k.isupper()}
    settings = runtime.config if runtime else load_config(overrides=config)
    app.config.update(
        SECRET_KEY=secret_key_for(settings),
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        MAX_CONTENT_LENGTH=1024 * 1024,
    )
    app.config.update(flask_settings)
    # "/people/ada%2F/..." must not be merged into "/people/ada/...": an id is never rewritten.
    app.url_map.merge_slashes = False
    app.extensions["memory_runtime"] = runtime or build_runtime(settings)
    if settings.proxy_hops:
        # The client's address as the nearest trusted proxy saw it (the sign-in throttle counts by it).
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=settings.proxy_hops)  # type: ignore[method-assign]

    init_security(app)
    app.register_blueprint(health.bp)
    api_blueprint = api.init_app(app).blueprint
    csrf.exempt(api_blueprint)  # bearer-token JSON API: no cookies, so no CSRF; nothing else is exempt
    csrf.exempt(api.mem0.bp)  # mem0's routes: the same keys, no cookies either
    for blueprint in (auth.bp, memories.bp, forget_about.bp, decisions.bp, portrait.bp, account.bp, staff.bp, admin.bp):
        app.register_blueprint(blueprint)
    init_throttle(app)
    app.jinja_env.globals["kind_label"] = kind_label
    labels.install(app)  # the codes' labels and the dates, in the page's language
    errors.install(app)
    return app
