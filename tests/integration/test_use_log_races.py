"""The batches of uses (issue 30, `portal.services.use_log`) attacked from several threads at once,
on every store (the `store` fixture: in memory, SQLite, PostgreSQL): an erasure of any kind racing
the batches leaves no use of what it erased behind, counts noted and written from many threads are
neither lost nor doubled, a note racing `close` or the writing thread's end is still written, and
the person's own pages show what this process handed out even while its thread is writing it."""

from __future__ import annotations

import inspect
import logging
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from types import FrameType
from typing import Any

import pytest
from sqlalchemy import text

from portal.adapters.memory.records import InMemoryRecords
from portal.adapters.sql.uow import SqlRecords
from portal.domain.apps import READ, RECALLED
from portal.domain.types import Place
from portal.domain.uses import UseBatch
from portal.services.use_log import UseLog

from .conftest import START, Clock
from .test_use_log import ADA, BOB, BOT, Watched, service_of

ERASURES = ("purge_owner", "forget_all", "forget_matching", "expire")


@pytest.fixture
def clock() -> Clock:
    return Clock()


def rows_of(store: Any, owner_id: str) -> dict[str, int]:
    """How many rows name this owner in the tables a use is written to (SQL), or how many places (memory)."""
    if not hasattr(store, "engine"):
        return {"places": len([p for p in store.places() if p.owner_id == owner_id])}
    with store.engine.connect() as conn:
        return {t: int(conn.execute(text(f"SELECT count(*) FROM {t} WHERE owner_id = :o"), {"o": owner_id}).scalar_one())
                for t in ("memories", "app_uses", "conversation_uses")}


def uses_of(store: Any, place: Place) -> tuple[list[tuple[str, str, int]], list[tuple[str, tuple[str, ...]]]]:
    with store.read(place) as tx:
        return (sorted((u.memory_id, u.action, u.count) for u in tx.app_uses()),
                sorted((c.key, c.memory_ids) for c in tx.conversations()))


def erase(eraser: Any, clock: Clock, how: str, ids: list[str]) -> None:
    """Erase Ada's memories the way `how` names, through a service that knows nothing of the batches."""
    if how == "purge_owner":
        eraser.purge_owner(ADA.owner_id)
    elif how == "forget_all":
        eraser.forget_all(ADA)
    elif how == "forget_matching":
        preview = eraser.preview_forget_matching(ADA, "kayak")
        assert {m.id for m in preview.items} == set(ids)
        eraser.forget_matching(ADA, preview.token, ids)
    else:
        clock.now = START + timedelta(days=2)
        assert eraser.decisions.expire(clock.now)[0] == len(ids)


