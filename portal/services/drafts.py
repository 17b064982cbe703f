"""What a text must be to be kept, and what keeping it does to the memories already there: the
checks every write runs (text, kind, content rules, other people's names), the duplicate it may
meet, the cap, and the provenance a correction keeps. Used by `Memories`; raises nothing but
`Refused`, and changes nothing but through the transaction it is handed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from portal.domain.attributes import is_immutable, scope_of
from portal.domain.decisions import EVERY_APP
from portal.domain.errors import Refused
from portal.domain.rules import Candidate, importance_of, names_added
from portal.domain.text import clean_text, words_key
from portal.domain.types import Embedding, Memory, Place, Revision, Saved, Source
from portal.inputs import is_valid_text
from portal.ports import Filters, StoreTx

from .apps import AppTx
from .context import Context, pid

log = logging.getLogger("portal.memory")
ACTIVE = Filters()
PERSONS_OWN = "portal"  # the source kind of what the person writes themself
NO_SCOPE = scope_of(None)  # a memory of the person's own: no agent, app or run


@dataclass(frozen=True, slots=True)
class Draft:
    text: str
    kind: str
    importance: int
    words_key: str


def draft(
    ctx: Context, place: Place, text: Any, kind: Any, importance: Any, role: str | None, explicit: bool,
    person_name: str | None, carried: str | None = None,
) -> Draft:
    """The text as it will be kept, or Refused: `invalid_text`, `empty`, `too_long`, `invalid_kind`,
    `kind_not_allowed`, a content rule's code, or `other_person` (a name the text adds; a name the
    memory already `carried` stays allowed)."""
    if not is_valid_text(text) or not (role is None or is_valid_text(role)):
        raise Refused("invalid_text") if isinstance(text, str) else Refused("empty")
    cleaned = clean_text(text)
    if not cleaned:
        raise Refused("empty")
    if len(cleaned) > ctx.options.max_text_length:
        raise Refused("too_long")
    resolved = ctx.options.kinds.resolve(kind)
    if resolved is None:
        raise Refused("invalid_kind")
    if not ctx.options.kinds.allowed(resolved, role):
        raise Refused("kind_not_allowed")
    candidate = Candidate(cleaned, resolved, role, bool(explicit))
    for rule in ctx.options.rules:
        code = rule(candidate)
        if code:
            raise Refused(code)
    if names_added(cleaned, ctx.names_of(place), person_name, carried):
        raise Refused("other_person")
    return Draft(cleaned, resolved, importance_of(importance, ctx.options.default_importance),
                 words_key(cleaned, ctx.store.words_secret))


def edit_draft(ctx: Context, place: Place, current: Memory, text: Any, kind: Any, importance: Any,
               person_name: str | None) -> Draft:
    """A correction of `current`, checked again with the memory's original role."""
    return draft(
        ctx, place, current.text if text is None else text, current.kind if kind is None else kind,
        current.importance if importance is None else importance, current.role, False, person_name,
        carried=current.text,
    )


def duplicate_of(ctx: Context, tx: StoreTx, key: str, embedding: Embedding | None,
                 scope: tuple[str | None, ...] = NO_SCOPE) -> Memory | None:
    """An active memory of the same `scope` (`portal.domain.attributes.scope_of`: the agent, app
    and run ids; issue 39) with the same folded words, or else one at least `duplicate_threshold`
    close in meaning (same model and size only), among every memory the person keeps: one withheld
    from the app that writes is met too (issue 38: its repeat must not come back as a new memory).
    Without `embedding`, only the same words are met."""
    kept = tx.as_kept if isinstance(tx, AppTx) else tx
    same_words = [m for m in kept.find_words(key) if scope_of(m.attributes) == scope]
    if same_words:
        return same_words[0]
    return None if embedding is None else _nearest_in_scope(ctx, kept, embedding, scope)


def _nearest_in_scope(ctx: Context, kept: StoreTx, embedding: Embedding, scope: tuple[str | None, ...]) -> Memory | None:
    """The closest memory of `scope` among those close enough, read a few at a time (the first is
    of the same scope but for a person whose hosts keep the same things in many runs or agents)."""
    looked, limit = 0, 1
    while True:
        near = kept.nearest(embedding, limit, ACTIVE)
        close = [memory_id for memory_id, score in near if score >= ctx.options.duplicate_threshold]
        by_id = {m.id: m for m in kept.get_many(close[looked:])}
        for memory_id in close[looked:]:
            if (memory_id in by_id and scope_of(by_id[memory_id].attributes) == scope
                    and not is_immutable(by_id[memory_id].attributes)):  # a near repeat replaces no immutable one
                return by_id[memory_id]
        if len(close) < limit:
            return None
        looked, limit = len(close), limit * 4


