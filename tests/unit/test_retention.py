"""Retention (`MemoryService.prune`): old history, old idempotency receipts and long-archived
memories go; current wordings, recent undo and pending requests stay."""

from __future__ import annotations

from datetime import timedelta

import pytest

from portal.domain.options import Options
from portal.domain.types import Receipt
from portal.services.idempotency import Answer, once
from portal.services.retention import PruneCounts

from ..expect import refused
from .conftest import remember_ok

DAYS = timedelta(days=1)


def test_history_replaced_long_ago_goes_and_a_recent_change_can_still_be_undone(service, clock, place):
    settled = remember_ok(service, place, "Lives in Lyon")
    service.update(place, settled.id, text="Lives in Paris")
    service.update(place, settled.id, text="Lives in Berlin")
    edited = remember_ok(service, place, "Works as a nurse")
    clock.advance(days=199)
    assert service.update(place, edited.id, text="Works as a midwife").ok
    clock.advance(days=1)

    counts = service.prune(history_older_than=90 * DAYS)

    assert counts == PruneCounts(revisions=2)
    assert [r.text for r in service.history(place, settled.id)] == ["Lives in Berlin"]  # the current one only
    assert service.get(place, settled.id).text == "Lives in Berlin"
    with refused("nothing_to_undo"):
        service.undo(place, settled.id)
    # Changed a day ago: the wording it replaced is kept, so the change can be taken back.
    assert [r.text for r in service.history(place, edited.id)] == ["Works as a midwife", "Works as a nurse"]
    assert service.undo(place, edited.id).ok
    assert service.get(place, edited.id).text == "Works as a nurse"


def test_old_completed_receipts_go_and_their_key_runs_again(service, clock, place):
    def remember_tea() -> Answer:
        saved = remember_ok(service, place, "Likes green tea")
        return Answer(201, {"id": saved.id})

    first, replayed = once(service.store, place, "signup-1", "digest", remember_tea, clock=clock)
    assert not replayed
    assert once(service.store, place, "signup-1", "digest", remember_tea, clock=clock)[1] is True
    clock.advance(days=31)
    with service.store.write(place) as tx:  # a request that is still running keeps its receipt
        tx.put_receipt(Receipt("running", "digest", 0, None, created_at=clock() - 40 * DAYS))
        tx.commit()

    assert service.prune(receipts_older_than=30 * DAYS) == PruneCounts(receipts=1)

    with service.store.read(place) as tx:
        assert tx.get_receipt("signup-1") is None
        assert tx.get_receipt("running") is not None
    again, replayed = once(service.store, place, "signup-1", "digest", remember_tea, clock=clock)
    assert not replayed and again.body == first.body  # ran again: a reinforcement of the same memory


def test_long_archived_memories_are_erased_like_forget(make_service, clock, place):
    capped = make_service(options=Options(max_active=1))

    def remember(text: str, key: str) -> str:
        answer, _ = once(capped.store, place, key, key, lambda: _saved(capped, place, text), clock=clock)
        assert answer.body is not None
        return str(answer.body["memory"]["id"])

    old = remember("Had a cold in January", "k-old")
    kept_active = remember("Lives in Lyon", "k-lyon")  # archives the first
    clock.advance(days=190)
    recent = remember("Plays the cello", "k-cello")  # archives "Lives in Lyon", touched 190 days ago
    clock.advance(days=1)
    assert {m.id for m in capped.list(place, state="archived").items} == {old, kept_active}
    capped.update(place, kept_active, text="Lives in Lyon, 3rd district")  # written lately: stays
    clock.advance(days=1)

    counts = capped.prune(archived_older_than=180 * DAYS)

    assert counts == PruneCounts(memories=1)
    assert {m.id for m in capped.list(place, state="all").items} == {kept_active, recent}
    with capped.store.read(place) as tx:
        assert tx.is_tombstoned(old)  # a replayed write cannot bring it back
    replay_old, replayed = once(capped.store, place, "k-old", "k-old", lambda: pytest.fail("ran again"), clock=clock)
    assert replayed and replay_old.body == {"redacted": True}  # its memory is gone: so is its answer
    replay_lyon, replayed = once(capped.store, place, "k-lyon", "k-lyon", lambda: pytest.fail("ran again"), clock=clock)
    assert replayed and replay_lyon.body == {"redacted": True}  # corrected since: its old answer is no longer true
    assert capped.prune(archived_older_than=180 * DAYS) == PruneCounts()


def test_periods_must_be_positive_and_none_prunes_nothing(service, place):
    memory = remember_ok(service, place, "Lives in Lyon")
    service.update(place, memory.id, text="Lives in Paris")
    for bad in (timedelta(0), -DAYS):
        with pytest.raises(ValueError, match="history_older_than"):
            service.prune(history_older_than=bad)
        with pytest.raises(ValueError, match="archived_older_than"):
            service.prune(archived_older_than=bad)
    assert service.prune() == PruneCounts()
    assert len(service.history(place, memory.id)) == 2


def _saved(service, place, text: str) -> Answer:
    saved = remember_ok(service, place, text)
    return Answer(201, {"memory": saved.to_json()})
