"""The cap (DESIGN §4): beyond `max_active` active memories the least important, then the longest
unused, are archived; `mark_used` and `recall` protect; `trim_above` trims in one go; pinned
memories are never archived."""

from __future__ import annotations

import pytest

from portal.domain.options import Options

from .conftest import remember_ok


@pytest.fixture
def capped(make_service):
    return make_service(options=Options(max_active=3))


def _active(service, place):
    return {m.text for m in service.list(place).items}


def _archived(service, place):
    return {m.text for m in service.list(place, state="archived").items}


def test_the_fourth_memory_archives_the_longest_unused(capped, place):
    for text in ["Likes tea", "Lives in Lyon", "Works as a nurse"]:
        remember_ok(capped, place, text)
    assert _archived(capped, place) == set()
    newest = remember_ok(capped, place, "Plays the cello")
    assert newest.state == "active"
    assert _active(capped, place) == {"Lives in Lyon", "Works as a nurse", "Plays the cello"}
    assert _archived(capped, place) == {"Likes tea"}


def test_the_least_important_goes_first(capped, place):
    remember_ok(capped, place, "Is allergic to peanuts", importance=5)
    remember_ok(capped, place, "Watched a film on Sunday", importance=1)
    remember_ok(capped, place, "Lives in Lyon", importance=3)
    remember_ok(capped, place, "Works as a nurse", importance=3)
    assert _archived(capped, place) == {"Watched a film on Sunday"}
    assert "Is allergic to peanuts" in _active(capped, place)


def test_mark_used_protects_from_the_cap(capped, place):
    oldest = remember_ok(capped, place, "Likes tea")
    remember_ok(capped, place, "Lives in Lyon")
    remember_ok(capped, place, "Works as a nurse")
    assert capped.mark_used(place, [oldest.id]) == 1
    remember_ok(capped, place, "Plays the cello")
    assert _archived(capped, place) == {"Lives in Lyon"}


def test_recall_protects_from_the_cap(capped, place):
    remember_ok(capped, place, "Likes tea")
    remember_ok(capped, place, "Lives in Lyon")
    remember_ok(capped, place, "Works as a nurse")
    hits = capped.recall(place, "tea", limit=1)
    assert [h.memory.text for h in hits] == ["Likes tea"]
    remember_ok(capped, place, "Plays the cello")
    assert _archived(capped, place) == {"Lives in Lyon"}


def test_trim_above_waits_then_trims_in_one_go(make_service, place):
    service = make_service(options=Options(max_active=3, trim_above=5))
    texts = ["Likes tea", "Lives in Lyon", "Works as a nurse", "Plays the cello", "Has two cats"]
    for text in texts:
        remember_ok(service, place, text)
    assert _active(service, place) == set(texts)
    remember_ok(service, place, "Runs on Sundays")
    assert _active(service, place) == {"Plays the cello", "Has two cats", "Runs on Sundays"}
    assert _archived(service, place) == {"Likes tea", "Lives in Lyon", "Works as a nurse"}


def test_pinned_memories_are_never_archived(make_service, place):
    service = make_service(options=Options(max_active=2))
    pinned = remember_ok(service, place, "Is vegetarian", importance=1, pinned=True)
    remember_ok(service, place, "Likes tea")
    remember_ok(service, place, "Lives in Lyon")
    remember_ok(service, place, "Works as a nurse")
    assert service.get(place, pinned.id).state == "active"
    assert "Is vegetarian" in _active(service, place)
    assert _archived(service, place) == {"Likes tea", "Lives in Lyon"}


def test_when_everything_is_pinned_nothing_is_archived(make_service, place):
    service = make_service(options=Options(max_active=2))
    for text in ["Is vegetarian", "Likes tea", "Lives in Lyon"]:
        remember_ok(service, place, text, pinned=True)
    assert len(service.list(place).items) == 3
    assert _archived(service, place) == set()


@pytest.mark.parametrize("cap", [0, None])
def test_no_cap_keeps_everything_active(make_service, place, cap):
    service = make_service(options=Options(max_active=cap), embedder=None)
    for i in range(12):
        remember_ok(service, place, f"note number{i}")
    assert len(service.list(place).items) == 12
    assert _archived(service, place) == set()


def test_archived_memories_leave_recall_and_portrait_but_stay_readable(capped, place):
    first = remember_ok(capped, place, "Likes tea", importance=4)
    for text in ["Lives in Lyon", "Works as a nurse", "Plays the cello"]:
        remember_ok(capped, place, text, importance=4)
    assert capped.get(place, first.id).state == "archived"
    assert all(h.memory.id != first.id for h in capped.recall(place, "tea"))
    assert first.id not in capped.portrait(place).ids
    assert [m.id for m in capped.list(place, state="archived").items] == [first.id]
    assert first.id in {m.id for m in capped.list(place, state="all").items}


def test_the_cap_counts_per_place(capped, place):
    other = ("alice", "tenant-b")
    for text in ["Likes tea", "Lives in Lyon", "Works as a nurse"]:
        remember_ok(capped, place, text)
        remember_ok(capped, other, text)
    assert _archived(capped, place) == set()
    assert len(capped.list(other).items) == 3
