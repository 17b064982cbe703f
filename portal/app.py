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
        from werkzeug.middleware.proxy_fix import ProxyFix

        # The client's address as the nearest trusted proxy saw it (the sign-in throttle counts by it).
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=settings.proxy_hops)  # type: ignore[method-assign]

    from portal.web.security import csrf, init_security

    init_security(app)

    from portal.web.health import bp as health_bp

    app.register_blueprint(health_bp)

    from portal.api import init_app as init_api

    api_blueprint = init_api(app).blueprint
    csrf.exempt(api_blueprint)  # bearer-token JSON API: no cookies, so no CSRF; nothing else is exempt

    from portal.web import account, admin, auth, memories, staff

    app.register_blueprint(auth.bp)
    app.register_blueprint(memories.bp)
    app.register_blueprint(account.bp)
    app.register_blueprint(staff.bp)
    app.register_blueprint(admin.bp)
    from portal.web.throttle import init_throttle

    init_throttle(app)
    app.jinja_env.globals["kind_label"] = kind_label
    app.register_error_handler(404, not_found)
    app.register_error_handler(403, refused)
    from flask_wtf.csrf import CSRFError

    app.register_error_handler(CSRFError, expired_form)

    from portal.cli import register

    register(app)
    return app


def kind_label(kind: str) -> str:
    from flask_babel import gettext as _

    labels = {"goal": _("Goal"), "preference": _("Preference"), "fact": _("Fact"), "person": _("Person"),
              "event": _("Event"), "feeling": _("Feeling")}
    return labels.get(kind, kind)


def not_found(exc: Exception) -> Any:
    from flask import render_template, request

    from portal.api import PREFIX
    from portal.api.problems import problem

    if request.path in ("/api", PREFIX) or request.path.startswith("/api/"):
        return problem(404, "not_found")  # every error under /api/ is problem+json, v1 or not
    return render_template("errors/404.html"), 404


def refused(exc: Exception) -> Any:
    """403 in the portal: a request from another site (portal.web.security.refuse_other_origins)."""
    from flask import render_template

    return render_template("errors/403.html"), 403


def expired_form(exc: Exception) -> Any:
    """A form whose CSRF token is missing, expired or from before signing in."""
    from flask import render_template
    from flask_babel import gettext as _

    message = _("This form has expired or was not sent from this page. Go back, reload the page and try again.")
    return render_template("errors/400.html", message=message), 400


def runtime_of(app: Flask) -> Runtime:
    runtime: Runtime = app.extensions["memory_runtime"]
    return runtime