def meet_duplicate(
    ctx: Context, tx: StoreTx, existing: Memory, new: Draft, embedding: Embedding | None, mode: str,
    origin: str, sources: tuple[Source, ...], kind_given: bool, importance_given: bool, channel: str,
) -> Saved:
    """Replace the duplicate's wording (a new revision), or reinforce it. A memory the person
    withheld from the app that writes is only ever reinforced (the app changes no wording it may
    not read, pins nothing) and stays withheld; the app is answered with its own words under the
    memory's id as if they had just been kept (`as_said`), never with what the person keeps."""
    now = ctx.clock()
    if ctx.app is not None and not existing.usable_by(ctx.app.id):
        reinforced = existing.copy(
            importance=max(existing.importance, new.importance) if importance_given else existing.importance,
            updated_at=now, embedding=existing.embedding or embedding, last_op="reinforce",
        )
        tx.save(reinforced, existing.revision)
        return Saved(as_said(existing.id, existing.place, new, embedding, origin, sources, channel, now),
                     reinforced=True)
    # Saying the same thing again changes no wording: it reinforces, whatever the mode (a new
    # revision of identical text would pile up history and make undo "restore" the same words).
    identical = (
        new.text == existing.text and (not kind_given or new.kind == existing.kind)
        and (not importance_given or new.importance == existing.importance)
    )
    if mode == "reinforce" or identical:
        reinforced = existing.copy(
            importance=max(existing.importance, new.importance) if importance_given else existing.importance,
            updated_at=now, embedding=existing.embedding or embedding, last_op="reinforce",
        )
        tx.save(reinforced, existing.revision)
        return Saved(reinforced, reinforced=True)
    tx.push_revision(replaced_wording(ctx, existing, sources))
    new_origin, new_sources = provenance(existing, origin, sources)
    replaced = existing.copy(
        revision=existing.revision + 1, text=new.text,
        kind=new.kind if kind_given else existing.kind,
        importance=new.importance if importance_given else existing.importance,
        origin=new_origin, sources=new_sources, embedding=embedding, words_key=new.words_key,
        updated_at=now, last_op="replace",
    )
    tx.save(replaced, existing.revision)
    return Saved(replaced, replaced_id=existing.id)


def as_said(
    memory_id: str, place: Place, new: Draft, embedding: Embedding | None, origin: str, sources: tuple[Source, ...],
    channel: str, now: datetime,
) -> Memory:
    """What an app is told of a memory withheld from it that its words met: the memory's id, and
    otherwise what a memory of the app's own words kept `now` would be (a first revision, the
    app's channel, origin and sources, its words, kind and importance), marked not for the app.
    Nothing the person keeps about that memory: not its wording, revision (how often it was
    corrected), channel (whether the assistant learnt it), times, attributes, expiry, pin or
    decisions about other apps."""
    return Memory(
        id=memory_id, owner_id=place.owner_id, scope=place.scope, revision=1, text=new.text, kind=new.kind,
        importance=new.importance, created_at=now, updated_at=now, origin=origin, sources=sources, channel=channel,
        seen=channel == "foreground", embedding=embedding, words_key=new.words_key, withheld=(EVERY_APP,),
    )


def trim(ctx: Context, tx: StoreTx, active: int, keep: str) -> None:
    """Archive the least useful memories beyond the cap (never `keep`, the one just written)."""
    threshold = ctx.options.trim_threshold
    if threshold is None or active <= threshold:
        return
    excess = active - (ctx.options.max_active or active)
    victims = [i for i in tx.trim_candidates(excess + 1) if i != keep][:excess]
    tx.set_state(victims, "archived")
    log.info("memory.trim place=%s archived=%d", pid(tx.place), len(victims))


def snapshot(memory: Memory) -> Revision:
    return Revision(
        memory_id=memory.id, revision=memory.revision, text=memory.text, kind=memory.kind,
        importance=memory.importance, origin=memory.origin, sources=memory.sources,
        written_at=memory.updated_at, embedding=memory.embedding, op=memory.last_op,
    )


def replaced_wording(ctx: Context, memory: Memory, sources: tuple[Source, ...]) -> Revision:
    """The wording a write replaces, as history keeps it. The person's own edit (made in the
    portal: `Source("portal")`) keeps it only as long as its Undo is offered (`undo_window`); the
    periodic task then erases it as forget erases. Another writer's (the assistant's) stays until
    the person erases it from the memory's history, or retention does."""
    own = any(s.kind == PERSONS_OWN for s in sources)
    return replace(snapshot(memory), expires_at=ctx.clock() + ctx.options.undo_window if own else None)


def provenance(current: Memory, writer: str, sources: tuple[Source, ...]) -> tuple[str, tuple[Source, ...]]:
    """Who a corrected memory is attributed to: a model never relabels what a person asserted."""
    if current.origin == "asserted" and writer == "inferred":
        return current.origin, current.sources
    merged = current.sources + tuple(s for s in sources if s not in current.sources)
    return ("asserted" if writer == "asserted" else current.origin), merged
