"""Identity, revisions and undo (DESIGN §4): one id for a memory's whole life, each change a new
revision, compare-and-set, in-place overwrite, undo of the last write."""

from __future__ import annotations

import pytest

from portal.domain.types import Conflict, NotFound, Source
from portal.services.memory_service import Undone

from ..expect import refused
from .conftest import remember_ok


def test_update_makes_a_new_revision_with_the_same_id(service, place):
    memory = remember_ok(service, place, "Lives in Lyon")
    result = service.update(place, memory.id, text="Lives in Paris")
    assert result.ok
    assert (result.memory.id, result.memory.revision, result.memory.text) == (memory.id, 2, "Lives in Paris")
    now = service.get(place, memory.id)
    assert (now.revision, now.text) == (2, "Lives in Paris")
    assert [m.id for m in service.list(place).items] == [memory.id]


def test_history_is_newest_first_with_every_wording(service, place):
    memory = remember_ok(service, place, "Lives in Lyon")
    service.update(place, memory.id, text="Lives in Paris")
    service.update(place, memory.id, text="Lives in Berlin")
    history = service.history(place, memory.id)
    assert [(r.revision, r.text) for r in history] == [(3, "Lives in Berlin"), (2, "Lives in Paris"), (1, "Lives in Lyon")]
    assert all(r.memory_id == memory.id for r in history)


def test_kind_and_importance_stay_unless_given(service, place):
    memory = remember_ok(service, place, "Run a marathon", kind="goal", importance=5)
    text_only = service.update(place, memory.id, text="Run a half marathon").memory
    assert (text_only.kind, text_only.importance) == ("goal", 5)
    kind_only = service.update(place, memory.id, kind="preference").memory
    assert (kind_only.text, kind_only.kind, kind_only.importance) == ("Run a half marathon", "preference", 5)
    importance_only = service.update(place, memory.id, importance=2).memory
    assert (importance_only.text, importance_only.kind, importance_only.importance) == (
        "Run a half marathon", "preference", 2,
    )
    assert importance_only.revision == 4


def test_a_stale_expected_revision_is_a_conflict_and_changes_nothing(service, place):
    memory = remember_ok(service, place, "Lives in Lyon")
    service.update(place, memory.id, text="Lives in Paris")
    with pytest.raises(Conflict) as stale:
        service.update(place, memory.id, text="Lives in Nice", expected_revision=1)
    assert (stale.value.code, stale.value.actual_revision) == ("conflict", 2)
    assert service.get(place, memory.id).text == "Lives in Paris"
    fresh = service.update(place, memory.id, text="Lives in Nice", expected_revision=2)
    assert fresh.ok and (fresh.memory.revision, fresh.memory.text) == (3, "Lives in Nice")


def test_an_update_of_an_unknown_id_is_not_found(service, place):
    with refused("not_found"):
        service.update(place, "no-such-id", text="x")
    with refused("not_found"):
        service.undo(place, "no-such-id")


def test_in_place_overwrites_and_keeps_no_earlier_text(service, place):
    memory = remember_ok(service, place, "Divorced from Mark in 2019 after his affair")
    result = service.update(place, memory.id, text="Divorced in 2019", in_place=True)
    assert result.ok and result.memory.id == memory.id
    history = service.history(place, memory.id)
    # A new revision number (so stale writers are refused), and no earlier text at all.
    assert [(r.revision, r.text) for r in history] == [(2, "Divorced in 2019")]
    assert "affair" not in repr(service.export(place))
    with refused("nothing_to_undo"):
        service.undo(place, memory.id)
    assert service.get(place, memory.id).text == "Divorced in 2019"


def test_an_in_place_edit_after_an_update_has_nothing_to_undo(service, place):
    memory = remember_ok(service, place, "Lives in Lyon")
    service.update(place, memory.id, text="Lives in Paris")
    service.update(place, memory.id, text="Lives in Paris, France", in_place=True)
    with refused("nothing_to_undo"):
        service.undo(place, memory.id)
    assert service.get(place, memory.id).text == "Lives in Paris, France"


def test_in_place_after_an_update_leaves_the_regretted_detail_nowhere(service, place):
    memory = remember_ok(service, place, "Lives at 12 Rose Street, Lyon")
    service.update(place, memory.id, text="Lives at 12 Rose Street, Lyon, France")
    service.update(place, memory.id, text="Lives in Lyon, France", in_place=True)
    assert service.get(place, memory.id).text == "Lives in Lyon, France"
    assert all("Rose Street" not in r.text for r in service.history(place, memory.id))
    assert "Rose Street" not in repr(service.export(place))


