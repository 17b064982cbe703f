"""The person's controls over the whole of their memory: pause, erase everything, download, language."""

from __future__ import annotations

import json

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_babel import ngettext
from flask_login import current_user, login_required

from portal.domain import export
from portal.domain.audit import AuditNote
from portal.domain.people import LANGUAGES
from portal.web.confirm import Ask, asks_first
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
    return _paused_answer(_("Resumed: the assistant may learn again."))


def _paused_answer(text: str) -> ResponseReturnValue:
    if is_htmx():
        panel = render_template("account/_pause.html", focus=True, **context())  # focus stays on the new button
        return panel + render_template("_toast.html", text=text, undo_id=None)
    flash(text)
    return redirect(url_for("memories.index"), 303)


@bp.route("/erase", methods=["GET", "POST"])
@login_required
def erase() -> ResponseReturnValue:
    error = None
    if request.method == "POST":
        typed = request.form.get("confirm", "").strip().lower()
        if typed == current_user.email.lower():
            counts = service().forget_all(current_user.place, audit=audit("person.erased_all"))
            flash(ngettext("Everything was erased: %(num)d memory, with every earlier version.",
                           "Everything was erased: %(num)d memories, with every earlier version.", counts["memories"]))
            return redirect(url_for("memories.index"), 303)
        error = _("Type your e-mail address exactly to confirm.")
    count = service().count(current_user.place)
    return render_template("account/erase.html", error=error, count=count, **context()), 422 if error else 200


@bp.get("/export.json")
@login_required
def export_json() -> ResponseReturnValue:
    data = export.document(service().export(current_user.place, audit=audit("person.exported")), current_user)
    return Response(
        json.dumps(data, ensure_ascii=False, indent=2), mimetype="application/json",
        headers={"Content-Disposition": 'attachment; filename="my-memories.json"'},
    )


@bp.get("/export.csv")
@login_required
def export_csv() -> ResponseReturnValue:
    data = export.document(service().export(current_user.place, audit=audit("person.exported")), current_user)
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
