"""Support staff console: find a person, access and erasure requests, the audit log.

Thin shells over `portal.services.support.Support`; role checks are server-side on every route (staff and
admins only; anyone else, or anything of another tenant, is "not found").
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_login import current_user

from portal.services.support import BREAK_GLASS_REASONS, Support
from portal.web.errors import refusals
from portal.web.labels import audit_actions, audit_actions_named
from portal.web.render import runtime
from portal.web.security import roles_required
from portal.web.spreadsheet import csv_download

bp = Blueprint("staff", __name__, url_prefix="/staff")
staff_only = roles_required("staff", "admin")
AUDIT_FILTERS = ("actor", "subject", "action", "from", "to")


def support() -> Support:
    return runtime().support


def back_to_person(text: str, user_id: str) -> ResponseReturnValue:
    """A refused action on a person's page: that page again, with the reason."""
    flash(text, "error")
    return redirect(url_for("staff.person", user_id=user_id), 303)


@bp.get("/")
@staff_only
def people() -> ResponseReturnValue:
    query = request.args.get("q", "")
    found = support().find(current_user, query) if query else []
    return render_template("staff/people.html", query=query, found=found)


@bp.get("/people/<user_id>")
@staff_only
def person(user_id: str) -> ResponseReturnValue:
    summary = support().summary(current_user, user_id)
    return render_template("staff/person.html", s=summary, reasons=BREAK_GLASS_REASONS, error=None)


@bp.post("/people/<user_id>/memories")
@staff_only
@refusals(back_to_person)
def open_memories(user_id: str) -> ResponseReturnValue:
    person, memories = support().open_memories(current_user, user_id, request.form.get("reason", ""),
                                               request.form.get("ticket"))
    return render_template("staff/memories.html", s=person, memories=memories)


@bp.post("/people/<user_id>/export")
@staff_only
@refusals(back_to_person)
def export(user_id: str) -> ResponseReturnValue:
    data = support().export(current_user, user_id, request.form.get("ticket"))
    return Response(json.dumps(data, ensure_ascii=False, indent=2), mimetype="application/json",
                    headers={"Content-Disposition": f'attachment; filename="access-{user_id}.json"'})


@bp.post("/people/<user_id>/erasure")
@staff_only
@refusals(back_to_person)
def log_erasure(user_id: str) -> ResponseReturnValue:
    received = _date(request.form.get("received", ""))
    created = support().log_erasure(current_user, user_id, request.form.get("ticket"), received)
    flash(_("Erasure request logged."))
    return redirect(url_for("staff.erasure", request_id=created.id), 303)


@bp.get("/erasure")
@staff_only
def erasures() -> ResponseReturnValue:
    return render_template("staff/erasures.html", views=support().requests(current_user))


def erasure_page(request_id: str, error: str | None = None) -> ResponseReturnValue:
    found = support().request_view(current_user, request_id)
    return render_template("staff/erasure.html", r=found.request, view=found, error=error,
                           everywhere=everywhere()), 422 if error else 200


@bp.get("/erasure/<request_id>")
@staff_only
def erasure(request_id: str) -> ResponseReturnValue:
    return erasure_page(request_id)


@bp.post("/erasure/<request_id>")
@staff_only
@refusals(lambda text, request_id: erasure_page(request_id, text))
def complete_erasure(request_id: str) -> ResponseReturnValue:
    support().complete_erasure(current_user, request_id, request.form.get("confirm", ""))
    flash(_("Erased: everything kept about this person in every organisation, and their account.")
          if everywhere() else _("Erased: everything kept about this person in their organisation, and their account."))
    return redirect(url_for("staff.erasure", request_id=request_id), 303)


def everywhere() -> bool:
    """Whether an erasure reaches every organisation (MEMORY_ERASURE_SCOPE=all) or the person's own."""
    return support().erasure_scope == "all"


@bp.get("/audit")
@staff_only
def audit() -> ResponseReturnValue:
    filters = _audit_filters()
    # A From after the To matches nothing: said so, not answered by an empty log.
    backwards = bool(filters["since"] and filters["until"] and filters["since"] >= filters["until"])
    entries = [] if backwards else support().audit_entries(current_user, **filters)
    # Only the filter fields go back into the page and the CSV link: url_for reads `_external`,
    # `_anchor` and the like as instructions, so raw query arguments must not reach it.
    shown = {k: request.args[k] for k in AUDIT_FILTERS if request.args.get(k)}
    return render_template("staff/audit.html", entries=entries, f=shown, names=support().actor_names(entries),
                           backwards=backwards, actions=sorted(set(audit_actions().values()), key=str.casefold),
                           app_names=support().app_names(current_user))


@bp.get("/audit.csv")
@staff_only
def audit_csv() -> ResponseReturnValue:
    rows = [[e.at.isoformat(), e.actor_id, e.actor_role, e.action, e.subject_owner_id, e.scope,
             json.dumps(e.counts) if e.counts else "", e.ticket or "", e.reason_code or ""]
            for e in support().audit_entries(current_user, **_audit_filters())]
    header = ["at", "actor_id", "actor_role", "action", "subject_owner_id", "scope", "counts", "ticket", "reason"]
    return csv_download(header, rows, "audit.csv")


def _audit_filters() -> dict[str, Any]:
    """The log's filters as the service takes them: people as typed (an id, an e-mail, a name); an
    action as typed (a code, a family) and the actions whose words, as the page shows them, hold it."""
    args = request.args
    until = _date(args.get("to", ""))
    action = " ".join(args.get("action", "").split())[:200]
    return {
        "actor_named": args.get("actor") or None, "subject_named": args.get("subject") or None,
        "action": (action, *audit_actions_named(action)) if action else None, "since": _date(args.get("from", "")),
        "until": _day_after(until),  # "to" includes that whole day
    }


def _day_after(day: datetime | None) -> datetime | None:
    """The start of the day after `day`; None (no end) for the last day there is (9999-12-31)."""
    if day is None:
        return None
    try:
        return day + timedelta(days=1)
    except OverflowError:
        return None


def _date(value: str) -> datetime | None:
    try:
        return datetime.strptime(value.strip()[:10], "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return None
