"""Recall (DESIGN §5): meaning and words fused by reciprocal rank, each hit saying how it was
found; words alone without an embedder or while it fails; returned memories are marked used."""

from __future__ import annotations

from datetime import timedelta

import pytest

from portal.domain.types import InvalidArgument

from .conftest import FailingEmbedder, remember_ok

MEMORIES = {
    "dog": "Has a dog named Rex",
    "tea": "Drinks green tea at breakfast",
    "job": "Works as a nurse in Lyon",
    "python": "Programs in Python at work",
}


@pytest.fixture
def seeded(service, place):
    return {key: remember_ok(service, place, text) for key, text in MEMORIES.items()}


def test_finds_by_words_as_a_hybrid_hit(service, place, seeded):
    hits = service.recall(place, "green tea")
    assert hits[0].memory.id == seeded["tea"].id
    assert hits[0].match == "hybrid"
    assert hits[0].score > hits[1].score


def test_finds_by_meaning_without_a_shared_word(service, place, seeded):
    # "puppy" means "dog" to the fake embedder, and no stored text holds "puppy" or a fragment of it
    hits = service.recall(place, "puppy")
    assert hits[0].memory.id == seeded["dog"].id
    assert hits[0].match == "vector"


def test_a_memory_without_vector_is_found_by_words_only(make_service, place, seeded):
    make_service(embedder=FailingEmbedder()).remember(place, "Collects vintage stamps")
    hits = make_service().recall(place, "stamps")
    by_text = {h.memory.text: h.match for h in hits}
    assert by_text["Collects vintage stamps"] == "lexical"
    # the others hold no word of the query: whatever brought them, it was not words
    assert {match for text, match in by_text.items() if text != "Collects vintage stamps"} <= {"vector"}


def test_min_similarity_drops_unrelated_meaning(service, embedder, place, seeded):
    assert embedder.cosine("puppy", MEMORIES["dog"]) > 0.4
    assert all(embedder.cosine("puppy", MEMORIES[k]) < 0.4 for k in ("tea", "job", "python"))
    hits = service.recall(place, "puppy", min_similarity=0.4)
    assert [h.memory.id for h in hits] == [seeded["dog"].id]


def test_a_failing_embedder_still_keeps_and_finds_by_words(make_service, place):
    down = make_service(embedder=FailingEmbedder())
    kept = down.remember(place, "Drinks green tea at breakfast")
    assert kept.ok and kept.memory.has_vector is False
    remember_ok(down, place, "Works as a nurse in Lyon")
    hits = down.recall(place, "tea")
    assert [h.memory.text for h in hits] == ["Drinks green tea at breakfast"]
    assert hits[0].match == "lexical"
    assert down.embedder.calls >= 3


def test_without_embedder_words_then_most_recently_used(words_only, place, clock):
    morning = remember_ok(words_only, place, "Tea in the morning")
    evening = remember_ok(words_only, place, "Tea in the evening")
    remember_ok(words_only, place, "Coffee after lunch")
    first = words_only.recall(place, "tea")
    assert {h.memory.id for h in first} == {morning.id, evening.id}
    assert first[0].score == first[1].score and first[0].match == "lexical"
    clock.advance(hours=1)
    words_only.mark_used(place, [morning.id])
    assert [h.memory.id for h in words_only.recall(place, "tea")] == [morning.id, evening.id]
    clock.advance(hours=1)
    words_only.mark_used(place, [evening.id])
    assert [h.memory.id for h in words_only.recall(place, "tea")] == [evening.id, morning.id]


def test_more_matching_words_rank_higher(words_only, place):
    remember_ok(words_only, place, "Likes tea")
    remember_ok(words_only, place, "Likes green tea from Japan")
    remember_ok(words_only, place, "Green walls in the kitchen")
    hits = words_only.recall(place, "green tea")
    assert hits[0].memory.text == "Likes green tea from Japan"


