"""Signing in and out."""

from __future__ import annotations

from flask import Blueprint, Flask, current_app, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_login import current_user, login_required, login_user, logout_user

from .security import safe_next

bp = Blueprint("auth", __name__)


def _login_limit() -> str:
    return str(current_app.config.get("LOGIN_RATE_LIMIT", "10/minute"))


@bp.route("/login", methods=["GET", "POST"])
def login() -> ResponseReturnValue:
    if current_user.is_authenticated:
        return redirect(url_for("memories.index"))
    error = None
    status = 200
    if request.method == "POST":
        email = request.form.get("email", "")[:320]
        password = request.form.get("password", "")[:1000]
        user = current_app.extensions["memory_runtime"].accounts.authenticate(email, password)
        if user is not None:
            login_user(user)
            current_app.logger.info("auth.login user=%s", user.id)
            home = url_for("staff.people") if user.role in ("staff", "admin") else url_for("memories.index")
            return redirect(safe_next(request.args.get("next"), home), 303)
        error = _("That e-mail and password do not match an account.")
        status = 401
    return render_template("auth/login.html", error=error), status


@bp.post("/logout")
@login_required
def logout() -> ResponseReturnValue:
    logout_user()
    flash(_("You are signed out."))
    return redirect(url_for("auth.login"), 303)


def limit_login(app: Flask) -> None:
    """Throttle password guessing: a few tries a minute per address (POSTs only).

    The limit wraps the view Flask actually calls: Flask-Limiter checks a decorated limit only when
    its wrapper runs, so decorating `login` after the blueprint was registered left sign-in unlimited.
    """
    limiter = app.extensions["portal_limiter"]
    app.view_functions["auth.login"] = limiter.limit(_login_limit, methods=["POST"])(app.view_functions["auth.login"])
