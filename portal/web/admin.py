"""Admin console: tenants and their AI switch, staff accounts, API keys (shown once)."""

from __future__ import annotations

from flask import Blueprint, abort, current_app, flash, make_response, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_login import current_user

from portal.adapters.sql.api_keys import PERMISSIONS
from portal.domain.types import NotFound
from portal.services.administration import Administration
from portal.services.support import Refusal
from portal.web.security import N_, roles_required

bp = Blueprint("admin", __name__, url_prefix="/admin")
admin_only = roles_required("admin")
# Marked with N_ so `pybabel extract` finds them; `refusal` translates them when shown.
REFUSALS = {
    "tenant_exists": N_("A tenant with that name exists already."),
    "invalid_name": N_("Give a name."),
    "invalid_role": N_("Choose staff or admin."),
    "invalid_email": N_("That is not an e-mail address."),
    "email_taken": N_("An account with that e-mail exists already."),
    "password_too_short": N_("The password needs at least 10 characters."),
    "unknown_tenant": N_("Choose a tenant."),
    "invalid_api_key": N_("Choose a tenant and at least one permission."),
}


def refusal(code: str) -> str:
    """The refusal in words, in the admin's language (codes are for logs and tests)."""
    return _(REFUSALS.get(code, code))


def administration() -> Administration:
    value: Administration = current_app.extensions["memory_runtime"].administration
    return value


def page(new_key: str | None = None, status: int = 200) -> ResponseReturnValue:
    runtime = current_app.extensions["memory_runtime"]
    tenants = runtime.tenants.all()
    names = {t.id: t.name for t in tenants}
    keys = administration().api_keys.list()
    return render_template("admin/index.html", tenants=tenants, names=names, staff=runtime.accounts.staff(),
                           keys=keys, permissions=PERMISSIONS, new_key=new_key), status


@bp.get("/")
@admin_only
def index() -> ResponseReturnValue:
    return page()


@bp.post("/tenants")
@admin_only
def create_tenant() -> ResponseReturnValue:
    try:
        administration().create_tenant(current_user, request.form.get("name", ""), request.form.get("ai") == "on")
        flash(_("Tenant created."))
    except Refusal as exc:
        flash(refusal(exc.code), "error")
    return redirect(url_for("admin.index"), 303)


@bp.post("/tenants/<tenant_id>/ai")
@admin_only
def switch_ai(tenant_id: str) -> ResponseReturnValue:
    try:
        administration().set_ai(current_user, tenant_id, request.form.get("enabled") == "1")
    except NotFound:
        abort(404)
    flash(_("The AI switch was changed."))
    return redirect(url_for("admin.index"), 303)


@bp.post("/staff")
@admin_only
def create_staff() -> ResponseReturnValue:
    form = request.form
    try:
        administration().create_staff(current_user, form.get("email", ""), form.get("name", ""),
                                      form.get("tenant", ""), form.get("role", "staff"), form.get("password", ""))
        flash(_("Account created."))
    except Refusal as exc:
        flash(refusal(exc.code), "error")
    return redirect(url_for("admin.index"), 303)


@bp.post("/keys")
@admin_only
def create_key() -> ResponseReturnValue:
    try:
        _key, token = administration().create_api_key(current_user, request.form.get("tenant", ""),
                                                      request.form.getlist("permission"), request.form.get("name"))
    except Refusal as exc:
        flash(refusal(exc.code), "error")
        return redirect(url_for("admin.index"), 303)
    response = make_response(page(new_key=token))
    # The one page that holds the key in clear: no browser or proxy may keep a copy.
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post("/keys/<key_id>/revoke")
@admin_only
def revoke_key(key_id: str) -> ResponseReturnValue:
    try:
        administration().revoke_api_key(current_user, key_id)
    except NotFound:
        abort(404)
    flash(_("Key revoked."))
    return redirect(url_for("admin.index"), 303)


@bp.post("/people/<user_id>/end-sessions")
@admin_only
def end_sessions(user_id: str) -> ResponseReturnValue:
    """Sign a person out everywhere (a stolen cookie, a lost device)."""
    try:
        administration().end_sessions(current_user, user_id)
    except NotFound:
        abort(404)
    flash(_("Every session of this account has ended."))
    return redirect(url_for("staff.person", user_id=user_id), 303)