@pytest.mark.parametrize("how", ERASURES)
def test_no_use_is_written_back_after_an_erasure_racing_the_batches(store: Any, clock: Clock, how: str) -> None:
    writer = service_of(store, clock, 0)
    expiry = {"expires_at": START + timedelta(days=1)} if how == "expire" else {}
    ada = [writer.remember(ADA, t, **expiry).memory.id
           for t in ("Paddles a kayak on Sundays", "Keeps her kayak in Lyon", "Bought a kayak paddle")]
    (bob,) = [writer.remember(BOB, "Bob rents a canoe").memory.id]
    batched = service_of(store, clock, 0.005)  # its thread writes every 5 ms, racing everything below
    rounds, apps, go = 30, 3, threading.Barrier(4)
    after_erasure: list[Any] = []

    def app(n: int) -> None:
        go.wait(10)
        for r in range(rounds):
            view = batched.for_app(BOT, conversation_ref=f"chat-{n}-{r}")
            view.recall(ADA, "kayak", limit=3)
            view.recall(BOB, "canoe", limit=1)
            batched.ctx.uses.flush(ADA if r % 2 else None)

    def eraser() -> None:
        go.wait(10)
        time.sleep(0.05)
        erase(service_of(store, clock, 0), clock, how, ada)
        after_erasure.append(uses_of(store, ADA)[0])

    threads = [threading.Thread(target=app, args=(n,)) for n in range(apps)] + [threading.Thread(target=eraser)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    batched.ctx.uses.close()
    app_uses, conversations = uses_of(store, ADA)
    assert conversations == []  # no conversation names a memory erased
    # What the apps were handed before the erasure may stay counted (a forget keeps the app's
    # counts, a purge not even those); nothing was added after it.
    assert app_uses == ([] if how == "purge_owner" else after_erasure[0])
    found = rows_of(store, ADA.owner_id)
    assert found.get("memories", 0) == 0 and found.get("conversation_uses", 0) == 0
    if how == "purge_owner":
        assert set(found.values()) == {0}
    # Bob's, in the same batches: every recall counted once, none lost, none twice.
    counted = uses_of(store, BOB)[0]  # by day: an expiry test's clock moved two days on
    assert {(m, action) for m, action, _ in counted} == {(bob, "recalled")}
    assert sum(n for _, _, n in counted) == apps * rounds


def records_of(store: Any) -> Any:
    return SqlRecords(store) if hasattr(store, "engine") else InMemoryRecords(store)


def test_a_batch_waits_for_an_erasure_that_holds_the_place_then_writes_nothing(store: Any, clock: Clock) -> None:
    """An erasure by staff (`portal.services.administration`: a unit of work, no `forget_owner`)
    has deleted Ada's rows and not yet committed: a batch naming her memories waits for the place's
    lock (PostgreSQL: the advisory lock, taken before it looks for the memories), then finds none."""
    writer = service_of(store, clock, 0)
    ids = [writer.remember(ADA, t).memory.id for t in ("Paddles a kayak on Sundays", "Drinks green tea")]
    batch = UseBatch.of(ids, START, BOT.id, RECALLED, "chat-1", mark=True)
    written: list[int] = []
    with records_of(store).unit() as uow:
        uow.purge_owner(ADA.owner_id, None)
        writing = threading.Thread(target=lambda: written.append(store.record_batch(ADA, batch)))
        writing.start()
        writing.join(0.5)
        assert writing.is_alive()  # waiting for the place
        uow.commit()
    writing.join(10)
    assert written == [0]
    assert set(rows_of(store, ADA.owner_id).values()) == {0}


def test_an_erasure_waits_for_a_batch_that_holds_the_place_then_erases_what_it_wrote(store: Any, clock: Clock) -> None:
    writer = service_of(store, clock, 0)
    ids = [writer.remember(ADA, t).memory.id for t in ("Paddles a kayak on Sundays", "Drinks green tea")]
    batch = UseBatch.of(ids, START, BOT.id, RECALLED, "chat-1", mark=True)
    pause = Pause(type(store).record_batch, "tx.apply_uses(")  # the place held, its memories found
    batching = pause.run(store.record_batch, ADA, batch)
    erasing = threading.Thread(target=service_of(store, clock, 0).purge_owner, args=(ADA.owner_id,))
    erasing.start()
    erasing.join(0.5)
    assert erasing.is_alive()  # waiting for the place
    pause.go.set()
    batching.join(10)
    erasing.join(10)
    assert set(rows_of(store, ADA.owner_id).values()) == {0}


def test_counts_noted_and_written_from_many_threads_are_each_written_once(store: Any, clock: Clock) -> None:
    (bob,) = [service_of(store, clock, 0).remember(BOB, "Bob rents a canoe").memory.id]
    batched = service_of(store, clock, 0.002)
    threads_, rounds, go = 8, 25, threading.Barrier(9)

    def app(n: int) -> None:
        go.wait(10)
        for r in range(rounds):
            batched.for_app(BOT, conversation_ref=f"chat-{n}").recall(BOB, "canoe", limit=1)

    def person() -> None:  # the person's page flushes their place, beside the thread
        go.wait(10)
        for _ in range(rounds):
            batched.apps.connected(BOB, {BOT.id: BOT})

    threads = [threading.Thread(target=app, args=(n,)) for n in range(threads_)] + [threading.Thread(target=person)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    batched.ctx.uses.close()
    app_uses, conversations = uses_of(store, BOB)
    assert app_uses == [(bob, "recalled", threads_ * rounds)]
    assert len(conversations) == threads_


class Pause:
    """Stops a thread running `function` where its line starting `marker` is about to run, until `go`: the
    moment of a race, held open (a trace hook of the thread: nothing of the code under test changed)."""

    def __init__(self, function: Callable[..., Any], marker: str) -> None:
        self.code = function.__code__
        lines, first = inspect.getsourcelines(function)
        found = [first + n for n, line in enumerate(lines) if line.strip().startswith(marker)]
        assert found, f"no line {marker!r} in {function.__qualname__}"
        self.line = found[0]
        self.reached, self.go = threading.Event(), threading.Event()

    def trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        return self.local if frame.f_code is self.code else None

    def local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_lineno == self.line and not self.reached.is_set():
            self.reached.set()
            self.go.wait(10)
        return self.local

    def run(self, function: Callable[..., Any], *args: Any) -> threading.Thread:
        def traced() -> None:
            sys.settrace(self.trace)
            try:
                function(*args)
            finally:
                sys.settrace(None)
        thread = threading.Thread(target=traced)
        thread.start()
        assert self.reached.wait(10)
        return thread


def test_a_note_racing_close_is_written(store: Any, clock: Clock) -> None:
    kayak = service_of(store, clock, 0).remember(ADA, "Paddles a kayak on Sundays").memory.id
    log = UseLog(store, 60)
    log.note(ADA, [kayak], START, BOT.id, READ)  # its thread started, waiting a minute
    # A recall's note found the log open, and is about to take its lock when the server's
    # shutdown closes it (gunicorn's worker_exit): it must still be written, not left to wait for
    # an exit hook that a killed process never runs.
    pause = Pause(UseLog.note, "with self._lock:")
    noting = pause.run(log.note, ADA, [kayak], START + timedelta(seconds=1), BOT.id, READ)
    log.close()
    pause.go.set()
    noting.join(10)
    assert uses_of(store, ADA)[0] == [(kayak, READ, 2)]  # as close promises: written at once


def test_a_note_arriving_as_the_thread_ends_is_written_by_it(store: Any, clock: Clock) -> None:
    kayak = service_of(store, clock, 0).remember(ADA, "Paddles a kayak on Sundays").memory.id
    log = UseLog(store, 0.01)
    pause = Pause(UseLog._run, "with self._lock:")  # the thread wrote what waited, and looks again
    threading.settrace(pause.trace)
    try:
        log.note(ADA, [kayak], START, BOT.id, READ)
    finally:
        threading.settrace(None)  # type: ignore[arg-type]
    assert pause.reached.wait(10)
    log.note(ADA, [kayak], START + timedelta(seconds=1), BOT.id, READ)
    pause.go.set()
    deadline = time.monotonic() + 10
    while uses_of(store, ADA)[0] != [(kayak, READ, 2)] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert uses_of(store, ADA)[0] == [(kayak, READ, 2)]  # written by the thread, not left for close
    log.close()


class Held(Watched):
    """The store, whose first batch waits at the door until `go` (the thread's write, in flight)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        object.__setattr__(self, "entered", threading.Event())
        object.__setattr__(self, "go", threading.Event())

    def record_batch(self, place: Place, batch: UseBatch) -> int:
        if not self.entered.is_set():
            self.entered.set()
            self.go.wait(10)
        return int(self.inner.record_batch(place, batch))


def test_the_person_sees_what_this_process_handed_out_while_its_thread_writes_it(store: Any, clock: Clock) -> None:
    service_of(store, clock, 0).remember(ADA, "Paddles a kayak on Sundays")
    held = Held(store)
    service = service_of(held, clock, 60)
    service.for_app(BOT, conversation_ref="chat-1").recall(ADA, "kayak", limit=1)
    writing = threading.Thread(target=service.ctx.uses.flush)  # as the thread does, every few seconds
    writing.start()
    assert held.entered.wait(10)
    shown: list[Any] = []
    page = threading.Thread(target=lambda: shown.append(service.apps.connected(ADA, {BOT.id: BOT})))
    page.start()
    page.join(0.3)  # the page may wait for the write in flight; it must not answer without it
    held.go.set()
    page.join(10)
    writing.join(10)
    assert [a.app.id for a in shown[0]] == [BOT.id]


def test_a_batch_not_written_is_logged_without_a_word(store: Any, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    class Failing(Watched):
        def record_batch(self, place: Place, batch: UseBatch) -> int:
            raise RuntimeError(f"could not write for {place.owner_id}: Paddles a kayak on Sundays")

    service_of(store, clock, 0).remember(ADA, "Paddles a kayak on Sundays")
    service = service_of(Failing(store), clock, 60)
    service.for_app(BOT, conversation_ref="chat-1").recall(ADA, "kayak on sundays", limit=1)
    with caplog.at_level(logging.WARNING, logger="portal.memory"):
        assert service.ctx.uses.flush() == 1  # lost, never raised into a request
    [record] = [r for r in caplog.records if r.getMessage().startswith("uses.not_written")]
    said = record.getMessage() + repr(record.args) + str(record.exc_info or "")
    assert "kayak" not in said.lower() and "ada" not in said.lower() and "Paddles" not in said
