"""Forget everything about … (issue 29, item 4): the person types a subject, sees every memory about
it with a ticked box, unticks what should stay and confirms; exactly the previewed memories still
ticked are forgotten (portal.services.subject).

Three plain forms, no JavaScript needed: the subject (GET shows it), its preview (a POST answered by
a page, so the subject travels in no address or log) and the confirmation (a POST answered by a 303
to the list, with a toast saying how many went and how many changed since and stayed). Every form
carries its CSRF token, as all of the portal's do.
"""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import ngettext
from flask_login import current_user, login_required

from portal.domain.errors import InvalidArgument
from portal.domain.subjects import MAX_SUBJECT, PREVIEW_MAX
from portal.services.subject import Preview
from portal.web.account import audit
from portal.web.errors import refusal_text, refusals
from portal.web.memories import context, service

bp = Blueprint("forget_about", __name__)


def page(subject: str = "", error: str | None = None, status: int = 200, preview: Preview | None = None
         ) -> ResponseReturnValue:
    return render_template("memories/forget_about.html", subject=subject[:MAX_SUBJECT], error=error, preview=preview,
                           subject_limit=MAX_SUBJECT, **context()), status


@bp.get("/memories/forget-about")
@login_required
def start() -> ResponseReturnValue:
    """The subject's form (filled with the list's search, when the person came from one)."""
    return page(request.args.get("q", "").strip())


@bp.post("/memories/forget-about/preview")
@login_required
def preview() -> ResponseReturnValue:
    """Every memory the subject matches, each ticked, and the button that forgets the ticked ones."""
    subject = request.form.get("subject", "")
    try:
        found = service().preview_forget_matching(current_user.place, subject)
    except InvalidArgument as exc:
        return page(subject, refusal_text(exc.code), 422)
    return page(subject, preview=found)


def refused(text: str) -> ResponseReturnValue:
    """A preview too old, or an id it did not list: the subject's form again, saying so."""
    return page(request.form.get("subject", ""), text, 422)


@bp.post("/memories/forget-about")
@login_required
@refusals(refused)
def confirm() -> ResponseReturnValue:
    """Forget the ticked memories of the preview; back to the list with what happened."""
    done = service().forget_matching(current_user.place, request.form.get("preview"),
                                     request.form.getlist("ids")[:PREVIEW_MAX + 1], audit=audit("person.forgot_matching"))
    said = ngettext("%(num)d memory forgotten, with every earlier version.",
                    "%(num)d memories forgotten, with every earlier version.", len(done.forgotten))
    if done.changed:
        said += " " + ngettext("%(num)d changed since the preview and was kept: preview again to forget it.",
                               "%(num)d changed since the preview and were kept: preview again to forget them.",
                               len(done.changed))
    flash(said)
    return redirect(url_for("memories.index"), 303)
