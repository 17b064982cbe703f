"""The meaning ranking of one recall, on a store transaction's vector searches."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from portal.domain.queries import Filters
from portal.domain.types import Embedding

if TYPE_CHECKING:
    from portal.ports import StoreTx


class Meaning:
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
