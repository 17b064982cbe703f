"""People's portal: see, search, add, edit in place, undo, pin, forget and trace their memories.

Every view turns the signed-in person into their place and calls one service function. Each
action works as a plain form POST answered by a 303 redirect; with htmx it answers the fragment
that changed (a row, the list) plus a toast, out of band.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, current_app, flash, make_response, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_login import current_user, login_required

from portal.domain.catalog import message
from portal.domain.types import InvalidArgument, Memory, NotFound, Refused, Saved, Source
from portal.services.memories import MemoryService, Undone
from portal.web.render import is_htmx, page_or_fragment

bp = Blueprint("memories", __name__)
PAGE = 25


def service() -> MemoryService:
    svc: MemoryService = current_app.extensions["memory_runtime"].service
    return svc


def refusal_text(code: str) -> str:
    return message(f"refused.{code}", current_user.language) or message(f"refused.{code}", "en") or code


def context() -> dict[str, Any]:
    """What every people's page shows around the list: pause state and the AI switch."""
    svc = service()
    place = current_user.place
    return {"paused": svc.is_paused(place), "ai_on": svc.ai_enabled(place), "kinds": svc.options.kinds.kinds}


def toast(text: str, undo_id: str | None = None) -> str:
    return render_template("_toast.html", text=text, undo_id=undo_id)


def get_or_404(memory_id: str) -> Memory:
    try:
        return service().get(current_user.place, memory_id)
    except NotFound:
        abort(404)


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
        items = [h.memory for h in svc.recall(place, query, kinds=[kind] if kind else None, limit=50, mark=False)]
    else:
        try:
            page = svc.list(place, kinds=[kind] if kind else None, limit=PAGE, cursor=request.args.get("cursor") or None)
        except InvalidArgument:
            page = svc.list(place, kinds=[kind] if kind else None, limit=PAGE)
        items, next_cursor = page.items, page.next_cursor
    new_ids = {m.id for m in items if m.channel == "background" and not m.seen}
    response = page_or_fragment(
        "memories/index.html", "memories/_list.html", items=items, new_ids=new_ids, next_cursor=next_cursor,
        kind=kind, query=query, **context(),
    )
    if new_ids:
        svc.mark_seen(place, list(new_ids))  # shown once: "new" until the person has seen it
    return response


@bp.post("/memories")
@login_required
def add() -> ResponseReturnValue:
    outcome = service().remember(
        current_user.place, request.form.get("text", ""), kind=request.form.get("kind") or None,
        importance=request.form.get("importance") or None, sources=(Source("portal"),), person_name=current_user.name,
    )
    if isinstance(outcome, Refused):
        error = refusal_text(outcome.code)
        if is_htmx():
            form = render_template("memories/_add_form.html", error=error, text=request.form.get("text", ""), **context())
            return form, 422, {"HX-Retarget": "#add-form", "HX-Reswap": "outerHTML"}
        flash(error, "error")
        return redirect(url_for("memories.index"), 303)
    text = _("Saved.") if not outcome.replaced_id else _("Updated the memory it repeats.")
    if is_htmx():
        row = render_template("memories/_row.html", memory=outcome.memory, new_ids=set())
        oob = render_template("memories/_add_form.html", oob=True, **context())
        return row + oob + toast(text, outcome.memory.id if not outcome.reinforced else None)
    flash(text, f"undo:{outcome.memory.id}" if not outcome.reinforced else "message")
    return redirect(url_for("memories.index"), 303)


@bp.get("/memories/<memory_id>")
@login_required
def row(memory_id: str) -> ResponseReturnValue:
    memory = get_or_404(memory_id)
    if is_htmx():
        response = make_response(render_template("memories/_row.html", memory=memory, new_ids=set(), focus="edit"))
    else:
        response = make_response(redirect(url_for("memories.index") + f"#m-{memory.id}"))
    response.headers["Vary"] = "HX-Request"  # one URL, two answers: caches must keep them apart
    return response


@bp.get("/memories/<memory_id>/edit")
@login_required
def edit(memory_id: str) -> ResponseReturnValue:
    memory = get_or_404(memory_id)
    return page_or_fragment("memories/edit.html", "memories/_edit_row.html", memory=memory, error=None,
                            text=memory.text, **context())


@bp.post("/memories/<memory_id>")
@login_required
def save(memory_id: str) -> ResponseReturnValue:
    memory = get_or_404(memory_id)
    revision = request.form.get("revision", "")
    outcome = service().update(
        current_user.place, memory.id, text=request.form.get("text", ""), kind=request.form.get("kind") or None,
        importance=request.form.get("importance") or None,
        expected_revision=int(revision) if revision.isdigit() else None, sources=(Source("portal"),),
        person_name=current_user.name,
    )
    if isinstance(outcome, Refused):
        current = get_or_404(memory_id)
        return page_or_fragment("memories/edit.html", "memories/_edit_row.html", status=422, memory=current,
                                error=refusal_text(outcome.code), text=request.form.get("text", ""), **context())
    return done(outcome.memory, _("Saved."), undo=outcome.memory.last_op in ("update", "replace"))


@bp.post("/memories/<memory_id>/undo")
@login_required
def undo(memory_id: str) -> ResponseReturnValue:
    outcome = service().undo(current_user.place, memory_id)
    if isinstance(outcome, Refused):
        if outcome.code == "not_found":
            abort(404)
        # The Undo button swaps its row for the answer: give the row back with the reason, or it vanishes.
        return done(get_or_404(memory_id), refusal_text(outcome.code), undo=False)
    assert isinstance(outcome, Undone)
    if outcome.memory is None:
        return removed(memory_id, _("Undone: the memory is gone."))
    return done(outcome.memory, _("Undone."), undo=False)


@bp.post("/memories/<memory_id>/forget")
@login_required
def forget(memory_id: str) -> ResponseReturnValue:
    try:
        service().forget(current_user.place, memory_id)
    except NotFound:
        abort(404)
    return removed(memory_id, _("Forgotten, with every earlier version."))


@bp.post("/memories/<memory_id>/pin")
@login_required
def pin(memory_id: str) -> ResponseReturnValue:
    pinned = request.form.get("pinned", "1") == "1"
    outcome = service().pin(current_user.place, memory_id, pinned)
    if isinstance(outcome, Refused):
        abort(404)
    assert isinstance(outcome, Saved)
    return done(outcome.memory, _("Pinned: always in the assistant's picture of you.") if pinned else _("Unpinned."),
                undo=False, focus="pin")


@bp.get("/memories/<memory_id>/history")
@login_required
def history(memory_id: str) -> ResponseReturnValue:
    try:
        revisions = service().history(current_user.place, memory_id)
    except NotFound:
        abort(404)
    return render_template("memories/history.html", memory=get_or_404(memory_id), revisions=revisions, **context())


def done(memory: Memory, text: str, undo: bool, focus: str = "edit") -> ResponseReturnValue:
    """The changed row (htmx, keyboard focus back on the control that was used) or a redirect to it."""
    if is_htmx():
        return render_template("memories/_row.html", memory=memory, new_ids=set(), focus=focus) + toast(
            text, memory.id if undo else None
        )
    flash(text, f"undo:{memory.id}" if undo else "message")
    return redirect(url_for("memories.index") + f"#m-{memory.id}", 303)


def removed(memory_id: str, text: str) -> ResponseReturnValue:
    if is_htmx():
        response = make_response(toast(text))
        return response
    flash(text)
    return redirect(url_for("memories.index"), 303)

