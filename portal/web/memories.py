"""People's portal: see, search, add, edit in place, undo, pin, forget and trace their memories.

Every view turns the signed-in person into their place and calls one service function. Each
action works as a plain form POST answered by a 303 redirect; with htmx it answers the fragment
that changed (a row, the list) plus a toast, out of band.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Blueprint, flash, make_response, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_babel import ngettext
from flask_login import current_user, login_required

from portal.domain.apps import apps_of
from portal.domain.errors import InvalidArgument
from portal.domain.provenance import needs_writer
from portal.domain.types import Memory, Source
from portal.services.memory_service import MemoryService
from portal.web.confirm import Ask, asks_first
from portal.web.errors import refusals
from portal.web.render import is_htmx, page_or_fragment, runtime

bp = Blueprint("memories", __name__)
PAGE = 25


def service() -> MemoryService:
    return runtime().service


MAX_PINNED_SHOWN = 200  # the page size the service allows; a person pins a handful


def context() -> dict[str, Any]:
    """What every people's page shows around the list: pause state, the AI switch, and the person's
    request to delete their account while it waits for support."""
    svc = service()
    place = current_user.place
    return {"paused": svc.is_paused(place), "ai_on": svc.ai_enabled(place), "kinds": svc.options.kinds.kinds,
            "text_limit": svc.options.max_text_length, "erasure": runtime().support.pending_erasure(current_user)}


def toast(text: str, undo_id: str | None = None, in_row: bool = False) -> str:
    """The out-of-band toast of an htmx answer; `in_row`: the answer's row shows it (templates/_toast.html)."""
    return render_template("_toast.html", text=text, undo_id=undo_id, in_row=in_row)


def notice(text: str, undo_id: str | None = None) -> tuple[str, str]:
    """A toast for a row to show (its text and its kind, as _toast_body.html reads them)."""
    return text, f"undo:{undo_id}" if undo_id else "message"


@bp.get("/")
def home() -> ResponseReturnValue:
    if current_user.is_authenticated:
        return redirect(url_for("memories.index"))
    return redirect(url_for("auth.login"))


@bp.get("/memories")
@login_required
def index() -> ResponseReturnValue:
    svc = service()
    place = current_user.place
    kinds = svc.options.kinds.kinds
    kind = request.args.get("kind") or None
    kind = kind if kind in kinds else None
    query = request.args.get("q", "").strip()[:200]
    next_cursor = None
    if query:
        items = [h.memory for h in svc.recall(place, query, kinds=[kind] if kind else None, limit=50, mark=False,
                                              relevant_only=True)]
    else:
        # Pinned memories first (all of them, on the first page), then the others newest first,
        # page by page.
        kinds_wanted = [kind] if kind else None
        cursor = request.args.get("cursor") or None
        try:
            page = svc.list(place, kinds=kinds_wanted, limit=PAGE, cursor=cursor, pinned=False)
        except InvalidArgument:
            page, cursor = svc.list(place, kinds=kinds_wanted, limit=PAGE, pinned=False), None
        pinned = [] if cursor else svc.list(place, kinds=kinds_wanted, limit=MAX_PINNED_SHOWN, pinned=True).items
        items, next_cursor = pinned + page.items, page.next_cursor
    # "New" until the person says they have seen it (a POST): a GET changes nothing, so a prefetch,
    # a reload or a link preview cannot take the badge away unseen.
    new_ids = {m.id for m in items if m.channel == "background" and not m.seen}
    return page_or_fragment(
        "memories/index.html", "memories/_list.html", items=items, new_ids=new_ids, next_cursor=next_cursor,
        kind=kind, query=query, writers=svc.decisions.writers(place, [m.id for m in items if needs_writer(m)]), **context(),
    )


@bp.post("/memories/new/seen")
@login_required
def mark_seen() -> ResponseReturnValue:
    """The person has seen what was learnt in the background: the "New" badges go."""
    marked = service().mark_seen(current_user.place, request.form.getlist("id")[:PAGE * 2])
    text = ngettext("%(num)d memory marked as seen.", "%(num)d memories marked as seen.", marked)
    if is_htmx():
        return make_response(toast(text), 200, {"HX-Refresh": "true"})
    flash(text)
    return redirect(url_for("memories.index"), 303)


