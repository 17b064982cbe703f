"""AI switched off (DESIGN §6) and reindex (§8): with the AI off a person's operations still work
and no text reaches the embedder; `reindex` later gives vectors to what was kept meanwhile."""

from __future__ import annotations

import pytest

from .conftest import FailingEmbedder, HashEmbedder, remember_ok


@pytest.fixture
def ai():
    return {"on": False}


@pytest.fixture
def switchable(make_service, ai):
    return make_service(ai_enabled=lambda place: ai["on"])


def test_with_the_ai_off_writes_are_kept_without_vector_and_nothing_is_embedded(switchable, embedder, place):
    memory = remember_ok(switchable, place, "Has a dog named Rex")
    assert memory.has_vector is False
    corrected = switchable.update(place, memory.id, text="Has a dog named Max")
    assert corrected.ok and corrected.memory.has_vector is False
    assert switchable.get(place, memory.id).text == "Has a dog named Max"
    assert switchable.recall(place, "dog")[0].match == "lexical"
    assert embedder.calls == []


def test_with_the_ai_off_every_privacy_operation_works(switchable, embedder, place):
    a = remember_ok(switchable, place, "Has a dog named Rex", channel="background")
    b = remember_ok(switchable, place, "Drinks green tea")
    assert [m.id for m in switchable.list_unseen(place)] == [a.id]
    assert switchable.mark_seen(place, [a.id]) == 1
    assert switchable.pause(place) is True and switchable.resume(place) is False
    switchable.update(place, b.id, text="Drinks black tea")
    assert switchable.undo(place, b.id).memory.text == "Drinks green tea"
    assert len(switchable.export(place)["memories"]) == 2
    assert switchable.forget(place, a.id) >= 1
    assert switchable.portrait(place, min_importance=1).ids == [b.id]
    assert switchable.forget_all(place)["memories"] == 1
    assert embedder.calls == []


def test_reindex_with_the_ai_back_gives_vectors_and_meaning_works(switchable, ai, place):
    dog = remember_ok(switchable, place, "Has a dog named Rex")
    remember_ok(switchable, place, "Drinks green tea")
    assert switchable.reindex() == 0  # still off: nothing embedded
    assert not any(m.has_vector for m in switchable.list(place).items)
    ai["on"] = True
    assert switchable.reindex() == 2
    assert all(m.has_vector for m in switchable.list(place).items)
    hits = switchable.recall(place, "puppy")
    assert hits[0].memory.id == dog.id and hits[0].match == "vector"


def test_the_ai_switch_is_read_per_place(make_service, embedder):
    service = make_service(ai_enabled=lambda place: place.scope != "ai-off-tenant")
    off = remember_ok(service, ("alice", "ai-off-tenant"), "Has a dog named Rex")
    on = remember_ok(service, ("alice", "tenant-a"), "Has a cat named Tom")
    assert (off.has_vector, on.has_vector) == (False, True)
    assert embedder.texts_seen == ["Has a cat named Tom"]
    assert service.reindex() == 0
    assert service.get(("alice", "ai-off-tenant"), off.id).has_vector is False


def test_reindex_fills_vectors_missing_after_an_outage(make_service, store, place):
    down = make_service(embedder=FailingEmbedder())
    ids = [remember_ok(down, place, f"Note {word}").id for word in ("alpha", "bravo", "charlie")]
    up = make_service()
    progress: list[int] = []
    assert up.reindex(progress=progress.append) == 3
    assert sum(progress) == 3 and progress
    assert all(up.get(place, i).has_vector for i in ids)
    assert up.reindex() == 0  # nothing left to do


def test_reindex_re_embeds_memories_of_another_model(make_service, place):
    old = make_service(embedder=HashEmbedder("old-model"))
    for text in ("Has a dog named Rex", "Drinks green tea", "Works as a nurse"):
        remember_ok(old, place, text)
    new = make_service(embedder=HashEmbedder("new-model", dim=32))
    # before the switch recall keeps working (by words) on memories of the old model
    assert new.recall(place, "tea")[0].memory.text == "Drinks green tea"
    assert new.reindex() == 3
    models = {(m.embedding.model, m.embedding.dim) for m in new.list(place).items}
    assert models == {("new-model", 32)}
    assert new.recall(place, "tea")[0].match == "hybrid"


def test_reindex_is_resumable_with_a_limit(make_service, place):
    down = make_service(embedder=None)
    for i in range(5):
        remember_ok(down, place, f"Note number{i}")
    up = make_service()
    assert up.reindex(limit=2) == 2
    assert sum(m.has_vector for m in up.list(place).items) == 2
    assert up.reindex(limit=10) == 3
    assert all(m.has_vector for m in up.list(place).items)


def test_reindex_in_small_batches_reports_progress_per_batch(make_service, place):
    down = make_service(embedder=None)
    for i in range(5):
        remember_ok(down, place, f"Note number{i}")
    progress: list[int] = []
    assert make_service().reindex(progress=progress.append, batch=2) == 5
    assert progress == [2, 2, 1]


def test_reindex_without_embedder_does_nothing(make_service, place):
    service = make_service(embedder=None)
    remember_ok(service, place, "Drinks green tea")
    assert service.reindex() == 0
    assert service.list(place).items[0].has_vector is False


def test_reindex_masks_text_before_the_embedder(make_service, embedder, place):
    remember_ok(make_service(embedder=None), place, "Mail me at ann@example.com or +33 6 12 34 56 78")
    service = make_service(mask="pii")
    assert service.reindex() == 1
    assert embedder.texts_seen == ["Mail me at [email] or [phone]"]
