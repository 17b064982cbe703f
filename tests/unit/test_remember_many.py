"""remember_many (an import of many texts: one embedder call, one transaction) and
on_duplicate="keep" (a text repeating an earlier one word for word is kept as its own memory)."""

from __future__ import annotations

import pytest

from portal.domain.options import Options

from ..expect import refused
from .conftest import FailingEmbedder, active_texts, remember_ok

TURNS = [
    "Caroline: Hey Mel! Good to see you!",
    "Melanie: Thanks!",
    "Caroline: I went to a support group yesterday.",
    "Melanie: Thanks!",
]


def test_keeps_every_text_in_order_with_one_embedder_call(service, embedder, place):
    results = service.remember_many(place, TURNS[:3])
    assert [r.ok for r in results] == [True, True, True]
    assert [r.memory.text for r in results] == TURNS[:3]
    assert all(r.memory.has_vector for r in results)
    documents = [(texts, purpose) for texts, purpose in embedder.calls if purpose == "document"]
    assert documents == [(TURNS[:3], "document")]
    assert sorted(active_texts(service, place)) == sorted(TURNS[:3])


def test_keep_keeps_a_word_for_word_repeat_as_its_own_memory(service, place):
    results = service.remember_many(place, TURNS, on_duplicate="keep")
    assert [r.ok for r in results] == [True] * 4
    assert len({r.memory.id for r in results}) == 4
    assert results[1].replaced_id is None and results[3].replaced_id is None
    assert sorted(active_texts(service, place)) == sorted(TURNS)
    # one at a time too, and a near repeat (same vector) is kept all the same
    again = service.remember(place, "melanie: THANKS", on_duplicate="keep")
    assert again.ok and again.replaced_id is None and again.reinforced is False
    assert len(active_texts(service, place)) == 5


def test_keep_can_be_the_configured_default(make_service, place):
    service = make_service(options=Options(on_duplicate="keep"))
    remember_ok(service, place, "Likes tea")
    remember_ok(service, place, "likes tea")
    assert active_texts(service, place) == ["likes tea", "Likes tea"]


def test_by_default_a_repeat_in_the_same_call_meets_the_earlier_text(service, place):
    results = service.remember_many(place, TURNS)
    # Said again word for word: the earlier memory is reinforced, no new revision of the same text.
    assert results[3].memory.id == results[1].memory.id and results[3].reinforced
    assert results[3].replaced_id is None and results[3].memory.revision == 1
    assert len(active_texts(service, place)) == 3


def test_a_refused_text_changes_nothing_and_does_not_stop_the_others(service, embedder, place):
    results = service.remember_many(place, ["Likes tea", "   ", "x" * 501, "Plays chess"])
    assert [r.ok for r in results] == [True, False, False, True]
    assert [r.code for r in results[1:3]] == ["empty", "too_long"]
    assert sorted(active_texts(service, place)) == ["Likes tea", "Plays chess"]
    # refused texts never reach the embedder
    assert [t for texts, purpose in embedder.calls if purpose == "document" for t in texts] == ["Likes tea", "Plays chess"]


def test_paused_refuses_every_text(service, place):
    service.pause(place)
    assert [r.code for r in service.remember_many(place, ["Likes tea", "Plays chess"])] == ["paused", "paused"]
    assert active_texts(service, place) == []


def test_an_unknown_duplicate_mode_refuses_every_text(service, place):
    results = service.remember_many(place, ["Likes tea"], on_duplicate="merge")
    assert [r.code for r in results] == ["invalid_on_duplicate"]
    with refused("invalid_on_duplicate"):
        service.remember(place, "Likes tea", on_duplicate="merge")


def test_nothing_to_remember_answers_nothing(service, embedder, place):
    assert service.remember_many(place, []) == []
    assert embedder.calls == []


def test_a_lone_string_is_a_mistake(service, place):
    with pytest.raises(TypeError):
        service.remember_many(place, "Likes tea")  # type: ignore[arg-type]


def test_a_failing_embedder_still_keeps_every_text_without_vectors(make_service, place):
    service = make_service(embedder=FailingEmbedder())
    results = service.remember_many(place, TURNS[:2])
    assert [r.ok for r in results] == [True, True]
    assert not any(r.memory.has_vector for r in results)


def test_options_know_keep_and_refuse_unknown_ranking_settings():
    assert Options(on_duplicate="keep").on_duplicate == "keep"
    for bad in (
        {"on_duplicate": "merge"}, {"fusion": "max"}, {"vector_weight": -1.0}, {"meaning_centering": 1.5},
        {"feedback_memories": -1}, {"feedback_weight": -0.1},
    ):
        with pytest.raises(ValueError):
            Options(**bad)
