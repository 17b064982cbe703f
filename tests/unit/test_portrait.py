"""The portrait (DESIGN §5): pinned and important memories for a system prompt, pinned first, then
most recently useful, cut on a whole memory within `max_length`."""

from __future__ import annotations

import json

import pytest

from portal.domain.types import InvalidArgument

from .conftest import remember_ok


def test_bullets_of_important_memories_most_recently_useful_first(service, place, clock):
    a = remember_ok(service, place, "Is allergic to peanuts", importance=5)
    b = remember_ok(service, place, "Prefers short answers", importance=4)
    remember_ok(service, place, "Watched a film on Sunday", importance=3)
    portrait = service.portrait(place)
    assert portrait.text == "- Prefers short answers\n- Is allergic to peanuts"
    assert portrait.ids == [b.id, a.id]
    clock.advance(minutes=1)
    service.mark_used(place, [a.id])
    assert service.portrait(place).ids == [a.id, b.id]


def test_min_importance(service, place):
    remember_ok(service, place, "Is allergic to peanuts", importance=5)
    remember_ok(service, place, "Watched a film on Sunday", importance=3)
    remember_ok(service, place, "Saw a pigeon", importance=1)
    assert len(service.portrait(place, min_importance=5).ids) == 1
    assert len(service.portrait(place, min_importance=3).ids) == 2
    assert "Saw a pigeon" in service.portrait(place, min_importance=1).text


def test_pinned_memories_come_first_whatever_their_importance(service, place, clock):
    important = remember_ok(service, place, "Is allergic to peanuts", importance=5)
    pinned = remember_ok(service, place, "Call me Sam", importance=1)
    service.pin(place, pinned.id)
    clock.advance(minutes=1)
    service.mark_used(place, [important.id])
    portrait = service.portrait(place)
    assert portrait.ids == [pinned.id, important.id]
    assert portrait.text.splitlines()[0] == "- Call me Sam"
    # even when little room is left, the pinned one gets it first
    assert service.portrait(place, max_length=len("- Call me Sam") + 1).ids == [pinned.id]


def test_an_empty_portrait(service, place):
    remember_ok(service, place, "Saw a pigeon", importance=1)
    portrait = service.portrait(place)
    assert (portrait.text, portrait.ids) == ("", [])


def test_dated_groups_lines_under_their_day(service, place, clock):
    remember_ok(service, place, "Prefers short answers", importance=5)
    remember_ok(service, place, "Uses Windows 11", importance=5)
    clock.advance(days=3)
    remember_ok(service, place, "Wants examples in shell", importance=5)
    text = service.portrait(place, format="dated").text
    lines = text.splitlines()
    assert lines[0] == "**2025-01-04**"
    assert lines[1] == "Wants examples in shell"
    assert lines[2] == "**2025-01-01**"
    assert set(lines[3:]) == {"Prefers short answers", "Uses Windows 11"}
    assert len(lines) == 5


def test_json_format(service, place):
    a = remember_ok(service, place, "Is allergic to peanuts", kind="fact", importance=5)
    data = json.loads(service.portrait(place, format="json").text)
    assert data == [{"id": a.id, "text": "Is allergic to peanuts", "kind": "fact", "importance": 5}]


def test_an_unknown_format_is_refused(service, place):
    with pytest.raises(InvalidArgument) as caught:
        service.portrait(place, format="xml")
    assert caught.value.code == "invalid_format"


def test_max_length_cuts_on_a_whole_memory(service, place):
    texts = ["First memory here", "Second memory here", "Third memory here"]
    for text in texts:
        remember_ok(service, place, text, importance=5)
    full = service.portrait(place)
    assert len(full.ids) == 3
    two_lines = "- Third memory here\n- Second memory here"
    portrait = service.portrait(place, max_length=len(two_lines) + 5)
    assert portrait.text == two_lines
    assert service.portrait(place, max_length=0).ids == []


def test_without_fill_the_portrait_stops_at_the_first_that_does_not_fit(service, place):
    remember_ok(service, place, "Short one", importance=5)
    remember_ok(service, place, "A much longer memory that will never fit in the budget", importance=5)
    remember_ok(service, place, "Tiny", importance=5)
    assert service.portrait(place, max_length=20).text == "- Tiny"


def test_fill_skips_a_long_memory_and_keeps_shorter_later_ones(service, place):
    remember_ok(service, place, "Short one", importance=5)
    remember_ok(service, place, "A much longer memory that will never fit in the budget", importance=5)
    remember_ok(service, place, "Tiny", importance=5)
    portrait = service.portrait(place, max_length=20, fill=True)
    assert portrait.text == "- Tiny\n- Short one"
    assert len(portrait.text) <= 20


@pytest.mark.parametrize("fmt", ["bullets", "dated", "json"])
def test_the_portrait_never_exceeds_max_length(service, place, clock, fmt):
    for day in range(3):
        for i in range(2):
            remember_ok(service, place, f"Memory {i} of day {day} with a few words", importance=5)
        clock.advance(days=1)
    for budget in range(10, 600, 7):
        portrait = service.portrait(place, max_length=budget, format=fmt)
        assert len(portrait.text) <= budget, (budget, portrait.text)


def test_masked_applies_the_mask(make_service, place):
    service = make_service(mask="pii")
    remember_ok(service, place, "Writes to ann@example.com weekly", importance=5)
    assert "[email]" in service.portrait(place, masked=True).text
    assert "ann@example.com" not in service.portrait(place, masked=True).text
    assert "ann@example.com" in service.portrait(place).text
    data = json.loads(service.portrait(place, masked=True, format="json").text)
    assert data[0]["text"] == "Writes to [email] weekly"


def test_archived_memories_are_not_in_the_portrait(make_service, place):
    from portal.domain.options import Options

    service = make_service(options=Options(max_active=1))
    first = remember_ok(service, place, "Is allergic to peanuts", importance=5)
    remember_ok(service, place, "Prefers short answers", importance=5)
    assert service.get(place, first.id).state == "archived"
    assert first.id not in service.portrait(place).ids