def test_undo_after_remember_removes_the_memory(service, place):
    memory = remember_ok(service, place, "Likes tea")
    undone = service.undo(place, memory.id)
    assert isinstance(undone, Undone) and undone.memory is None and undone.memory_id == memory.id
    with pytest.raises(NotFound):
        service.get(place, memory.id)
    assert service.list(place, state="all").items == []


def test_undo_after_update_restores_the_previous_revision(service, make_service, place):
    memory = remember_ok(service, place, "Lives in Lyon", kind="fact", importance=2)
    service.update(place, memory.id, text="Lives in Paris", kind="event", importance=5)
    undone = service.undo(place, memory.id)
    assert isinstance(undone, Undone) and undone.memory is not None
    now = service.get(place, memory.id)
    # The old wording comes back as a new revision; the undone one is erased from history.
    assert (now.id, now.revision, now.text, now.kind, now.importance) == (memory.id, 3, "Lives in Lyon", "fact", 2)
    assert [r.text for r in service.history(place, memory.id)] == ["Lives in Lyon"]
    # the restored wording is found by words again, the undone one is not
    by_words = make_service(embedder=None)
    assert [h.memory.id for h in by_words.recall(place, "Lyon")] == [memory.id]
    assert by_words.recall(place, "Paris") == []


def test_a_second_undo_never_deletes_the_restored_memory(service, place):
    memory = remember_ok(service, place, "Lives in Lyon")
    service.update(place, memory.id, text="Lives in Paris")
    assert service.undo(place, memory.id).ok
    with refused("nothing_to_undo"):
        service.undo(place, memory.id)
    assert service.get(place, memory.id).text == "Lives in Lyon"


def test_undo_after_a_duplicate_replacement_restores_the_old_wording(service, place):
    memory = remember_ok(service, place, "Likes tea", importance=4)
    replaced = service.remember(place, "likes TEA!")
    assert replaced.replaced_id == memory.id
    assert service.get(place, memory.id).text == "likes TEA!"
    undone = service.undo(place, memory.id)
    assert isinstance(undone, Undone)
    now = service.get(place, memory.id)
    assert (now.text, now.revision, now.importance) == ("Likes tea", 3, 4)
    assert [m.id for m in service.list(place).items] == [memory.id]


def test_pin_changes_no_revision_and_unpin_works(service, place):
    memory = remember_ok(service, place, "Is vegetarian", importance=1)
    pinned = service.pin(place, memory.id)
    assert pinned.ok and pinned.memory.pinned is True and pinned.memory.revision == 1
    assert memory.id in service.portrait(place).ids
    unpinned = service.pin(place, memory.id, pinned=False)
    assert unpinned.memory.pinned is False
    assert memory.id not in service.portrait(place).ids


def test_a_model_never_relabels_what_the_person_asserted(service, place):
    memory = remember_ok(service, place, "Likes tea", sources=[Source("portal")])
    result = service.update(
        place, memory.id, text="Likes green tea", origin="inferred", sources=[Source("consolidation", "conv-1", (3,))]
    )
    assert result.ok and result.memory.text == "Likes green tea"
    assert result.memory.origin == "asserted"
    assert result.memory.sources == (Source("portal"),)
    # and a duplicate replacement by a model keeps it asserted too
    again = service.remember(place, "likes GREEN tea", origin="inferred", sources=[Source("consolidation", "conv-2")])
    assert again.replaced_id == memory.id
    assert (again.memory.origin, again.memory.sources) == ("asserted", (Source("portal"),))


def test_an_inferred_memory_corrected_by_the_person_becomes_asserted(service, place):
    memory = remember_ok(service, place, "Likes tea", origin="inferred", sources=[Source("consolidation", "c1")])
    result = service.update(place, memory.id, text="Likes coffee", sources=[Source("portal")])
    assert result.memory.origin == "asserted"
    assert Source("portal") in result.memory.sources


def test_a_writer_holding_a_revision_undone_since_gets_a_conflict(service, place):
    memory = remember_ok(service, place, "Lives in Lyon")
    seen_by_tab = service.update(place, memory.id, text="Lives in Paris").memory  # a second tab reads this
    service.undo(place, memory.id)
    service.update(place, memory.id, text="Lives in Berlin")
    with refused("conflict"):
        service.update(place, memory.id, text="Lives in Nice", expected_revision=seen_by_tab.revision)
    assert service.get(place, memory.id).text == "Lives in Berlin"
