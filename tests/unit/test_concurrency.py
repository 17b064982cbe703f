"""Concurrent writers on one place (DESIGN §1: per-place locks): the same thing said at once is
kept once, different things are all kept."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .conftest import HashEmbedder

THREADS = 8


def _run_together(count, work):
    barrier = threading.Barrier(count)

    def start(i):
        barrier.wait(timeout=10)
        return work(i)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(start, range(count)))


def test_the_same_text_from_eight_threads_is_kept_once(service, place):
    results = _run_together(THREADS, lambda i: service.remember(place, "Prefers short answers"))
    assert all(r.ok for r in results)
    assert len({r.memory.id for r in results}) == 1
    assert [m.text for m in service.list(place, state="all").items] == ["Prefers short answers"]
    # One kept it; the seven others said the very same thing again: reinforced, no new revision.
    assert sum(not r.reinforced for r in results) == 1 and all(r.replaced_id is None for r in results)
    assert service.list(place).items[0].revision == 1


def test_the_same_text_reinforced_from_eight_threads_is_kept_once(service, place):
    results = _run_together(
        THREADS, lambda i: service.remember(place, "Prefers short answers", importance=1 + i % 5, on_duplicate="reinforce")
    )
    assert all(r.ok for r in results)
    memories = service.list(place, state="all").items
    assert len(memories) == 1 and memories[0].importance == 5 and memories[0].revision == 1


def test_eight_threads_of_25_distinct_texts_are_all_kept(make_service, place):
    # no embedder: distinct texts are then duplicates only if their words are the same
    service = make_service(embedder=None)

    def write(t):
        return [service.remember(place, f"thread{t} wrote item{i}") for i in range(25)]

    results = [r for batch in _run_together(THREADS, write) for r in batch]
    assert all(r.ok and r.replaced_id is None for r in results)
    texts = [m.text for m in service.list(place, limit=200).items]
    assert len(texts) == THREADS * 25
    assert set(texts) == {f"thread{t} wrote item{i}" for t in range(THREADS) for i in range(25)}


class SlowEmbedder(HashEmbedder):
    """Takes as long as a network call, so concurrent corrections really overlap."""

    def embed(self, texts, purpose="document"):
        time.sleep(0.02)
        return super().embed(texts, purpose)


def _concurrent_corrections(make_service, place, writers):
    service = make_service(embedder=SlowEmbedder())
    memory = service.remember(place, "Counter note").memory
    results = _run_together(writers, lambda i: service.update(place, memory.id, text=f"Counter note version{i}"))
    return service, memory, results


def test_two_concurrent_corrections_both_land(make_service, place):
    service, memory, results = _concurrent_corrections(make_service, place, 2)
    assert [r.ok for r in results] == [True, True]
    assert [r.revision for r in service.history(place, memory.id)] == [3, 2, 1]


def test_eight_concurrent_corrections_without_expected_revision_all_land(make_service, place):
    service, memory, results = _concurrent_corrections(make_service, place, THREADS)
    assert [r.code for r in results if not r.ok] == []
    assert len(service.history(place, memory.id)) == THREADS + 1


def test_concurrent_writers_in_two_places_never_mix(service):
    places = [("alice", "tenant-a"), ("bob", "tenant-a")]

    def write(i):
        owner = places[i % 2]
        return [service.remember(owner, f"{owner[0]} fact{i} number{n}") for n in range(10)]

    _run_together(THREADS, write)
    for owner in places:
        texts = [m.text for m in service.list(owner, limit=200).items]
        assert len(texts) == 40
        assert all(t.startswith(owner[0]) for t in texts)
