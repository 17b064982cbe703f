"""The person's controls over the whole of their memory: pause, erase everything, download, language."""

from __future__ import annotations

import base64
import binascii
import json

from flask import Blueprint, Response, abort, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_babel import ngettext
from flask_login import current_user, login_required

from portal.domain import export
from portal.domain.apps import App, apps_of
from portal.domain.audit import AuditNote
from portal.domain.errors import Refused
from portal.domain.imports import MAX_ITEMS, Choices, parse
from portal.domain.people import LANGUAGES
from portal.web.confirm import Ask, asks_first
from portal.web.errors import refusal_text
from portal.web.memories import context, service
from portal.web.render import is_htmx, runtime
from portal.web.spreadsheet import csv_download

bp = Blueprint("account", __name__, url_prefix="/account")
def audit(action: str) -> AuditNote:
    """The person's own privacy actions go in the content-free audit log too, written by the
    service in the same transaction as the action."""
    return AuditNote(current_user.id, current_user.role, action)


@bp.post("/pause")
@login_required
def pause() -> ResponseReturnValue:
    service().pause(current_user.place, audit=audit("person.paused"))
    return _paused_answer(_("Paused: the assistant learns nothing new until you resume."))


@bp.post("/resume")
@login_required
def resume() -> ResponseReturnValue:
    service().resume(current_user.place, audit=audit("person.resumed"))
    if not service().ai_enabled(current_user.place):  # it learns nothing from conversations until the AI is back
        return _paused_answer(_("Resumed: apps may save memories about you again."))
    return _paused_answer(_("Resumed: the assistant may learn again."))


def _paused_answer(text: str) -> ResponseReturnValue:
    """The pause panel and the add form as they are now (the form is disabled while paused), and
    keyboard focus on the control the person will want next: the panel's new button, or the text
    field when they resumed from the add form to add a memory."""
    then = request.form.get("then")
    to_add = then == "add"
    if is_htmx():
        panel = render_template("account/_pause.html", focus=not to_add, **context())
        form = render_template("memories/_add_form.html", oob=True, keep_focus=not to_add,
                               text=request.form.get("text", "")[:service().options.max_text_length], **context())
        return panel + form + render_template("_toast.html", text=text, undo_id=None)
    flash(text)
    if then == "import":  # resumed from the Import page, which said it was paused: back to it
        return redirect(url_for("account.import_memories"), 303)
    return redirect(url_for("memories.index") + ("#add-form" if to_add else ""), 303)


@bp.route("/erase", methods=["GET", "POST"])
@login_required
def erase() -> ResponseReturnValue:
    error = None
    if request.method == "POST":
        typed = request.form.get("confirm", "").strip().lower()
        if typed == current_user.email.lower():
            counts = service().forget_all(current_user.place, audit=audit("person.erased_all"))
            flash(ngettext("Everything was erased: %(num)d memory, with every earlier version.",
                           "Everything was erased: %(num)d memories, with every earlier version.", counts["memories"])
                  if counts["memories"] else _("Everything was erased: there was no memory to erase."))
            return redirect(url_for("memories.index"), 303)
        error = _("Type your e-mail address exactly to confirm.")
    count = service().count(current_user.place)
    return render_template("account/erase.html", error=error, count=count, **context()), 422 if error else 200


@bp.get("/export.json")
@login_required
def export_json() -> ResponseReturnValue:
    data = export.document(service().export(current_user.place, audit=audit("person.exported")), current_user,
                           tenant_apps())
    return Response(
        json.dumps(data, ensure_ascii=False, indent=2), mimetype="application/json",
        headers={"Content-Disposition": 'attachment; filename="my-memories.json"'},
    )


@bp.get("/export.csv")
@login_required
def export_csv() -> ResponseReturnValue:
    data = export.document(service().export(current_user.place, audit=audit("person.exported")), current_user,
                           tenant_apps())
    return csv_download(export.CSV_HEADER, export.csv_rows(data), "my-memories.csv")


@bp.post("/language")
@login_required
def language() -> ResponseReturnValue:
    chosen = request.form.get("language", "en")
    if chosen in LANGUAGES:  # anything else: the page as it was, in the language it was
        runtime().people.set_language(current_user, chosen)
    return redirect(request.referrer if request.referrer and request.referrer.startswith(request.host_url)
                    else url_for("memories.index"), 303)


@bp.post("/delete")
@login_required
@asks_first(lambda: Ask(_("Ask support to delete your account and everything kept about you?"),
                        _("Ask to delete my account"), url_for("memories.index")))
def ask_deletion() -> ResponseReturnValue:
    """"Ask to delete my account": an erasure request support staff complete within the month."""
    runtime().support.person_asks_erasure(current_user)
    flash(_("Your request to delete your account was sent. Support will complete it within a month."))
    if is_htmx():  # asked through hx-confirm: htmx loads the page that shows the flash
        return Response(status=204, headers={"HX-Redirect": url_for("memories.index")})
    return redirect(url_for("memories.index"), 303)