def add_refused(error: str) -> ResponseReturnValue:
    """The add form again with the reason and what was typed (htmx), or the list with it flashed."""
    if is_htmx():
        form = render_template("memories/_add_form.html", error=error, text=request.form.get("text", ""), **context())
        return form, 422, {"HX-Retarget": "#add-form", "HX-Reswap": "outerHTML"}
    flash(error, "error")
    return redirect(url_for("memories.index"), 303)


@bp.post("/memories")
@login_required
@refusals(add_refused)
def add() -> ResponseReturnValue:
    outcome = service().remember(
        current_user.place, request.form.get("text", ""), kind=request.form.get("kind") or None,
        importance=request.form.get("importance") or None, sources=(Source("portal"),), person_name=current_user.name,
    )
    text = _("Saved.") if not outcome.replaced_id else undo_for(_("Updated the memory it repeats."))
    if is_htmx():
        undo_id = outcome.memory.id if not outcome.reinforced else None
        row = render_template("memories/_row.html", memory=outcome.memory, new_ids=set(), notice=notice(text, undo_id))
        oob = render_template("memories/_add_form.html", oob=True, **context())
        return row + oob + toast(text, undo_id, in_row=True)
    flash(text, f"undo:{outcome.memory.id}" if not outcome.reinforced else "message")
    return redirect(url_for("memories.index"), 303)


@bp.get("/memories/<memory_id>")
@login_required
def row(memory_id: str) -> ResponseReturnValue:
    memory = service().get(current_user.place, memory_id)
    if is_htmx():
        response = make_response(render_template("memories/_row.html", memory=memory, new_ids=set(), focus="edit"))
    else:
        response = make_response(redirect(url_for("memories.index") + f"#m-{memory.id}"))
    response.headers["Vary"] = "HX-Request"  # one URL, two answers: caches must keep them apart
    return response


@bp.get("/memories/<memory_id>/edit")
@login_required
def edit(memory_id: str) -> ResponseReturnValue:
    memory = service().get(current_user.place, memory_id)
    return page_or_fragment("memories/edit.html", "memories/_edit_row.html", memory=memory, error=None,
                            text=memory.text, **context())


def save_refused(error: str, memory_id: str) -> ResponseReturnValue:
    """The edit form again, on the memory as it is now, with the reason and what was typed."""
    current = service().get(current_user.place, memory_id)
    return page_or_fragment("memories/edit.html", "memories/_edit_row.html", status=422, memory=current,
                            error=error, text=request.form.get("text", ""), **context())


@bp.post("/memories/<memory_id>")
@login_required
@refusals(save_refused)
def save(memory_id: str) -> ResponseReturnValue:
    revision = request.form.get("revision", "")
    outcome = service().update(
        current_user.place, memory_id, text=request.form.get("text", ""), kind=request.form.get("kind") or None,
        importance=request.form.get("importance") or None,
        expected_revision=_revision(revision), sources=(Source("portal"),),
        person_name=current_user.name,
    )
    undoable = outcome.memory.last_op in ("update", "replace")
    return done(outcome.memory, undo_for(_("Saved.")) if undoable else _("Saved."), undo=undoable)


def _revision(sent: str) -> int | None:
    """The revision the edit form was shown; None (no compare-and-set) for anything but a number:
    ASCII digits only, as many as a revision has ("²" is a digit to str.isdigit, not to int)."""
    return int(sent) if sent.isascii() and sent.isdigit() and len(sent) <= 9 else None


