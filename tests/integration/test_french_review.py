"""Review of 1916bff (French recall): English memories that carry a French-looking name or loan
word ("Chloé", "Montréal", "Renée", "crème brûlée") are taken for French by py3langid at >= 0.8,
stemmed as French ("lives" -> "liv", "Chloé" -> "chlo"), and no longer meet an English question
about them ("live", "chloe"): English ranking changed for English text, and word recall is lost."""

from __future__ import annotations

from typing import Any

import pytest

from portal.domain.text import query_terms, terms
from portal.domain.types import Place
from portal.ports import Filters
from portal.services.memory_service import MemoryService
from tests.fakes.embedders import HashEmbedder

PLACE = Place("review", "french")
OTHERS = ["Likes green tea in the morning", "Loves jazz", "Lives near the sea", "Has a cat named Minou"]


@pytest.mark.parametrize(("text", "before"), [
    ("Chloé lives in Montréal", ["chloe", "live", "in", "montreal"]),
    ("My son Renée loves crème brûlée", ["my", "son", "rene", "love", "creme", "brule"]),
    ("Zoë's résumé is ready", ["zoe", "s", "resum", "is", "readi"]),
])
def test_english_text_with_a_french_name_keeps_its_english_terms(text: str, before: list[str]) -> None:
    assert terms(text) == before


@pytest.mark.parametrize(("memory", "question"), [
    ("Chloé lives in Montréal", "Where does Chloé live?"),
])
def test_an_english_question_finds_an_english_memory_naming_a_french_person(store: Any, memory: str,
                                                                              question: str) -> None:
    service = MemoryService(store, HashEmbedder())
    for text in [*OTHERS, memory]:
        service.remember(PLACE, text)
    with store.read(PLACE) as tx:
        found = tx.search_words(question, 5, Filters())
        texts = {m.id: m.text for m in tx.list(Filters())}
    assert [texts[i] for i, _ in found][:1] == [memory], (query_terms(question), terms(memory))
