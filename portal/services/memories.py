"""Writing memories: remember, correct, pin, undo, forget, and vectors for those without one.

Each operation is one unit of work on one place (`store.write(place)`); the embedder is asked
before it, never while the place's lock is held. Refusals are raised (`Refused`, `NotFound`,
`Conflict`: portal.domain.errors); `remember_many` answers one result per text instead.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from portal.domain.attributes import checked_attributes, expiry_of_day, merged_attributes, scope_of
from portal.domain.decisions import expiry_of, learnt_expiry
from portal.domain.errors import Conflict, InvalidArgument, NotFound, Refused
from portal.domain.text import words_key
from portal.domain.types import CHANNELS, ORIGINS, Embedding, Holding, Memory, Place, Saved, Source, as_place, kept_at
from portal.ports import StoreTx

from .context import Context, pid
from .drafts import Draft, draft, duplicate_of, edit_draft, meet_duplicate, provenance, replaced_wording, trim

log = logging.getLogger("portal.memory")

UNDOABLE = ("update", "replace")
KEEP: Any = object()  # an update that leaves the expiry as it is
DUPLICATE_MODES = ("replace", "reinforce", "keep", "same_words")


@dataclass(frozen=True, slots=True)
class Undone:
    """What undo did: `memory` is the restored revision, or None when a new memory was removed."""

    memory: Memory | None
    memory_id: str
    ok: bool = True


class Memories:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def remember(self, place: Place, text: Any, **settings: Any) -> Saved:
        """Keep a new memory, or meet the duplicate it repeats: `replace` it (a new revision of the
        same memory), `reinforce` it (keep its text, raise its importance), or `keep` both, the new
        one as a memory of its own (for an import of records that may repeat word for word, such as
        the turns of a conversation: no duplicate is looked for); `same_words` reinforces a memory
        of the same folded words and keeps anything else as a memory of its own (mem0's direct
        import: it never replaces). Saying the very same words again always reinforces. A duplicate
        is only ever one of the same scope (its agent, app and run ids: issue 39).

        Raises Refused, changing nothing: `paused`, `empty`, `too_long`, `invalid_text` (a NUL or a
        lone surrogate, in the text or the role), `invalid_kind`, `kind_not_allowed`, `other_person`
        or a content rule's code. Settings: as `remember_many`'s."""
        (result,) = self.remember_many(place, [text], **settings)
        if isinstance(result, Refused):
            raise result
        return result

    def remember_many(
        self, place: Place, texts: Sequence[Any], kind: Any = None, importance: Any = None, role: str | None = None,
        explicit: bool = False, origin: str = "asserted", on_duplicate: str | None = None,
        sources: Sequence[Source] = (), pinned: bool = False, channel: str = "foreground",
        person_name: str | None = None, holding: Holding | None = None, attributes: Mapping[str, Any] | None = None,
        expires_at: Any = None,
    ) -> list[Saved | Refused]:
        """`remember` for several texts at once, in order, with the same settings: one call to the
        embedder for all of them and one transaction. Each text gets its own answer (a Saved, or the
        Refused `remember` would raise); a text refused changes nothing and does not stop the
        others. A text may meet a duplicate kept earlier in the same call. With `holding` (a
        consolidation's claim on its conversation), nothing is kept unless the claim is still held,
        checked in the write itself (`erased`: the person's data was erased while the model
        thought), and a text repeating a memory the model was shown and the person forgot since is
        `forgotten`. `attributes` (portal.domain.attributes) go with every new memory, checked
        first (Refused `invalid_attributes`); a duplicate met keeps its own. So does its expiry:
        `expires_at` (Refused `invalid_expiry`, `expiry_in_past`; by default the end of the
        attributes' `expiration_date`) is when a new memory is forgotten;
        what the assistant learns (`origin="inferred"`) unpinned and without one is forgotten after
        the person's `learnt_days`, or else the tenant's."""
        ctx, place = self.ctx, as_place(place)
        try:
            kept_attributes = checked_attributes(attributes)
            if expires_at is None and kept_attributes:  # mem0's expiration_date: the memory really goes then
                expires_at = expiry_of_day(kept_attributes.get("expiration_date"))
            expiry = expiry_of(expires_at, ctx.clock())
        except (Refused, InvalidArgument) as refused:
            return [Refused(refused.code) for _ in texts]
        tenant_days = ctx.tenant_learnt_days(place) if origin == "inferred" and expiry is None and not pinned else None
        if origin not in ORIGINS or channel not in CHANNELS:
            raise ValueError("origin or channel out of range")
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise TypeError("remember_many takes a sequence of texts, not a single str")
        mode = on_duplicate or ctx.options.on_duplicate
        if mode not in DUPLICATE_MODES:
            return [Refused("invalid_on_duplicate") for _ in texts]
        if not texts:
            return []
        # Looked at before the write only to spare the embedder work a paused place would throw
        # away; the write transaction checks it again, so without an embedder one read is saved.
        if ctx.embedder is not None and _paused(ctx, place):
            return [Refused("paused") for _ in texts]
        drafts = [_try_draft(ctx, place, text, kind, importance, role, explicit, person_name) for text in texts]
        vectors = iter(ctx.embed_many(place, [d.text for d in drafts if isinstance(d, Draft)], "document"))
        embeddings = [next(vectors) if isinstance(d, Draft) else None for d in drafts]
        results: list[Saved | Refused] = []
        with ctx.store.write(place) as tx:
            settings = tx.settings()
            if settings.paused:
                return [Refused("paused") for _ in texts]
            if origin == "inferred" and expiry is None and not pinned:
                days = tenant_days if settings.learnt_days is None else settings.learnt_days
                expiry = learnt_expiry(days, ctx.clock())
            if holding is not None and not tx.holds_ref(holding.ref, holding.holder):
                return [Refused("erased") for _ in texts]
            for new, embedding in zip(drafts, embeddings, strict=True):
                if isinstance(new, Refused):
                    results.append(new)
                    continue
                forgotten = holding.shown.get(new.words_key) if holding is not None else None
                if forgotten is not None and tx.is_tombstoned(forgotten):
                    results.append(Refused("forgotten"))  # the person forgot it while the model thought
                    continue
                results.append(self._keep(tx, place, new, embedding, mode, origin, tuple(sources), pinned, channel,
                                          role, kind is not None, importance is not None, kept_attributes, expiry))
            tx.commit()
        for result in results:
            if isinstance(result, Saved):
                log.info("memory.remember place=%s id=%s replaced=%s", pid(place), result.memory.id, result.replaced_id)
        return results

    def _keep(
        self, tx: StoreTx, place: Place, new: Draft, embedding: Embedding | None, mode: str, origin: str,
        sources: tuple[Source, ...], pinned: bool, channel: str, role: str | None, kind_given: bool,
        importance_given: bool, attributes: dict[str, Any] | None = None, expires_at: datetime | None = None,
    ) -> Saved:
        ctx = self.ctx
        existing = None if mode == "keep" else duplicate_of(
            ctx, tx, new.words_key, None if mode == "same_words" else embedding, scope_of(attributes))
        if existing is not None:
            if pinned and not existing.pinned and (ctx.app is None or existing.usable_by(ctx.app.id)):
                existing = existing.copy(pinned=True)
            return meet_duplicate(ctx, tx, existing, new, embedding, "reinforce" if mode == "same_words" else mode,
                                  origin, sources, kind_given, importance_given, channel)
        now = ctx.clock()
        memory = Memory(
            id=ctx.id_factory(), owner_id=place.owner_id, scope=place.scope, revision=1, text=new.text,
            kind=new.kind, importance=new.importance, created_at=now, updated_at=now, role=role, origin=origin,
            sources=sources, channel=channel, seen=channel == "foreground", pinned=bool(pinned),
            embedding=embedding, last_op="create", words_key=new.words_key, attributes=attributes,
            expires_at=expires_at,
        )
        active = tx.insert(memory)
        trim(ctx, tx, active, keep=memory.id)
        return Saved(memory)

    def update(
        self, place: Place, memory_id: str, text: Any = None, kind: Any = None, importance: Any = None,
        pinned: bool | None = None, expected_revision: int | None = None, in_place: bool = False,
        origin: str = "asserted", sources: Sequence[Source] = (), person_name: str | None = None,
        holding: Holding | None = None, attributes: Mapping[str, Any] | None = None, expires_at: Any = KEEP,
    ) -> Saved:
        """Correct a memory: a new revision (same id), or with `in_place` an overwrite that keeps no
        earlier text. One unit of work: the memory is read, checked and written under its place's
        lock; the new text is checked on a first read and only then embedded, outside the lock (the
        embedder may be remote: text a rule refuses never reaches it). Rules are checked again with the memory's
        original role; a name it already carried stays allowed. Raises NotFound, Conflict (a stale
        `expected_revision`, with the actual one) or Refused. A model's write (`origin="inferred"`)
        never changes an asserted memory's origin or sources, and is refused with `paused` while
        the person is paused. `holding`: as in `remember_many`. A correction to the very same text,
        kind and importance changes nothing and answers `reinforced`. `attributes` sets those it names
        (None removes one) and keeps the others, with no new revision (they are not the words); so
        does `expires_at` (None: never forgotten; left out: as it was). Pinning a memory keeps it
        until it is forgotten: its expiry goes."""
        ctx, place = self.ctx, as_place(place)
        expiry = expires_at if expires_at is KEEP else expiry_of(expires_at, ctx.clock())
        with ctx.store.read(place) as tx:
            found = tx.get(memory_id)
            before = self._checked(found, found is not None and origin == "inferred" and tx.settings().paused,
                                   expected_revision)
        draft = edit_draft(ctx, place, before, text, kind, importance, person_name)
        vector = ctx.embed(place, draft.text, "document") if draft.text != before.text else None
        with ctx.store.write(place) as tx:
            found = tx.get(memory_id)
            current = self._checked(found, found is not None and origin == "inferred" and tx.settings().paused,
                                    expected_revision)
            if holding is not None and not tx.holds_ref(holding.ref, holding.holder):
                raise Refused("erased")
            same = current.revision == before.revision and current.updated_at == before.updated_at
            new = draft if same else edit_draft(ctx, place, current, text, kind, importance, person_name)
            wanted = draft.text
            content_changed = (new.text, new.kind, new.importance) != (current.text, current.kind, current.importance)
            changed = current.copy(
                text=new.text, kind=new.kind, importance=new.importance, words_key=new.words_key,
                embedding=current.embedding if new.text == current.text else (vector if new.text == wanted else None),
                pinned=current.pinned if pinned is None else bool(pinned),
                attributes=current.attributes if attributes is None else merged_attributes(current.attributes, attributes),
                expires_at=None if pinned else current.expires_at if expiry is KEEP else expiry,
            )
            if content_changed:
                changed.updated_at = ctx.clock()
                changed.origin, changed.sources = provenance(current, origin, tuple(sources))
                changed.revision = current.revision + 1
                if in_place:
                    # No earlier text survives an in-place edit: a regretted detail is gone for good.
                    tx.erase_history(memory_id)
                    changed.last_op = "in_place"
                else:
                    tx.push_revision(replaced_wording(ctx, current, tuple(sources)))
                    changed.last_op = "update"
            tx.save(changed, current.revision)
            tx.commit()
        log.info("memory.update place=%s id=%s revision=%s", pid(place), memory_id, changed.revision)
        return Saved(changed, reinforced=not content_changed and pinned is None and attributes is None and expiry is KEEP)

    @staticmethod
    def _checked(memory: Memory | None, paused: bool, expected_revision: int | None) -> Memory:
        """What refuses an update before its text is looked at: no such memory, a model writing
        while the person is paused, a stale revision."""
        if memory is None:
            raise NotFound()
        if paused:
            raise Refused("paused")
        if expected_revision is not None and expected_revision != memory.revision:
            raise Conflict(memory.revision)
        return memory

    def pin(self, place: Place, memory_id: str, pinned: bool = True) -> Saved:
        """Pin (first in the portrait, while there is room) or unpin a memory; no new revision."""
        return self.update(place, memory_id, pinned=pinned)

    def undo(self, place: Place, memory_id: str) -> Undone:
        """Take back the last write: remove a memory just remembered, or bring back the wording an
        update or a duplicate replacement overwrote (as a new revision; the undone wording is
        erased). Raises NotFound, or Refused `nothing_to_undo`."""
        ctx, place = self.ctx, as_place(place)
        with ctx.store.write(place) as tx:
            current = tx.get(memory_id)
            if current is None:
                raise NotFound()
            if current.last_op == "create" and current.revision == 1:
                tx.remove([memory_id])
                tx.commit()
                log.info("memory.undo place=%s id=%s removed", pid(place), memory_id)
                return Undone(None, memory_id)
            # Only the wording the last write replaced: the revision just below the current one. Once
            # it is gone (a person's own edit, erased when its Undo was over), the earlier wording on
            # top belongs to an older write, which an Undo never takes back.
            # And only while its Undo is offered (a person's own edit keeps it that long: the sweep
            # may not have erased it yet).
            history = tx.history(memory_id)[:1] if current.last_op in UNDOABLE else []
            if (not history or history[0].revision != current.revision - 1
                    or not kept_at(history[0].expires_at, ctx.clock())):
                raise Refused("nothing_to_undo")
            earlier = tx.pop_revision(memory_id)
            if earlier is None:
                raise Refused("nothing_to_undo")
            # The restored wording gets a new revision number, so a writer still holding the undone
            # revision (or the one before it) is refused by compare-and-set instead of slipping in.
            restored = current.copy(
                revision=current.revision + 1, text=earlier.text, kind=earlier.kind, importance=earlier.importance,
                origin=earlier.origin, sources=earlier.sources, embedding=earlier.embedding,
                words_key=words_key(earlier.text, ctx.store.words_secret), updated_at=ctx.clock(), last_op="undo",
            )
            tx.save(restored, current.revision)
            tx.commit()
        log.info("memory.undo place=%s id=%s revision=%s", pid(place), memory_id, restored.revision)
        return Undone(restored, memory_id)

    def forget(self, place: Place, memory_id: str, origin: str = "asserted") -> int:
        """Erase a memory, every revision and its vectors; keep a content-free tombstone so a
        replayed write cannot bring it back. (Idempotency receipts never hold its text: a replay of
        an answer that named it is redacted, see `portal.services.idempotency`.) Answers how many
        revisions were erased; raises NotFound when there is no such memory, and Refused `paused`
        when a model (`origin="inferred"`) asks while the person is paused."""
        ctx, place = self.ctx, as_place(place)
        with ctx.store.write(place) as tx:
            if tx.get(memory_id) is None:
                raise NotFound()
            if origin == "inferred" and tx.settings().paused:
                raise Refused("paused")
            memories, revisions = tx.remove([memory_id])
            tx.tombstone([memory_id], ctx.clock())
            tx.commit()
        log.info("memory.forget place=%s id=%s revisions=%d", pid(place), memory_id, memories + revisions)
        return memories + revisions

    def forget_many(self, place: Place, ids: Sequence[str]) -> int:
        """Forget each of `ids` the place still holds, as `forget` does, in one unit of work (ids
        gone meanwhile are passed over). Answers how many memories went."""
        ctx, place = self.ctx, as_place(place)
        with ctx.store.write(place) as tx:
            held = [m.id for m in tx.get_many(list(dict.fromkeys(ids)))]
            memories, revisions = tx.remove(held)
            tx.tombstone(held, ctx.clock())
            tx.commit()
        log.info("memory.forget place=%s count=%d revisions=%d", pid(place), memories, revisions)
        return memories

    def erase_history(self, place: Place, memory_id: str) -> int:
        """Erase every earlier wording of a memory, as forget erases them (the assistant's corrections
        included); its current wording stays, and there is nothing left to undo. Answers how many
        wordings went; raises NotFound when there is no such memory."""
        ctx, place = self.ctx, as_place(place)
        with ctx.store.write(place) as tx:
            if tx.get(memory_id) is None:
                raise NotFound()
            erased = tx.erase_history(memory_id)
            tx.commit()
        log.info("memory.erase_history place=%s id=%s revisions=%d", pid(place), memory_id, erased)
        return erased


def _try_draft(ctx: Context, place: Place, *args: Any) -> Draft | Refused:
    try:
        return draft(ctx, place, *args)
    except Refused as refused:
        return refused


def _paused(ctx: Context, place: Place) -> bool:
    with ctx.store.read(place) as tx:
        return tx.settings().paused
