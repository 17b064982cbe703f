"""What a person decides about their memories besides the words (issue 29, items 1 to 3), in the
portal: the Recent conversations page (which memories each conversation of an app was given, never
a word of it), "don't use this" for every app or one app, "forget after" on a memory, and how long
what the assistant learns is kept.

Thin views over `MemoryService` (portal.services.decisions). Every action is a plain form POST
answered by a 303 redirect with a toast; with htmx, the list row's toggle answers its row.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_login import current_user, login_required

from portal.domain.apps import App
from portal.domain.decisions import AFTER, after
from portal.domain.errors import InvalidArgument
from portal.domain.provenance import APP, ASSISTANT, OPERATOR_IMPORT, OWN_IMPORT, PORTAL, SAID, needs_writer, written_by
from portal.domain.types import Memory
from portal.web.account import audit, tenant_apps
from portal.web.errors import refusal_text
from portal.web.labels import day
from portal.web.memories import context, notice, service, toast
from portal.web.render import is_htmx

bp = Blueprint("decisions", __name__)
CONVERSATIONS_SHOWN = 50


def apps_by_id() -> dict[str, App]:
    """The tenant's apps, read once per request (badges name them on every row)."""
    if "tenant_apps" not in g:
        g.tenant_apps = tenant_apps()
    found: dict[str, App] = g.tenant_apps
    return found


@bp.app_template_global()
def app_name(app_id: str) -> str:
    """An app's name as the person knows it (from its keys), or words saying it is gone."""
    known = apps_by_id().get(app_id)
    return known.name if known is not None and known.name else _("an app that no longer exists")


@bp.app_template_global()
def written_by_words(memory: Memory, writers: dict[str, str] | None = None) -> str:
    """Who wrote a memory, in words (portal.domain.provenance): an app by its name, from its
    recorded use (`writers`, read once for a whole list; else read for this row alone)."""
    if not isinstance(writers, dict):  # None, or no `writers` in the template's context
        writers = service().decisions.writers(current_user.place, [memory.id]) if needs_writer(memory) else {}
    who = written_by(memory, app_wrote=memory.id in writers)
    if who != APP:
        return {PORTAL: _("You wrote it"), SAID: _("You said it"), OWN_IMPORT: _("You imported it"),
                OPERATOR_IMPORT: _("Imported by your organisation"), ASSISTANT: _("The assistant learnt it")}[who]
    known = apps_by_id().get(writers.get(memory.id, ""))
    return _("Saved by %(app)s", app=known.name) if known is not None and known.name else _("Saved by an app")


@bp.app_template_global()
def named_apps(app_ids: tuple[str, ...]) -> str:
    """Apps' names in one phrase ("Support bot, Claude Desktop")."""
    return ", ".join(app_name(a) for a in app_ids)


@bp.app_template_global()
def learnt_setting() -> tuple[int | None, int | None]:
    """The signed-in person's "forget what the assistant learns after" and their organisation's."""
    return service().decisions.learnt_days(current_user.place)


@bp.get("/memories/conversations")
@login_required
def conversations() -> ResponseReturnValue:
    """The person's recent conversations with their apps: per conversation, the memories the
    assistant was given (their words, which the person keeps), never the conversation's words."""
    found = service().conversations(current_user.place, CONVERSATIONS_SHOWN)
    return render_template("memories/conversations.html", conversations=found, **context())


def back_to(memory_id: str, section: str = "decisions") -> str:
    """Where the form sends the person back to (its `back`): the conversations, the memory's page
    at the form's `section`, or the list at the memory's row; never an address the form names."""
    where = request.form.get("back")
    if where == "conversations":
        return url_for("decisions.conversations")
    if where == "memory":
        return url_for("memories.history", memory_id=memory_id) + f"#{section}"
    return url_for("memories.index") + f"#m-{memory_id}"


