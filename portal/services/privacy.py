"""A person's control over the whole of their memory: pause, resume, download everything, erase
everything, and the erasure of the person. Each is one unit of work with its audit entry when an
`AuditNote` is given (the record and the change it records commit together or not at all); a
pause or a resume always writes one (`portal.services.settings`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from portal.domain.apps import READ, conversation_json, use_json
from portal.domain.audit import AuditNote
from portal.domain.jobs import Job
from portal.domain.types import Place, PurgeCounts, as_place, iso
from portal.ports import Filters, Settings

from .apps import note_reads
from .context import Context, pid
from .settings import change_settings

log = logging.getLogger("portal.memory")

CONVERSATIONS_EXPORTED = 10_000  # the most recent conversations a download lists (kept as long as uses)


class Privacy:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def pause(self, place: Place, audit: AuditNote | None = None) -> bool:
        """Stop learning: remember answers `paused`, and so does every change a model asks for
        (tools, consolidation); the person can still read, correct, undo and erase. An app may
        pause (the person told the assistant); audited when it changes (`change_settings`)."""
        change_settings(self.ctx, as_place(place), lambda s: replace(s, paused=True), "person.paused", audit,
                        app_may=True)
        return True

    def resume(self, place: Place, audit: AuditNote | None = None) -> bool:
        """Learn again: the person's decision alone (an app is refused `person_decides`)."""
        change_settings(self.ctx, as_place(place), lambda s: replace(s, paused=False), "person.resumed", audit)
        return False

    def is_paused(self, place: Place) -> bool:
        with self.ctx.store.read(as_place(place)) as tx:
            return tx.settings().paused

    def export(self, place: Place, audit: AuditNote | None = None) -> dict[str, Any]:
        """Everything kept in this place: every memory with its revisions, the settings, the apps'
        uses, and the background consolidations with what each still holds (the transcript of one
        not over yet, a summary its app has not read yet: the person sees them, an app its own
        jobs' counts only, never a second copy of the summary). With `audit`, its entry (the count
        exported) is written in the same transaction as the read."""
        ctx, place = self.ctx, as_place(place)
        ctx.uses.flush(place)  # the apps' uses this process noted, in the download too
        with ctx.store.write(place) if audit is not None else ctx.store.read(place) as tx:
            items = []
            for memory in tx.list(Filters(state=None)):
                data = memory.to_json()
                data["revisions"] = [r.to_json() for r in tx.history(memory.id)]
                items.append(data)
            settings = tx.settings()
            uses, controls, jobs = tx.app_uses(), tx.app_controls(), tx.jobs()
            conversations = tx.conversations(limit=CONVERSATIONS_EXPORTED)
            if ctx.app is not None:  # an app is told of its own uses and jobs, not of the other apps'
                uses = [u for u in uses if u.app_id == ctx.app.id]
                conversations = [c for c in conversations if c.app_id == ctx.app.id]
                controls = {k: v for k, v in controls.items() if k == ctx.app.id}
                jobs = [replace(j, summary=None, work=None) for j in jobs if j.app_id == ctx.app.id]
            if audit is not None:
                tx.record(audit.entry(place.owner_id, place.scope, {"memories": len(items)}, at=ctx.clock()))
                tx.commit()
        note_reads(ctx, place, READ, [item["id"] for item in items])
        return {"owner_id": place.owner_id, "scope": place.scope, "exported_at": iso(ctx.clock()),
                "settings": {"paused": settings.paused, "learnt_days": settings.learnt_days}, "memories": items,
                "app_controls": controls, "app_uses": [use_json(u) for u in uses], "jobs": [job_json(j) for j in jobs],
                "conversations": [conversation_json(c) for c in conversations]}

    def forget_all(self, place: Place, audit: AuditNote | None = None) -> dict[str, int]:
        """The person's "erase everything" in one place: every memory and revision, and everything
        else the place keeps that names them (consolidation refs, idempotency receipts, tombstones).
        A pause stays, and so does a pause or block of each app: the person's controls, not their data."""
        ctx, place = self.ctx, as_place(place)
        with ctx.store.write(place) as tx:
            paused = tx.settings().paused
            controls = tx.app_controls()
            erased = tx.purge()
            # Put back what the purge took (an app's view of the place kept them itself: AppTx.purge).
            if paused and not tx.settings().paused:
                tx.set_settings(Settings(paused=True))
            kept = tx.app_controls()
            for app_id, state in controls.items():  # what the person decided about each app stays too
                if kept.get(app_id) != state:
                    tx.set_app_control(app_id, state, ctx.clock())
            counts = {"memories": erased.memories, "revisions": erased.revisions, "receipts": erased.receipts,
                      "refs": erased.refs}
            if audit is not None:
                tx.record(audit.entry(place.owner_id, place.scope, counts, at=ctx.clock()))
            tx.commit()
        log.info("memory.forget_all place=%s memories=%d", pid(place), erased.memories)
        return counts

    def purge_owner(self, owner_id: str, scopes: Sequence[str] | None = None, audit: AuditNote | None = None) -> PurgeCounts:
        """Erasure of a person: memories, revisions, settings, consolidation refs, idempotency
        receipts, unseen marks and tombstones — in every scope (the one call that crosses scopes,
        for a host whose owner ids are unique across its tenants), or only in `scopes` (a tenant
        erasing its own person). With `audit`, its entry (with the counts) is written in the same
        transaction."""
        as_place(Place.of(owner_id))
        scope = scopes[0] if scopes and len(scopes) == 1 else None
        entry = audit.entry(owner_id, scope, at=self.ctx.clock()) if audit is not None else None
        self.ctx.uses.forget_owner(owner_id, scopes)  # what waits to be written for them never is
        counts = self.ctx.store.purge_owner(owner_id, scopes, entry)
        log.info("memory.purge_owner memories=%d revisions=%d", counts.memories, counts.revisions)
        return counts


def job_json(job: Job) -> dict[str, Any]:
    """A job as the export shows it: its state and counts, and the words it still holds."""
    data = job.to_json()
    data["transcript"] = job.work.get("transcript") if job.work else None
    return data
