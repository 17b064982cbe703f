"""Admin console: tenants and their AI switch, staff accounts, API keys (shown once)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from flask import Blueprint, abort, current_app, flash, make_response, redirect, render_template, request, session, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_login import current_user

from portal.domain.errors import NotFound
from portal.domain.people import PERMISSIONS
from portal.services.administration import Administration
from portal.web.confirm import Ask, asks_first
from portal.web.errors import refusals
from portal.web.render import runtime
from portal.web.security import NEW_API_KEY, roles_required

bp = Blueprint("admin", __name__, url_prefix="/admin")
admin_only = roles_required("admin")


def back_to_index(text: str, **_arguments: str) -> ResponseReturnValue:
    """A refused change: the admin page again, with the reason."""
    flash(text, "error")
    return redirect(url_for("admin.index"), 303)


def administration() -> Administration:
    return runtime().administration


def page(new_key: str | None = None, status: int = 200) -> ResponseReturnValue:
    seen = administration().overview(current_user)
    names = {t.id: t.name for t in seen.tenants}
    return render_template("admin/index.html", tenants=seen.tenants, names=names, staff=seen.staff, keys=seen.keys,
                           permissions=PERMISSIONS, new_key=new_key), status


@bp.get("/")
@admin_only
def index() -> ResponseReturnValue:
    return page()


@bp.post("/tenants")
@admin_only
@refusals(back_to_index)
def create_tenant() -> ResponseReturnValue:
    administration().create_tenant(current_user, request.form.get("name", ""), request.form.get("ai") == "on")
    flash(_("Tenant created."))
    return redirect(url_for("admin.index"), 303)


@bp.post("/tenants/<tenant_id>/ai")
@admin_only
def switch_ai(tenant_id: str) -> ResponseReturnValue:
    administration().set_ai(current_user, tenant_id, request.form.get("enabled") == "1")
    flash(_("The AI switch was changed."))
    return redirect(url_for("admin.index"), 303)


@bp.post("/tenants/<tenant_id>/learnt-days")
@admin_only
def set_learnt_days(tenant_id: str) -> ResponseReturnValue:
    """The tenant's default for how long what the assistant learns is kept (empty or 0: never)."""
    raw = request.form.get("days", "")
    if raw and not (raw.isascii() and raw.isdigit() and len(raw) <= 5):
        abort(400)
    administration().set_learnt_days(current_user, tenant_id, int(raw) if raw else None)
    flash(_("The default for what the assistant learns was changed."))
    return redirect(url_for("admin.index"), 303)


@bp.post("/staff")
@admin_only
@refusals(back_to_index)
def create_staff() -> ResponseReturnValue:
    form = request.form
    administration().create_staff(current_user, form.get("email", ""), form.get("name", ""),
                                  form.get("tenant", ""), form.get("role", "staff"), form.get("password", ""))
    flash(_("Account created."))
    return redirect(url_for("admin.index"), 303)


def staff_asking(question: str, label: str) -> Callable[..., Ask]:
    """Asks about a staff account only: one the change would refuse (a person's, one's own) is
    refused at once, with no page asking to confirm it."""
    def asking(user_id: str) -> Ask:
        account = administration().staff_account(current_user, user_id)
        return Ask(question, label, url_for("admin.index"), account.email)
    return asking


@bp.post("/staff/<user_id>/disable")
@admin_only
@refusals(back_to_index)
@asks_first(lambda user_id: staff_asking(_("Disable this account? It cannot sign in until it gets a new password."),
                                         _("Disable"))(user_id))  # translated per request, not at import
def disable_staff(user_id: str) -> ResponseReturnValue:
    administration().disable_staff(current_user, user_id)
    flash(_("The account is disabled and signed out everywhere."))
    return redirect(url_for("admin.index"), 303)


@bp.post("/staff/<user_id>/remove")
@admin_only
@refusals(back_to_index)
@asks_first(lambda user_id: staff_asking(_("Remove this account for good?"), _("Remove"))(user_id))
def remove_staff(user_id: str) -> ResponseReturnValue:
    administration().remove_staff(current_user, user_id)
    flash(_("The account was removed."))
    return redirect(url_for("admin.index"), 303)


