"""Issue 29 review: an app that should not see a memory the person withheld from it (from every app,
"*", or from it alone), or one whose expiry came, tries every way it has to reach it; a person's
conversation reference must leave no word behind and refuse what is not text. On every store (in
memory, SQLite, PostgreSQL) through the service an app's requests are served by (`for_app`), and
through the JSON API where the path is the API's own (idempotency receipts)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from portal.adapters.memory.store import InMemoryStore
from portal.adapters.sql.store import SqlStore
from portal.domain.apps import App
from portal.domain.errors import InvalidArgument, NotFound
from portal.domain.types import Place
from portal.services.memory_service import MemoryService
from portal.services.tools import run_tool
from tests.fakes.embedders import HashEmbedder

ADA = Place("ada", "acme")
BOT = App("app-bot", "Support bot")
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
WORDS = "Rents a kayak on Sundays"


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        return InMemoryStore()
    return SqlStore(request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine"))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(store: Any, clock: Clock) -> MemoryService:
    return MemoryService(store, HashEmbedder(), clock=clock)


def kept_from_bot(service: MemoryService, clock: Clock, how: str) -> str:
    """A memory the bot must not reach: withheld from every app, from the bot alone, or expired."""
    memory = service.remember(ADA, WORDS, importance=5, expires_at=START + timedelta(days=1)).memory
    if how == "expired":
        clock.now = START + timedelta(days=1)
    else:
        service.set_use(ADA, memory.id, False, None if how == "every app" else BOT.id)
    return memory.id


HOW = ["every app", "this app", "expired"]


@pytest.mark.parametrize("how", HOW)
def test_an_app_counts_no_memory_it_may_not_receive(service: MemoryService, clock: Clock, how: str) -> None:
    kept_from_bot(service, clock, how)
    service.remember(ADA, "Drinks green tea")
    assert service.for_app(BOT).count(ADA) == 1


@pytest.mark.parametrize("how", HOW)
def test_an_app_cannot_forget_archive_or_mark_a_memory_it_may_not_receive(service: MemoryService, clock: Clock,
                                                                           how: str) -> None:
    """Addressed by id, it is not there for the app: no answer tells it the memory exists, and
    the app cannot take away what the person kept from it."""
    memory_id = kept_from_bot(service, clock, how)
    bot = service.for_app(BOT)
    for attempt in (lambda: bot.forget(ADA, memory_id), lambda: bot.update(ADA, memory_id, text="Rents a canoe"),
                    lambda: bot.update(ADA, memory_id, expires_at=None)):
        with pytest.raises(NotFound):
            attempt()
    assert bot.forget_many(ADA, [memory_id]) == 0
    assert bot.mark_seen(ADA, [memory_id]) == 0
    assert bot.mark_used(ADA, [memory_id]) == 0
    if how != "expired":
        assert service.get(ADA, memory_id).text == WORDS  # the person still has it


@pytest.mark.parametrize("how", HOW)
def test_no_tool_reaches_a_memory_an_app_may_not_receive(service: MemoryService, clock: Clock, how: str) -> None:
    memory_id = kept_from_bot(service, clock, how)
    bot = service.for_app(BOT)
    found = run_tool(bot, ADA, "recall", {"query": "kayak sundays"})
    assert WORDS not in str(found)
    for name, arguments in (("update_memory", {"id": memory_id, "text": "Rents a canoe"}), ("forget", {"id": memory_id})):
        answer = run_tool(bot, ADA, name, arguments)
        assert not answer.get("ok"), (name, answer)
    if how != "expired":
        assert service.get(ADA, memory_id).text == WORDS


@pytest.mark.parametrize("how", HOW)
def test_an_app_s_export_holds_no_memory_it_may_not_receive(service: MemoryService, clock: Clock, how: str) -> None:
    kept_from_bot(service, clock, how)
    assert WORDS not in str(service.for_app(BOT).export(ADA))


@pytest.mark.parametrize("how", ["every app", "this app"])
def test_a_memory_withheld_after_it_was_recalled_leaves_the_recall_cache_s_answers(service: MemoryService, clock: Clock,
                                                                                    how: str) -> None:
    memory = service.remember(ADA, WORDS, importance=5).memory
    bot = service.for_app(BOT)
    assert [h.memory.id for h in bot.recall(ADA, "kayak sundays")] == [memory.id]  # the place is cached now
    service.set_use(ADA, memory.id, False, None if how == "every app" else BOT.id)
    assert bot.recall(ADA, "kayak sundays") == []
    assert memory.id not in service.for_app(BOT).portrait(ADA, min_importance=0).ids


@pytest.mark.parametrize("app_id", ['a%', 'a_b', 'a"b', 'a\\b', 'a\\"b', '%', '_', '\\', '"', 'a*', '"*"'])
def test_an_app_id_holding_wildcards_quotes_or_backslashes_is_matched_exactly(service: MemoryService, app_id: str) -> None:
    """The person withholds a memory from one app: that app is refused it, and an app whose id
    only looks alike to a LIKE pattern (or a JSON string) still receives it."""
    memory = service.remember(ADA, WORDS, importance=5).memory
    service.set_use(ADA, memory.id, False, app_id)
    assert service.for_app(App(app_id, "odd")).recall(ADA, "kayak sundays") == []
    assert service.for_app(App(app_id, "odd")).list(ADA).items == []
    for other in {app_id.replace("%", "x").replace("_", "y") + "z", "ab", "axb", "a", "b", "x\\", "*"} - {app_id}:
        seen = service.for_app(App(other, "other"))
        assert [h.memory.id for h in seen.recall(ADA, "kayak sundays")] == [memory.id], other
        assert [m.id for m in seen.list(ADA).items] == [memory.id], other


@pytest.mark.parametrize("ref", ["a\x00b", "line\nbreak", "tab\there", "\x1b[31mred", "rtl\u202eoverride", "nul\u0000",
                                 " ", "", "x" * 201, "zero\u200bwidth", "\ud800"])
def test_a_conversation_reference_that_is_not_plain_text_is_refused(service: MemoryService, ref: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        service.for_app(BOT, conversation_ref=ref)
    assert refused.value.code == "invalid_conversation_ref"


def test_a_conversation_reference_full_of_words_is_kept_as_a_digest_only(service: MemoryService, store: Any) -> None:
    memory = service.remember(ADA, WORDS, importance=5).memory
    ref = "Ada told me about qzrefword29 and her divorce"
    service.for_app(BOT, conversation_ref=ref).recall(ADA, "kayak sundays")
    [(conversation, memories)] = service.conversations(ADA)
    assert [m.id for m in memories] == [memory.id]
    assert "qzrefword29" not in repr(conversation) and "divorce" not in repr(conversation)
    if isinstance(store, SqlStore):
        from .scans import words_in_tables  # why: the SQL stores' tables, read with plain SQL

        assert words_in_tables(store.engine, ["qzrefword29", "divorce"]) == []