# The portal's import carries the file from the preview to the confirmation in the form itself
# (base64, a third larger), with the person's choice for each memory (about 35 bytes each, 5,000
# at most), under the app's 1 MB request limit.
PORTAL_IMPORT_MAX = 600 * 1024


@bp.route("/import", methods=["GET", "POST"])
@login_required
def import_memories() -> ResponseReturnValue:
    """Import a file: our export, mem0's JSON or one memory per line. The first POST previews what
    would be added (and what is already kept); the confirmed one adds it, with one Undo."""
    if request.method == "GET":
        return render_template("account/import.html", preview=None, error=None, **context())
    sealed = request.form.get("content")
    raw = _unbase64(sealed) if sealed is not None else _uploaded()
    try:
        if raw is None:
            raise Refused("import_unreadable")
        if len(raw) > PORTAL_IMPORT_MAX:
            raise Refused("import_too_large_here")
        parsed = parse(raw)
        confirmed = sealed is not None and request.form.get("confirmed") == "1"
        done = service().import_parsed(current_user.place, parsed, dry_run=not confirmed, person_name=current_user.name,
                                       audit=audit("person.imported") if confirmed else None,
                                       choices=_choices() if confirmed else None)
    except Refused as exc:
        return render_template("account/import.html", preview=None, error=refusal_text(exc.code), **context()), 422
    if not confirmed:
        refused = {refusal_text(code): n for code, n in sorted(done.refused.items())}
        return render_template("account/import.html", preview=done, refused=refused, error=None,
                               content=base64.b64encode(raw).decode(), **context())
    if not done.new:  # nothing to take back: no Undo
        flash(_("No memory imported: the file holds nothing new."))
        return redirect(url_for("memories.index"), 303)
    flash(ngettext("%(num)d memory imported.", "%(num)d memories imported.", done.new), f"import:{done.batch}")
    return redirect(url_for("memories.index"), 303)


@bp.post("/import/<batch>/undo")
@login_required
def undo_import(batch: str) -> ResponseReturnValue:
    """Take back one import, whole."""
    taken = service().undo_import(current_user.place, batch, audit=audit("person.import_undone"))
    flash(ngettext("%(num)d imported memory taken back.", "%(num)d imported memories taken back.", taken))
    return redirect(url_for("memories.index"), 303)


# ---------------------------------------------------------------------------- connected apps

CONTROL_ACTIONS = {"pause": ("paused", "person.app_paused"), "block": ("blocked", "person.app_blocked"),
                   "resume": (None, "person.app_resumed")}


def tenant_apps() -> dict[str, App]:
    """The apps of the person's tenant, by id (from its keys, revoked ones included)."""
    return apps_of(runtime().api_keys.list(current_user.tenant_id))


@bp.get("/apps")
@login_required
def apps() -> ResponseReturnValue:
    """Each app that used the person's memory: when last, what it did, and their control over it."""
    found = service().connected_apps(current_user.place, tenant_apps())
    return render_template("account/apps.html", apps=found, **context())


@bp.post("/apps/<app_id>")
@login_required
def control_app(app_id: str) -> ResponseReturnValue:
    """Pause learning (the app may still read), block (it can neither read nor write) or resume."""
    chosen = CONTROL_ACTIONS.get(request.form.get("action", ""))
    known = tenant_apps()
    if chosen is None or app_id not in known:
        abort(404 if chosen is not None else 400)
    state, action = chosen
    service().set_app_control(current_user.place, app_id, state, audit=audit(action))
    name = known[app_id].name
    text = {"paused": _("%(app)s may still read your memory but learns nothing new.", app=name),
            "blocked": _("%(app)s can no longer read or change your memory.", app=name),
            None: _("%(app)s may use your memory again.", app=name)}[state]
    flash(text)
    return redirect(url_for("account.apps") + f"#app-{app_id}", 303)


def _uploaded() -> bytes:
    """The uploaded file's first bytes (one more than may be imported); its spool file closed."""
    upload = request.files.get("file")
    if upload is None:
        return b""
    try:
        return upload.read(PORTAL_IMPORT_MAX + 1)
    finally:
        upload.close()


def _choices() -> Choices:
    """The preview's choices: each memory it listed keeps the kind its select (`kind-N`, always
    sent) says, or is left out when its box (`take`, value N) was unticked. Anything but a memory's
    place in the file is ignored."""
    kinds = {int(key[5:]): value for key, value in list(request.form.items())[:3 * MAX_ITEMS]
             if key.startswith("kind-") and _is_place(key[5:])}
    taken = {int(v) for v in request.form.getlist("take")[:MAX_ITEMS] if _is_place(v)}
    return Choices({n: kind for n, kind in kinds.items() if kind}, frozenset(set(kinds) - taken))


def _is_place(value: str) -> bool:
    return value.isascii() and value.isdigit() and len(value) <= 4 and int(value) < MAX_ITEMS


def _unbase64(value: str) -> bytes | None:
    try:
        return base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error):
        return None