@bp.post("/staff/<user_id>/password")
@admin_only
@refusals(back_to_index)
def set_staff_password(user_id: str) -> ResponseReturnValue:
    administration().reset_password(current_user, user_id, request.form.get("password", ""))
    flash(_("The new password is set; the account's sessions have ended."))
    return redirect(url_for("admin.index"), 303)


@bp.post("/keys")
@admin_only
@refusals(back_to_index)
def create_key() -> ResponseReturnValue:
    _key, token = administration().create_api_key(current_user, request.form.get("tenant", ""),
                                                  request.form.getlist("permission"), request.form.get("name"))
    # Post/redirect/get: the key crosses the redirect sealed in the session (the cookie holds
    # only ciphertext) and is shown once by the GET; a reload of that page cannot make another.
    sealed = json.dumps({"user": current_user.id, "epoch": current_user.session_epoch, "token": token})
    session[NEW_KEY] = sealer().encrypt(sealed.encode()).decode()
    return redirect(url_for("admin.new_key"), 303)


@bp.get("/keys/new")
@admin_only
def new_key() -> ResponseReturnValue:
    """The new key, once: taken out of the session as it is shown, and only to the admin who made
    it in the same sign-in (the session is a cookie: the key must not wait in it for whoever
    signs in next on that browser)."""
    sealed = session.pop(NEW_KEY, None)
    try:
        opened = json.loads(sealer().decrypt(sealed.encode(), ttl=SEALED_SECONDS)) if isinstance(sealed, str) else {}
    except (InvalidToken, ValueError):  # too old, sealed with another secret key, or not ours
        opened = {}
    mine = opened.get("user") == current_user.id and opened.get("epoch") == current_user.session_epoch
    token = opened.get("token") if mine and isinstance(opened.get("token"), str) else None
    if token is None:
        return redirect(url_for("admin.index"), 303)
    response = make_response(page(new_key=token))
    # The one page that holds the key in clear: no browser or proxy may keep a copy.
    response.headers["Cache-Control"] = "no-store"
    return response


NEW_KEY = NEW_API_KEY
SEALED_SECONDS = 120


def sealer() -> Fernet:
    """Fernet with a key of its own derived from the app's secret key (HKDF-SHA256)."""
    secret = current_app.config["SECRET_KEY"]
    raw = secret.encode() if isinstance(secret, str) else bytes(secret)
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"portal: api key shown once").derive(raw)
    return Fernet(base64.urlsafe_b64encode(derived))


def asking_to_revoke(key_id: str) -> Ask:
    key = next((k for k in administration().overview(current_user).keys if k.id == key_id and not k.revoked_at), None)
    if key is None:
        raise NotFound()
    return Ask(_("Revoke this key?"), _("Revoke"), url_for("admin.index"), f"{key.prefix}… {key.name or ''}".strip())


def asking_to_end_sessions(user_id: str) -> Ask:
    person = runtime().accounts.get(user_id)
    if person is None:
        raise NotFound()
    back = url_for("admin.index") if person.role in ("staff", "admin") else url_for("staff.person", user_id=user_id)
    return Ask(_("Sign this account out everywhere?"), _("End every session"), back, person.email)


@bp.post("/keys/<key_id>/revoke")
@admin_only
@asks_first(lambda key_id: asking_to_revoke(key_id))
def revoke_key(key_id: str) -> ResponseReturnValue:
    administration().revoke_api_key(current_user, key_id)
    flash(_("Key revoked."))
    return redirect(url_for("admin.index"), 303)


@bp.post("/people/<user_id>/end-sessions")
@admin_only
@asks_first(lambda user_id: asking_to_end_sessions(user_id))
def end_sessions(user_id: str) -> ResponseReturnValue:
    """Sign a person out everywhere (a stolen cookie, a lost device)."""
    administration().end_sessions(current_user, user_id)
    flash(_("Every session of this account has ended."))
    return redirect(url_for("staff.person", user_id=user_id), 303)