@bp.post("/memories/<memory_id>/use")
@login_required
def use(memory_id: str) -> ResponseReturnValue:
    """"Don't use this" (use=0) or "Let apps use this" (use=1), for every app or the app named."""
    wanted = request.form.get("use")
    if wanted not in ("0", "1"):
        abort(400)
    app_id = request.form.get("app") or None
    if app_id is not None and app_id not in apps_by_id():
        abort(404)
    try:
        memory = service().set_use(current_user.place, memory_id, wanted == "1", app_id,
                                   audit=audit("memory.use_changed"))
    except InvalidArgument as exc:  # "allow every app first"
        flash(refusal_text(exc.code), "error")
        return redirect(back_to(memory_id), 303)
    return row_or_back(memory, use_said(memory, wanted == "1", app_id), "use")


def use_said(memory: Memory, use: bool, app_id: str | None) -> str:
    if app_id is not None:
        name = app_name(app_id)
        return (_("%(app)s may use this memory again.", app=name) if use
                else _("%(app)s will no longer be given this memory.", app=name))
    if use:
        return _("Apps may use this memory again.")
    return _("Kept, but no app will be given this memory until you let them.")


@bp.post("/memories/<memory_id>/expiry")
@login_required
def expiry(memory_id: str) -> ResponseReturnValue:
    """"Forget after": a day, a week, a month, a year, a date (forgotten at its start, UTC), or never.
    From the list's row (its ⋯ menu) with htmx, the row answers in place with the toast."""
    choice = request.form.get("after", "")
    now = service().clock()
    try:
        if choice in AFTER:
            moment: datetime | None = after(choice, now)
        elif choice == "date":
            moment = datetime.combine(date.fromisoformat(request.form.get("date", "")[:10]), time(), UTC)
        elif choice == "never":
            moment = None
        else:
            raise InvalidArgument("invalid_expiry")
        memory = service().update(current_user.place, memory_id, expires_at=moment).memory
    except ValueError:  # no date, or not one
        return expiry_refused(memory_id, refusal_text("invalid_expiry"))
    except InvalidArgument as exc:
        return expiry_refused(memory_id, refusal_text(exc.code))
    if memory.expires_at is None:
        said = _("Kept until you forget it.")
    else:
        said = _("It will be forgotten on %(day)s, with every earlier version.", day=day(memory.expires_at, "long"))
    return row_or_back(memory, said, "after", "expiry")


def expiry_refused(memory_id: str, text: str) -> ResponseReturnValue:
    """A date refused: the row again with the reason (htmx, from the list), else the memory's page."""
    if is_htmx() and request.form.get("back", "list") == "list":
        memory = service().get(current_user.place, memory_id)
        return render_template("memories/_row.html", memory=memory, new_ids=set(), focus="after",
                               notice=(text, "error")) + toast(text, in_row=True)
    flash(text, "error")
    return redirect(url_for("memories.history", memory_id=memory_id) + "#expiry", 303)


def row_or_back(memory: Memory, text: str, focus: str, section: str = "decisions") -> ResponseReturnValue:
    """The list's row with the toast in it (htmx, from the list), else a 303 back where the form
    came from with the toast."""
    if is_htmx() and request.form.get("back", "list") == "list":
        return render_template("memories/_row.html", memory=memory, new_ids=set(), focus=focus,
                               notice=notice(text)) + toast(text, in_row=True)
    flash(text)
    return redirect(back_to(memory.id, section), 303)


@bp.post("/account/learnt-days")
@login_required
def learnt_days() -> ResponseReturnValue:
    """The person's "forget what the assistant learns after": their organisation's default (empty),
    never (0) or a number of days (the page offers LEARNT_CHOICES)."""
    raw = request.form.get("days", "")
    if raw != "" and not (raw.isascii() and raw.isdigit() and len(raw) <= 5):
        abort(400)
    days = int(raw) if raw else None  # the service checks the range (invalid_learnt_days: 400)
    service().set_learnt_days(current_user.place, days, audit=audit("person.learnt_days_set"))
    flash(_("Saved: it applies to what the assistant learns from now on."))
    return redirect(url_for("memories.index") + "#your-data", 303)


__all__ = ["bp"]
