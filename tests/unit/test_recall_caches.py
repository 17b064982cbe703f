"""What the in-memory store keeps between recalls (vector matrices, their lengths and mean, the word
index) must never let a recall see a place as it was before a write: every write that changes the
active memories, their text or their vectors drops it, and a recall's own mark-as-used does not.
The word index answers exactly what a scan of every memory answers."""

from __future__ import annotations

import random

from portal.domain.options import Options
from portal.domain.recall.ranking import WordIndex, bag, words_top
from portal.domain.text import terms
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

from .conftest import remember_ok

TEXTS = [
    "Likes green tea in the morning", "Has a cat called Miso", "Is learning Spanish for a trip to Seville",
    "Works night shifts as a nurse", "Painted a sunset at the lake", "Prefers short answers with an example",
    "Runs 10 km on Sundays", "Writes Python and a little C# at work", "Visited Lisbon for a conference",
    "Is worried about rent going up", "Plays the cello with friends", "Likes painting landscapes",
]


def test_the_word_index_ranks_exactly_as_a_scan_of_every_memory():
    rng = random.Random(3)
    docs = [bag(f"m{i:03d}", terms(rng.choice(TEXTS) + " " + rng.choice(TEXTS))) for i in range(60)]
    rng.shuffle(docs)
    index = WordIndex(docs)
    queries = ["tea", "painting the sunset", "cello", "what does she write at work", "pyth", "zzz", "the",
               "ell unse", "ork", "aint", "ea",
               "Seville trip Spanish", "", "c#", "rent"]
    for query in queries:
        for limit in (1, 5, 50):
            assert index.top(query, limit) == words_top(query, docs, limit), (query, limit)
    assert WordIndex([]).top("tea", 5) == []


def test_a_recall_sees_each_write_that_came_before_it(service: MemoryService, place: Place):
    tea = remember_ok(service, place, "Likes green tea in the morning")
    cat = remember_ok(service, place, "Has a cat called Miso")
    assert [h.memory.id for h in service.recall(place, "green tea")][:1] == [tea.id]  # caches now warm

    # a new memory is found at once
    cello = remember_ok(service, place, "Plays the cello with friends")
    assert service.recall(place, "cello")[0].memory.id == cello.id

    # corrected text: found by its new words, no longer by its old ones
    service.update(place, tea.id, text="Drinks black coffee every morning")
    found = service.recall(place, "coffee")
    assert found[0].memory.id == tea.id and found[0].memory.text == "Drinks black coffee every morning"
    assert all("tea" not in h.memory.text for h in service.recall(place, "green tea"))

    # a forgotten memory is never returned again, by words or by meaning
    service.forget(place, cat.id)
    assert cat.id not in {h.memory.id for h in service.recall(place, "cat Miso", limit=10)}

    # undo of the correction brings the old words back to recall
    service.undo(place, tea.id)
    assert service.recall(place, "green tea")[0].memory.text == "Likes green tea in the morning"


def test_marking_recalled_memories_used_keeps_recall_answers_the_same(service: MemoryService, place: Place):
    for text in TEXTS:
        remember_ok(service, place, text)
    first = [(h.memory.id, round(h.score, 6)) for h in service.recall(place, "painting landscapes at the lake")]
    again = [(h.memory.id, round(h.score, 6)) for h in service.recall(place, "painting landscapes at the lake")]
    assert first == again and first


def test_archived_memories_leave_the_cached_rankings(make_service, place: Place):
    service: MemoryService = make_service(options=Options(max_active=3))
    kept = [remember_ok(service, place, text, importance=5) for text in TEXTS[:3]]
    service.recall(place, "tea")  # warm
    # a fourth memory of lower importance pushes the cap: the least important is archived
    newest = remember_ok(service, place, "Collects vinyl records of old jazz", importance=1)
    active_ids = {m.id for m in service.list(place).items}
    recalled = {h.memory.id for h in service.recall(place, "jazz records tea cat Spanish", limit=10)}
    assert recalled <= active_ids
    assert len(active_ids) == 3 and {m.id for m in kept} | {newest.id} >= active_ids


def test_after_a_forget_recall_scores_as_if_the_memory_had_never_been_kept(make_service, place: Place):
    from portal.adapters.memory.store import InMemoryStore

    kept, gone = TEXTS[:6], TEXTS[6:9]
    before: MemoryService = make_service(store=InMemoryStore())
    for text in kept + gone:
        remember_ok(before, place, text)
    before.recall(place, "painting")  # warm
    for memory in before.list(place).items:
        if memory.text in gone:
            before.forget(place, memory.id)
    never: MemoryService = make_service(store=InMemoryStore())
    for text in kept:
        remember_ok(never, place, text)
    for query in ("painting a sunset", "tea in the morning", "Spanish"):
        assert [(h.memory.text, round(h.score, 6)) for h in before.recall(place, query)] == [
            (h.memory.text, round(h.score, 6)) for h in never.recall(place, query)
        ]
