"""A conversation that teaches nothing (issue 29, item 5), in the service on every store (in
memory, SQLite, PostgreSQL): a consolidation the assistant marks temporary learns nothing, shows
nothing to the model, keeps nothing of the conversation (no job, no claimed ref, no word in any
table or object of the store) and is counted as a content-free use of the app, which the person
then sees as an app that only reads. Recall still works; the person's pause and the app's pause or
block are obeyed as a consolidation obeys them; a later consolidation of the same conversation,
not temporary, learns as if it were the first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.memory.store import InMemoryStore
from portal.adapters.sql.store import SqlStore
from portal.domain.apps import TEMPORARY, App
from portal.domain.export import document
from portal.domain.imports import parse
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

from ..expect import refused
from ..fakes.llm_server import FakeLLMServer
from ..security.scans import strings_in, words_in_tables

PLACE = Place("ada", "acme")
BOT = App("app-bot", "Support bot")
SAID = "zqomberil"  # in the temporary conversation only
TRANSCRIPT = [
    {"role": "user", "text": f"Between us: I am thinking of moving to {SAID} next year."},
    {"role": "assistant", "text": "Noted, I will keep it to this conversation."},
]


def facts(*texts: str) -> str:
    return json.dumps({"facts": [{"text": t, "kind": "fact", "importance": 3} for t in texts], "summary": "a chat"})


class Queue:
    """A job queue that keeps what it is asked to wake (our own `JobQueue` boundary)."""

    def __init__(self) -> None:
        self.woken: list[str] = []

    def enqueue(self, job_id: str, delay: float = 0.0) -> None:
        self.woken.append(job_id)


@pytest.fixture(scope="module")
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def service(request: pytest.FixtureRequest, model: FakeLLMServer) -> MemoryService:
    model.replies.clear()
    model.requests.clear()
    store: Any = InMemoryStore()
    if request.param != "memory":
        store = SqlStore(request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine"))
    made = MemoryService(store, llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0))
    made.queue = Queue()
    return made


def words_left(service: MemoryService, word: str) -> list[str]:
    """Where the store still holds `word`: any row of any table (SQL), any string it keeps (in memory)."""
    engine: Engine | None = getattr(service.store, "engine", None)
    if engine is not None:
        return words_in_tables(engine, [word])
    return [f"the in-memory store holds {word!r}" for s in strings_in(service.store) if word in s.lower()][:1]


def summary_of(service: MemoryService, app: App = BOT) -> Any:
    found = [s for s in service.connected_apps(PLACE, {app.id: app}) if s.app.id == app.id]
    return found[0] if found else None


def test_a_temporary_conversation_learns_nothing_keeps_nothing_and_is_counted(
        service: MemoryService, model: FakeLLMServer) -> None:
    tea = service.remember(PLACE, "Likes green tea").memory
    bot = service.for_app(BOT)
    result = bot.consolidate(PLACE, TRANSCRIPT, "conv-1", temporary=True)
    assert result.to_json() == {"status": "temporary", "added": 0, "corrected": 0, "refused": 0, "reinforced": 0,
                                "summary": None}
    assert model.requests == []  # never shown to the model
    assert [m.id for m in service.list(PLACE).items] == [tea.id] and service.list_unseen(PLACE) == []
    with service.store.read(PLACE) as tx:
        assert tx.jobs() == []
    assert service.queue.woken == []  # type: ignore[union-attr]
    assert words_left(service, SAID) == []

    summary = summary_of(service)
    assert summary.counts[TEMPORARY] == 1 and summary.memories == 0 and summary.only_reads
    assert summary.temporary == 1
    assert [h.memory.id for h in bot.recall(PLACE, "green tea")] == [tea.id]  # recall is still allowed
    summary = summary_of(service)
    assert (summary.counts["recalled"], summary.counts[TEMPORARY], summary.memories) == (1, 1, 1)
    assert summary.only_reads

    # a second temporary conversation the same day counts once more
    assert bot.consolidate(PLACE, "User: nothing to keep", "conv-2", temporary=True).status == "temporary"
    assert summary_of(service).temporary == 2


def test_a_later_consolidation_of_the_same_conversation_learns_as_if_it_were_the_first(
        service: MemoryService, model: FakeLLMServer) -> None:
    bot = service.for_app(BOT)
    assert bot.consolidate(PLACE, TRANSCRIPT, "conv-1", temporary=True).status == "temporary"
    model.script(facts("Is thinking of moving next year"))
    learnt = bot.consolidate(PLACE, TRANSCRIPT, "conv-1")
    assert (learnt.status, learnt.added) == ("done", 1)  # the temporary one claimed nothing
    assert len(model.requests) == 1
    assert not summary_of(service).only_reads  # it remembered: it no longer only reads
    # once learnt, a temporary call for it learns nothing more and takes nothing back
    assert bot.consolidate(PLACE, TRANSCRIPT, "conv-1", temporary=True).status == "temporary"
    assert bot.consolidate(PLACE, TRANSCRIPT, "conv-1").status == "already"
    assert service.count(PLACE) == 1 and len(model.requests) == 1


def test_the_person_s_pause_and_the_app_s_pause_or_block_are_obeyed(service: MemoryService) -> None:
    bot = service.for_app(BOT)
    service.pause(PLACE)
    assert bot.consolidate(PLACE, TRANSCRIPT, "conv-1", temporary=True).status == "paused"
    service.resume(PLACE)
    service.set_app_control(PLACE, BOT.id, "paused")
    assert bot.consolidate(PLACE, TRANSCRIPT, "conv-2", temporary=True).status == "paused"
    assert summary_of(service).counts[TEMPORARY] == 0  # a pause answers as a consolidation does, counts nothing
    service.set_app_control(PLACE, BOT.id, "blocked")
    with refused("app_blocked"):
        bot.consolidate(PLACE, TRANSCRIPT, "conv-3", temporary=True)
    assert summary_of(service).counts[TEMPORARY] == 0
    service.set_app_control(PLACE, BOT.id, None)
    assert bot.consolidate(PLACE, TRANSCRIPT, "conv-3", temporary=True).status == "temporary"
    assert words_left(service, SAID) == []


def test_bad_input_fails_as_a_consolidation_does_and_counts_nothing(service: MemoryService) -> None:
    bot = service.for_app(BOT)
    for transcript, ref in ((TRANSCRIPT, ""), (TRANSCRIPT, "x" * 201), (TRANSCRIPT, None), (TRANSCRIPT, "c\x00"),
                            (TRANSCRIPT, "c\ud800"), ({"no": "turns"}, "c1"), (42, "c1")):
        result = bot.consolidate(PLACE, transcript, ref, temporary=True)
        assert (result.status, result.reason) == ("failed", "error")
    assert summary_of(service) is None


def test_with_the_ai_off_or_no_model_it_answers_all_the_same(service: MemoryService, model: FakeLLMServer) -> None:
    """Nothing of a temporary conversation goes to a model: the AI switch has nothing to stop."""
    off = MemoryService(service.store, ai_enabled=lambda place: False, llm=service.llm)
    assert off.for_app(BOT).consolidate(PLACE, TRANSCRIPT, "conv-1", temporary=True).status == "temporary"
    assert MemoryService(service.store).for_app(BOT).consolidate(PLACE, TRANSCRIPT, "c2", temporary=True).status == \
        "temporary"
    assert model.requests == [] and summary_of(service).temporary == 2


def test_the_person_s_own_call_counts_no_app_and_the_export_and_erasure_carry_the_use(service: MemoryService) -> None:
    assert service.consolidate(PLACE, TRANSCRIPT, "conv-1", temporary=True).status == "temporary"
    assert service.connected_apps(PLACE, {}) == []  # no app asked: no app's use
    service.remember(PLACE, "Likes green tea")
    service.for_app(BOT).consolidate(PLACE, TRANSCRIPT, "conv-1", temporary=True)
    exported = service.export(PLACE)
    assert [(u["app_id"], u["memory_id"], u["action"], u["count"]) for u in exported["app_uses"]] == [
        (BOT.id, None, TEMPORARY, 1)]
    downloaded = document(exported, None, {BOT.id: BOT})
    (entry,) = downloaded["apps"]
    assert (entry["name"], [(u["memory_id"], u["action"], u["count"]) for u in entry["uses"]]) == (
        "Support bot", [(None, TEMPORARY, 1)])
    parsed = parse(json.dumps(downloaded).encode())  # the file a person downloads imports as it did
    assert [item.text for item in parsed.items] == ["Likes green tea"]
    counts = service.purge_owner(PLACE.owner_id)
    assert counts.app_uses == 1 and service.connected_apps(PLACE, {}) == []
