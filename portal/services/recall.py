"""Reading memories: get, history, list with keyset pagination, unseen, recall and the portrait.

Each read is one transaction on one place; recall and mark_used also write the hits' use time
(a hint for the cap and the portrait's order, in a statement of its own).
"""

from __future__ import annotations

import builtins
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from portal.domain.apps import READ, RECALLED
from portal.domain.attributes import matches
from portal.domain.errors import InvalidArgument, NotFound
from portal.domain.listing import active, decode_cursor, encode_cursor, ids_of, moment
from portal.domain.periods import Period, named_period
from portal.domain.portrait import FORMATS, render
from portal.domain.queries import Filters
from portal.domain.recall.dated import favour_period, said_in
from portal.domain.recall.meaning import Meaning
from portal.domain.recall.ranking import fuse, fuse_scores
from portal.domain.recall.relevance import relevances
from portal.domain.types import Embedding, Hit, Memory, Page, Place, Portrait, Revision, as_place

from .apps import note_reads
from .context import Context, pid

log = logging.getLogger("portal.memory")

MAX_PAGE = 200
MAX_RECALL = 100


class Recall:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def get(self, place: Place, memory_id: str, use: bool = True) -> Memory:
        """The memory with this id in this place (any state); NotFound for anyone else's. For an
        app (`MemoryService.for_app`) it is a `read` use unless `use` is False (a look the service
        takes itself before a change)."""
        with self.ctx.store.read(as_place(place)) as tx:
            memory = tx.get(memory_id)
        if memory is None:
            raise NotFound()
        if use:
            note_reads(self.ctx, as_place(place), READ, [memory.id])
        return memory

    def history(self, place: Place, memory_id: str) -> builtins.list[Revision]:
        """Every revision still kept, newest (the current one) first."""
        with self.ctx.store.read(as_place(place)) as tx:
            memory = tx.get(memory_id)
            if memory is None:
                raise NotFound()
            earlier = tx.history(memory_id)
        note_reads(self.ctx, as_place(place), READ, [memory.id])
        current = Revision(memory.id, memory.revision, memory.text, memory.kind, memory.importance, memory.origin,
                           memory.sources, memory.updated_at, memory.embedding, memory.last_op)
        return [current, *earlier]

    def list(
        self, place: Place, state: str | None = "active", kinds: Sequence[str] | None = None, channel: str | None = None,
        seen: bool | None = None, created_after: datetime | None = None, created_before: datetime | None = None,
        limit: int = 50, cursor: str | None = None, pinned: bool | None = None,
    ) -> Page:
        """Memories newest first, one page at a time; `cursor` continues where the last page ended.
        `pinned` keeps the pinned (True) or the other (False) memories only."""
        if state not in ("active", "archived", "all", None):
            raise InvalidArgument("invalid_state")
        if not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise InvalidArgument("invalid_limit")
        filters = Filters(
            state=None if state in ("all", None) else state, kinds=tuple(kinds) if kinds else None, channel=channel,
            seen=seen, created_after=moment(created_after), created_before=moment(created_before),
            pinned=pinned if isinstance(pinned, bool) else None,
        )
        with self.ctx.store.read(as_place(place)) as tx:
            rows = tx.list(filters, limit + 1, decode_cursor(cursor) if cursor else None)
        more = len(rows) > limit
        rows = rows[:limit]
        note_reads(self.ctx, as_place(place), READ, [m.id for m in rows])
        return Page(rows, encode_cursor(rows[-1]) if more else None)

    def count(self, place: Place) -> int:
        """How many memories are kept in this place, active and archived (what erasing everything
        would take away)."""
        with self.ctx.store.read(as_place(place)) as tx:
            return tx.count("active") + tx.count("archived")

    def page(self, place: Place, offset: int, size: int, created_after: datetime | None = None,
             created_before: datetime | None = None, attributes: Mapping[str, Any] | None = None,
             ) -> tuple[builtins.list[Memory], int]:
        """The active memories newest first that carry `attributes` (portal.domain.attributes
        .matches), from `offset`, at most `size`, and how many there are in all: for an API that
        pages by number (mem0's). One read; only the memories answered are recorded as read."""
        ctx, place = self.ctx, as_place(place)
        with ctx.store.read(place) as tx:
            every = tx.list(Filters(created_after=moment(created_after), created_before=moment(created_before)))
        every.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        found = [m for m in every if matches(m.attributes, attributes or {})]
        shown = found[offset:offset + size]
        note_reads(ctx, place, READ, [m.id for m in shown])
        return shown, len(found)

    def list_unseen(self, place: Place, limit: int = 50) -> builtins.list[Memory]:
        """What was learnt in the background (consolidation) and the person has not seen yet."""
        return self.list(place, channel="background", seen=False, limit=limit).items

    def mark_seen(self, place: Place, ids: Sequence[str]) -> int:
        with self.ctx.store.write(as_place(place)) as tx:
            marked = tx.mark_seen(ids_of(ids))
            tx.commit()
        return marked

    def recalled(self, place: Place, ids: Sequence[str]) -> None:
        """These memories, found by `recall(mark=False)`, were answered after all: noted as
        recall notes its hits (their use time, the app's count, its conversation); of those this
        context may receive only (an app is never counted for a memory withheld from it)."""
        place = as_place(place)
        with self.ctx.store.read(place, snapshot=False) as tx:
            kept = list(active(tx.get_many(ids_of(ids))))
        self.ctx.note_uses(place, kept, RECALLED, mark=True)

    def mark_used(self, place: Place, ids: Sequence[str]) -> int:
        """Mark active memories as used (protects them from the cap, orders the portrait).
        Unknown, archived or other people's ids are skipped; answers how many were marked."""
        return len(self.ctx.store.mark_used(as_place(place), ids_of(ids), self.ctx.clock()))

    def recall(
        self, place: Place, query: str, kinds: Sequence[str] | None = None, after: datetime | None = None,
        before: datetime | None = None, limit: int = 5, min_similarity: float | None = None, mark: bool = True,
        relevant_only: bool = False,
    ) -> builtins.list[Hit]:
        """The memories that best answer `query`: meaning and words fused (by relative scores, or
        by reciprocal rank with `Options(fusion="rrf")`), weighted by the options' weights.

        Words: BM25 of the query's stemmed terms, stop words left out. Meaning: cosine to the
        query's vector less part of the mean direction of the memories searched
        (`meaning_centering`), ranked a second time after moving the query toward the first fused
        hits (`feedback_memories`, `feedback_weight`). A similarity floor is checked on the plain
        cosine. The ranking orders the hits; equal fused scores (to 1e-6) fall by id, on every store.
        A hit's score is its own relevance in (0, 1), from the query and the memory alone
        (portal.domain.recall.relevance): the same among 2 memories or 2,000, so a later hit may
        score higher than an earlier one. With a reranker (`Options.reranker`) its order and its
        relevance (equal ones in recall's order) come first, for the first `rerank_candidates`.

        With `relevant_only`, only memories that share a word with the query or whose plain cosine
        reaches the relevance floor (`Options.relevance_floor`, or `min_similarity` if higher) are
        hits: a query about nothing they hold finds nothing, instead of the closest of them.

        Without an embedder, with the AI off or while the embedder fails, it ranks by words, then
        by the most recently useful. Returned memories are marked used (unless `mark` is False:
        a person searching their own memories is not the assistant using them).
        """
        ctx, place = self.ctx, as_place(place)
        options = ctx.options
        if not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL:
            raise InvalidArgument("invalid_limit")
        if not isinstance(query, str) or not query.strip():
            return []
        filters = Filters(kinds=tuple(kinds) if kinds else None, created_after=moment(after),
                          created_before=moment(before))
        depth = max(50, limit * 5)
        threshold = options.min_similarity if min_similarity is None else min_similarity
        if relevant_only:
            threshold = options.relevance_floor if threshold is None else max(threshold, options.relevance_floor)
        # A query naming a period ranks more candidates: those said in it move up among them
        # (portal.domain.recall.dated). Its words stay in the query: they are evidence too.
        period = named_period(query, ctx.clock()) if options.date_weight else None
        query_vector = ctx.embed(place, query, "query")
        # How many of the first candidates are used (the reranker orders them) and read.
        used = max(limit, options.rerank_candidates if options.reranker is not None else 0)
        wanted = max(used, options.date_candidates if period else 0)
        by_id: dict[str, Memory] = {}
        # No snapshot needed: each ranking comes from one read (the recall cache, or one statement),
        # and a memory forgotten or archived by the time the hits are read simply drops out.
        with ctx.store.read(place, snapshot=False) as tx:
            lexical = tx.search_words(query, depth, filters)
            if query_vector is None:
                # Ties are broken by the most recently useful, then by id: only memories scoring at
                # least the limit-th score can be among the hits, so only those are read.
                if len(lexical) > wanted:
                    lexical = [(i, s) for i, s in lexical if s >= lexical[wanted - 1][1]]
                by_id = active(tx.get_many([i for i, _ in lexical]))
                ordered = sorted(((i, s) for i, s in lexical if i in by_id),
                                 key=lambda pair: (-pair[1], -by_id[pair[0]].last_useful_at.timestamp(), pair[0]))
                ranked = [(i, s, "lexical") for i, s in ordered[:wanted]]
            else:
                meaning = Meaning(tx, query_vector, filters, options.meaning_centering)
                semantic = meaning.ranking(meaning.query, depth, threshold)
                fused = self._fuse(semantic, lexical, wanted)
                if options.feedback_memories and options.feedback_weight and fused:
                    # Pseudo-relevance feedback (Rocchio): move the query's vector toward the
                    # memories ranked first, then rank by meaning again; words stay as they were.
                    leaders = tx.embeddings([i for i, _, _ in fused[:options.feedback_memories]])
                    moved = meaning.toward(list(leaders.values()), options.feedback_weight)
                    if moved is not None:
                        semantic = meaning.ranking(moved, depth, threshold)
                        fused = self._fuse(semantic, lexical, wanted)
                ranked = [(i, score, "hybrid" if len(how) == 2 else next(iter(how))) for i, score, how in fused]
                by_id = active(tx.get_many([i for i, _, _ in ranked]))
        ranked = [r for r in ranked if r[0] in by_id]
        if period is not None:  # fused scores reach 1 at best (relative fusion); BM25 and ranks have no ceiling
            bounded = query_vector is not None and options.fusion == "relative"
            ranked = favour_period(ranked, by_id, period, options.date_weight, options.date_grace,
                                   1.0 if bounded else None, used)
        head = 0
        if query_vector is not None:  # the rerank server is asked with no connection held
            ranked, head = self._reranked(place, query, ranked, by_id)
            if period is not None and head:  # its relevances, on their own scale, ahead of the rest
                ranked = favour_period(ranked[:head], by_id, period, options.date_weight, options.date_grace,
                                       1.0, head) + ranked[head:]
        ranked = self._scored(place, query, query_vector, ranked[:limit], by_id, head, period)
        hits = [(by_id[i], score, how) for i, score, how in ranked]
        if mark and hits:
            # A read stays a read: the hits' use (their time, the app's count, its conversation) is
            # written off the request path (`portal.services.use_log`); the answer says it already.
            at = ctx.clock()
            ctx.note_uses(place, [m.id for m, _, _ in hits], RECALLED, mark=True, at=at)
            return [Hit(replace(m, last_used_at=at), score, how) for m, score, how in hits]
        return [Hit(m, score, how) for m, score, how in hits]

    def _scored(self, place: Place, query: str, vector: Embedding | None, ranked: builtins.list[tuple[str, float, str]],
                by_id: Mapping[str, Memory], head: int, period: Period | None) -> builtins.list[tuple[str, float, str]]:
        """`ranked` in its order, each with its score on recall's one scale (portal.domain.recall
        .relevance: the query and the memory alone, whatever else the place holds), lifted for a
        memory said in the period the query names as the ranking lifts it; the first `head`, which
        the reranker ordered, keep its relevance."""
        options = self.ctx.options
        scores = relevances(query, vector, [by_id[i] for i, _, _ in ranked[head:]], place.owner_id)
        if period is not None:
            scores = [s + options.date_weight * (1.0 - s) if said_in(by_id[i], period, options.date_grace) else s
                      for (i, _, _), s in zip(ranked[head:], scores, strict=True)]
        return ranked[:head] + [(i, s, how) for (i, _, how), s in zip(ranked[head:], scores, strict=True)]

    def _reranked(self, place: Place, query: str, ranked: builtins.list[tuple[str, float, str]],
                  by_id: Mapping[str, Memory]) -> tuple[builtins.list[tuple[str, float, str]], int]:
        """`ranked`, its first `rerank_candidates` in the reranker's order with its relevance
        (clamped to [0, 1]) as their score, the rest after them as they were, and how many it
        ordered (0: none);
        `ranked` as it is without a reranker, or when it fails, is slow or answers something else
        than a finite score per text (logged by error type: no words)."""
        options = self.ctx.options
        asked = ranked[:options.rerank_candidates]
        if options.reranker is None or len(asked) < 2:
            return ranked, 0
        mask = self.ctx.mask
        try:
            scores = options.reranker.rerank(mask(query, place), [mask(by_id[i].text, place) for i, _, _ in asked])
            if len(scores) != len(asked) or not all(isinstance(s, float | int) and math.isfinite(s) for s in scores):
                raise ValueError("not a finite score per text")
        except Exception as exc:  # the reranker is a second opinion: recall answers without it
            log.warning("reranker.failed place=%s error=%s", pid(place), type(exc).__name__)
            return ranked, 0
        order = sorted(range(len(asked)), key=lambda k: (-float(scores[k]), k))
        reordered = [(asked[k][0], min(1.0, max(0.0, float(scores[k]))), asked[k][2]) for k in order]
        return reordered + ranked[len(asked):], len(asked)

    def _fuse(
        self, semantic: builtins.list[tuple[str, float]], lexical: builtins.list[tuple[str, float]], limit: int
    ) -> builtins.list[tuple[str, float, set[str]]]:
        options = self.ctx.options
        combine = fuse if options.fusion == "rrf" else fuse_scores
        return combine([("vector", semantic, options.vector_weight), ("lexical", lexical, options.lexical_weight)], limit)

    def portrait(
        self, place: Place, max_length: int | None = None, min_importance: int | None = None, format: str = "bullets",
        masked: bool = False, fill: bool = False,
    ) -> Portrait:
        """Pinned and important memories for a system prompt, pinned first, then most recently
        useful; cut on a whole memory. With `fill`, a memory that does not fit is skipped and
        shorter ones after it still get their place. With `masked` the text goes through the mask.
        The answer also names what is not in it (`Portrait.no_room`, `Portrait.left_out`), so no
        caller says "nothing is remembered" of a person whose memories recall still finds."""
        ctx, place = self.ctx, as_place(place)
        if format not in FORMATS:
            raise InvalidArgument("invalid_format")
        budget = ctx.options.portrait_max_length if max_length is None else max_length
        floor = ctx.options.portrait_min_importance if min_importance is None else min_importance
        if not isinstance(budget, int) or budget < 0 or not isinstance(floor, int):
            raise InvalidArgument("invalid_portrait")
        with ctx.store.read(place) as tx:
            every = tx.list(Filters())
        chosen = [m for m in every if m.pinned or m.importance >= floor]
        chosen.sort(key=lambda m: (not m.pinned, -m.last_useful_at.timestamp(), m.id))

        def text_of(m: Memory) -> str:
            return ctx.mask(m.text, place) if masked else m.text

        kept: builtins.list[Memory] = []
        no_room: builtins.list[Memory] = []
        rendered = ""
        for memory in chosen:
            if no_room and not fill:  # cut on a whole memory: none after the first that did not fit
                no_room.append(memory)
                continue
            # Measure what is really sent (headers, JSON fields and all): never over the budget.
            attempt = render(format, [*kept, memory], text_of)
            if len(attempt) > budget:
                no_room.append(memory)
                continue
            kept.append(memory)
            rendered = attempt
        note_reads(ctx, place, READ, [m.id for m in kept])
        return Portrait(rendered, [m.id for m in kept], kept, no_room, len(every) - len(kept))
