"""Forget, erase everything, purge an owner, export (DESIGN §2, §4, §11): what is erased is gone
with its revisions, cannot come back, and leaves nothing in stored idempotent responses."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from portal.domain.apps import App
from portal.domain.types import Memory, NotFound, Place, Receipt

from ..expect import refused
from .conftest import START, remember_ok

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _receipt(key, memory_ids, text):
    return Receipt(
        key=key, request_hash=f"hash-{key}", status=201, response={"memory": {"text": text}},
        memory_ids=tuple(memory_ids), created_at=T0,
    )


def _put_receipts(store, place, *receipts):
    with store.write(place) as tx:
        for receipt in receipts:
            tx.put_receipt(receipt)
        tx.commit()


def _receipt_of(store, place, key):
    with store.read(place) as tx:
        return tx.get_receipt(key)


def test_forget_removes_the_memory_and_every_revision(service, place):
    memory = remember_ok(service, place, "Lives in Lyon")
    service.update(place, memory.id, text="Lives in Paris")
    service.update(place, memory.id, text="Lives in Berlin")
    keep = remember_ok(service, place, "Likes tea")
    erased = service.forget(place, memory.id)
    assert erased == 3
    with pytest.raises(NotFound):
        service.get(place, memory.id)
    with pytest.raises(NotFound):
        service.history(place, memory.id)
    assert [m.id for m in service.list(place, state="all").items] == [keep.id]
    exported = repr(service.export(place))
    assert "Lyon" not in exported and "Paris" not in exported and "Berlin" not in exported
    assert all(h.memory.id != memory.id for h in service.recall(place, "Lives in Berlin"))


def test_forget_an_unknown_or_already_forgotten_id_is_not_found(service, place):
    memory = remember_ok(service, place, "Likes tea")
    service.forget(place, memory.id)
    with pytest.raises(NotFound) as caught:
        service.forget(place, memory.id)
    assert caught.value.code == "not_found"
    with pytest.raises(NotFound):
        service.forget(place, "never-existed")
    with refused("not_found"):
        service.update(place, memory.id, text="Likes coffee")
    with refused("not_found"):
        service.undo(place, memory.id)


def test_a_forgotten_memory_can_be_said_again_as_a_new_memory(service, place):
    memory = remember_ok(service, place, "Likes tea")
    service.forget(place, memory.id)
    again = service.remember(place, "Likes tea")
    assert again.ok and again.replaced_id is None and again.memory.id != memory.id


def test_a_tombstone_blocks_reusing_a_forgotten_id(service, store, place):
    memory = remember_ok(service, place, "Likes tea")
    service.forget(place, memory.id)
    replay = Memory(
        id=memory.id, owner_id=place.owner_id, scope=place.scope, revision=1, text="Likes tea", kind="fact",
        importance=3, created_at=START, updated_at=START,
    )
    with pytest.raises(ValueError), store.write(place) as tx:
        tx.insert(replay)
        tx.commit()
    with pytest.raises(NotFound):
        service.get(place, memory.id)


def test_a_replayed_id_through_the_service_does_not_bring_it_back(make_service, place):
    ids = iter(["mem-1", "mem-1"])
    service = make_service(id_factory=lambda: next(ids))
    first = remember_ok(service, place, "Likes tea")
    assert first.id == "mem-1"
    service.forget(place, "mem-1")
    try:
        service.remember(place, "Likes tea")
    except Exception:  # refusing loudly is fine, resurrecting is not
        pass
    with pytest.raises(NotFound):
        service.get(place, "mem-1")


def test_forget_leaves_no_receipt_able_to_replay_its_text(service, store, place):
    """Receipts never hold words (portal.services.idempotency): after a forget, a replay that named
    the memory is redacted, one that named another memory still answers it."""
    from portal.services.idempotency import REDACTED, Answer, once

    gone = remember_ok(service, place, "Has a therapist appointment on Monday")
    kept = remember_ok(service, place, "Likes tea")
    for key, memory in (("k-gone", gone), ("k-kept", kept)):
        once(store, place, key, key, lambda m=memory: Answer(201, {"memory": m.to_json()}))
    service.forget(place, gone.id)
    assert "therapist" not in repr(_receipt_of(store, place, "k-gone"))
    redacted, replayed = once(store, place, "k-gone", "k-gone", lambda: Answer(500, None))
    assert replayed and redacted.body == REDACTED
    answered, replayed = once(store, place, "k-kept", "k-kept", lambda: Answer(500, None))
    assert replayed and answered.body is not None and answered.body["memory"]["text"] == "Likes tea"


def test_forget_all_erases_this_place_only(service, store, place):
    other_scope = Place(place.owner_id, "tenant-b")
    a = remember_ok(service, place, "Likes tea")
    service.update(place, a.id, text="Likes green tea")
    remember_ok(service, place, "Lives in Lyon")
    elsewhere = remember_ok(service, other_scope, "Works as a nurse")
    _put_receipts(store, place, _receipt("k1", [a.id], "Likes tea"))
    _put_receipts(store, other_scope, _receipt("k1", [elsewhere.id], "Works"))
    counts = service.forget_all(place)
    assert counts == {"memories": 2, "revisions": 1, "receipts": 1, "refs": 0}
    assert service.list(place, state="all").items == []
    with store.read(place) as tx:
        assert tx.get_receipt("k1") is None  # erase everything takes the receipts too
    assert service.get(other_scope, elsewhere.id).text == "Works as a nurse"
    assert _receipt_of(store, other_scope, "k1") is not None


def _seed_owner(service, store, place, label):
    """Two memories (one updated), one forgotten, a pause, a claimed ref, a receipt, an app's use
    and a blocked app."""
    a = remember_ok(service, place, f"{label} likes tea")
    service.update(place, a.id, text=f"{label} likes green tea")
    service.for_app(App("app-reader", "Reader")).get(place, a.id)
    service.set_app_control(place, "app-other", "blocked")
    remember_ok(service, place, f"{label} lives in Lyon", channel="background")
    gone = remember_ok(service, place, f"{label} works nights")
    service.forget(place, gone.id)
    service.pause(place)
    with store.write(place) as tx:
        assert tx.claim_ref(f"conversation-{label}", T0)
        tx.put_receipt(_receipt(f"key-{label}", [a.id], label))
        tx.commit()


def test_purge_owner_erases_every_scope_of_that_owner_only(service, store):
    alice_a, alice_b = Place("alice", "tenant-a"), Place("alice", "tenant-b")
    bob = Place("bob", "tenant-a")
    for p, label in [(alice_a, "Alice"), (alice_b, "Alicia"), (bob, "Bob")]:
        _seed_owner(service, store, p, label)

    counts = service.purge_owner("alice")

    assert counts.to_json() == {
        "memories": 4, "revisions": 2, "settings": 2, "refs": 2, "receipts": 2, "tombstones": 2,
        "app_uses": 2, "app_controls": 2, "jobs": 0,
    }
    for p in (alice_a, alice_b):
        assert service.list(p, state="all").items == []
        assert service.list_unseen(p) == []
        assert service.is_paused(p) is False
        assert service.connected_apps(p, {}) == []
        assert service.export(p)["memories"] == []
        with store.read(p) as tx:
            assert tx.get_receipt(f"key-{'Alice' if p == alice_a else 'Alicia'}") is None
        with store.write(p) as tx:
            assert tx.claim_ref(f"conversation-{'Alice' if p == alice_a else 'Alicia'}", T0) is True
    assert Place("alice", "tenant-a") not in set(store.places())
    # Bob is untouched
    assert sorted(m.text for m in service.list(bob, state="all").items) == ["Bob likes green tea", "Bob lives in Lyon"]
    assert service.is_paused(bob) is True
    assert [(s.app.id, s.control, s.counts["read"]) for s in service.connected_apps(bob, {})] == [
        ("app-reader", None, 1), ("app-other", "blocked", 0)]
    assert _receipt_of(store, bob, "key-Bob") is not None
    with store.write(bob) as tx:
        assert tx.claim_ref("conversation-Bob", T0) is False


def test_purge_owner_of_nobody_answers_zero_counts(service, place):
    remember_ok(service, place, "Likes tea")
    counts = service.purge_owner("nobody")
    assert counts.to_json() == dict.fromkeys(counts.to_json(), 0)
    assert len(service.list(place).items) == 1


def test_export_has_every_memory_with_its_revisions_and_the_settings(make_service, place):
    from portal.domain.options import Options

    service = make_service(options=Options(max_active=1))
    a = remember_ok(service, place, "Lives in Lyon", kind="fact", importance=4)
    service.update(place, a.id, text="Lives in Paris")
    service.update(place, a.id, text="Lives in Berlin")
    b = remember_ok(service, place, "Likes tea")  # archives the other one: the export has it still
    service.pause(place)
    exported = service.export(place)
    assert (exported["owner_id"], exported["scope"]) == (place.owner_id, place.scope)
    assert exported["settings"] == {"paused": True, "learnt_days": None}
    by_id = {m["id"]: m for m in exported["memories"]}
    assert set(by_id) == {a.id, b.id}
    assert by_id[a.id]["text"] == "Lives in Berlin" and by_id[a.id]["state"] == "archived"
    assert by_id[a.id]["revision"] == 3
    earlier = [(r["revision"], r["text"]) for r in by_id[a.id]["revisions"]]
    assert (2, "Lives in Paris") in earlier and (1, "Lives in Lyon") in earlier
    assert by_id[b.id]["revisions"] == [] and by_id[b.id]["text"] == "Likes tea"
