"""What a person decides about their memories besides the words (issue 29, DESIGN §6): which apps
may use a memory ("don't use this"), when it is forgotten, how long what the assistant learns is
kept, and which conversations used what.

A memory withheld from an app is in no answer to that app — recall, portrait, tools, MCP, a
consolidation's context — because the app's view of the store leaves it out
(`portal.services.apps.AppTx`); the person still sees, searches and downloads it. The app's own
words repeating it meet it as a duplicate (reinforced, still withheld; the app is answered with its
own words only: `portal.services.drafts.meet_duplicate`). A memory past
its expiry is in no answer to anyone (the store's reads leave it out, `Store.clock`), and `expire`
erases it as forget erases, from the background worker's periodic sweep, `serve`'s on the
embedded default, and `prune`.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from portal.domain.apps import Conversation, ConversationCount
from portal.domain.audit import AuditNote
from portal.domain.decisions import EVERY_APP, learnt_days_of, withheld_after
from portal.domain.errors import InvalidArgument, NotFound, Refused
from portal.domain.types import Memory, Place, as_place

from .context import Context, pid
from .settings import change_settings

log = logging.getLogger("portal.memory")

EXPIRE_BATCH = 200


class Decisions:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def set_use(self, place: Place, memory_id: str, use: Any, app_id: str | None = None,
                audit: AuditNote | None = None) -> Memory:
        """Let apps use a memory again (`use` True) or not ("don't use this": False), every app or
        only `app_id`; no new revision (the words did not change), one unit of work with its audit
        entry (the app's id or "*" as its reason code, never words). Through an app's view: the
        person told the assistant, so `use` False withholds it from every app, and `use` True changes
        nothing (what the person decided about other apps is theirs to change). Raises NotFound,
        InvalidArgument `invalid_use`, Refused `forbidden` (an app naming an app)."""
        ctx, place = self.ctx, as_place(place)
        if not isinstance(use, bool):
            raise InvalidArgument("invalid_use")
        if app_id is not None and (ctx.app is not None or not isinstance(app_id, str)
                                   or not 1 <= len(app_id) <= 64 or not app_id.isprintable()):
            raise Refused("forbidden") if ctx.app is not None else InvalidArgument("invalid_app")
        with ctx.store.write(place) as tx:
            current = tx.get(memory_id)
            if current is None:
                raise NotFound()
            if ctx.app is not None and use:
                return current
            withheld = withheld_after(current.withheld, use, app_id)
            if withheld == current.withheld:
                return current
            changed = current.copy(withheld=withheld)
            tx.save(changed, current.revision)
            if audit is not None:
                tx.record(replace(audit.entry(place.owner_id, place.scope, at=ctx.clock()),
                                  reason_code=app_id or EVERY_APP))
            tx.commit()
        log.info("memory.use place=%s id=%s use=%s apps=%d", pid(place), memory_id, use, len(withheld))
        return changed

    def learnt_days(self, place: Place) -> tuple[int | None, int | None]:
        """The person's "forget what the assistant learns after N days" (None: the tenant's) and
        the tenant's default (None: never)."""
        place = as_place(place)
        with self.ctx.store.read(place) as tx:
            mine = tx.settings().learnt_days
        return mine, self.ctx.tenant_learnt_days(place)

    def set_learnt_days(self, place: Place, days: Any, audit: AuditNote | None = None) -> bool:
        """Set the person's choice (None: follow the tenant's default, 0: never); it applies to what
        the assistant learns from now on. Answers whether it changed; audited when it does. The
        person's alone: an app is refused `person_decides` (`change_settings`)."""
        days = learnt_days_of(days)
        return change_settings(self.ctx, as_place(place), lambda s: replace(s, learnt_days=days),
                               "person.learnt_days_set", audit, counts={"days": days or 0})

    def conversations(self, place: Place, limit: int = 50) -> builtins.list[tuple[Conversation, builtins.list[Memory]]]:
        """The person's recent conversations with their apps, most recent first, each with the
        memories (still kept) the assistant was given in it."""
        self.ctx.uses.flush(as_place(place))  # what this process handed out, shown (portal.services.use_log)
        with self.ctx.store.read(as_place(place)) as tx:
            found = tx.conversations(limit)
            by_id = {m.id: m for m in tx.get_many(list({i for c in found for i in c.memory_ids}))}
        return [(c, [by_id[i] for i in c.memory_ids if i in by_id]) for c in found]

    def conversation_counts(self, place: Place, memory_id: str) -> builtins.list[ConversationCount]:
        """"Used in N conversations by App, last on ...", per app."""
        self.ctx.uses.flush(as_place(place))
        with self.ctx.store.read(as_place(place)) as tx:
            if tx.get(memory_id) is None:
                raise NotFound()
            return tx.conversation_counts(memory_id)

    def writers(self, place: Place, memory_ids: Sequence[str]) -> dict[str, str]:
        """Which app wrote each of these memories (the app whose `remembered` use came first), for
        the rows that name it: by id, for those an app wrote through its key."""
        with self.ctx.store.read(as_place(place)) as tx:
            return tx.writers(memory_ids)

    def expire(self, now: datetime | None = None) -> tuple[int, int]:
        """Erase, in every place, the memories whose expiry has come, as forget erases (every
        revision, a tombstone so no replay brings one back; the store cleans up after it as after
        a forget). Answers (memories, revisions) erased. Safe in several processes at once."""
        ctx = self.ctx
        now = now or ctx.clock()
        memories = revisions = 0
        seen: set[tuple[Place, str]] = set()
        while True:
            found = ctx.store.expired(now, EXPIRE_BATCH)
            if not found or seen.issuperset(found):  # nothing new (another process is on them)
                break
            seen.update(found)
            by_place: dict[Place, list[str]] = {}
            for place, memory_id in found:
                by_place.setdefault(place, []).append(memory_id)
            for place, ids in by_place.items():
                # No read answers an expired memory, so none can be changed back meanwhile: the ids
                # found are erased as they are.
                with ctx.store.write(place) as tx:
                    removed, history = tx.remove(ids)
                    tx.tombstone(ids, now)
                    tx.commit()
                memories += removed
                revisions += history
            if len(found) < EXPIRE_BATCH:
                break
        if memories:
            log.info("memory.expired memories=%d revisions=%d", memories, revisions)
        return memories, revisions


__all__ = ["Decisions"]
