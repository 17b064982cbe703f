"""MemoryService: the one way to read or write memories.

The portal, the JSON API, the CLI and the model tools are thin shells over it. It never imports a
web framework; it is handed a Store, an optional Embedder, rules, a mask, a clock and an id
factory. Writing lives here; reading, ranking and the portrait live in `reading`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from portal.domain.audit import AuditNote
from portal.domain.options import LLM, AiSwitch, Clock, Embedder, Mask, NamesOf, Options, always_on, new_id, no_names, utc_now
from portal.domain.rules import Candidate, importance_of, names_added
from portal.domain.text import clean_text, mask_pii, no_mask, words_key
from portal.domain.types import (
    CHANNELS,
    ORIGINS,
    Embedding,
    Holding,
    Memory,
    NotFound,
    Paused,
    Place,
    PurgeCounts,
    Refused,
    Revision,
    Saved,
    Source,
    as_place,
)
from portal.inputs import is_valid_text
from portal.ports import Filters, Settings, Store, StoreTx, as_vector
from portal.services.consolidation import Consolidating
from portal.services.recall import Reading
from portal.services.retention import Retention

log = logging.getLogger("portal.memory")

UNDOABLE = ("update", "replace")
DUPLICATE_MODES = ("replace", "reinforce", "keep")


@dataclass(frozen=True, slots=True)
class Undone:
    """What undo did: `memory` is the restored revision, or None when a new memory was removed."""

    memory: Memory | None
    memory_id: str
    ok: bool = True


@dataclass(frozen=True, slots=True)
class _Draft:
    text: str
    kind: str
    importance: int
    words_key: str


class MemoryService(Reading, Consolidating, Retention):
    """Remember, correct, undo, forget, recall and portray what an assistant knows of each person.

    Privacy guarantees: every call is bound to one place and never reads or changes another
    owner's or scope's memories (`purge_owner` alone crosses scopes, for erasure); text reaches
    the embedder only through `mask`; logs carry ids and codes, never a person's words.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        options: Options | None = None,
        names_of: NamesOf = no_names,
        mask: Mask | str = no_mask,
        ai_enabled: AiSwitch = always_on,
        clock: Clock = utc_now,
        id_factory: Callable[[], str] = new_id,
        llm: LLM | None = None,
    ) -> None:
        self.store = store
        self.llm = llm
        self.embedder = embedder
        self.options = options or Options()
        self.names_of = names_of
        self.mask: Mask = mask_pii if mask == "pii" else no_mask if mask in ("", "none") else mask  # type: ignore[assignment]
        self.ai_enabled = ai_enabled
        self.clock = clock
        self.id_factory = id_factory

    # ---------------------------------------------------------------- writing

    def remember(
        self,
        place: Place,
        text: Any,
        kind: Any = None,
        importance: Any = None,
        role: str | None = None,
        explicit: bool = False,
        origin: str = "asserted",
        on_duplicate: str | None = None,
        sources: Sequence[Source] = (),
        pinned: bool = False,
        channel: str = "foreground",
        person_name: str | None = None,
        holding: Holding | None = None,
    ) -> Saved | Refused:
        """Keep a new memory, or meet the duplicate it repeats: `replace` it (a new revision of the
        same memory), `reinforce` it (keep its text, raise its importance), or `keep` both, the new
        one as a memory of its own (for an import of records that may repeat word for word, such as
        the turns of a conversation: no duplicate is looked for).

        Refuses with a code, changing nothing: `paused`, `empty`, `too_long`, `invalid_text` (a NUL
        or a lone surrogate, in the text or the role), `invalid_kind`, `kind_not_allowed`,
        `other_person` or a content rule's code.
        """
        return self.remember_many(
            place, [text], kind=kind, importance=importance, role=role, explicit=explicit, origin=origin,
            on_duplicate=on_duplicate, sources=sources, pinned=pinned, channel=channel, person_name=person_name,
            holding=holding,
        )[0]

    def remember_many(
        self,
        place: Place,
        texts: Sequence[Any],
        kind: Any = None,
        importance: Any = None,
        role: str | None = None,
        explicit: bool = False,
        origin: str = "asserted",
        on_duplicate: str | None = None,
        sources: Sequence[Source] = (),
        pinned: bool = False,
        channel: str = "foreground",
        person_name: str | None = None,
        holding: Holding | None = None,
    ) -> list[Saved | Refused]:
        """`remember` for several texts at once, in order, with the same settings: one call to the
        embedder for all of them and one transaction. Each text gets its own answer, as `remember`
        would give it; a text refused changes nothing and does not stop the others. A text may
        meet a duplicate kept earlier in the same call. With `holding` (a conversation ref and the
        holder of its claim: consolidation), nothing is kept unless the claim is still held, checked
        in the write itself (`erased`: the person's data was erased while the model thought)."""
        place = as_place(place)
        if origin not in ORIGINS or channel not in CHANNELS:
            raise ValueError("origin or channel out of range")
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise TypeError("remember_many takes a sequence of texts, not a single str")
        mode = on_duplicate or self.options.on_duplicate
        if mode not in DUPLICATE_MODES:
            return [Refused("invalid_on_duplicate") for _ in texts]
        if not texts:
            return []
        # Looked at before the write only to spare the embedder work a paused place would throw
        # away; the write transaction checks it again, so without an embedder one read is saved.
        if self.embedder is not None and self.is_paused(place):
            return [Refused("paused") for _ in texts]
        drafts = [self._draft(place, text, kind, importance, role, explicit, person_name) for text in texts]
        kept = [d for d in drafts if isinstance(d, _Draft)]
        vectors = iter(self._embed_many(place, [d.text for d in kept], "document"))
        embeddings = [next(vectors) if isinstance(d, _Draft) else None for d in drafts]
        results: list[Saved | Refused] = []
        with self.store.write(place) as tx:
            if tx.settings().paused:
                return [Refused("paused") for _ in texts]
            if holding is not None and not tx.holds_ref(holding.ref, holding.holder):
                return [Refused("erased") for _ in texts]
            for draft, embedding in zip(drafts, embeddings, strict=True):
                if isinstance(draft, Refused):
                    results.append(draft)
                    continue
                forgotten = holding.shown.get(draft.words_key) if holding is not None else None
                if forgotten is not None and tx.is_tombstoned(forgotten):
                    results.append(Refused("forgotten"))  # the person forgot it while the model thought
                    continue
                results.append(self._keep(
                    tx, place, draft, embedding, mode, origin, tuple(sources), pinned, channel, role,
                    kind is not None, importance is not None,
                ))
            tx.commit()
        for result in results:
            if isinstance(result, Saved):
                log.info("memory.remember place=%s id=%s replaced=%s", _pid(place), result.memory.id, result.replaced_id)
        return results

    def _keep(
        self, tx: StoreTx, place: Place, draft: _Draft, embedding: Embedding | None, mode: str, origin: str,
        sources: tuple[Source, ...], pinned: bool, channel: str, role: str | None, kind_given: bool,
        importance_given: bool,
    ) -> Saved:
        existing = None if mode == "keep" else self._duplicate_of(tx, draft.words_key, embedding)
        if existing is not None:
            if pinned and not existing.pinned:
                existing = existing.copy(pinned=True)
            return self._meet_duplicate(
                tx, existing, draft, embedding, mode, origin, sources, kind_given, importance_given
            )
        now = self.clock()
        memory = Memory(
            id=self.id_factory(), owner_id=place.owner_id, scope=place.scope, revision=1,
            text=draft.text, kind=draft.kind, importance=draft.importance, created_at=now,
            updated_at=now, role=role, origin=origin, sources=sources, channel=channel,
            seen=channel == "foreground", pinned=bool(pinned), embedding=embedding,
            last_op="create", words_key=draft.words_key,
        )
        active = tx.insert(memory)
        self._trim(tx, active, keep=memory.id)
        return Saved(memory)

    def update(
        self,
        place: Place,
        memory_id: str,
        text: Any = None,
        kind: Any = None,
        importance: Any = None,
        pinned: bool | None = None,
        expected_revision: int | None = None,
        in_place: bool = False,
        origin: str = "asserted",
        sources: Sequence[Source] = (),
        person_name: str | None = None,
        holding: Holding | None = None,
    ) -> Saved | Refused:
        """Correct a memory: a new revision (same id), or with `in_place` an overwrite that keeps no
        earlier text. Rules are checked again with the memory's original role; a name it already
        carried stays allowed. A stale `expected_revision` is refused with `conflict`.
        A model's write (`origin="inferred"`) never changes an asserted memory's origin or sources,
        and is refused with `paused` while the person is paused (checked in the write itself, so a
        model's correction that began before the pause does not land after it). `holding`: as in
        `remember_many`.
        """
        place = as_place(place)
        with self.store.read(place) as tx:
            before = tx.get(memory_id)
        if before is None:
            return Refused("not_found")
        if expected_revision is not None and expected_revision != before.revision:
            return Refused("conflict", actual_revision=before.revision)
        draft = self._edit_draft(place, before, text, kind, importance, person_name)
        if isinstance(draft, Refused):
            return draft
        # Embedding happens outside the transaction; the vector depends on the new text alone.
        embedding = self._embed(place, draft.text, "document") if draft.text != before.text else before.embedding
        with self.store.write(place) as tx:
            current = tx.get(memory_id)
            if current is None:
                return Refused("not_found")
            if origin == "inferred" and tx.settings().paused:
                return Refused("paused")
            if holding is not None and not tx.holds_ref(holding.ref, holding.holder):
                return Refused("erased")
            if current.revision != before.revision or current.updated_at != before.updated_at:
                if expected_revision is not None:
                    return Refused("conflict", actual_revision=current.revision)
                # Someone wrote in between: apply this edit on top of theirs, checked again.
                draft = self._edit_draft(place, current, text, kind, importance, person_name)
                if isinstance(draft, Refused):
                    return draft
                if draft.text == current.text:
                    embedding = current.embedding
            content_changed = (draft.text, draft.kind, draft.importance) != (current.text, current.kind, current.importance)
            changed = current.copy(
                text=draft.text, kind=draft.kind, importance=draft.importance, words_key=draft.words_key,
                embedding=embedding if draft.text != current.text else current.embedding,
                pinned=current.pinned if pinned is None else bool(pinned),
            )
            if content_changed:
                changed.updated_at = self.clock()
                changed.origin, changed.sources = _provenance(current, origin, tuple(sources))
                changed.revision = current.revision + 1
                if in_place:
                    # No earlier text survives an in-place edit: a regretted detail is gone for good.
                    while tx.pop_revision(memory_id) is not None:
                        pass
                    changed.last_op = "in_place"
                else:
                    tx.push_revision(_snapshot(current))
                    changed.last_op = "update"
            tx.save(changed, current.revision)
            tx.commit()
        log.info("memory.update place=%s id=%s revision=%s", _pid(place), memory_id, changed.revision)
        # A correction to the very same text, kind and importance changed nothing: it says so.
        return Saved(changed, reinforced=not content_changed and pinned is None)

    def _edit_draft(
        self, place: Place, current: Memory, text: Any, kind: Any, importance: Any, person_name: str | None
    ) -> _Draft | Refused:
        return self._draft(
            place,
            current.text if text is None else text,
            current.kind if kind is None else kind,
            current.importance if importance is None else importance,
            current.role, False, person_name, carried=current.text,
        )

    def pin(self, place: Place, memory_id: str, pinned: bool = True) -> Saved | Refused:
        """Pin (always in the portrait) or unpin a memory; no new revision."""
        return self.update(place, memory_id, pinned=pinned)

    def undo(self, place: Place, memory_id: str) -> Undone | Refused:
        """Take back the last write: remove a memory just remembered, or bring back the wording an
        update or a duplicate replacement overwrote (as a new revision; the undone wording is
        erased). Refuses `nothing_to_undo` otherwise."""
        place = as_place(place)
        with self.store.write(place) as tx:
            current = tx.get(memory_id)
            if current is None:
                return Refused("not_found")
            if current.last_op == "create" and current.revision == 1:
                tx.remove([memory_id])
                tx.commit()
                log.info("memory.undo place=%s id=%s removed", _pid(place), memory_id)
                return Undone(None, memory_id)
            if current.last_op not in UNDOABLE:
                return Refused("nothing_to_undo")
            earlier = tx.pop_revision(memory_id)
            if earlier is None:
                return Refused("nothing_to_undo")
            # The restored wording gets a new revision number, so a writer still holding the undone
            # revision (or the one before it) is refused by compare-and-set instead of slipping in.
            restored = current.copy(
                revision=current.revision + 1, text=earlier.text, kind=earlier.kind, importance=earlier.importance,
                origin=earlier.origin, sources=earlier.sources, embedding=earlier.embedding,
                words_key=words_key(earlier.text, self.store.words_secret), updated_at=self.clock(), last_op="undo",
            )
            tx.save(restored, current.revision)
            tx.commit()
        log.info("memory.undo place=%s id=%s revision=%s", _pid(place), memory_id, restored.revision)
        return Undone(restored, memory_id)

    def forget(self, place: Place, memory_id: str, origin: str = "asserted") -> int:
        """Erase a memory, every revision and its vectors; keep a content-free tombstone so a
        replayed write cannot bring it back. (Idempotency receipts never hold its text: a replay of
        an answer that named it is redacted, see `portal.services.idempotency`.)
        Answers how many revisions were erased; raises NotFound when there is no such memory, and
        Paused when a model (`origin="inferred"`) asks while the person is paused."""
        place = as_place(place)
        with self.store.write(place) as tx:
            if tx.get(memory_id) is None:
                raise NotFound()
            if origin == "inferred" and tx.settings().paused:
                raise Paused()
            memories, revisions = tx.remove([memory_id])
            tx.tombstone([memory_id], self.clock())
            tx.commit()
        log.info("memory.forget place=%s id=%s revisions=%d", _pid(place), memory_id, memories + revisions)
        return memories + revisions

    def forget_all(self, place: Place, audit: AuditNote | None = None) -> dict[str, int]:
        """The person's "erase everything" in one place: every memory and revision, and everything
        else the place keeps that names them (consolidation refs, idempotency receipts, tombstones).
        A pause stays: it is the person's control, not their data. With `audit`, the audit entry
        (counts only) is written in the same transaction."""
        place = as_place(place)
        with self.store.write(place) as tx:
            paused = tx.settings().paused
            erased = tx.purge()
            if paused:
                tx.set_settings(Settings(paused=True))
            counts = {"memories": erased.memories, "revisions": erased.revisions, "receipts": erased.receipts,
                      "refs": erased.refs}
            if audit is not None:
                tx.record(audit.entry(place.owner_id, place.scope, counts, at=self.clock()))
            tx.commit()
        log.info("memory.forget_all place=%s memories=%d", _pid(place), erased.memories)
        return counts

    def purge_owner(self, owner_id: str, scopes: Sequence[str] | None = None, audit: AuditNote | None = None) -> PurgeCounts:
        """Erasure of a person: memories, revisions, settings, consolidation refs, idempotency
        receipts, unseen marks and tombstones — in every scope (the one call that crosses scopes,
        for a person's own erasure request), or only in `scopes` (a tenant erasing its own user).
        With `audit`, its entry (with the counts) is written in the same transaction."""
        as_place(Place.of(owner_id))
        scope = scopes[0] if scopes and len(scopes) == 1 else None
        entry = audit.entry(owner_id, scope, at=self.clock()) if audit is not None else None
        counts = self.store.purge_owner(owner_id, scopes, entry)
        log.info("memory.purge_owner memories=%d revisions=%d", counts.memories, counts.revisions)
        return counts

    # ---------------------------------------------------------------- pause

    def pause(self, place: Place, audit: AuditNote | None = None) -> bool:
        """Stop learning: remember answers `paused`, and so does every change a model asks for
        (tools, consolidation); the person can still read, correct, undo and erase. With `audit`,
        its entry is written in the same transaction."""
        return self._set_paused(place, True, audit)

    def resume(self, place: Place, audit: AuditNote | None = None) -> bool:
        return self._set_paused(place, False, audit)

    def is_paused(self, place: Place) -> bool:
        with self.store.read(as_place(place)) as tx:
            return tx.settings().paused

    def _set_paused(self, place: Place, paused: bool, audit: AuditNote | None) -> bool:
        place = as_place(place)
        with self.store.write(place) as tx:
            tx.set_settings(Settings(paused=paused))
            if audit is not None:
                tx.record(audit.entry(place.owner_id, place.scope, at=self.clock()))
            tx.commit()
        return paused

    # ---------------------------------------------------------------- vectors

    def reindex(self, limit: int | None = None, progress: Callable[[int], None] | None = None, batch: int = 64) -> int:
        """Give a vector to memories without one, or re-embed those of another model. Resumable:
        a memory whose revision moved meanwhile is skipped and picked up by the next run."""
        if self.embedder is None:
            return 0
        done = 0
        seen: set[tuple[Place, str, int]] = set()
        while limit is None or done < limit:
            size = batch if limit is None else min(batch, limit - done)
            pending = self.store.needing_vector(self.embedder.model_id, None, size + len(seen))
            fresh = [t for t in pending if (t.place, t.id, t.revision) not in seen][:size]
            if not fresh:
                break
            seen.update((t.place, t.id, t.revision) for t in fresh)
            todo = [t for t in fresh if self.ai_enabled(t.place)]
            if not todo:
                continue
            vectors, model = self.embedder.embed([self.mask(t.text, t.place) for t in todo], "document")
            for item, vector in zip(todo, vectors, strict=True):
                embedding = Embedding(model, as_vector(vector))
                if self.store.set_embedding(item.place, item.id, item.revision, item.updated_at, embedding):
                    done += 1
            if progress:
                progress(len(todo))
        return done

    # ---------------------------------------------------------------- internals

    def _draft(
        self, place: Place, text: Any, kind: Any, importance: Any, role: str | None, explicit: bool,
        person_name: str | None, carried: str | None = None,
    ) -> _Draft | Refused:
        if not is_valid_text(text) or not (role is None or is_valid_text(role)):
            return Refused("invalid_text") if isinstance(text, str) else Refused("empty")
        cleaned = clean_text(text)
        if not cleaned:
            return Refused("empty")
        if len(cleaned) > self.options.max_text_length:
            return Refused("too_long")
        resolved = self.options.kinds.resolve(kind)
        if resolved is None:
            return Refused("invalid_kind")
        if not self.options.kinds.allowed(resolved, role):
            return Refused("kind_not_allowed")
        candidate = Candidate(cleaned, resolved, role, bool(explicit))
        for rule in self.options.rules:
            code = rule(candidate)
            if code:
                return Refused(code)
        if names_added(cleaned, self.names_of(place), person_name, carried):
            return Refused("other_person")
        return _Draft(
            cleaned, resolved, importance_of(importance, self.options.default_importance),
            words_key(cleaned, self.store.words_secret),
        )

    def _embed(self, place: Place, text: str, purpose: str) -> Embedding | None:
        """A vector for `text`, or None when the AI is off, no embedder is set, or it fails."""
        return self._embed_many(place, [text], purpose)[0]

    def _embed_many(self, place: Place, texts: Sequence[str], purpose: str) -> list[Embedding | None]:
        """A vector for each text, in one call to the embedder; all None when the AI is off, no
        embedder is set, or it fails."""
        if not texts or self.embedder is None or not self.ai_enabled(place):
            return [None for _ in texts]
        try:
            vectors, model = self.embedder.embed([self.mask(text, place) for text in texts], purpose)
            if len(vectors) != len(texts):
                raise ValueError("the embedder answered another number of vectors")
            return [Embedding(model, as_vector(vector)) for vector in vectors]
        except Exception as exc:  # an embedder outage must never lose a write or a read
            log.warning("embedder.failed place=%s error=%s", _pid(place), type(exc).__name__)
            return [None for _ in texts]

    def _duplicate_of(self, tx: StoreTx, key: str, embedding: Embedding | None) -> Memory | None:
        same_words = tx.find_words(key)
        if same_words is not None:
            return same_words
        if embedding is None:
            return None
        near = tx.nearest(embedding, 1, _ACTIVE)
        if near and near[0][1] >= self.options.duplicate_threshold:
            return tx.get(near[0][0])
        return None

    def _meet_duplicate(
        self, tx: StoreTx, existing: Memory, draft: _Draft, embedding: Embedding | None, mode: str,
        origin: str, sources: tuple[Source, ...], kind_given: bool, importance_given: bool,
    ) -> Saved:
        now = self.clock()
        # Saying the same thing again changes no wording: it reinforces, whatever the mode (a new
        # revision of identical text would pile up history and make undo "restore" the same words).
        identical = (
            draft.text == existing.text and (not kind_given or draft.kind == existing.kind)
            and (not importance_given or draft.importance == existing.importance)
        )
        if mode == "reinforce" or identical:
            reinforced = existing.copy(
                importance=max(existing.importance, draft.importance) if importance_given else existing.importance,
                updated_at=now, embedding=existing.embedding or embedding, last_op="reinforce",
            )
            tx.save(reinforced, existing.revision)
            return Saved(reinforced, reinforced=True)
        tx.push_revision(_snapshot(existing))
        new_origin, new_sources = _provenance(existing, origin, sources)
        replaced = existing.copy(
            revision=existing.revision + 1, text=draft.text,
            kind=draft.kind if kind_given else existing.kind,
            importance=draft.importance if importance_given else existing.importance,
            origin=new_origin, sources=new_sources, embedding=embedding, words_key=draft.words_key,
            updated_at=now, last_op="replace",
        )
        tx.save(replaced, existing.revision)
        return Saved(replaced, replaced_id=existing.id)

    def _trim(self, tx: StoreTx, active: int, keep: str) -> None:
        threshold = self.options.trim_threshold
        if threshold is None or active <= threshold:
            return
        excess = active - (self.options.max_active or active)
        victims = [i for i in tx.trim_candidates(excess + 1) if i != keep][:excess]
        tx.set_state(victims, "archived")
        log.info("memory.trim place=%s archived=%d", _pid(tx.place), len(victims))


_ACTIVE = Filters()


def _pid(place: Place) -> str:
    """A place for logs: ids only."""
    return f"{place.owner_id}/{place.scope}"


def _snapshot(memory: Memory) -> Revision:
    return Revision(
        memory_id=memory.id, revision=memory.revision, text=memory.text, kind=memory.kind,
        importance=memory.importance, origin=memory.origin, sources=memory.sources,
        written_at=memory.updated_at, embedding=memory.embedding, op=memory.last_op,
    )


def _provenance(current: Memory, writer: str, sources: tuple[Source, ...]) -> tuple[str, tuple[Source, ...]]:
    """Who a corrected memory is attributed to: a model never relabels what a person asserted."""
    if current.origin == "asserted" and writer == "inferred":
        return current.origin, current.sources
    merged = current.sources + tuple(s for s in sources if s not in current.sources)
    return ("asserted" if writer == "asserted" else current.origin), merged
