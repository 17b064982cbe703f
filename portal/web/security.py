"""Sign-in sessions, CSRF, the Content-Security-Policy and the person's language.

Nothing here decides what a person may do with their memories: that is the service's job. This
module only answers who is asking and keeps the browser side safe (no inline scripts, CSRF tokens
on every form and htmx request, cookies that scripts cannot read).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urljoin, urlparse

from flask import Flask, Response, abort, current_app, g, redirect, render_template, request, session, url_for
from flask.sessions import SecureCookieSessionInterface
from flask.typing import ResponseReturnValue
from flask_babel import Babel, get_locale
from flask_login import LoginManager, current_user
from flask_wtf.csrf import CSRFProtect

from portal.api.mem0_base import is_mem0_path, json_answer
from portal.inputs import is_valid_text

LANGUAGES = ("en", "fr")
# The session entry that carries a new API key, sealed, from its creation to the page that shows
# it once (portal.web.admin); dropped at every sign-in and sign-out (portal.web.auth).
NEW_API_KEY = "new_api_key"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)

csrf = CSRFProtect()
login_manager = LoginManager()
babel = Babel()


def init_security(app: Flask) -> None:
    csrf.init_app(app)
    login_manager.init_app(app)
    login_manager.login_view = "auth.login"
    login_manager.login_message = None  # the sign-in page says what it is for

    @login_manager.user_loader
    def load_user(session_id: str) -> Any:
        # None once the session's epoch has passed (signed out, password changed, sessions ended):
        # a cookie copied before then opens nothing, in any worker.
        return app.extensions["memory_runtime"].people.session(session_id)

    login_manager.unauthorized_handler(sign_in_first)

    # Translations live in portal/translations (the app's root path is the package).
    babel.init_app(app, locale_selector=choose_language)
    # base.html says which language the page is in (<html lang>), for screen readers and spelling.
    app.jinja_env.globals["get_locale"] = get_locale

    @app.after_request
    def headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        if request.is_secure:
            response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
        return response

    app.session_interface = TlsAwareSession()

    @app.before_request
    def refuse_other_origins() -> ResponseReturnValue | None:
        """A state-changing request from another site is refused even with a valid CSRF token:
        the Origin header (or, without one, the Referer) must be this site when the browser sends
        it. The JSON APIs (ours, mem0's) are for servers, with keys, and have no cookies to protect."""
        if request.method in ("GET", "HEAD", "OPTIONS") or request.path.startswith("/api/") or is_mem0_path(request.path):
            return None
        sent = request.headers.get("Origin") or request.headers.get("Referer")
        if not sent:
            return None  # a client that sends neither still needs the CSRF token
        if _host(sent) != _host(request.host_url):  # "null" (an opaque origin) included
            abort(403)
        return None

    @app.before_request
    def refuse_unkeepable_input() -> ResponseReturnValue | None:
        """One rule for text at the edge (portal.inputs): a query string or a form holding a
        NUL or a lone surrogate is a 400 before any view runs (the JSON API checks its own)."""
        if request.path.startswith("/api/"):
            return None
        fields = [*request.args.items(multi=True), *request.form.items(multi=True),
                  *((name, value) for name, value in (request.view_args or {}).items() if isinstance(value, str))]
        if all(is_valid_text(name) and is_valid_text(value) for name, value in fields):
            return None
        if is_mem0_path(request.path):  # mem0's clients read JSON only
            return json_answer({"detail": "a value holds a NUL or a lone surrogate", "code": "invalid_text"}, 400)
        return render_template("errors/400.html"), 400


class TlsAwareSession(SecureCookieSessionInterface):
    """The session cookie is Secure whenever the request came over TLS (directly or via a trusted
    proxy). Decided per request: setting SESSION_COOKIE_SECURE in app.config from a before_request
    hook raced between threads, so a plain-http request could strip Secure from a TLS one."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return request.is_secure or super().get_cookie_secure(app)


def sign_in_first() -> ResponseReturnValue:
    """Send a visitor who is not signed in (or whose session ended) to the sign-in page.

    htmx follows a redirect inside its request and would swap the whole sign-in page into a row;
    it gets HX-Redirect instead, so the window goes to sign in and comes back to the page it was on.
    A plain GET comes back to the page asked for; a POST is not replayed (its URL is no page).
    """
    fallback = url_for("memories.index")
    if request.headers.get("HX-Request") == "true":
        page = safe_next(request.headers.get("HX-Current-URL"), fallback)
        response = Response(status=401)
        response.headers["HX-Redirect"] = url_for("auth.login", next=page)
        return response
    if request.method != "GET":
        return redirect(url_for("auth.login"))
    return redirect(url_for("auth.login", next=safe_next(request.full_path.rstrip("?"), fallback)))


def _host(url: str) -> str:
    """The host and port a URL names. The scheme is left out on purpose: behind a TLS proxy whose
    X-Forwarded-Proto is not trusted the app sees http while the browser says https, and another
    site cannot have this site's host anyway."""
    parsed = urlparse(url)
    return parsed.netloc.lower() if parsed.scheme in ("http", "https") else ""


def rotate_csrf_token() -> None:
    """A new CSRF token from now on (at sign-in): one taken before it no longer works after."""
    session.pop("csrf_token", None)
    g.pop("csrf_token", None)


def choose_language() -> str:
    if getattr(current_user, "is_authenticated", False) and current_user.language in LANGUAGES:
        return str(current_user.language)
    return request.accept_languages.best_match(LANGUAGES) or "en"


def safe_next(target: str | None, fallback: str) -> str:
    """A `next` URL on this site only, as a path; anything else goes to `fallback`.

    The path is normalised first (dot segments resolved, as a browser resolves them): "/.//evil"
    would otherwise be answered as "//evil", which a browser reads as another host."""
    if not target or "\\" in target or any(c in target for c in "\r\n\t"):
        return fallback
    joined = urlparse(urljoin(request.host_url, target))
    if joined.scheme not in ("http", "https") or joined.netloc != urlparse(request.host_url).netloc:
        return fallback
    path = _resolved(joined.path)
    if not path.startswith("/") or path.startswith("//"):
        return fallback
    return path + (f"?{joined.query}" if joined.query else "")


def _resolved(path: str) -> str:
    """RFC 3986 §5.2.4: a path with its "." and ".." segments removed."""
    out: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if len(out) > 1:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if path.endswith(("/.", "/..")):
        out.append("")
    return "/".join(out)


def roles_required(*roles: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Only signed-in accounts with one of `roles`; anyone else gets 404, which reveals nothing."""

    def wrap(view: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(view)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if not current_user.is_authenticated:
                return current_app.login_manager.unauthorized()  # type: ignore[attr-defined]
            if current_user.role not in roles:
                abort(404)
            return view(*args, **kwargs)

        return guarded

    return wrap
