"""Signing in and out."""

from __future__ import annotations

import math

from flask import Blueprint, current_app, flash, redirect, render_template, request, session, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_login import current_user, login_required, login_user, logout_user

from portal.web.render import runtime
from portal.web.security import NEW_API_KEY, rotate_csrf_token, safe_next
from portal.web.throttle import DEVICE_COOKIE, DEVICE_DAYS, throttle

bp = Blueprint("auth", __name__)
# Where each role lands after signing in (unless it was on its way somewhere): admins on the
# administration, support staff on the console, people on their memories.
HOMES = {"admin": "admin.index", "staff": "staff.people"}


@bp.route("/login", methods=["GET", "POST"])
def login() -> ResponseReturnValue:
    if current_user.is_authenticated:
        return redirect(url_for(HOMES.get(current_user.role, "memories.index")))
    error = None
    status = 200
    if request.method == "POST":
        email = request.form.get("email", "")[:320]
        password = request.form.get("password", "")[:1000]
        device = request.cookies.get(DEVICE_COOKIE)
        wait = throttle().attempt(email, request.remote_addr, device)
        if wait is not None:  # past a limit: not even checked, the right password included
            return too_many(wait)
        user = runtime().people.sign_in(email, password)
        if user is not None:
            known = throttle().succeeded(email, request.remote_addr, device)
            rotate_csrf_token()
            session.pop(NEW_API_KEY, None)  # a key sealed for whoever used this browser before
            login_user(user)
            current_app.logger.info("auth.login user=%s", user.id)
            home = HOMES.get(user.role, "memories.index")
            answer = redirect(safe_next(request.args.get("next"), url_for(home)), 303)
            answer.set_cookie(DEVICE_COOKIE, known, max_age=DEVICE_DAYS * 86400, httponly=True, samesite="Lax",
                              secure=request.is_secure, path=url_for("auth.login"))
            return answer
        error = _("That e-mail and password do not match an account.")
        status = 401
    return render_template("auth/login.html", error=error), status


def too_many(wait: int) -> ResponseReturnValue:
    """429, as a page of the site in the person's language, with Retry-After."""
    minutes = max(1, math.ceil(wait / 60))
    page = render_template("errors/429.html", minutes=minutes)
    return page, 429, {"Retry-After": str(wait)}


@bp.post("/logout")
@login_required
def logout() -> ResponseReturnValue:
    runtime().people.sign_out(current_user)
    session.pop(NEW_API_KEY, None)
    logout_user()
    flash(_("You are signed out."))
    return redirect(url_for("auth.login"), 303)
