"""Concurrent writers on one place never make two memories of one text nor lose an update's
compare-and-set: threads on PostgreSQL and on a SQLite file, and separate OS processes on
PostgreSQL (each with its own engine, as gunicorn workers would have)."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.store import SqlStore
from portal.domain.types import Conflict, Place, Saved
from portal.ports import Filters
from portal.services.memory_service import MemoryService

HERE = Place("owner-a", "scope-1")
THREADS = 8


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest) -> Engine:
    return request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")


def all_at_once(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run `work(i)` for i in range(count) on as many threads, released together."""
    start = threading.Barrier(count)

    def run(i: int) -> Any:
        start.wait(timeout=30)
        return work(i)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(run, range(count)))


def everything(service: MemoryService) -> list[Any]:
    with service.store.read(HERE) as tx:
        return tx.list(Filters(state=None))


def test_threads_remembering_one_text_keep_one_memory(engine: Engine) -> None:
    service = MemoryService(SqlStore(engine))

    results = all_at_once(THREADS, lambda _i: service.remember(HERE, "I like green tea"))

    assert all(isinstance(r, Saved) for r in results)
    kept = everything(service)
    assert [m.text for m in kept] == ["I like green tea"]
    assert {r.memory.id for r in results} == {kept[0].id}


def test_threads_updating_one_revision_let_exactly_one_win(engine: Engine) -> None:
    service = MemoryService(SqlStore(engine))
    first = service.remember(HERE, "Lives in Ghent")
    assert isinstance(first, Saved) and first.memory.revision == 1
    memory_id = first.memory.id

    def update(i: int) -> Saved | Conflict:
        try:
            return service.update(HERE, memory_id, text=f"Lives in city number {i}", expected_revision=1)
        except Conflict as lost:
            return lost

    results = all_at_once(THREADS, update)

    won = [r for r in results if isinstance(r, Saved)]
    lost = [r for r in results if isinstance(r, Conflict)]
    assert len(won) == 1 and len(lost) == THREADS - 1
    assert {(r.code, r.actual_revision) for r in lost} == {("conflict", 2)}
    now = service.get(HERE, memory_id)
    assert (now.revision, now.text) == (2, won[0].memory.text)
    assert [r.text for r in service.history(HERE, memory_id)] == [won[0].memory.text, "Lives in Ghent"]


# --------------------------------------------------------------------------- separate processes


def remember_in_own_process(url: str, texts: list[str], start: Any) -> None:
    """Runs in a spawned process: its own engine and service, like another app server."""
    engine = make_engine(url)
    try:
        service = MemoryService(SqlStore(engine))
        start.wait(timeout=60)
        for text in texts:
            if not isinstance(service.remember(HERE, text), Saved):
                raise SystemExit(3)
    finally:
        engine.dispose()


def run_processes(engine: Engine, texts_per_process: list[list[str]]) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(len(texts_per_process))
    url = engine.url.render_as_string(hide_password=False)
    workers = [
        context.Process(target=remember_in_own_process, args=(url, texts, start)) for texts in texts_per_process
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0] * len(workers)


@pytest.mark.postgres
def test_two_processes_remembering_the_same_texts_keep_each_once(pg_engine: Engine) -> None:
    texts = [f"Shared fact number {i}" for i in range(20)]

    run_processes(pg_engine, [texts, texts])

    kept = everything(MemoryService(SqlStore(pg_engine)))
    assert sorted(m.text for m in kept) == sorted(texts)


@pytest.mark.postgres
def test_two_processes_remembering_distinct_texts_keep_them_all(pg_engine: Engine) -> None:
    batches = [[f"Process {p} keeps note {i}" for i in range(50)] for p in range(2)]

    run_processes(pg_engine, batches)

    kept = everything(MemoryService(SqlStore(pg_engine)))
    assert sorted(m.text for m in kept) == sorted(batches[0] + batches[1])
    assert len({m.id for m in kept}) == 100
