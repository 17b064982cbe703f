"""Connected apps in the service layer: what an app may do with a person's memory, what it did, and
the person's control over it (DESIGN §6, `portal.domain.apps`).

`MemoryService.for_app(app)` is the service as one app sees it: the same parts over `AppStore`,
the store seen through the person's decision about that app. Every transaction the view opens on a
place checks it first — `app_blocked` for a blocked app, whatever it reads or writes, erasure
included — and while the app is paused its transactions see the place paused (so every write path
refuses `paused` as it does for a paused person: a model's forget too) and any change to a memory
(a new one, a new wording, kind, importance, pin, state or seen mark) is refused `paused` at the
store itself. Taking away stays open to a paused app, as to a paused person: a forget the person
asked for (`asserted`) and the erasure of the person.
Being the store every part goes through, it cannot be forgotten by a new operation. Its writes
record the app's uses in the same transaction (remembered, corrected, forgot); recall's use marks
record `recalled`; the reads a host hands to the app (get, list, history, portrait) record `read`.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from portal.domain.apps import (
    BLOCKED,
    CONTROLS,
    CORRECTED,
    FORGOT,
    PAUSED,
    REMEMBERED,
    App,
    AppSummary,
    AppUse,
    summaries,
)
from portal.domain.audit import AuditEntry, AuditNote
from portal.domain.errors import InvalidArgument, NotFound, Refused
from portal.domain.types import Embedding, Memory, Place, PurgeCounts, Revision, as_place
from portal.domain.uses import UseBatch
from portal.ports import Cursor, Filters, NeedsVector, Settings, Store, StoreTx

from .app_refs import AppRefs
from .context import Context


class AppTx(AppRefs):
    """A place's transaction as an app sees it (the module's docstring; its refs: `AppRefs`)."""

    def __init__(self, tx: StoreTx, app: App, control: str | None, clock: Any) -> None:
        self._tx = tx
        self._app = app
        self._paused = control == PAUSED
        self._clock = clock
        self._uses: dict[str, list[str]] = {}
        self._erased = False
        self.place = tx.place

    def __getattr__(self, name: str) -> Any:  # receipts, audit: as they are
        return getattr(self._tx, name)

    @property
    def as_kept(self) -> StoreTx:
        """The place as the person keeps it, withheld memories included: for the duplicate a write
        of the app meets (`drafts.duplicate_of`: a withheld one is reinforced, not kept anew for the
        app); the app is answered its own words only (`drafts.meet_duplicate`)."""
        return self._tx

    # Reading: only what the person lets this app receive ("don't use this": Memory.usable_by), so
    # no path an app takes (recall, portrait, tools, consolidation's context) can hand it a memory
    # withheld from it; a duplicate its write meets is looked for in `as_kept`.
    def _usable(self, memory: Memory | None) -> Memory | None:
        return memory if memory is not None and memory.usable_by(self._app.id) else None

    def _only(self, filters: Filters) -> Filters:
        return replace(filters, app=self._app.id)

    def get(self, memory_id: str) -> Memory | None:
        return self._usable(self._tx.get(memory_id))

    def get_many(self, ids: Sequence[str]) -> builtins.list[Memory]:
        return [m for m in self._tx.get_many(ids) if m.usable_by(self._app.id)]

    def find_words(self, words_key: str) -> builtins.list[Memory]:
        return [m for m in self._tx.find_words(words_key) if m.usable_by(self._app.id)]

    def list(self, filters: Filters, limit: int | None = None, after: Cursor | None = None) -> builtins.list[Memory]:
        return self._tx.list(self._only(filters), limit, after)

    def nearest(self, query: Embedding, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]:
        return self._tx.nearest(query, limit, self._only(filters))

    def mean_vector(self, model: str, dim: int, filters: Filters) -> Any:
        return self._tx.mean_vector(model, dim, self._only(filters))

    def search_words(self, query: str, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]:
        return self._tx.search_words(query, limit, self._only(filters))

    def search_words_each(self, queries: Sequence[str], limit: int, filters: Filters) -> Any:
        return self._tx.search_words_each(queries, limit, self._only(filters))

    def embeddings(self, ids: Sequence[str]) -> dict[str, Embedding]:
        return self._tx.embeddings(ids, app=self._app.id)

    def count(self, state: str = "active") -> int:
        # Counted from what it may receive (no app path counts today; a count must not tell an
        # app that memories are kept from it either).
        return self._tx.count(state, app=self._app.id)

    def history(self, memory_id: str) -> builtins.list[Revision]:
        return self._tx.history(memory_id) if self.get(memory_id) is not None else []

    def _writing(self) -> None:
        if self._paused:
            raise Refused("paused")

    def _use(self, action: str, ids: Sequence[str]) -> None:
        self._uses.setdefault(action, []).extend(ids)

    def settings(self) -> Settings:
        settings = self._tx.settings()
        return replace(settings, paused=True) if self._paused else settings

    def set_settings(self, settings: Settings) -> None:
        self._writing()
        current = self._tx.settings()  # an app may pause learning, never lift it or change the rest (settings.py)
        if settings not in (current, replace(current, paused=True)):
            raise Refused("person_decides")
        self._tx.set_settings(settings)

    def insert(self, memory: Memory) -> int:
        self._writing()
        active = self._tx.insert(memory)
        self._use(REMEMBERED, [memory.id])
        return active

    def save(self, memory: Memory, expected_revision: int) -> bool:
        self._writing()
        saved = self._tx.save(memory, expected_revision)
        if saved:
            self._use(REMEMBERED if memory.last_op == "reinforce" else CORRECTED, [memory.id])
        return saved

    def push_revision(self, revision: Revision) -> None:
        self._writing()
        self._tx.push_revision(revision)

    def pop_revision(self, memory_id: str) -> Revision | None:
        self._writing()
        return self._tx.pop_revision(memory_id)

    def remove(self, ids: Sequence[str]) -> tuple[int, int]:
        removed = self._tx.remove(ids)
        self._use(FORGOT, list(ids))
        return removed

    def remove_all(self) -> tuple[int, int]:
        return self._tx.remove_all()

    def purge(self) -> PurgeCounts:
        """The person's data goes, their decisions stay (as `Privacy.forget_all` keeps them): their
        pause and what they decided about each app, this one's pause or block included, so an app
        cannot free itself by erasing what it may take away."""
        paused, controls = self._tx.settings().paused, self._tx.app_controls()
        self._erased = True  # nothing may name the person in this place afterwards, not even a use
        counts = self._tx.purge()
        if paused:
            self._tx.set_settings(Settings(paused=True))
        for app_id, state in controls.items():
            self._tx.set_app_control(app_id, state, self._clock())
        return counts

    def set_state(self, ids: Sequence[str], state: str) -> int:
        self._writing()
        return self._tx.set_state(ids, state)

    def tombstone(self, ids: Sequence[str], at: datetime) -> None:
        self._tx.tombstone(ids, at)

    def mark_seen(self, ids: Sequence[str]) -> int:
        self._writing()
        return self._tx.mark_seen(ids)

    def set_app_control(self, app_id: str, state: str | None, at: datetime) -> bool:
        raise Refused("forbidden")  # an app never decides what the person decided about it

    def commit(self) -> None:
        if not self._erased:
            at = self._clock()
            for action, ids in self._uses.items():
                self._tx.record_use(self._app.id, action, ids, at)
        self._uses = {}
        self._tx.commit()


class AppStore:
    """A store as one app sees it: every place it opens is checked against the person's decision
    about the app, and the app's uses are recorded (see the module's docstring)."""

    def __init__(self, store: Store, app: App, clock: Any, conversation: str | None = None) -> None:
        self.inner = store
        self.app = app
        self.clock = clock
        self.conversation = conversation
        self.searches_text = store.searches_text
        self.words_secret = store.words_secret

    def __getattr__(self, name: str) -> Any:  # recall_cache, settle, encrypt... of the store itself
        return getattr(self.inner, name)

    def _admitted(self, tx: StoreTx) -> AppTx:
        control = tx.app_control(self.app.id)
        if control == BLOCKED:
            raise Refused("app_blocked")
        return AppTx(tx, self.app, control, self.clock)

    @contextmanager
    def write(self, place: Place) -> Iterator[StoreTx]:
        with self.inner.write(place) as tx:
            yield self._admitted(tx)  # type: ignore[misc]  # AppTx is a StoreTx by delegation

    @contextmanager
    def read(self, place: Place, snapshot: bool = True) -> Iterator[StoreTx]:
        with self.inner.read(place, snapshot) as tx:
            yield self._admitted(tx)  # type: ignore[misc]

    def mark_used(self, place: Place, ids: Sequence[str], at: datetime, app_id: str | None = None,
                  conversation: str | None = None) -> builtins.list[Memory]:
        """As the store's, with this app's `recalled` uses (in its conversation, if it named one);
        refused before anything is marked when the person blocked the app, and only what the
        person lets it receive."""
        with self.read(place, snapshot=False):
            pass
        return self.inner.mark_used(place, ids, at, app_id=self.app.id, conversation=conversation or self.conversation)

    def record_batch(self, place: Place, batch: UseBatch) -> int:
        return self.inner.record_batch(place, batch)

    def expired(self, now: datetime, limit: int) -> builtins.list[tuple[Place, str]]:
        return self.inner.expired(now, limit)

    def purge_owner(self, owner_id: str, scopes: Sequence[str] | None = None, record: AuditEntry | None = None) -> PurgeCounts:
        if scopes is None:
            raise Refused("forbidden")  # an app erases a person in its own tenant only
        for scope in scopes:
            with self.read(Place(owner_id, scope)):
                pass  # a blocked app erases nothing; a paused one may (taking away is not learning)
        return self.inner.purge_owner(owner_id, scopes, record)

    # the rest of the Store protocol, as the store itself answers it
    def needing_vector(self, model: str, dim: int | None, limit: int) -> builtins.list[NeedsVector]:
        return self.inner.needing_vector(model, dim, limit)

    def set_embedding(self, place: Place, memory_id: str, revision: int, updated_at: datetime, embedding: Embedding) -> bool:
        return self.inner.set_embedding(place, memory_id, revision, updated_at, embedding)

    def places(self) -> Iterator[Place]:
        return self.inner.places()

    def audit_trail(self) -> builtins.list[AuditEntry]:
        return self.inner.audit_trail()

    def prune_history(self, older_than: datetime) -> int:
        return self.inner.prune_history(older_than)

    def prune_receipts(self, older_than: datetime) -> int:
        return self.inner.prune_receipts(older_than)

    def prune_uses(self, older_than: datetime) -> int:
        return self.inner.prune_uses(older_than)

    def archived_before(self, older_than: datetime, limit: int) -> builtins.list[tuple[Place, str]]:
        return self.inner.archived_before(older_than, limit)


class Apps:
    """The person's side: which apps used their memory, and their control over each."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def connected(self, place: Place, apps: dict[str, App]) -> builtins.list[AppSummary]:
        """Each app that used this place or that the person paused or blocked, most recent first;
        `apps` names them (the tenant's keys' apps, by id)."""
        self.ctx.uses.flush(as_place(place))  # what this process handed out, shown (portal.services.use_log)
        with self.ctx.store.read(as_place(place)) as tx:
            return summaries(tx.app_uses(), tx.app_controls(), apps)

    def uses_of(self, place: Place, memory_id: str) -> builtins.list[AppUse]:
        """Which apps used this memory, how and when (its history's "used by ... on ...")."""
        self.ctx.uses.flush(as_place(place))
        with self.ctx.store.read(as_place(place)) as tx:
            if tx.get(memory_id) is None:
                raise NotFound()
            return tx.app_uses(memory_id)

    def set_control(self, place: Place, app_id: str, state: str | None, audit: AuditNote | None = None) -> bool:
        """Pause (`paused`) or block (`blocked`) an app for this person, or resume it (None), with
        its audit entry (the app's id, never its name, under `reason_code`) in the same unit of
        work. Answers whether anything changed."""
        place = as_place(place)
        if state is not None and state not in CONTROLS:
            raise InvalidArgument("invalid_control")
        if not isinstance(app_id, str) or not 1 <= len(app_id) <= 64 or not app_id.isprintable():
            raise InvalidArgument("invalid_app")
        with self.ctx.store.write(place) as tx:
            changed = tx.set_app_control(app_id, state, self.ctx.clock())
            if changed and audit is not None:
                tx.record(replace(audit.entry(place.owner_id, place.scope, at=self.ctx.clock()), reason_code=app_id))
            tx.commit()
        return changed


def note_reads(ctx: Context, place: Place, action: str, ids: Sequence[str]) -> None:
    """Record that the app of this view was handed these memories (`read`); nothing without an app.
    Written off the request path (`portal.services.use_log`), of those still there only, under the
    place's write lock (`Store.record_batch`): a memory forgotten or a person erased since the read
    leaves no use behind that names them."""
    if ctx.app is not None and ids:
        ctx.note_uses(place, ids, action)


def app_view(ctx: Context, app: App, conversation: str | None = None) -> Context:
    """The context of `MemoryService.for_app`: the same parts, the store seen by the app (in one
    of its conversations, a digest: `portal.domain.decisions.conversation_key`)."""
    store = ctx.store.inner if isinstance(ctx.store, AppStore) else ctx.store
    return replace(ctx, store=AppStore(store, app, ctx.clock, conversation), app=app,  # type: ignore[arg-type]
                   conversation=conversation)


__all__ = ["AppStore", "AppTx", "Apps", "app_view", "note_reads"]
