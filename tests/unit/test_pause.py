"""Pause (DESIGN §6): a paused person's memory learns nothing, yet the person can still read,
correct, undo and erase."""

from __future__ import annotations

import pytest

from portal.domain.types import NotFound

from ..expect import refused
from .conftest import remember_ok


def test_pause_resume_and_is_paused(service, place):
    assert service.is_paused(place) is False
    assert service.pause(place) is True
    assert service.pause(place) is True  # twice is harmless
    assert service.is_paused(place) is True
    assert service.resume(place) is False
    assert service.is_paused(place) is False


def test_paused_refuses_new_memories_and_duplicates_alike(service, place):
    memory = remember_ok(service, place, "Likes tea", importance=2)
    service.pause(place)
    with refused("paused"):
        service.remember(place, "Lives in Lyon")
    with refused("paused"):
        service.remember(place, "likes tea", importance=5, on_duplicate="reinforce")
    with refused("paused"):
        service.remember(place, "LIKES TEA")
    now = service.get(place, memory.id)
    assert (now.text, now.revision, now.importance) == ("Likes tea", 1, 2)
    assert [m.id for m in service.list(place).items] == [memory.id]


def test_a_paused_person_can_still_read_correct_undo_and_erase(service, place):
    a = remember_ok(service, place, "Lives in Lyon", importance=5)
    b = remember_ok(service, place, "Likes tea", importance=5)
    service.pause(place)
    assert [h.memory.id for h in service.recall(place, "Lyon")][:1] == [a.id]
    assert set(service.portrait(place).ids) == {a.id, b.id}
    corrected = service.update(place, a.id, text="Lives in Paris")
    assert corrected.ok and corrected.memory.revision == 2
    assert service.undo(place, a.id).memory.text == "Lives in Lyon"
    assert service.pin(place, b.id).memory.pinned is True
    assert service.forget(place, b.id) == 1
    with pytest.raises(NotFound):
        service.get(place, b.id)
    assert service.export(place)["settings"] == {"paused": True, "learnt_days": None}
    assert service.forget_all(place)["memories"] == 1
    assert service.is_paused(place) is True
