"""The store contract on dates (issue 31): a query that names a period ("in May", "last year",
"en août") finds first what was said in it — by the memory's `timestamp` when it has one, else
when it was kept, or by a time its own words name — on every store, by meaning and words or by
words alone. It moves them up; it leaves nothing out, and a query naming no period ranks as before.

The memories of each check tie by words and meaning and are kept so that, without the period, the
one said in it comes last (equal scores fall by id): a store that loses the `timestamp`, or a
recall that does not read periods, fails.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from portal.contract.base import START, ContractBase
from portal.contract.ranking import TableEmbedder
from portal.domain.options import Options
from portal.domain.types import Place
from portal.ports import Store
from portal.services.memory_service import MemoryService


def _stamp(year: int, month: int, day: int) -> int:
    return int(datetime(year, month, day, 12, tzinfo=UTC).timestamp())


class DatesContract(ContractBase):
    """Recall's periods, through the service: asked on START (5 January 2026)."""

    def service(self, store: Store, texts: list[str], queries: list[str], words_only: bool,
                date_weight: float = Options.date_weight) -> MemoryService:
        vector = self.vector(1, 0.5)  # every text and query means the same: the period decides
        embedder = None if words_only else TableEmbedder({t: vector for t in [*texts, *queries]})
        return MemoryService(store, embedder, options=Options(feedback_memories=0, date_weight=date_weight),
                             clock=lambda: START)

    def firsts(self, service: MemoryService, place: Place, queries: list[str]) -> list[str]:
        return [next(iter(h.memory.id for h in service.recall(place, q, limit=3, mark=False)), "") for q in queries]

    def kept_in_order(self, store: Store, place: Place, said: list[tuple[str, dict[str, object]]]) -> list[str]:
        """Memories kept with ids in this order (the first wins a tie); their ids."""
        ids = sorted(self.new_id() for _ in said)
        self.keep(store, place, *(self.memory(store, place, text, embedding=self.embedding(1, 0.5)).copy(
            id=memory_id, **changes) for memory_id, (text, changes) in zip(ids, said, strict=True)))
        return ids

    @pytest.mark.parametrize("language", ["en", "fr"])
    @pytest.mark.parametrize("words_only", [False, True], ids=["fused", "words"])
    def test_a_period_in_the_query_finds_what_was_said_in_it_first(self, store: Store, words_only: bool,
                                                                   language: str) -> None:
        here = self.place(store)
        texts, asked, plain = {
            "en": (["Went hiking with Anna", "Went hiking with Ben", "Went hiking with Carl"],
                   ["Who did they go hiking with in May?", "Who did they go hiking with in August 2025?",
                    "Who went hiking with them last summer?", "Who did they go hiking with today?"],
                   "Who did they go hiking with?"),
            "fr": (["Randonnée avec Anna", "Randonnée avec Ben", "Randonnée avec Carl"],
                   ["Avec qui a-t-elle fait une randonnée en mai ?", "Avec qui a-t-elle fait une randonnée en août 2025 ?",
                    "Avec qui a-t-elle fait une randonnée l'été dernier ?",
                    "Avec qui a-t-elle fait une randonnée aujourd'hui ?"],
                   "Avec qui a-t-elle fait une randonnée ?"),
        }[language]
        anna, ben, carl = self.kept_in_order(store, here, [
            (texts[0], {"created_at": self.at(0)}),  # kept on START, said then
            (texts[1], {"attributes": {"timestamp": _stamp(2025, 8, 3)}}),  # said in August 2025
            (texts[2], {"created_at": datetime(2025, 5, 20, tzinfo=UTC)}),  # kept in May 2025 (imported)
        ])
        service = self.service(store, texts, [*asked, plain], words_only)
        assert self.firsts(service, here, asked) == [carl, ben, ben, anna]
        for query in asked:  # moved up, nothing left out
            assert sorted(h.memory.id for h in service.recall(here, query, limit=3, mark=False)) == sorted(
                [anna, ben, carl])
        off = self.service(store, texts, [*asked, plain], words_only, date_weight=0.0)
        assert self.firsts(off, here, asked) != [carl, ben, ben, anna]  # the period decides
        assert [h.memory.id for h in service.recall(here, plain, limit=3, mark=False)] == [
            h.memory.id for h in off.recall(here, plain, limit=3, mark=False)]  # no period: as before

    @pytest.mark.parametrize("words_only", [False, True], ids=["fused", "words"])
    def test_a_time_the_memory_names_counts_against_when_it_was_said(self, store: Store, words_only: bool) -> None:
        here = self.place(store)
        texts = ["Ran a race with the club", "Ran a race last weekend", "Ran a race on 3 March 2025"]
        club, weekend, march = self.kept_in_order(store, here, [
            (texts[0], {"attributes": {"timestamp": _stamp(2025, 7, 1)}}),
            (texts[1], {"attributes": {"timestamp": _stamp(2025, 6, 11)}}),  # names 7-8 June 2025
            (texts[2], {"attributes": {"timestamp": _stamp(2025, 9, 30)}}),  # said in September
        ])
        queries = ["Which race did they run in June?", "What race did they run in March 2025?",
                   "Which race did they run in July?"]
        service = self.service(store, texts, queries, words_only)
        assert self.firsts(service, here, queries) == [weekend, march, club]
        off = self.service(store, texts, queries, words_only, date_weight=0.0)
        assert self.firsts(off, here, queries) != [weekend, march, club]

    def test_the_period_moves_a_memory_up_from_past_the_hits_asked(self, store: Store) -> None:
        """The memory said in the period is 12th by meaning: a query for 3 hits still finds it first."""
        here = self.place(store)
        texts = [f"Visited a museum, number {n}" for n in range(12)]
        vectors = [self.vector(1, 0.01 * n) for n in range(12)]
        ids = sorted(self.new_id() for _ in texts)
        self.keep(store, here, *(self.memory(store, here, t, embedding=self.embedding(*v), attributes={
            "timestamp": _stamp(2025, 4 if n == 11 else 10, 2)}).copy(id=i)
            for n, (i, t, v) in enumerate(zip(ids, texts, vectors, strict=True))))
        query = "Which museum did they visit in April?"
        embedder = TableEmbedder({query: self.vector(1, 0), **dict(zip(texts, vectors, strict=True))})
        service = MemoryService(store, embedder, options=Options(feedback_memories=0, meaning_centering=0.0),
                                clock=lambda: START)
        assert service.recall(here, query, limit=3, mark=False)[0].memory.id == ids[11]
        off = MemoryService(store, embedder, options=Options(feedback_memories=0, meaning_centering=0.0,
                                                             date_weight=0.0), clock=lambda: START)
        assert ids[11] not in [h.memory.id for h in off.recall(here, query, limit=3, mark=False)]
        assert np.isfinite([h.score for h in service.recall(here, query, limit=3, mark=False)]).all()
