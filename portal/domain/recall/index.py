"""A place's ranking data held in process between writes, for stores that keep memories elsewhere.

Recall ranks all of a person's active memories by meaning and by words. A database store would
read every one of them again (their vectors and terms) for each recall; a `PlaceIndex` holds what
ranking needs of them instead — ids, kinds, creation times, ranking terms and vectors, never the
text — tagged with the token the store had for the place when it read them. The store checks that
token (one small read) and reads the memories again only when a write has replaced it. The
indexes of one process are kept by `portal.domain.recall.cache.RecallCache`.
"""

from __future__ import annotations

import builtins
import threading
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from portal.domain.recall.ranking import Bag, WordIndex, bag, cosine_top, row_norms, words_top
from portal.domain.types import Embedding, kept_at, receivable_by
from portal.ports import Filters

# What a memory costs in an index beyond its vector: its id, its terms and their counts, kind,
# time and postings (measured with tracemalloc on indexes read from a database, terms interned:
# about 1,200 bytes for a sentence of ten words).
ENTRY_OVERHEAD = 1600
VIEWS = 4  # indexes of what remains for an asker (see PlaceIndex.view_for) kept per place
ASKERS = 64  # what each asker (app, expiries passed) leaves out, remembered per place


@dataclass(frozen=True, slots=True)
class Entry:
    """One active memory as ranking sees it."""

    id: str
    kind: str
    created_at: datetime
    terms: Sequence[str]
    embedding: Embedding | None
    expires_at: datetime | None = None
    withheld: tuple[str, ...] = ()

    def receivable(self, filters: Filters) -> bool:
        """Whether the asker of `filters` may be given it (kept at its moment, not withheld from its app)."""
        return (filters.alive_at is None or kept_at(self.expires_at, filters.alive_at)) and receivable_by(
            self.withheld, filters.app)


def estimated_bytes(entries: Sequence[Entry]) -> int:
    """What an index of these entries holds (`PlaceIndex.nbytes`), told before it is built."""
    return sum(e.embedding.vector.size * 4 for e in entries if e.embedding is not None) + ENTRY_OVERHEAD * len(entries)


