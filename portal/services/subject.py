"""Forget everything about a subject (issue 29, item 4; DESIGN §15): a preview of every memory that
matches it, then the erasure of exactly the previewed memories the person kept, in one audited
transaction.

Matching is recall's "relevant only", over active and archived memories alike (the person wants it
all gone): a memory matches when it shares a ranking term with the subject (stemmed, stop words
left out), when its plain cosine to the subject reaches the relevance floor, or when it mentions a
person the subject names (`portal.domain.subjects`: the first MAX_NAMES). The rankings are the
store's own (its word search of the subject and of each name, all over one read of the place —
`search_words_each`, the active memories' terms from the recall cache —, and `Meaning`, uncentred
so the floor is the plain cosine), fused as recall fuses them for the order; a fragment match,
which shares no word, is not a match here.

The preview reads: it marks nothing used and, for an app, records what any read records. The
confirmation takes the preview's sealed token and the ids the person kept ticked: an id the
preview did not list refuses the whole request (`not_previewed`); one changed since (a new
revision) or gone is left as it is and reported, so a memory written or corrected after the preview
is never taken. Forgetting is `forget`'s erasure (every revision, vectors, a tombstone; the SQL
stores clean up after it), with one content-free audit entry in the same transaction.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from portal.domain.apps import READ
from portal.domain.audit import AuditNote
from portal.domain.errors import InvalidArgument, Refused
from portal.domain.queries import Filters
from portal.domain.recall.meaning import Meaning
from portal.domain.recall.ranking import fuse, fuse_scores
from portal.domain.subjects import MAX_SUBJECT, PREVIEW_MAX, PREVIEW_VALID, mentions_any, names_in, opened, seal
from portal.domain.text import query_terms, terms
from portal.domain.types import Memory, Place, as_place
from portal.inputs import is_valid_text

from .apps import note_reads
from .context import Context, pid

log = logging.getLogger("portal.memory")


@dataclass(frozen=True, slots=True)
class Preview:
    """The memories a subject matches (at most PREVIEW_MAX, the most relevant first), the token
    that confirms them, and whether more matched than are listed."""

    items: builtins.list[Memory]
    token: str
    more: bool


@dataclass(frozen=True, slots=True)
class ForgotMatching:
    """What a confirmation did: the ids forgotten, those changed since the preview (kept), those
    gone already, and how many wordings went (content-free: what its audit entry counts)."""

    forgotten: tuple[str, ...]
    changed: tuple[str, ...]
    gone: tuple[str, ...]
    revisions: int

    def to_json(self) -> dict[str, Any]:
        return {"memories": len(self.forgotten), "revisions": self.revisions, "forgotten": list(self.forgotten),
                "changed": list(self.changed), "gone": list(self.gone)}


class Subject:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def preview(self, place: Place, subject: Any) -> Preview:
        """Every memory (active or archived) matching `subject`, and the token that confirms them;
        `invalid_subject` for a subject that is not text of 1 to MAX_SUBJECT characters. Nothing is
        marked used; an app's view records these memories as read, as any read does."""
        ctx, place = self.ctx, as_place(place)
        if not isinstance(subject, str) or not subject.strip() or len(subject) > MAX_SUBJECT \
                or not is_valid_text(subject):
            raise InvalidArgument("invalid_subject")
        ctx.admit(place)  # an app the person blocked learns nothing, and its subject reaches no model
        options = ctx.options
        floor = options.relevance_floor if options.min_similarity is None \
            else max(options.min_similarity, options.relevance_floor)
        vector = ctx.embed(place, subject, "query")
        wanted = set(query_terms(subject))
        names = names_in(subject, ctx.names_of(place))
        every = Filters(state=None)  # archived memories too
        depth = PREVIEW_MAX + 1
        with ctx.store.read(place) as tx:
            # The subject's words and each name's, ranked over one read of the place (the active
            # memories' terms from the recall cache): a name costs a look-up, not a read.
            lexical, *by_name = tx.search_words_each([subject, *(name.query for name in names)], depth, every)
            semantic: builtins.list[tuple[str, float]] = []
            if vector is not None:
                meaning = Meaning(tx, vector, every, 0.0)  # uncentred: the floor is on the plain cosine
                semantic = meaning.ranking(meaning.query, depth, floor)
            named = [i for ranking in by_name for i, _ in ranking]
            combine = fuse if options.fusion == "rrf" else fuse_scores
            ranked = [i for i, _, _ in combine([("vector", semantic, options.vector_weight),
                                                ("lexical", lexical, options.lexical_weight)], 2 * depth)]
            candidates = list(dict.fromkeys([*ranked, *named]))
            found = {m.id: m for m in tx.get_many(candidates)}
        by_meaning = {i for i, _ in semantic}
        matched = [found[i] for i in candidates if i in found and (
            i in by_meaning or not wanted.isdisjoint(terms(found[i].text)) or mentions_any(found[i].text, names))]
        shown = matched[:PREVIEW_MAX]
        note_reads(ctx, place, READ, [m.id for m in shown])
        token = seal(place, {m.id: m.revision for m in shown}, ctx.clock() + PREVIEW_VALID, ctx.store.words_secret)
        log.info("memory.preview_forget place=%s matched=%d", pid(place), len(matched))
        return Preview(shown, token, len(matched) > PREVIEW_MAX)

    def forget(self, place: Place, token: Any, ids: Any, audit: AuditNote | None = None) -> ForgotMatching:
        """Forget exactly `ids` among the memories the preview `token` sealed, those still at the
        revision it saw, in one unit of work with its audit entry (when something went). Refused
        `invalid_preview` for a token of another place, expired or altered, and `not_previewed`
        when an id is not one of the preview's (nothing is forgotten then); `invalid_ids` for
        anything but a list of ids. Allowed while the person or the app is paused, as forget is."""
        ctx, place = self.ctx, as_place(place)
        previewed = opened(token, place, ctx.clock(), ctx.store.words_secret)
        if isinstance(ids, str) or not isinstance(ids, Sequence) or not all(isinstance(i, str) for i in ids):
            raise InvalidArgument("invalid_ids")
        asked = list(dict.fromkeys(ids))
        if any(i not in previewed for i in asked):
            raise Refused("not_previewed")
        with ctx.store.write(place) as tx:
            current = {m.id: m for m in tx.get_many(asked)} if asked else {}
            taken = [i for i in asked if i in current and current[i].revision == previewed[i]]
            changed = [i for i in asked if i in current and current[i].revision != previewed[i]]
            gone = [i for i in asked if i not in current]
            revisions = 0
            if taken:
                _, revisions = tx.remove(taken)
                tx.tombstone(taken, ctx.clock())
                if audit is not None:
                    tx.record(audit.entry(place.owner_id, place.scope, {"memories": len(taken), "revisions": revisions},
                                          at=ctx.clock()))
            tx.commit()
        log.info("memory.forget_matching place=%s count=%d changed=%d gone=%d", pid(place), len(taken), len(changed),
                 len(gone))
        return ForgotMatching(tuple(taken), tuple(changed), tuple(gone), revisions)


__all__ = ["ForgotMatching", "Preview", "Subject"]