def test_recall_marks_what_it_returns_as_used(words_only, place, clock):
    tea = remember_ok(words_only, place, "Drinks green tea")
    other = remember_ok(words_only, place, "Works as a nurse")
    assert words_only.get(place, tea.id).last_used_at is None
    moment = clock.advance(minutes=5)
    hits = words_only.recall(place, "tea")
    assert [h.memory.id for h in hits] == [tea.id]
    used = words_only.get(place, tea.id).last_used_at
    assert used is not None and used >= moment
    assert hits[0].memory.last_used_at is not None
    assert words_only.get(place, other.id).last_used_at is None


def test_kinds_filter(service, place):
    goal = remember_ok(service, place, "Run a marathon in spring", kind="goal")
    remember_ok(service, place, "Ran a marathon in 2019", kind="event")
    hits = service.recall(place, "marathon", kinds=["goal"])
    assert [h.memory.id for h in hits] == [goal.id]


def test_after_and_before_filters(words_only, place, clock):
    remember_ok(words_only, place, "Note about January trip")
    clock.advance(days=30)
    start = clock.now
    middle = remember_ok(words_only, place, "Note about February trip")
    clock.advance(days=30)
    end = clock.now
    remember_ok(words_only, place, "Note about March trip")
    hits = words_only.recall(place, "trip", after=start - timedelta(seconds=1), before=end)
    assert [h.memory.id for h in hits] == [middle.id]
    assert len(words_only.recall(place, "trip", after=start - timedelta(seconds=1))) == 2
    assert len(words_only.recall(place, "trip", before=end)) == 2


@pytest.mark.parametrize("limit", [0, -1, 101, 10_000, "5", 2.5, None])
def test_a_limit_out_of_range_is_invalid_limit(service, place, limit):
    with pytest.raises(InvalidArgument) as caught:
        service.recall(place, "tea", limit=limit)
    assert caught.value.code == "invalid_limit"


def test_limit_caps_the_number_of_hits(service, place):
    for i in range(12):
        remember_ok(service, place, f"Tea note {i} about sencha{i}")
    assert len(service.recall(place, "tea", limit=3)) == 3
    assert len(service.recall(place, "tea", limit=100)) == 12


@pytest.mark.parametrize("svc", ["words_only", "service"])
def test_a_fragment_finds_the_word(request, place, svc):
    service = request.getfixturevalue(svc)
    python = remember_ok(service, place, "Programs in Python at work")
    remember_ok(service, place, "Drinks green tea")
    hits = service.recall(place, "pyth")
    assert hits[0].memory.id == python.id
    if svc == "words_only":
        assert [h.memory.id for h in hits] == [python.id]


def test_words_are_accent_and_case_folded(words_only, place):
    cafe = remember_ok(words_only, place, "Loves the café on Main Street")
    assert [h.memory.id for h in words_only.recall(place, "CAFE")] == [cafe.id]
    assert [h.memory.id for h in words_only.recall(place, "Café")] == [cafe.id]


@pytest.mark.parametrize("query", ["", "   ", None])
def test_an_empty_query_finds_nothing_and_marks_nothing(service, place, query):
    memory = remember_ok(service, place, "Drinks green tea")
    assert service.recall(place, query) == []
    assert service.get(place, memory.id).last_used_at is None


def test_nothing_found_by_words_finds_nothing_without_embedder(words_only, place):
    remember_ok(words_only, place, "Drinks green tea")
    assert words_only.recall(place, "quantum chromodynamics") == []


def test_the_query_reaches_the_embedder_masked(make_service, embedder, place):
    service = make_service(mask="pii")
    remember_ok(service, place, "Writes to ann@example.com every week")
    service.recall(place, "what about ann@example.com")
    assert embedder.calls[-1][1] == "query"
    assert all("ann@example.com" not in text for text in embedder.texts_seen)
    assert any("[email]" in text for text in embedder.texts_seen)
