"""Places (DESIGN §2): no owner is an `invalid_where` error, never "everyone"; another owner's or
another scope's memories are never seen nor changed."""

from __future__ import annotations

import pytest

from portal.domain.types import InvalidWhere, NotFound, Place

from ..expect import refused
from .conftest import remember_ok

BLANK_OWNERS = ["", "   ", None]


@pytest.mark.parametrize("owner", BLANK_OWNERS)
def test_a_place_without_owner_is_invalid_where_not_memory_error(owner):
    with pytest.raises(InvalidWhere) as caught:
        Place.of(owner, "tenant-a")
    assert caught.value.code == "invalid_where"
    assert not isinstance(caught.value, MemoryError)


SERVICE_CALLS = {
    "remember": lambda s, p: s.remember(p, "Likes tea"),
    "update": lambda s, p: s.update(p, "some-id", text="Likes coffee"),
    "undo": lambda s, p: s.undo(p, "some-id"),
    "forget": lambda s, p: s.forget(p, "some-id"),
    "forget_all": lambda s, p: s.forget_all(p),
    "get": lambda s, p: s.get(p, "some-id"),
    "history": lambda s, p: s.history(p, "some-id"),
    "list": lambda s, p: s.list(p),
    "list_unseen": lambda s, p: s.list_unseen(p),
    "mark_seen": lambda s, p: s.mark_seen(p, ["some-id"]),
    "mark_used": lambda s, p: s.mark_used(p, ["some-id"]),
    "recall": lambda s, p: s.recall(p, "tea"),
    "portrait": lambda s, p: s.portrait(p),
    "export": lambda s, p: s.export(p),
    "pause": lambda s, p: s.pause(p),
    "resume": lambda s, p: s.resume(p),
    "is_paused": lambda s, p: s.is_paused(p),
}


@pytest.mark.parametrize("owner", ["", "  ", None])
@pytest.mark.parametrize("call", sorted(SERVICE_CALLS))
def test_every_service_call_refuses_a_missing_owner(service, store, place, call, owner):
    mine = remember_ok(service, place, "Alice likes green tea", importance=5)
    with pytest.raises(InvalidWhere) as caught:
        SERVICE_CALLS[call](service, (owner, "tenant-a"))
    assert caught.value.code == "invalid_where"
    # nothing was written anywhere, and Alice's memory is untouched
    assert set(store.places()) == {place}
    assert service.get(place, mine.id).text == "Alice likes green tea"


@pytest.mark.parametrize("owner", ["", "   ", None])
def test_purge_owner_without_owner_erases_nobody(service, place, owner):
    mine = remember_ok(service, place, "Alice likes green tea")
    with pytest.raises(InvalidWhere):
        service.purge_owner(owner)
    assert service.get(place, mine.id).text == "Alice likes green tea"


OTHERS = [Place("bob", "tenant-a"), Place("alice", "tenant-b"), Place("alice", "")]


@pytest.fixture(params=OTHERS, ids=["other-owner", "other-scope", "no-scope"])
def other(request) -> Place:
    return request.param


@pytest.fixture
def mine(service, place):
    """A memory of Alice in tenant-a that everything would show: pinned, important, unseen, updated once."""
    first = remember_ok(service, place, "Alice is allergic to peanuts", importance=5, pinned=True, channel="background")
    updated = service.update(place, first.id, text="Alice is allergic to peanuts and cashews")
    assert updated.ok
    return updated.memory


def _unchanged(service, place, memory):
    now = service.get(place, memory.id)
    assert (now.revision, now.text, now.state, now.seen, now.last_used_at) == (
        memory.revision, memory.text, memory.state, memory.seen, memory.last_used_at,
    )


def test_get_and_history_of_anothers_id_are_not_found(service, place, mine, other):
    with pytest.raises(NotFound) as caught:
        service.get(other, mine.id)
    assert caught.value.code == "not_found"
    with pytest.raises(NotFound):
        service.history(other, mine.id)


def test_update_and_undo_from_another_place_refuse_not_found_and_change_nothing(service, place, mine, other):
    with refused("not_found"):
        service.update(other, mine.id, text="Alice eats peanuts every day")
    with refused("not_found"):
        service.update(other, mine.id, pinned=False)
    with refused("not_found"):
        service.undo(other, mine.id)
    _unchanged(service, place, mine)
    assert service.get(place, mine.id).pinned is True


def test_forget_from_another_place_raises_and_keeps_the_memory(service, place, mine, other):
    with pytest.raises(NotFound):
        service.forget(other, mine.id)
    service.forget_all(other)
    _unchanged(service, place, mine)
    assert [r.revision for r in service.history(place, mine.id)] == [2, 1]


def test_another_place_never_lists_recalls_portrays_or_exports_it(service, place, mine, other):
    remember_ok(service, other, "Bob collects stamps", importance=5)
    assert [m.text for m in service.list(other, state="all").items] == ["Bob collects stamps"]
    assert service.list_unseen(other) == []
    assert all(h.memory.id != mine.id for h in service.recall(other, "allergic to peanuts and cashews"))
    portrait = service.portrait(other, min_importance=1)
    assert mine.id not in portrait.ids and "peanuts" not in portrait.text
    exported = service.export(other)
    assert [m["text"] for m in exported["memories"]] == ["Bob collects stamps"]
    assert "peanuts" not in repr(exported)
    _unchanged(service, place, mine)


def test_marks_from_another_place_are_skipped(service, place, mine, other):
    assert service.mark_used(other, [mine.id]) == 0
    assert service.mark_seen(other, [mine.id]) == 0
    _unchanged(service, place, mine)
    assert [m.id for m in service.list_unseen(place)] == [mine.id]


def test_same_text_elsewhere_is_a_new_memory_not_a_duplicate(service, place, mine, other):
    theirs = service.remember(other, "Alice is allergic to peanuts and cashews")
    assert theirs.ok and theirs.replaced_id is None and not theirs.reinforced
    assert theirs.memory.id != mine.id and theirs.memory.revision == 1
    _unchanged(service, place, mine)


def test_pausing_another_place_does_not_pause_this_one(service, place, mine, other):
    service.pause(other)
    assert service.is_paused(other) is True
    assert service.is_paused(place) is False
    assert service.remember(place, "Alice runs on Sundays").ok
