"""Reading memories: get, history, list with keyset pagination, unseen, recall, portrait, export.

A mixin of MemoryService, kept apart so each module stays readable; it uses the service's store,
embedder, mask, clock and options.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from portal.domain.recall.ranking import fuse, fuse_scores
from portal.domain.types import Embedding, Hit, InvalidArgument, Memory, NotFound, Page, Place, Portrait, Revision, as_place, iso
from portal.inputs import is_valid_id
from portal.ports import Cursor, Filters

if TYPE_CHECKING:
    from portal.domain.audit import AuditNote
    from portal.domain.options import Clock, Embedder, Mask, Options
    from portal.ports import Store, StoreTx

log = logging.getLogger("portal.memory")

MAX_PAGE = 200
MAX_RECALL = 100
PORTRAIT_FORMATS = ("bullets", "dated", "json")


class Reading:
    store: Store
    embedder: Embedder | None
    options: Options
    mask: Mask
    clock: Clock

    def _embed(self, place: Place, text: str, purpose: str) -> Embedding | None:  # pragma: no cover
        raise NotImplementedError

    def get(self, place: Place, memory_id: str) -> Memory:
        """The memory with this id in this place (any state); NotFound for anyone else's."""
        with self.store.read(as_place(place)) as tx:
            memory = tx.get(memory_id)
        if memory is None:
            raise NotFound()
        return memory

    def history(self, place: Place, memory_id: str) -> builtins.list[Revision]:
        """Every revision still kept, newest (the current one) first."""
        place = as_place(place)
        with self.store.read(place) as tx:
            memory = tx.get(memory_id)
            if memory is None:
                raise NotFound()
            earlier = tx.history(memory_id)
        current = Revision(
            memory.id, memory.revision, memory.text, memory.kind, memory.importance, memory.origin,
            memory.sources, memory.updated_at, memory.embedding, memory.last_op,
        )
        return [current, *earlier]

    def list(
        self,
        place: Place,
        state: str | None = "active",
        kinds: Sequence[str] | None = None,
        channel: str | None = None,
        seen: bool | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        """Memories newest first, one page at a time; `cursor` continues where the last page ended."""
        if state not in ("active", "archived", "all", None):
            raise InvalidArgument("invalid_state")
        if not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise InvalidArgument("invalid_limit")
        filters = Filters(
            state=None if state in ("all", None) else state,
            kinds=tuple(kinds) if kinds else None, channel=channel, seen=seen,
            created_after=_moment(created_after), created_before=_moment(created_before),
        )
        with self.store.read(as_place(place)) as tx:
            rows = tx.list(filters, limit + 1, decode_cursor(cursor) if cursor else None)
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(rows, encode_cursor(rows[-1]) if more else None)

    def list_unseen(self, place: Place, limit: int = 50) -> builtins.list[Memory]:
        """What was learnt in the background (consolidation) and the person has not seen yet."""
        return self.list(place, channel="background", seen=False, limit=limit).items

    def mark_seen(self, place: Place, ids: Sequence[str]) -> int:
        with self.store.write(as_place(place)) as tx:
            marked = tx.mark_seen(_ids(ids))
            tx.commit()
        return marked

    def mark_used(self, place: Place, ids: Sequence[str]) -> int:
        """Mark active memories as used (protects them from the cap, orders the portrait).
        Unknown, archived or other people's ids are skipped; answers how many were marked."""
        return len(self.store.mark_used(as_place(place), _ids(ids), self.clock()))

    def recall(
        self,
        place: Place,
        query: str,
        kinds: Sequence[str] | None = None,
        after: datetime | None = None,
        before: datetime | None = None,
        limit: int = 5,
        min_similarity: float | None = None,
        mark: bool = True,
    ) -> builtins.list[Hit]:
        """The memories that best answer `query`: meaning and words fused (by relative scores, or
        by reciprocal rank with `Options(fusion="rrf")`), weighted by the options' weights.

        Words: BM25 of the query's stemmed terms, stop words left out. Meaning: cosine to the
        query's vector less part of the mean direction of the memories searched
        (`meaning_centering`), ranked a second time after moving the query toward the first fused
        hits (`feedback_memories`, `feedback_weight`). A similarity floor is checked on the plain
        cosine. With the default fusion and weights a hit's score is in [0, 1].

        Without an embedder, with the AI off or while the embedder fails, it ranks by words, then
        by the most recently useful. Returned memories are marked used (unless `mark` is False:
        a person searching their own memories is not the assistant using them).
        """
        place = as_place(place)
        if not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL:
            raise InvalidArgument("invalid_limit")
        if not isinstance(query, str) or not query.strip():
            return []
        filters = Filters(kinds=tuple(kinds) if kinds else None, created_after=_moment(after),
                          created_before=_moment(before))
        depth = max(50, limit * 5)
        threshold = self.options.min_similarity if min_similarity is None else min_similarity
        query_vector = self._embed(place, query, "query")
        by_id: dict[str, Memory] = {}
        # No snapshot needed: each ranking comes from one read (the recall cache, or one statement),
        # and a memory forgotten or archived by the time the hits are read simply drops out.
        with self.store.read(place, snapshot=False) as tx:
            lexical = tx.search_words(query, depth, filters)
            if query_vector is None:
                # Ties are broken by the most recently useful: only memories scoring at least the
                # limit-th score can be among the hits, so only those are read.
                if len(lexical) > limit:
                    lexical = [(i, s) for i, s in lexical if s >= lexical[limit - 1][1]]
                by_id = _active(tx.get_many([i for i, _ in lexical]))
                ordered = sorted(
                    ((i, s) for i, s in lexical if i in by_id),
                    key=lambda pair: (-pair[1], -by_id[pair[0]].last_useful_at.timestamp()),
                )
                ranked = [(i, s, "lexical") for i, s in ordered[:limit]]
            else:
                meaning = _Meaning(tx, query_vector, filters, self.options.meaning_centering)
                semantic = meaning.ranking(meaning.query, depth, threshold)
                fused = self._fuse(semantic, lexical, limit)
                feedback = self.options.feedback_memories
                if feedback and self.options.feedback_weight and fused:
                    # Pseudo-relevance feedback (Rocchio): move the query's vector toward the
                    # memories ranked first, then rank by meaning again; words stay as they were.
                    leaders = tx.embeddings([i for i, _, _ in fused[:feedback]])
                    moved = meaning.toward(list(leaders.values()), self.options.feedback_weight)
                    if moved is not None:
                        semantic = meaning.ranking(moved, depth, threshold)
                        fused = self._fuse(semantic, lexical, limit)
                ranked = [(i, score, "hybrid" if len(how) == 2 else next(iter(how))) for i, score, how in fused]
                if not mark:
                    by_id = _active(tx.get_many([i for i, _, _ in ranked]))
        if mark and ranked:
            # Marking them used reads them back in the same statement (UPDATE ... RETURNING on the
            # SQL stores); one archived or forgotten since the ranking drops out.
            by_id = {m.id: m for m in self.store.mark_used(place, [i for i, _, _ in ranked], self.clock())}
        hits = [Hit(by_id[i], score, how) for i, score, how in ranked if i in by_id]
        return hits

    def _fuse(
        self, semantic: builtins.list[tuple[str, float]], lexical: builtins.list[tuple[str, float]], limit: int
    ) -> builtins.list[tuple[str, float, set[str]]]:
        combine = fuse if self.options.fusion == "rrf" else fuse_scores
        return combine(
            [("vector", semantic, self.options.vector_weight), ("lexical", lexical, self.options.lexical_weight)], limit
        )

    def portrait(
        self,
        place: Place,
        max_length: int | None = None,
        min_importance: int | None = None,
        format: str = "bullets",
        masked: bool = False,
        fill: bool = False,
    ) -> Portrait:
        """Pinned and important memories for a system prompt, pinned first, then most recently
        useful; cut on a whole memory. With `fill`, a memory that does not fit is skipped and
        shorter ones after it still get their place. With `masked` the text goes through the mask."""
        place = as_place(place)
        if format not in PORTRAIT_FORMATS:
            raise InvalidArgument("invalid_format")
        budget = self.options.portrait_max_length if max_length is None else max_length
        floor = self.options.portrait_min_importance if min_importance is None else min_importance
        if not isinstance(budget, int) or budget < 0 or not isinstance(floor, int):
            raise InvalidArgument("invalid_portrait")
        with self.store.read(place) as tx:
            chosen = [m for m in tx.list(Filters()) if m.pinned or m.importance >= floor]
        chosen.sort(key=lambda m: (not m.pinned, -m.last_useful_at.timestamp(), m.id))
        text_of = (lambda m: self.mask(m.text, place)) if masked else (lambda m: m.text)
        kept: builtins.list[Memory] = []
        rendered = ""
        for memory in chosen:
            # Measure what is really sent (headers, JSON fields and all): never over the budget.
            attempt = _render(format, [*kept, memory], text_of)
            if len(attempt) > budget:
                if fill:
                    continue
                break
            kept.append(memory)
            rendered = attempt
        return Portrait(rendered, [m.id for m in kept])

    def export(self, place: Place, audit: AuditNote | None = None) -> dict[str, Any]:
        """Everything kept in this place: every memory with its revisions, and the settings. With
        `audit`, its entry (the count exported) is written in the same transaction as the read."""
        place = as_place(place)
        with self.store.write(place) if audit is not None else self.store.read(place) as tx:
            memories = tx.list(Filters(state=None))
            items = []
            for m in memories:
                data = m.to_json()
                data["revisions"] = [r.to_json() for r in tx.history(m.id)]
                items.append(data)
            settings = tx.settings()
            if audit is not None:
                tx.record(audit.entry(place.owner_id, place.scope, {"memories": len(items)}, at=self.clock()))
                tx.commit()
        return {
            "owner_id": place.owner_id,
            "scope": place.scope,
            "exported_at": iso(self.clock()),
            "settings": {"paused": settings.paused},
            "memories": items,
        }


class _Meaning:
    """The meaning ranking of one recall: cosine to the query's vector, less a share of the mean
    direction of the memories searched (`centering`).

    What all of a person's memories share (their style, the names they all mention, the language)
    says little about which of them answers a question; taking the mean out of the query weighs
    what sets a memory apart, as IDF does for words. A similarity floor is still checked on the
    plain cosine.
    """

    def __init__(self, tx: StoreTx, query: Embedding, filters: Filters, centering: float) -> None:
        self.tx = tx
        self.filters = filters
        self.model = query.model
        self.dim = query.dim
        self.query = _unit(query.vector)
        self.mean = tx.mean_vector(query.model, query.dim, filters) if centering else None
        self.centering = centering

    def ranking(self, vector: np.ndarray, depth: int, floor: float | None) -> builtins.list[tuple[str, float]]:
        shifted = vector if self.mean is None else vector - self.centering * self.mean
        if not np.any(shifted):
            shifted = vector
        ranked = self.tx.nearest(Embedding(self.model, shifted.astype(np.float32)), depth, self.filters)
        if floor is None:
            return ranked
        if shifted is self.query:  # the scores are the plain cosine already
            return [(i, s) for i, s in ranked if s >= floor]
        vectors = self.tx.embeddings([i for i, _ in ranked])
        return [
            (i, s) for i, s in ranked
            if (e := vectors.get(i)) is not None and float(_unit(e.vector) @ self.query) >= floor
        ]

    def toward(self, embeddings: Sequence[Embedding | None], weight: float) -> np.ndarray | None:
        """The query's direction moved toward these memories' (Rocchio); None when none has a vector
        of the query's model and size."""
        same = [_unit(e.vector) for e in embeddings if e is not None and (e.model, e.dim) == (self.model, self.dim)]
        if not same:
            return None
        return _unit(self.query + weight * np.mean(same, axis=0))


def _unit(vector: np.ndarray) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


def _render(format: str, kept: builtins.list[Memory], text_of: Any) -> str:
    if format == "json":
        return json.dumps(
            [{"id": m.id, "text": text_of(m), "kind": m.kind, "importance": m.importance} for m in kept],
            ensure_ascii=False,
        )
    if format == "dated":
        groups: dict[str, list[str]] = {}
        for m in sorted(kept, key=lambda m: m.created_at, reverse=True):
            groups.setdefault(m.created_at.date().isoformat(), []).append(text_of(m))
        return "\n".join(f"**{day}**\n" + "\n".join(lines) for day, lines in groups.items())
    return "\n".join(f"- {text_of(m)}" for m in kept)


def encode_cursor(memory: Memory) -> str:
    raw = json.dumps([iso(memory.created_at), memory.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Cursor:
    """Read a cursor from `encode_cursor`; anything else is `invalid_cursor`."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created, memory_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(created, str) or not isinstance(memory_id, str):
            raise ValueError
        moment = datetime.fromisoformat(created.replace("Z", "+00:00"))
        if moment.tzinfo is None or not is_valid_id(memory_id):
            raise ValueError
        # In UTC here, as the database compares it: a moment that has no UTC form (year 1 an hour
        # east of Greenwich) is an invalid cursor, not an OverflowError deep in the driver.
        return Cursor(moment.astimezone(UTC), memory_id)
    except (ValueError, TypeError, OverflowError, RecursionError, binascii.Error, UnicodeError, json.JSONDecodeError):
        raise InvalidArgument("invalid_cursor") from None


def _active(found: builtins.list[Memory]) -> dict[str, Memory]:
    """Hits read back by id, those still active: one archived since the ranking is not an answer."""
    return {m.id: m for m in found if m.state == "active"}


def _moment(value: Any) -> datetime | None:
    """A time filter: a datetime with its time zone (a naive one could mean any zone), else
    `invalid_time`."""
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise InvalidArgument("invalid_time")
    try:
        return value.astimezone(UTC)  # a moment with no UTC form (year 1, east of Greenwich) is invalid too
    except OverflowError:
        raise InvalidArgument("invalid_time") from None


def _ids(ids: Any) -> builtins.list[str]:
    if isinstance(ids, str) or not isinstance(ids, (list, tuple, set, frozenset)):
        raise InvalidArgument("invalid_ids")
    return [i for i in ids if isinstance(i, str)]
