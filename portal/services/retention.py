"""Retention: how long earlier wordings, idempotency receipts, archived memories, the apps' uses
and background jobs are kept, and the erasure of words whose time is over.

`sweep` erases what is kept only for a while — an earlier wording once its Undo is no longer
offered, a memory once its expiry has come, a job's summary its app never read — and runs every minute in the background worker
(`memory-portal worker`, or a thread of `serve` on the embedded default), and in every `prune`.
`memory-portal prune` applies the retention periods, typically from a daily cron job. The store
deletes in bulk, each batch its own transaction, and cleans up after each erasure as after a
forget (`SqlStore.after_erasure`); archived memories are erased here, place by place, the way
`forget` erases, so the two paths cannot drift apart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from portal.domain.types import Place
from portal.services.context import Context
from portal.services.decisions import Decisions

log = logging.getLogger("portal.memory")


@dataclass(frozen=True, slots=True)
class PruneCounts:
    """What `prune` deleted, every place together."""

    revisions: int = 0
    receipts: int = 0
    memories: int = 0
    app_uses: int = 0
    summaries: int = 0
    jobs: int = 0

    def to_json(self) -> dict[str, int]:
        return {"revisions": self.revisions, "receipts": self.receipts, "memories": self.memories,
                "app_uses": self.app_uses, "summaries": self.summaries, "jobs": self.jobs}


class Retention:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def sweep(self) -> PruneCounts:
        """Erase, in every place, the words kept only for a while whose time is over: earlier
        wordings whose Undo is no longer offered (`Revision.expires_at`), memories whose expiry has
        come (`Memory.expires_at`, `Decisions.expire`), and the summaries of jobs
        over for longer than `summary_retention` that their app never read. Each as forget erases.
        Safe to run at any time and in several processes at once. Logs counts only."""
        now = self.ctx.clock()
        memories, revisions = Decisions(self.ctx).expire(now)
        revisions += self.ctx.store.expire_revisions(now)
        summaries = self.ctx.store.expire_summaries(now - self.ctx.options.summary_retention)
        if memories or revisions or summaries:
            log.info("memory.sweep memories=%d revisions=%d summaries=%d", memories, revisions, summaries)
        return PruneCounts(revisions=revisions, summaries=summaries, memories=memories)

    def prune(
        self,
        history_older_than: timedelta | None = None,
        receipts_older_than: timedelta | None = None,
        archived_older_than: timedelta | None = None,
        progress: Callable[[int], None] | None = None,
        batch: int = 200,
        app_uses_older_than: timedelta | None = None,
        jobs_older_than: timedelta | None = None,
    ) -> PruneCounts:
        """Apply the retention periods, in every place; a period left None leaves that data alone.
        Whatever the periods, it first erases what `sweep` erases.

        Guarantees:
        - History: an earlier wording is deleted once it, and the wording that replaced it, are
          older than `history_older_than`. A memory's current text is never touched, and the last
          change of a memory changed within the period can still be undone.
        - Receipts: completed idempotency receipts older than `receipts_older_than` are deleted (a
          retry with such a key then runs as a new request). A pending receipt, whose request may
          still be running, stays.
        - Archived memories neither written nor used within `archived_older_than` are erased as
          `forget` erases: every revision and vector goes (a receipt's replay naming one is redacted),
          and a content-free tombstone keeps a replayed write from bringing them back.
          Each place changes under its own write lock; a memory made active again meanwhile stays.
        - Apps' uses (the connected-apps log) last counted before `app_uses_older_than` are deleted.
        - Background jobs over (done or failed) and unchanged for `jobs_older_than` are deleted.
        Periods must be positive. Safe to run again or to stop half way: each batch commits alone.
        `progress` is told how many rows each step deleted. Logs carry counts only.
        """
        for name, period in (
            ("history_older_than", history_older_than),
            ("receipts_older_than", receipts_older_than),
            ("archived_older_than", archived_older_than),
            ("app_uses_older_than", app_uses_older_than),
            ("jobs_older_than", jobs_older_than),
        ):
            if period is not None and period <= timedelta(0):
                raise ValueError(f"{name} must be a positive period")
        swept = self.sweep()
        if progress:
            progress(swept.memories + swept.revisions + swept.summaries)
        now = self.ctx.clock()
        memories, revisions, receipts = swept.memories, swept.revisions, 0
        if archived_older_than is not None:
            archived, archived_revisions = self._erase_archived(now - archived_older_than, now, progress, batch)
            memories += archived
            revisions += archived_revisions
        if history_older_than is not None:
            pruned = self.ctx.store.prune_history(now - history_older_than)
            revisions += pruned
            if progress:
                progress(pruned)
        if receipts_older_than is not None:
            receipts = self.ctx.store.prune_receipts(now - receipts_older_than)
            if progress:
                progress(receipts)
        uses = 0
        if app_uses_older_than is not None:
            uses = self.ctx.store.prune_uses(now - app_uses_older_than)
            if progress:
                progress(uses)
        jobs = 0
        if jobs_older_than is not None:
            jobs = self.ctx.store.prune_jobs(now - jobs_older_than)
            if progress:
                progress(jobs)
        counts = PruneCounts(revisions=revisions, receipts=receipts, memories=memories, app_uses=uses,
                             summaries=swept.summaries, jobs=jobs)
        log.info("memory.prune memories=%d revisions=%d receipts=%d app_uses=%d summaries=%d jobs=%d", memories,
                 revisions, receipts, uses, swept.summaries, jobs)
        return counts

    def _erase_archived(
        self, cutoff: datetime, now: datetime, progress: Callable[[int], None] | None, batch: int
    ) -> tuple[int, int]:
        memories = revisions = 0
        looked_at: set[tuple[Place, str]] = set()
        while True:
            # Ids kept back (made active meanwhile) are skipped, so asking past them finds the rest.
            found = [c for c in self.ctx.store.archived_before(cutoff, batch + len(looked_at)) if c not in looked_at][:batch]
            if not found:
                return memories, revisions
            looked_at.update(found)
            by_place: dict[Place, list[str]] = {}
            for place, memory_id in found:
                by_place.setdefault(place, []).append(memory_id)
            for place, ids in by_place.items():
                with self.ctx.store.write(place) as tx:
                    doomed = [
                        m.id for m in tx.get_many(ids)
                        if m.state == "archived" and m.updated_at < cutoff
                        and (m.last_used_at is None or m.last_used_at < cutoff)
                    ]
                    if not doomed:
                        continue
                    removed, history = tx.remove(doomed)
                    tx.tombstone(doomed, now)
                    tx.commit()
                memories += removed
                revisions += history
                if progress:
                    progress(removed + history)
