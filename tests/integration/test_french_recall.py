"""Recall in French (issue 31): a small set of French memories and French questions written for
this test (not drawn from any benchmark), through the service with the local model, on every
store. The memories are stemmed and stopped as French (Snowball's French stemmer, accents
folded), the questions by their own language: "habitait" meets "habite", "végétarienne" meets
"végétariens", "joué" meets "joue", and "thé" is not taken for English's stop word "the"."""

from __future__ import annotations

from typing import Any

import pytest

from portal.adapters.embedders import LocalEmbedder
from portal.domain.text import query_terms, terms, text_language
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

MEMORIES = [
    "Aime le thé vert le matin",
    "Habite à Lyon depuis 2019",
    "A un chat qui s'appelle Minou",
    "S'entraîne pour le marathon de Paris",
    "Travaille comme infirmière de nuit à l'hôpital",
    "Préfère les réponses courtes",
    "Cuisine souvent des plats végétariens",
    "Joue du piano depuis l'enfance",
    "Va à la piscine deux fois par semaine",
    "Sa sœur Claire vit à Montréal",
]

QUESTIONS = [
    ("Quel thé boit-elle ?", "Aime le thé vert le matin"),
    ("Où habitait-elle ?", "Habite à Lyon depuis 2019"),
    ("Comment s'appelle son chat ?", "A un chat qui s'appelle Minou"),
    ("Pour quoi fait-elle des entraînements ?", "S'entraîne pour le marathon de Paris"),
    ("Les infirmières travaillent-elles la nuit ?", "Travaille comme infirmière de nuit à l'hôpital"),
    ("Est-elle végétarienne ?", "Cuisine souvent des plats végétariens"),
    ("A-t-elle joué d'un instrument ?", "Joue du piano depuis l'enfance"),
    ("Quelle réponse préfère-t-elle ?", "Préfère les réponses courtes"),
    ("Où vit sa sœur ?", "Sa sœur Claire vit à Montréal"),
]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def test_french_texts_are_stemmed_and_stopped_as_french_and_english_ones_as_before() -> None:
    assert [text_language(t) for t in ("Aime le thé vert", "Où habitait-elle ?", "Likes tea", "Paris", "")] == [
        "fr", "fr", "en", "en", "en"]
    # A French name or borrowed word does not make an English sentence French (nor "thé" alone)
    assert [text_language(t) for t in ("Chloé lives in Montréal", "Elle magazine subscription",
                                       "Prefers déjà vu movies", "thé")] == ["en", "en", "en", "en"]
    assert terms("Habite à Lyon") == ["habit", "a", "lyon"] and "habit" in query_terms("Où habitait-elle ?")
    assert query_terms("Quel thé boit-elle ?") == ["the", "boit"]  # "the" here is tea, not a stop word
    assert terms("Painting the shed") == ["paint", "the", "shed"]  # English, as before
    assert query_terms("what did they paint?") == ["paint"]


@pytest.mark.slow
@pytest.mark.parametrize(("question", "right"), QUESTIONS)
def test_a_french_question_finds_its_french_memory_first(store: Any, embedder: LocalEmbedder, question: str,
                                                         right: str) -> None:
    service = MemoryService(store, embedder)
    place = Place("amelie", "french")
    for text in MEMORIES:
        service.remember(place, text)
    hits = service.recall(place, question, limit=3)
    assert [h.memory.text for h in hits][:1] == [right], [(h.memory.text, round(h.score, 3)) for h in hits]
