"""What stays after an erasure or a correction, at the service layer (issue: "nothing erased or taken
back can ever be read again"): stored answers hold no words and replay only current text; a paused
person's memories change only by their own hand; saying it again changes nothing; an erasure and its
audit entry are one transaction; nothing of an erased memory stays in the worker's memory."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from portal.adapters.memory.store import InMemoryStore
from portal.domain import text as text_module
from portal.domain.audit import AuditNote
from portal.domain.recall.cache import RecallCache
from portal.domain.recall.index import PlaceIndex
from portal.domain.types import Place
from portal.services.idempotency import REDACTED, Answer, content_free, once
from portal.services.memory_service import MemoryService
from portal.services.tools import run_tool

from ..expect import refused
from .conftest import remember_ok

WORDS = "Had knee surgery in Zqvarn"


def stored(store: InMemoryStore, place: Place, key: str) -> Any:
    with store.read(place) as tx:
        receipt = tx.get_receipt(key)
    assert receipt is not None
    return receipt.response


def keyed(store: InMemoryStore, place: Place, key: str, action: Any) -> tuple[Answer, bool]:
    return once(store, place, key, f"digest-{key}", action)


def remembered(service: MemoryService, place: Place, text: str) -> Answer:
    saved = service.remember(place, text)
    assert saved.ok
    return Answer(201, {"memory": saved.memory.to_json(), "replaced_id": None, "reinforced": False})


# ------------------------------------------------------------------------------ receipts


def test_a_receipt_holds_no_words_and_a_replay_answers_the_current_text(service, store, place):
    first, replayed = keyed(store, place, "k1", lambda: remembered(service, place, WORDS))
    assert not replayed
    assert "Zqvarn" not in json.dumps(stored(store, place, "k1"))
    again, replayed = keyed(store, place, "k1", lambda: pytest.fail("run twice"))
    assert replayed and again.body == first.body  # the same answer, its text read back from the memory


@pytest.mark.parametrize("change", ["forget", "update", "in_place", "undo_update", "undo_create", "erase_all"])
def test_a_replay_after_the_text_went_is_redacted(service, store, place, change):
    first, _ = keyed(store, place, "k1", lambda: remembered(service, place, WORDS))
    memory_id = first.body["memory"]["id"]  # type: ignore[index]
    if change == "forget":
        service.forget(place, memory_id)
    elif change == "update":
        service.update(place, memory_id, text="Had hip surgery")
    elif change == "in_place":
        service.update(place, memory_id, text="Had hip surgery", in_place=True)
    elif change == "undo_update":
        keyed(store, place, "k2", lambda: Answer(200, service.update(place, memory_id, text="Had surgery").memory.to_json()))
        service.undo(place, memory_id)
        again, _ = keyed(store, place, "k2", lambda: pytest.fail("run twice"))
        assert again.body == REDACTED and "surgery" not in json.dumps(again.body)
    elif change == "undo_create":
        service.undo(place, memory_id)
    else:
        service.forget_all(place)
    again, replayed = keyed(store, place, "k1", lambda: remembered(service, place, WORDS))
    if change == "erase_all":  # the receipt went with everything else: the request runs anew
        assert not replayed
        return
    assert replayed and again.body == REDACTED
    assert "Zqvarn" not in json.dumps(again.body)


def test_what_a_receipt_keeps_of_an_answer():
    answer = {
        "status": "done", "added": 2, "summary": "Talked about Zqvarn", "reason": None,
        "memory": {"id": "m1", "revision": 3, "text": WORDS, "kind": "fact", "sources": [{"kind": "api", "ref": "c-1"}]},
        "items": [{"memory": {"id": "m2", "revision": 1, "text": "Zqvarn again"}, "score": 0.5, "match": "hybrid"}],
        "note": "free text from somewhere",
    }
    kept = content_free(answer)
    assert "Zqvarn" not in json.dumps(kept) and "free text" not in json.dumps(kept)
    assert kept["memory"] == {"id": "m1", "revision": 3, "text": None, "kind": "fact",
                              "sources": [{"kind": "api", "ref": "c-1"}], "$memory": True}
    assert (kept["status"], kept["added"], kept["summary"], kept["note"]) == ("done", 2, None, None)


# ------------------------------------------------------------------------------ pause


def test_while_paused_a_models_correction_and_forget_are_refused(service, place):
    memory = remember_ok(service, place, "Lives in Lyon")
    service.pause(place)
    corrected = run_tool(service, place, "update_memory", {"id": memory.id, "text": "Lives in Paris"})
    assert (corrected["ok"], corrected.get("reason")) == (False, "paused")
    forgotten = run_tool(service, place, "forget", {"id": memory.id})
    assert (forgotten["ok"], forgotten.get("reason")) == (False, "paused")
    with refused("paused"):
        service.update(place, memory.id, text="Lives in Nice", origin="inferred")
    now = service.get(place, memory.id)
    assert (now.text, now.revision) == ("Lives in Lyon", 1)
    # The person's own hand still corrects and erases.
    assert service.update(place, memory.id, text="Lives in Paris").ok
    assert service.forget(place, memory.id) == 2  # the memory and its earlier wording


class PausingModel:
    """A model that takes its time: the person pauses while it thinks (our LLM protocol's boundary)."""

    def __init__(self, service: MemoryService, place: Place, answer: str) -> None:
        self.service, self.place, self.answer = service, place, answer

    def complete(self, system: str, prompt: str) -> str:
        self.service.pause(self.place)
        return self.answer


def test_a_consolidation_during_which_the_person_pauses_changes_nothing(make_service, place):
    service = make_service()
    memory = remember_ok(service, place, "Lives in Lyon")
    answer = json.dumps({"facts": [{"text": "Has a cat called Miso"}],
                         "corrections": [{"id": memory.id, "text": "Lives in Paris"}], "summary": "moved"})
    service.llm = PausingModel(service, place, answer)
    result = service.consolidate(place, "I moved to Paris and adopted a cat called Miso.", "conv-1")
    assert (result.added, result.corrected, result.refusals) == (0, 0, {"paused": 2})
    assert [(m.text, m.revision) for m in service.list(place).items] == [("Lives in Lyon", 1)]


# ------------------------------------------------------------------------------ said again


def test_saying_the_same_thing_again_makes_no_revision(service, place):
    first = remember_ok(service, place, "Prefers short answers")
    for _ in range(2):
        again = service.remember(place, "Prefers short answers")
        assert again.ok and again.reinforced and again.replaced_id is None
    assert service.get(place, first.id).revision == 1
    assert [r.revision for r in service.history(place, first.id)] == [1]
    with refused("nothing_to_undo"):
        service.undo(place, first.id)
    assert service.update(place, first.id, text="Prefers long answers", expected_revision=1).ok


def test_a_consolidation_retry_counts_what_it_said_again_as_reinforced(make_service, place):
    service = make_service()
    answers = iter([json.dumps({"facts": [{"text": "Has a cat called Miso"}], "summary": "cat"})] * 2)

    class Model:
        def complete(self, system: str, prompt: str) -> str:
            return next(answers)

    service.llm = Model()
    assert service.consolidate(place, "I adopted a cat called Miso.", "conv-1").added == 1
    retried = service.consolidate(place, "I adopted a cat called Miso.", "conv-2")
    assert (retried.added, retried.corrected, retried.reinforced) == (0, 0, 1)
    assert service.list(place).items[0].revision == 1


# ------------------------------------------------------------------------------ one transaction


def test_erase_everything_and_its_audit_entry_are_one_transaction(service, store, place):
    remember_ok(service, place, WORDS)
    with store.write(place) as tx:
        tx.claim_ref("conv-zq-1", service.clock())
        tx.commit()
    counts = service.forget_all(place, audit=AuditNote("u1", "member", "person.erased_all"))
    (entry,) = [e for e in store.audit_trail() if e.action == "person.erased_all"]
    assert (entry.subject_owner_id, entry.scope, entry.counts) == (place.owner_id, place.scope, counts)
    assert counts["memories"] == 1 and counts["refs"] == 1
    assert place not in list(store.places())  # nothing left that names the person here


def test_erase_everything_keeps_the_pause(service, place):
    remember_ok(service, place, WORDS)
    service.pause(place)
    service.forget_all(place)
    assert service.is_paused(place)


# ------------------------------------------------------------------------------ in-process residue


def test_the_stemmer_keeps_no_words():
    assert not hasattr(text_module.stem, "cache_info")  # no process-wide cache of stems
    assert text_module.stem("zqvarnings") == "zqvarn"
    assert text_module.stemmer().maxCacheSize == 0


def test_a_recall_that_read_a_place_before_its_erasure_cannot_cache_it_after():
    cache = RecallCache(1 << 20)
    place = Place("ada", "t")
    ticket = cache.ticket(place)  # a recall starts reading the place...
    done = threading.Event()

    def erase() -> None:
        cache.drop_owner("ada")  # ...the person is erased in this process meanwhile...
        done.set()

    threading.Thread(target=erase).start()
    done.wait(5)
    cache.put(place, PlaceIndex("token-before", []), ticket)  # ...and the recall finishes
    assert len(cache) == 0 and cache.get(place, "token-before") is None
    later = cache.ticket(place)
    cache.put(place, PlaceIndex("token-after", []), later)
    assert cache.get(place, "token-after") is not None


class ErasingModel:
    """A model that thinks while the person erases: what it saw must not be written back."""

    def __init__(self, erase: Any, answer: str) -> None:
        self.erase, self.answer = erase, answer

    def complete(self, system: str, prompt: str) -> str:
        self.erase()
        return self.answer


@pytest.mark.parametrize("erasure", ["forget", "erase_all", "purge"])
def test_an_erasure_while_the_model_thinks_is_not_undone_by_its_answer(make_service, place, erasure):
    service = make_service()
    memory = remember_ok(service, place, WORDS)
    answer = json.dumps({"facts": [{"text": WORDS}, {"text": "Walks to work"}],
                         "corrections": [{"id": memory.id, "text": WORDS + " last spring"}], "summary": "knee"})
    erase = {
        "forget": lambda: service.forget(place, memory.id),
        "erase_all": lambda: service.forget_all(place),
        "purge": lambda: service.purge_owner(place.owner_id, [place.scope]),
    }[erasure]
    service.llm = ErasingModel(erase, answer)
    result = service.consolidate(place, "I had knee surgery in Zqvarn and I walk to work.", "conv-1")
    texts = [m.text for m in service.list(place, state="all").items]
    assert not any("Zqvarn" in t for t in texts), texts
    if erasure == "forget":  # only that memory went: the rest of the conversation is learnt
        assert texts == ["Walks to work"] and result.refusals.get("forgotten") == 1
    else:  # the claim went with everything: nothing of the conversation lands
        assert texts == [] and result.added == 0 and result.refusals.get("erased", 0) >= 1


def test_a_forget_while_the_facts_are_being_written_is_not_undone(make_service, embedder, place):
    """The person forgets a memory between two of the consolidation's writes: the fact that repeats
    it word for word is refused inside its own write (the check is not a snapshot taken earlier)."""
    service = make_service()
    memory = remember_ok(service, place, WORDS)

    class ForgettingEmbedder:  # our Embedder protocol: the forget lands while the second fact is embedded
        model_id = embedder.model_id

        def __init__(self) -> None:
            self.calls = 0

        def embed(self, texts, purpose="document"):
            self.calls += 1
            if self.calls == 2:  # one call per fact: the second fact, after the first was written
                service.forget(place, memory.id)
            return embedder.embed(texts, purpose)

    service.embedder = ForgettingEmbedder()
    answer = json.dumps({"facts": [{"text": "Walks to work"}, {"text": WORDS}], "summary": "x"})

    class Model:
        def complete(self, system: str, prompt: str) -> str:
            return answer

    service.llm = Model()
    result = service.consolidate(place, "I had knee surgery in Zqvarn and I walk to work.", "conv-1")
    assert service.embedder.calls == 2
    texts = [m.text for m in service.list(place, state="all").items]
    assert texts == ["Walks to work"] and result.refusals == {"forgotten": 1}
