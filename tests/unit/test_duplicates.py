"""Duplicates (DESIGN §4): same folded words or a vector at least 0.92 close meets the existing
memory — replaced (new revision, same id) or reinforced — and vectors of two models or two sizes
are never compared."""

from __future__ import annotations

import pytest

from portal.domain.options import Options

from ..expect import refused
from .conftest import ConstantEmbedder, FailingEmbedder, HashEmbedder, active_texts, remember_ok

CLOSE_A = "I really like green tea every morning"
CLOSE_B = "I really like green tea every single morning"


def test_same_folded_words_replace_by_default(service, place):
    first = remember_ok(service, place, "Likes tea")
    again = service.remember(place, "likes TEA!")
    assert again.ok and again.replaced_id == first.id and again.reinforced is False
    assert (again.memory.id, again.memory.revision, again.memory.text) == (first.id, 2, "likes TEA!")
    assert active_texts(service, place) == ["likes TEA!"]
    assert [r.text for r in service.history(place, first.id)] == ["likes TEA!", "Likes tea"]


def test_accents_and_markdown_do_not_hide_a_duplicate(words_only, place):
    first = remember_ok(words_only, place, "Aime le café")
    again = words_only.remember(place, "**aime LE CAFE**")
    assert again.replaced_id == first.id
    assert len(words_only.list(place).items) == 1


def test_a_replacement_keeps_kind_and_importance_unless_given(service, place):
    first = remember_ok(service, place, "Likes tea", kind="preference", importance=5)
    kept = service.remember(place, "Likes tea.").memory
    assert (kept.kind, kept.importance) == ("preference", 5)
    given = service.remember(place, "LIKES TEA", kind="fact", importance=2).memory
    assert (given.id, given.kind, given.importance) == (first.id, "fact", 2)


def test_reinforce_keeps_text_and_revision_and_raises_importance(service, clock, place):
    first = remember_ok(service, place, "Likes tea", importance=2)
    clock.advance(hours=1)
    again = service.remember(place, "likes TEA!", importance=5, on_duplicate="reinforce")
    assert again.ok and again.reinforced is True and again.replaced_id is None
    now = service.get(place, first.id)
    assert (now.id, now.revision, now.text, now.importance) == (first.id, 1, "Likes tea", 5)
    assert now.updated_at > first.updated_at
    assert [r.text for r in service.history(place, first.id)] == ["Likes tea"]
    # a lower importance never lowers it
    service.remember(place, "Likes tea", importance=1, on_duplicate="reinforce")
    assert service.get(place, first.id).importance == 5


def test_reinforce_can_be_the_configured_default(make_service, place):
    service = make_service(options=Options(on_duplicate="reinforce"))
    first = remember_ok(service, place, "Likes tea")
    again = service.remember(place, "likes tea")
    assert again.reinforced is True and service.get(place, first.id).text == "Likes tea"


def test_reinforce_fills_a_missing_vector(make_service, store, place):
    down = make_service(embedder=FailingEmbedder())
    first = remember_ok(down, place, "Likes tea")
    assert first.has_vector is False
    up = make_service()
    again = up.remember(place, "Likes tea", on_duplicate="reinforce")
    assert again.reinforced is True
    assert up.get(place, first.id).has_vector is True
    assert up.get(place, first.id).revision == 1


def test_an_unknown_on_duplicate_is_refused(service, place):
    with refused("invalid_on_duplicate"):
        service.remember(place, "Likes tea", on_duplicate="merge")
    assert service.list(place).items == []


def test_a_vector_at_least_0_92_close_is_a_duplicate(service, embedder, place):
    assert embedder.cosine(CLOSE_A, CLOSE_B) >= 0.92  # the fake embedder puts them this close
    first = remember_ok(service, place, CLOSE_A)
    again = service.remember(place, CLOSE_B)
    assert again.replaced_id == first.id
    assert active_texts(service, place) == [CLOSE_B]


def test_a_vector_below_the_threshold_is_a_new_memory(service, embedder, place):
    assert embedder.cosine("Likes green tea", "Likes black coffee") < 0.92
    remember_ok(service, place, "Likes green tea")
    again = service.remember(place, "Likes black coffee")
    assert again.replaced_id is None
    assert sorted(active_texts(service, place)) == ["Likes black coffee", "Likes green tea"]


def test_the_threshold_is_configurable(make_service, embedder, place):
    service = make_service(options=Options(duplicate_threshold=0.99))
    assert embedder.cosine(CLOSE_A, CLOSE_B) < 0.99
    remember_ok(service, place, CLOSE_A)
    assert service.remember(place, CLOSE_B).replaced_id is None
    assert len(service.list(place).items) == 2


def test_vectors_of_two_models_are_never_compared(make_service, place):
    service = make_service(embedder=ConstantEmbedder("model-a"))
    first = remember_ok(service, place, "Likes tea")
    # control: the same model sees any other text as identical (cosine 1.0), hence a duplicate
    control = service.remember(place, "Lives in Paris")
    assert control.replaced_id == first.id
    service.embedder = ConstantEmbedder("model-b")
    other = service.remember(place, "Works as a nurse")
    assert other.replaced_id is None and other.memory.id != first.id
    assert sorted(active_texts(service, place)) == ["Lives in Paris", "Works as a nurse"]
    assert {m.embedding.model for m in service.list(place).items} == {"model-a", "model-b"}


def test_vectors_of_two_sizes_are_never_compared(make_service, place):
    service = make_service(embedder=HashEmbedder("same-model", dim=64))
    remember_ok(service, place, CLOSE_A)
    service.embedder = HashEmbedder("same-model", dim=32)
    again = service.remember(place, CLOSE_B)
    assert again.replaced_id is None
    assert len(service.list(place).items) == 2
    # and recall with the new size does not trip over the old vectors
    found = [h.memory.text for h in service.recall(place, "green tea")]
    assert set(found) == {CLOSE_A, CLOSE_B}


def test_an_archived_memory_is_not_met_as_a_duplicate(make_service, place):
    service = make_service(options=Options(max_active=1), embedder=None)
    old = remember_ok(service, place, "Likes tea")
    remember_ok(service, place, "Lives in Lyon")
    assert service.get(place, old.id).state == "archived"
    again = service.remember(place, "Likes tea")
    assert again.replaced_id is None and again.memory.id != old.id


@pytest.mark.parametrize("mode", ["replace", "reinforce"])
def test_saying_it_again_never_makes_a_second_memory(service, place, mode):
    remember_ok(service, place, "Prefers short answers")
    for _ in range(3):
        assert service.remember(place, "prefers short answers", on_duplicate=mode).ok
    assert len(service.list(place, state="all").items) == 1
