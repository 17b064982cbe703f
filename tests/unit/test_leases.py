"""Leases on work in progress (issue 14: "a killed worker leaves an idempotent request stuck for
good"): a retry waits while the first request holds its lease, and takes the work over once the
lease has run out; the request renews its lease while it runs."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest

from portal.adapters.memory.store import InMemoryStore
from portal.domain.decisions import conversation_key
from portal.domain.options import Options
from portal.domain.types import Place, Receipt
from portal.services.idempotency import PENDING, Answer, StillRunning, once
from portal.services.memory_service import MemoryService

from .conftest import FakeClock

HERE = Place("ada", "t")


def test_a_retry_takes_over_a_key_whose_first_request_died(store: InMemoryStore, clock: FakeClock) -> None:
    with store.write(HERE) as tx:  # what a worker killed mid-request leaves behind
        tx.put_receipt(Receipt("stuck-1", "d", PENDING, None, created_at=clock(), lease_until=clock.now + timedelta(seconds=5)))
        tx.commit()
    with pytest.raises(StillRunning):  # within its lease, the first request may still be running
        once(store, HERE, "stuck-1", "d", lambda: Answer(200, {"ran": True}), clock=clock, wait=0.1, lease=5)
    clock.advance(seconds=6)
    answer, replayed = once(store, HERE, "stuck-1", "d", lambda: Answer(200, {"ran": True}), clock=clock, lease=5)
    assert (answer.body, replayed) == ({"ran": True}, False)
    again, replayed = once(store, HERE, "stuck-1", "d", lambda: pytest.fail("ran twice"), clock=clock, lease=5)
    assert (again.body, replayed) == ({"ran": True}, True)


def test_a_long_request_keeps_its_key_by_renewing_its_lease(store: InMemoryStore) -> None:
    started, release = threading.Event(), threading.Event()

    def slow() -> Answer:
        started.set()
        release.wait(5)
        return Answer(200, {"slow": True})

    first = threading.Thread(target=lambda: once(store, HERE, "k", "d", slow, lease=0.3))
    first.start()
    started.wait(5)
    time.sleep(0.9)  # three leases long: renewed all along, so a retry still waits for it
    with pytest.raises(StillRunning):
        once(store, HERE, "k", "d", lambda: pytest.fail("taken over while alive"), wait=0.2, lease=0.3)
    release.set()
    first.join(5)
    answer, replayed = once(store, HERE, "k", "d", lambda: pytest.fail("ran twice"), lease=0.3)
    assert (answer.body, replayed) == ({"slow": True}, True)


def test_a_conversation_whose_worker_died_is_learnt_by_the_retry_exactly_once(clock: FakeClock) -> None:
    store = InMemoryStore()
    service = MemoryService(store, clock=clock, options=Options(lease_seconds=5))
    with store.write(HERE) as tx:  # the claim of a worker killed while its model was thinking
        # (a conversation is claimed by its key: portal.domain.decisions.conversation_key)
        tx.claim_ref(conversation_key("conv-1", None), clock(), lease_until=clock.now + timedelta(seconds=5),
                     holder="dead-worker")
        tx.commit()

    class Model:
        def complete(self, system: str, prompt: str) -> str:
            return json.dumps({"facts": [{"text": "Has a cat called Miso"}], "summary": "cat"})

    service.llm = Model()
    assert service.consolidate(HERE, "I adopted a cat called Miso.", "conv-1").status == "already"  # still held
    clock.advance(seconds=6)
    result = service.consolidate(HERE, "I adopted a cat called Miso.", "conv-1")
    assert (result.status, result.added) == ("done", 1)
    assert service.consolidate(HERE, "I adopted a cat called Miso.", "conv-1").status == "already"
    assert [m.text for m in service.list(HERE).items] == ["Has a cat called Miso"]