class PlaceIndex:
    """The ranking view of one place's active memories as of one token. Answers the store's
    `nearest`, `mean_vector`, `search_words` and `embeddings` as the store itself would, for
    filters on kind and creation time (`serves`)."""

    __slots__ = (
        "token", "nbytes", "_ids", "_kind_of", "_created_at", "_kinds", "_created", "_terms", "_bags", "_words",
        "_spaces", "_means", "_embeddings", "_known", "_expiring", "_expiry_times", "_withheld", "_entries", "_views",
        "_left_out", "_lock",
    )

    def __init__(self, token: str, entries: Sequence[Entry], _within: tuple[PlaceIndex, np.ndarray] | None = None
                 ) -> None:
        # `_within`: (an index, which of its positions these entries are): its vectors are taken as
        # they are, not stacked again (see view_for).
        ordered = list(entries) if _within is not None else sorted(entries, key=lambda e: e.id)
        self.token = token
        self._ids = [e.id for e in ordered]
        # What only some queries need is made on first use (a store ranking by meaning alone, as a
        # duplicate check on a write does, never pays for the rest): the kinds and times as arrays
        # for filters, the terms counted into bags for the word search, the vectors by id.
        self._kind_of = [e.kind for e in ordered]
        self._created_at = [e.created_at for e in ordered]
        self._kinds: np.ndarray | None = None
        self._created: np.ndarray | None = None
        self._terms = [e.terms for e in ordered]
        self._bags: list[Bag] | None = None
        self._words: WordIndex | None = None
        self._embeddings: dict[str, Embedding] | None = None
        self._known: frozenset[str] | None = None
        # The few memories that expire or that some app may not receive, by position: most have
        # neither, and a filter on them then costs nothing. Expiring ones in the order they expire:
        # which have expired at a moment is then a prefix, found by bisection.
        self._expiring = sorted((e.expires_at.timestamp(), p) for p, e in enumerate(ordered) if e.expires_at is not None)
        self._expiry_times = [at for at, _ in self._expiring]
        self._withheld = [(p, e.withheld) for p, e in enumerate(ordered) if e.withheld]
        # The index of what remains once some are left out (expired, withheld from an app), made on
        # first use and kept for the next recalls, by the positions left out: ranking, word
        # statistics and the mean direction are those of what the asker may receive only.
        self._entries = ordered if self._expiring or self._withheld else None
        self._views: dict[tuple[int, ...], PlaceIndex] = {}
        # The positions each asker leaves out, by (app, how many expiries have passed): a recall
        # finds its view in two lookups instead of going over every decision again.
        self._left_out: dict[tuple[str | None, int], tuple[int, ...]] = {}
        self._lock = threading.Lock()
        # Per model and size: the positions (into _ids) of the memories with such a vector, their
        # ids, the vectors as one matrix and the vectors' lengths.
        self._spaces: dict[tuple[str, int], tuple[np.ndarray, list[str], np.ndarray, np.ndarray]] = {}
        if _within is not None:
            parent, kept = _within
            position_here = np.cumsum(kept) - 1
            for key, (positions, ids, matrix, norms) in parent._spaces.items():
                chosen = kept[positions]
                self._spaces[key] = (position_here[positions[chosen]], [ids[i] for i in np.flatnonzero(chosen)],
                                     matrix[chosen], norms[chosen])
        else:
            grouped: dict[tuple[str, int], list[int]] = {}
            for position, e in enumerate(ordered):
                if e.embedding is not None:
                    grouped.setdefault((e.embedding.model, e.embedding.dim), []).append(position)
            for key, where in grouped.items():
                matrix = np.stack([ordered[p].embedding.vector for p in where]).astype(np.float32, copy=False)  # type: ignore[union-attr]
                self._spaces[key] = (np.array(where), [self._ids[p] for p in where], matrix, row_norms(matrix))
        self._means: dict[tuple[str, int], np.ndarray] = {}
        self.nbytes = sum(space[2].nbytes for space in self._spaces.values()) + ENTRY_OVERHEAD * len(ordered)

    def __len__(self) -> int:
        return len(self._ids)

    @staticmethod
    def serves(filters: Filters) -> bool:
        """Whether these filters can be answered here: active memories, by kind and time (with its
        zone: a naive time is left to the store, which refuses it) only."""
        naive = any(t is not None and t.tzinfo is None for t in (filters.created_after, filters.created_before))
        return (
            filters.state == "active" and filters.channel is None and filters.seen is None
            and filters.pinned is None and not naive
        )

    def _passing(self, filters: Filters) -> np.ndarray | None:
        """Which memories pass the filters on kind and time (a boolean mask over _ids), None when all
        do; what the person decided is left to `view_for`."""
        mask = None
        if filters.kinds is None and filters.created_after is None and filters.created_before is None:
            return mask
        if self._kinds is None or self._created is None:
            self._kinds = np.array(self._kind_of, dtype=object)
            self._created = np.array([t.timestamp() for t in self._created_at], dtype=np.float64)
        if mask is None:
            mask = np.ones(len(self._ids), dtype=bool)
        if filters.kinds is not None:
            mask &= np.isin(self._kinds, list(filters.kinds))
        if filters.created_after is not None:
            mask &= self._created > filters.created_after.timestamp()
        if filters.created_before is not None:
            mask &= self._created < filters.created_before.timestamp()
        return mask

    def view_for(self, filters: Filters) -> PlaceIndex:
        """The index to answer from: this one, or, when the person's decisions leave some out (not
        alive at `alive_at`, withheld from `app`), the index of the others, kept for the next calls
        (at most VIEWS of them)."""
        if self._entries is None or (filters.alive_at is None and filters.app is None):
            return self
        passed = bisect_right(self._expiry_times, filters.alive_at.timestamp()) if filters.alive_at is not None else 0
        asker = (filters.app, passed)
        # Under the index's lock: the recall cache shares an index between a process's threads,
        # and two of them making room in the same full memo at once would take the same key out.
        with self._lock:
            key = self._left_out.get(asker)
            if key is None:
                left_out = {p for _, p in self._expiring[:passed]}
                if filters.app is not None:
                    left_out.update(p for p, apps in self._withheld if "*" in apps or filters.app in apps)
                if len(self._left_out) >= ASKERS:
                    self._left_out.pop(next(iter(self._left_out)))
                key = self._left_out[asker] = tuple(sorted(left_out))
            if not key:
                return self
            view = self._views.get(key)
            if view is None:
                if len(self._views) >= VIEWS:
                    self._views.pop(next(iter(self._views)))
                kept = np.ones(len(self._ids), dtype=bool)
                kept[list(key)] = False
                view = self._views[key] = PlaceIndex(
                    self.token, [e for e, k in zip(self._entries, kept, strict=True) if k], _within=(self, kept))
        return view

    def _space(self, model: str, dim: int, filters: Filters) -> tuple[list[str], np.ndarray, np.ndarray] | None:
        space = self._spaces.get((model, dim))
        if space is None:
            return None
        positions, ids, matrix, norms = space
        mask = self._passing(filters)
        if mask is None:
            return ids, matrix, norms
        keep = np.flatnonzero(mask[positions])
        return [ids[i] for i in keep], matrix[keep], norms[keep]

    def nearest(self, query: Embedding, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]:
        view = self.view_for(filters)
        if view is not self:
            return view.nearest(query, limit, filters)
        space = self._space(query.model, query.dim, filters)
        if space is None:
            return []
        ids, matrix, norms = space
        return cosine_top(query.vector, ids, matrix, limit, norms=norms)

    def mean_vector(self, model: str, dim: int, filters: Filters) -> np.ndarray | None:
        view = self.view_for(filters)
        if view is not self:
            return view.mean_vector(model, dim, filters)
        unfiltered = self._passing(filters) is None
        if unfiltered and (model, dim) in self._means:
            return self._means[(model, dim)]
        space = self._space(model, dim, filters)
        if space is None or not len(space[0]):
            return None
        _, matrix, norms = space
        mean = (matrix / norms[:, None]).mean(axis=0).astype(np.float32)
        if unfiltered:
            self._means[(model, dim)] = mean
        return mean

    def search_words(self, query: str, limit: int, filters: Filters) -> builtins.list[tuple[str, float]]:
        view = self.view_for(filters)
        if view is not self:
            return view.search_words(query, limit, filters)
        if self._passing(filters) is None:
            if self._words is None:
                self._words = WordIndex(self.bags(filters))
            return self._words.top(query, limit)
        return words_top(query, self.bags(filters), limit)

    def bags(self, filters: Filters) -> builtins.list[Bag]:
        """The memories passing `filters` (and that the asker may receive) as `search_words` ranks
        them: each one's id and ranking terms, counted."""
        view = self.view_for(filters)
        if view is not self:
            return view.bags(filters)
        if self._bags is None:
            self._bags = [bag(i, list(t)) for i, t in zip(self._ids, self._terms, strict=True)]
        mask = self._passing(filters)
        return self._bags if mask is None else [b for b, keep in zip(self._bags, mask, strict=True) if keep]

    def embeddings(self, ids: Sequence[str]) -> tuple[dict[str, Embedding], builtins.list[str]]:
        """The vectors of these memories, and the ids it does not know (not active here)."""
        if self._embeddings is None or self._known is None:
            # Views of the matrices' rows: each vector is held once.
            self._embeddings = {
                ids_[row]: Embedding(model, matrix[row])
                for (model, _), (_, ids_, matrix, _) in self._spaces.items() for row in range(len(ids_))
            }
            self._known = frozenset(self._ids)
        found = {i: e for i in ids if (e := self._embeddings.get(i)) is not None}
        return found, [i for i in ids if i not in found and i not in self._known]
