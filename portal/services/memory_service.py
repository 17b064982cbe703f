"""MemoryService: the one way to read or write memories (DESIGN §1), composed of the services that
do the work — `Memories` (writing), `Recall` (reading), `Privacy` (pause, export, erasure),
`Consolidation` and `Retention` — over one shared `Context`.

The portal, the JSON API, the CLI and the model tools are thin shells over it. It never imports a
web framework or a database library; it is handed a Store, an optional Embedder and LLM, rules, a
mask, a clock and an id factory. Setting `store`, `embedder`, `llm`, `clock` or `id_factory` here sets it for every part.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from portal.domain.apps import App, AppSummary, AppUse, Conversation, ConversationCount
from portal.domain.audit import AuditNote
from portal.domain.decisions import conversation_key, conversation_of
from portal.domain.errors import NotFound, Refused
from portal.domain.imports import Parsed
from portal.domain.jobs import Job, JobQueue
from portal.domain.options import (
    LLM,
    AiSwitch,
    Clock,
    Embedder,
    Mask,
    NamesOf,
    Options,
    always_on,
    new_id,
    no_default,
    no_names,
    utc_now,
)
from portal.domain.text import no_mask
from portal.domain.types import Hit, Memory, Page, Place, Portrait, PurgeCounts, Revision, Saved
from portal.ports import Store

from .apps import Apps, app_view
from .consolidation import Consolidation, ConsolidationResult
from .context import Context
from .decisions import Decisions
from .jobs import Jobs
from .memories import Memories, Undone
from .portability import Imported, Portability
from .privacy import Privacy
from .recall import Recall
from .retention import PruneCounts, Retention
from .subject import ForgotMatching, Preview, Subject
from .use_log import UseLog
from .vectors import reindex


class MemoryService:
    """Remember, correct, undo, forget, recall and portray what an assistant knows of each person.

    Privacy guarantees: every call is bound to one place and never reads or changes another
    owner's or scope's memories (`purge_owner` alone crosses scopes, for erasure); text reaches
    the embedder and the model only through `mask`; logs carry ids and codes, never a person's words.
    """

    def __init__(
        self, store: Store, embedder: Embedder | None = None, options: Options | None = None,
        names_of: NamesOf = no_names, mask: Mask | str = no_mask, ai_enabled: AiSwitch = always_on,
        clock: Clock = utc_now, id_factory: Callable[[], str] = new_id, llm: LLM | None = None,
        tenant_learnt_days: Callable[[Place], int | None] = no_default,
    ) -> None:
        chosen = options or Options()
        self._compose(Context(store, embedder, chosen, names_of, Context.mask_of(mask), ai_enabled, clock, id_factory,
                              llm, tenant_learnt_days=tenant_learnt_days, uses=UseLog(store, chosen.uses_every)))
        store.clock = clock  # its reads leave out what expired by the service's time

    def _compose(self, ctx: Context) -> None:
        self.ctx = ctx
        self.memories = Memories(self.ctx)
        self.reading = Recall(self.ctx)
        self.privacy = Privacy(self.ctx)
        self.portability = Portability(self.ctx)
        self.consolidation = Consolidation(self.ctx, self.memories)
        self.retention = Retention(self.ctx)
        self.apps = Apps(self.ctx)
        self.decisions = Decisions(self.ctx)
        self.subject = Subject(self.ctx)
        self.jobs = Jobs(self.ctx, lambda app_id: self.for_app(App(app_id, "")) if app_id else self)

    def for_app(self, app: App, conversation_ref: Any = None) -> MemoryService:
        """The service as one connected app sees it (`portal.services.apps`): refused `app_blocked`
        for a person who blocked the app, `paused` for writes while they paused it, and every use
        it makes recorded — in its conversation `conversation_ref` when it names one (checked:
        InvalidArgument `invalid_conversation_ref`; kept as a digest). Built per request; it shares
        this service's store, model and options."""
        ref = conversation_of(conversation_ref)
        view = MemoryService.__new__(MemoryService)
        view._compose(app_view(self.ctx, app, conversation_key(ref, self.ctx.store.words_secret) if ref else None))
        return view

    # what the parts share (set here, seen by all)
    @property
    def store(self) -> Store:
        return self.ctx.store

    @store.setter
    def store(self, value: Store) -> None:
        self.ctx.store = value
        self.ctx.uses.store = value
        value.clock = self.ctx.clock

    @property
    def embedder(self) -> Embedder | None:
        return self.ctx.embedder

    @embedder.setter
    def embedder(self, value: Embedder | None) -> None:
        self.ctx.embedder = value

    @property
    def llm(self) -> LLM | None:
        return self.ctx.llm

    @llm.setter
    def llm(self, value: LLM | None) -> None:
        self.ctx.llm = value

    @property
    def queue(self) -> JobQueue | None:
        return self.ctx.queue

    @queue.setter
    def queue(self, value: JobQueue | None) -> None:
        self.ctx.queue = value

    @property
    def options(self) -> Options:
        return self.ctx.options

    @property
    def clock(self) -> Clock:
        return self.ctx.clock

    @clock.setter
    def clock(self, value: Clock) -> None:
        self.ctx.clock = value
        self.ctx.store.clock = value

    @property
    def id_factory(self) -> Callable[[], str]:
        return self.ctx.id_factory

    @id_factory.setter
    def id_factory(self, value: Callable[[], str]) -> None:
        self.ctx.id_factory = value

    @property
    def mask(self) -> Mask:
        return self.ctx.mask

    @property
    def names_of(self) -> NamesOf:
        return self.ctx.names_of

    @property
    def ai_enabled(self) -> AiSwitch:
        return self.ctx.ai_enabled

    # writing: portal.services.memories
    def remember(self, place: Place, text: Any, **settings: Any) -> Saved:
        return self.memories.remember(place, text, **settings)

    def remember_many(self, place: Place, texts: Sequence[Any], **settings: Any) -> builtins.list[Saved | Refused]:
        return self.memories.remember_many(place, texts, **settings)

    def update(self, place: Place, memory_id: str, **changes: Any) -> Saved:
        return self.memories.update(place, memory_id, **changes)

    def pin(self, place: Place, memory_id: str, pinned: bool = True) -> Saved:
        return self.memories.pin(place, memory_id, pinned)

    def undo(self, place: Place, memory_id: str) -> Undone:
        return self.memories.undo(place, memory_id)

    def forget(self, place: Place, memory_id: str, origin: str = "asserted") -> int:
        return self.memories.forget(place, memory_id, origin)

    def forget_many(self, place: Place, ids: Sequence[str]) -> int:
        return self.memories.forget_many(place, ids)

    def erase_history(self, place: Place, memory_id: str) -> int:
        return self.memories.erase_history(place, memory_id)

    # forget everything about a subject: portal.services.subject
    def preview_forget_matching(self, place: Place, query: Any) -> Preview:
        return self.subject.preview(place, query)

    def forget_matching(self, place: Place, token: Any, ids: Any, audit: AuditNote | None = None) -> ForgotMatching:
        return self.subject.forget(place, token, ids, audit)

    def reindex(self, limit: int | None = None, progress: Callable[[int], None] | None = None, batch: int = 64) -> int:
        return reindex(self.ctx, limit, progress, batch)

    # finding the person when an API names none (mem0's routes)
    def place_of(self, scope: str, memory_id: str) -> Place:
        """The place of tenant `scope` holding memory `memory_id`; NotFound when none does."""
        place = self.store.memory_place(scope, memory_id)
        if place is None:
            raise NotFound()
        return place

    def job_place_of(self, scope: str, job_id: str) -> Place:
        """The place of tenant `scope` a background job belongs to; NotFound("job") otherwise."""
        place = self.store.job_place(job_id)
        if place is None or place.scope != scope:
            raise NotFound("job")
        return place

    def people_in(self, scope: str) -> builtins.list[str]:
        """The owner ids of tenant `scope` with memories, sorted; for an app's view, not those who
        blocked the app."""
        return self.store.people(scope, self.ctx.app.id if self.ctx.app is not None else None)

    # reading: portal.services.recall
    def get(self, place: Place, memory_id: str) -> Memory:
        return self.reading.get(place, memory_id)

    def history(self, place: Place, memory_id: str) -> builtins.list[Revision]:
        return self.reading.history(place, memory_id)

    def page(self, place: Place, offset: int, size: int, **narrowed: Any) -> tuple[builtins.list[Memory], int]:
        return self.reading.page(place, offset, size, **narrowed)

    def list(self, place: Place, **filters: Any) -> Page:
        return self.reading.list(place, **filters)

    def list_unseen(self, place: Place, limit: int = 50) -> builtins.list[Memory]:
        return self.reading.list_unseen(place, limit)

    def mark_seen(self, place: Place, ids: Sequence[str]) -> int:
        return self.reading.mark_seen(place, ids)

    def mark_used(self, place: Place, ids: Sequence[str]) -> int:
        return self.reading.mark_used(place, ids)

    def recalled(self, place: Place, ids: Sequence[str]) -> None:
        self.reading.recalled(place, ids)

    def recall(self, place: Place, query: str, **settings: Any) -> builtins.list[Hit]:
        return self.reading.recall(place, query, **settings)

    def count(self, place: Place) -> int:
        return self.reading.count(place)

    def portrait(self, place: Place, **settings: Any) -> Portrait:
        return self.reading.portrait(place, **settings)

    # the person's controls: portal.services.privacy
    def pause(self, place: Place, audit: AuditNote | None = None) -> bool:
        return self.privacy.pause(place, audit)

    def resume(self, place: Place, audit: AuditNote | None = None) -> bool:
        return self.privacy.resume(place, audit)

    def is_paused(self, place: Place) -> bool:
        return self.privacy.is_paused(place)

    def import_parsed(self, place: Place, parsed: Parsed, **settings: Any) -> Imported:
        return self.portability.import_parsed(place, parsed, **settings)

    def undo_import(self, place: Place, batch: str, audit: AuditNote | None = None) -> int:
        return self.portability.undo_import(place, batch, audit)

    def export(self, place: Place, audit: AuditNote | None = None) -> dict[str, Any]:
        return self.privacy.export(place, audit)

    def forget_all(self, place: Place, audit: AuditNote | None = None) -> dict[str, int]:
        return self.privacy.forget_all(place, audit)

    def purge_owner(self, owner_id: str, scopes: Sequence[str] | None = None, audit: AuditNote | None = None) -> PurgeCounts:
        return self.privacy.purge_owner(owner_id, scopes, audit)

    # connected apps: portal.services.apps
    def connected_apps(self, place: Place, apps: dict[str, App]) -> builtins.list[AppSummary]:
        return self.apps.connected(place, apps)

    def app_uses_of(self, place: Place, memory_id: str) -> builtins.list[AppUse]:
        return self.apps.uses_of(place, memory_id)

    def set_app_control(self, place: Place, app_id: str, state: str | None, audit: AuditNote | None = None) -> bool:
        return self.apps.set_control(place, app_id, state, audit)

    # what the person decides besides the words, and what each answer used: portal.services.decisions
    def set_use(self, place: Place, memory_id: str, use: Any, app_id: str | None = None,
                audit: AuditNote | None = None) -> Memory:
        return self.decisions.set_use(place, memory_id, use, app_id, audit)

    def set_learnt_days(self, place: Place, days: Any, audit: AuditNote | None = None) -> bool:
        return self.decisions.set_learnt_days(place, days, audit)

    def conversations(self, place: Place, limit: int = 50) -> builtins.list[tuple[Conversation, builtins.list[Memory]]]:
        return self.decisions.conversations(place, limit)

    def conversation_counts(self, place: Place, memory_id: str) -> builtins.list[ConversationCount]:
        return self.decisions.conversation_counts(place, memory_id)

    # learning and keeping: portal.services.consolidation, portal.services.retention
    def consolidate(self, place: Any, transcript: Any, ref: Any, **settings: Any) -> ConsolidationResult:
        return self.consolidation.consolidate(place, transcript, ref, **settings)

    def consolidate_later(self, place: Place, transcript: Any, ref: Any, **settings: Any) -> Job:
        return self.jobs.submit(place, transcript, ref, **settings)

    def job(self, place: Place, job_id: str, take_summary: bool = True, wait: bool = False) -> Job:
        return self.jobs.get(place, job_id, take_summary, wait)

    def run_job(self, job_id: str) -> float | None:
        return self.jobs.run(job_id)

    def prune(
        self, history_older_than: timedelta | None = None, receipts_older_than: timedelta | None = None,
        archived_older_than: timedelta | None = None, progress: Callable[[int], None] | None = None, batch: int = 200,
        app_uses_older_than: timedelta | None = None, jobs_older_than: timedelta | None = None,
    ) -> PruneCounts:
        return self.retention.prune(history_older_than, receipts_older_than, archived_older_than, progress, batch,
                                    app_uses_older_than, jobs_older_than)

    def sweep(self) -> PruneCounts:
        return self.retention.sweep()


__all__ = ["MemoryService", "Undone"]
