"""The person's settings — whether learning is paused, how long what the assistant learns is kept
— are the person's decisions (issue 38, review1).

An app may read them, and may pause learning: the person told the assistant "stop learning about
me", which only takes away, as an app's "don't use this" does. It never lifts the person's pause
or changes anything else they decided: Refused `person_decides`, here for a stable answer, and at
the app's view of the store itself (`portal.services.apps.AppTx.set_settings`) for any other path.

Every change, by anyone, writes its content-free audit entry in the same transaction: the shell's
note (who acted), or, from a caller that named no one, the app of the view (its id as the reason
code) or the operator's own code.
"""

from __future__ import annotations

from collections.abc import Callable

from portal.domain.audit import AuditNote
from portal.domain.errors import Refused
from portal.domain.types import Place
from portal.ports import Settings

from .context import Context


def change_settings(
    ctx: Context, place: Place, change: Callable[[Settings], Settings], action: str, audit: AuditNote | None,
    app_may: bool = False, counts: dict[str, int] | None = None,
) -> bool:
    """Apply `change` to the place's settings, with its audit entry (`action`), in one unit of work;
    answers whether anything changed. Through an app's view: refused `app_blocked` for a blocked
    app, `person_decides` unless `app_may` (a pause), `paused` while the app is paused."""
    with ctx.store.write(place) as tx:
        if ctx.app is not None and not app_may:
            raise Refused("person_decides")
        current = tx.settings()
        wanted = change(current)
        if wanted == current and ctx.app is None:
            return False
        tx.set_settings(wanted)  # an app's view refuses it while the app is paused (its view reads paused)
        if wanted != current:
            note = audit or _unnamed(ctx, action)
            tx.record(note.entry(place.owner_id, place.scope, counts, at=ctx.clock()))
        tx.commit()
    return wanted != current


def _unnamed(ctx: Context, action: str) -> AuditNote:
    if ctx.app is not None:
        return AuditNote(None, "api_key", action, reason_code=ctx.app.id)
    return AuditNote(None, "operator", action)


__all__ = ["change_settings"]
