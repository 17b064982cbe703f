"""A recall is a read (issue 30, item 2), through the service, on every store (the `store` fixture
of conftest.py: in memory, SQLite, PostgreSQL): what it hands out — the hits' use time, the app's
use counts, the conversation each hit served — is written off the request path, in one batch per
place (`portal.services.use_log`), every few seconds, at close, and before the person reads what
the apps used; never written back for a memory forgotten or a person erased while it waited."""

from __future__ import annotations

import time
from collections import Counter
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any

from portal.domain.apps import App
from portal.domain.options import Options
from portal.domain.types import Place
from portal.services.memory_service import MemoryService
from tests.fakes.embedders import HashEmbedder

from .conftest import START, Clock

ADA = Place("ada", "acme")
BOB = Place("bob", "acme")
BOT = App("app-bot", "Support bot")
WRITES = ("write", "unit", "mark_used", "record_uses", "record_batch", "purge_owner")


class Watched:
    """The store, with a count of each way of writing it is asked for (what the request path costs)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if name in WRITES and callable(found):
            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls[name] += 1
                return found(*args, **kwargs)
            return counted
        return found

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("inner", "calls"):
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)

    def read(self, place: Place, snapshot: bool = True) -> AbstractContextManager[Any]:
        return self.inner.read(place, snapshot)


def service_of(store: Any, clock: Clock, every: float) -> MemoryService:
    return MemoryService(store, HashEmbedder(), options=Options(uses_every=every), clock=clock)


def seeded(store: Any, clock: Clock) -> tuple[MemoryService, Watched, list[str]]:
    """Ada's memories, kept by a service that writes at once; then the service of the request path
    (batches every minute: none written by the thread while a test runs) over the watched store."""
    ids = [service_of(store, clock, 0).remember(ADA, text).memory.id
           for text in ("Paddles a kayak on Sundays", "Drinks green tea", "Lives in Lyon")]
    watched = Watched(store)
    return service_of(watched, clock, 60), watched, ids


def used_at(store: Any, memory_id: str) -> datetime | None:
    with store.read(ADA) as tx:
        return tx.get(memory_id).last_used_at


def test_a_recall_through_an_app_writes_nothing_on_the_request_path(store: Any, clock: Clock) -> None:
    service, watched, (kayak, _tea, _lyon) = seeded(store, clock)
    clock.now = START + timedelta(minutes=5)
    view = service.for_app(BOT, conversation_ref="chat-1")
    hits = view.recall(ADA, "kayak on sundays", limit=2)
    assert hits[0].memory.id == kayak
    assert hits[0].memory.last_used_at == clock.now  # the answer says it was used now
    view.portrait(ADA)
    assert {name: n for name, n in watched.calls.items() if n} == {}  # not one write: a read is a read
    assert used_at(store, kayak) != clock.now  # and nothing written yet
    assert service.ctx.uses.flush() == 1  # one batch for the place, whatever the number of calls
    assert watched.calls == Counter(record_batch=1)
    assert used_at(store, kayak) == clock.now


def test_a_batch_counts_each_use_and_keeps_the_latest_time(store: Any, clock: Clock) -> None:
    service, _watched, (kayak, _tea, _lyon) = seeded(store, clock)
    view = service.for_app(BOT, conversation_ref="chat-1")
    for minute in (3, 1, 2):  # noted out of time order: the latest one is kept
        clock.now = START + timedelta(minutes=minute)
        view.recall(ADA, "kayak on sundays", limit=1)
    service.ctx.uses.flush()
    with store.read(ADA) as tx:
        uses = [(u.app_id, u.memory_id, u.action, u.count, u.last_at) for u in tx.app_uses(kayak)]
        conversation = tx.conversations()[0]
    assert uses == [("app-bot", kayak, "recalled", 3, START + timedelta(minutes=3))]
    assert (conversation.first_at, conversation.last_at) == (START + timedelta(minutes=1), START + timedelta(minutes=3))
    assert used_at(store, kayak) == START + timedelta(minutes=3)
    # A second batch adds to the first, and an older time never moves a newer one back.
    clock.now = START + timedelta(minutes=2)
    view.recall(ADA, "kayak on sundays", limit=1)
    service.ctx.uses.flush()
    with store.read(ADA) as tx:
        assert [(u.count, u.last_at) for u in tx.app_uses(kayak)] == [(4, START + timedelta(minutes=3))]
    assert used_at(store, kayak) == START + timedelta(minutes=3)


def test_the_person_sees_what_this_process_handed_out_at_once(store: Any, clock: Clock) -> None:
    service, _watched, (kayak, _tea, _lyon) = seeded(store, clock)
    service.for_app(BOT, conversation_ref="chat-1").recall(ADA, "kayak on sundays", limit=1)
    assert [a.app.id for a in service.apps.connected(ADA, {BOT.id: BOT})] == [BOT.id]
    service.for_app(BOT, conversation_ref="chat-2").recall(ADA, "kayak on sundays", limit=1)
    assert [c.conversations for c in service.decisions.conversation_counts(ADA, kayak)] == [2]
    service.for_app(BOT, conversation_ref="chat-3").recall(ADA, "kayak on sundays", limit=1)
    assert len(service.decisions.conversations(ADA)) == 3
    service.for_app(BOT).recall(ADA, "kayak on sundays", limit=1)
    assert sum(u.count for u in service.apps.uses_of(ADA, kayak)) == 4
    service.for_app(BOT).recall(ADA, "kayak on sundays", limit=1)
    assert sum(u["count"] for u in service.export(ADA)["app_uses"]) == 5


def test_a_memory_forgotten_while_its_use_waits_is_never_written_back(store: Any, clock: Clock) -> None:
    service, _watched, (kayak, tea, _lyon) = seeded(store, clock)
    service.for_app(BOT, conversation_ref="chat-1").recall(ADA, "kayak on sundays green tea", limit=2)
    service.forget(ADA, kayak)
    service.ctx.uses.flush()
    with store.read(ADA) as tx:
        assert {u.memory_id for u in tx.app_uses()} == {tea}
        assert [c.memory_ids for c in tx.conversations()] == [(tea,)]


def test_a_person_erased_while_their_uses_wait_leaves_none_behind(store: Any, clock: Clock) -> None:
    service, _watched, _ids = seeded(store, clock)
    service_of(store, clock, 0).remember(BOB, "Bob paddles a kayak too")
    view = service.for_app(BOT, conversation_ref="chat-1")
    view.recall(ADA, "kayak", limit=2)
    view.recall(BOB, "kayak", limit=2)
    # Erased by another process (its service knows nothing of this one's batch): the batch's
    # write, under the place's lock, finds none of Ada's memories and writes nothing of hers.
    service_of(store, clock, 0).purge_owner(ADA.owner_id)
    service.ctx.uses.flush()
    with store.read(ADA) as tx:
        assert (tx.app_uses(), tx.conversations()) == ([], [])
    assert ADA not in set(store.places())
    with store.read(BOB) as tx:
        assert [u.count for u in tx.app_uses()] == [1]  # Bob's, in the same batch, written
    # Erased through this service: what waits for her is dropped before the erasure.
    view.recall(ADA, "kayak", limit=2)
    service.purge_owner(ADA.owner_id)
    assert ADA not in service.ctx.uses._pending


def test_close_writes_what_waits_and_the_thread_writes_on_its_own(store: Any, clock: Clock) -> None:
    service, _watched, (kayak, _tea, _lyon) = seeded(store, clock)
    service.for_app(BOT).recall(ADA, "kayak on sundays", limit=1)
    service.ctx.uses.close()
    with store.read(ADA) as tx:
        assert [u.count for u in tx.app_uses(kayak)] == [1]
    ticking = service_of(store, clock, 0.05)
    ticking.for_app(BOT).recall(ADA, "kayak on sundays", limit=1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with store.read(ADA) as tx:
            if [u.count for u in tx.app_uses(kayak)] == [2]:
                break
        time.sleep(0.02)
    with store.read(ADA) as tx:
        assert [u.count for u in tx.app_uses(kayak)] == [2]
    ticking.ctx.uses.close()


def test_hits_answered_after_a_recall_without_marks_count_only_what_the_app_may_receive(store: Any, clock: Clock) -> None:
    """mem0's search ranks without marking, then notes the hits it answers (`recalled`): a memory
    withheld from the app (or forgotten) in between is never counted as handed to it."""
    service, _watched, (kayak, tea, lyon) = seeded(store, clock)
    service.set_use(ADA, tea, False)
    service.forget(ADA, lyon)
    service.for_app(BOT, conversation_ref="chat-1").recalled(ADA, [kayak, tea, lyon])
    service.ctx.uses.flush()
    with store.read(ADA) as tx:
        assert {u.memory_id for u in tx.app_uses()} == {kayak}
        assert tx.get(tea).last_used_at is None  # type: ignore[union-attr]