def undo_for(text: str) -> str:
    """A change's toast, saying how long it can be undone: the earlier wording is kept that long
    only (`Options.undo_window`), then erased."""
    seconds = int(service().options.undo_window.total_seconds())
    if seconds < 60:  # MEMORY_UNDO_SECONDS may shorten it below a minute
        return text + " " + ngettext("You can undo it for %(num)d second.", "You can undo it for %(num)d seconds.",
                                     seconds)
    return text + " " + ngettext("You can undo it for %(num)d minute.", "You can undo it for %(num)d minutes.",
                                 seconds // 60)


def row_refused(text: str, memory_id: str) -> ResponseReturnValue:
    # The Undo button swaps its row for the answer: give the row back with the reason, or it vanishes.
    return done(service().get(current_user.place, memory_id), text, undo=False)


@bp.post("/memories/<memory_id>/undo")
@login_required
@refusals(row_refused)
def undo(memory_id: str) -> ResponseReturnValue:
    outcome = service().undo(current_user.place, memory_id)
    if outcome.memory is None:
        return removed(memory_id, _("Undone: the memory is gone."))
    return done(outcome.memory, _("Undone."), undo=False)


def asking_to_forget(memory_id: str) -> Ask:
    memory = service().get(current_user.place, memory_id)
    return Ask(_("Forget this memory for good, with every earlier version?"), _("Forget it"),
               url_for("memories.index") + f"#m-{memory.id}", memory.text)


@bp.post("/memories/<memory_id>/forget")
@login_required
@asks_first(asking_to_forget)
def forget(memory_id: str) -> ResponseReturnValue:
    service().forget(current_user.place, memory_id)
    return removed(memory_id, _("Forgotten, with every earlier version."))


@bp.post("/memories/<memory_id>/pin")
@login_required
@refusals(row_refused)
def pin(memory_id: str) -> ResponseReturnValue:
    pinned = request.form.get("pinned", "1") == "1"
    outcome = service().pin(current_user.place, memory_id, pinned)
    return done(outcome.memory, _("Pinned: first in the assistant's picture of you.") if pinned else _("Unpinned."),
                undo=False, focus="pin")


@bp.get("/memories/<memory_id>/history")
@login_required
def history(memory_id: str) -> ResponseReturnValue:
    revisions = service().history(current_user.place, memory_id)
    memory = service().get(current_user.place, memory_id)
    uses = service().app_uses_of(current_user.place, memory_id)
    names = apps_of(runtime().api_keys.list(current_user.tenant_id))
    counts = service().conversation_counts(current_user.place, memory_id)
    apps = sorted((a for a in names.values() if a.name), key=lambda a: a.name.casefold())  # "one app only"
    return render_template("memories/history.html", memory=memory, revisions=revisions, uses=uses,
                           app_names={i: a.name for i, a in names.items()}, conversation_counts=counts, apps=apps,
                           tomorrow=(service().clock() + timedelta(days=1)).date().isoformat(), **context())


def asking_to_erase_history(memory_id: str) -> Ask:
    memory = service().get(current_user.place, memory_id)
    return Ask(_("Erase every earlier wording of this memory for good? Its current wording stays."),
               _("Erase earlier wordings"), url_for("memories.history", memory_id=memory.id), memory.text)


@bp.post("/memories/<memory_id>/history/erase")
@login_required
@asks_first(asking_to_erase_history)
def erase_history(memory_id: str) -> ResponseReturnValue:
    erased = service().erase_history(current_user.place, memory_id)
    flash(ngettext("%(num)d earlier wording erased.", "%(num)d earlier wordings erased.", erased))
    page = url_for("memories.history", memory_id=memory_id)
    if is_htmx():  # the whole page changes: htmx loads it (the message rides in the session)
        return make_response("", 204, {"HX-Redirect": page})
    return redirect(page, 303)


def done(memory: Memory, text: str, undo: bool, focus: str = "edit") -> ResponseReturnValue:
    """The changed row (htmx, keyboard focus back on the control that was used) or a redirect to it."""
    if is_htmx():
        # The toast is in the row, its Undo next to where keyboard focus is.
        undo_id = memory.id if undo else None
        return render_template("memories/_row.html", memory=memory, new_ids=set(), focus=focus,
                               notice=notice(text, undo_id)) + toast(text, undo_id, in_row=True)
    flash(text, f"undo:{memory.id}" if undo else "message")
    return redirect(url_for("memories.index") + f"#m-{memory.id}", 303)


def removed(memory_id: str, text: str) -> ResponseReturnValue:
    if is_htmx():  # what happened, in the row's place
        return render_template("memories/_gone.html", text=text) + toast(text, in_row=True)
    flash(text)
    return redirect(url_for("memories.index"), 303)

