"""What a person decides besides the words (issue 29, items 1–3), through the service, on every
store (the `store` fixture of conftest.py: in memory, SQLite, PostgreSQL): "don't use this" keeps
a memory from every path an app has (recall, portrait, reads, duplicates met, consolidation's
context) and the person still sees it; an expiry takes a memory out of every answer at its time and
the sweep erases it as forget erases; the learnt default; which conversation of which app each
answer served; the download and an import keep the decisions."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from portal.domain.apps import App
from portal.domain.audit import AuditNote
from portal.domain.errors import InvalidArgument, NotFound, Refused
from portal.domain.export import document
from portal.domain.imports import parse
from portal.domain.types import Place
from portal.services.memory_service import MemoryService
from tests.fakes.embedders import HashEmbedder

from .conftest import START, Clock

ADA = Place("ada", "acme")
BOT = App("app-bot", "Support bot")
OTHER = App("app-other", "Other")
AUDIT = AuditNote("account-ada", "member", "memory.use_changed")


@pytest.fixture
def service(store: Any, clock: Clock) -> MemoryService:
    return MemoryService(store, HashEmbedder(), clock=clock, tenant_learnt_days=lambda place: 30)


def every_answer_of(view: MemoryService, memory_id: str) -> dict[str, bool]:
    """Whether each way an app reads hands it this memory."""
    def got(call: Any) -> bool:
        try:
            return bool(call())
        except NotFound:
            return False

    return {
        "recall": any(h.memory.id == memory_id for h in view.recall(ADA, "kayak on sundays", limit=10)),
        "list": any(m.id == memory_id for m in view.list(ADA).items),
        "get": got(lambda: view.get(ADA, memory_id)),
        "history": got(lambda: view.history(ADA, memory_id)),
        "portrait": memory_id in view.portrait(ADA, min_importance=0).ids,
        "page": any(m.id == memory_id for m in view.page(ADA, 0, 50)[0]),
        "mark_used": view.mark_used(ADA, [memory_id]) == 1,
    }


def test_dont_use_keeps_a_memory_from_every_path_of_every_app_and_the_person_still_sees_it(
        service: MemoryService, store: Any) -> None:
    kept = service.remember(ADA, "Rents a kayak on Sundays", importance=5).memory
    bot = service.for_app(BOT)
    assert all(every_answer_of(bot, kept.id).values())
    changed = service.set_use(ADA, kept.id, False, audit=AUDIT)
    assert changed.withheld == ("*",) and changed.revision == kept.revision and changed.text == kept.text
    assert changed.to_json()["use"] is False
    for app in (BOT, OTHER):
        assert not any(every_answer_of(service.for_app(app), kept.id).values()), app
    # the person: sees, searches and downloads it
    assert service.get(ADA, kept.id).withheld == ("*",)
    assert [h.memory.id for h in service.recall(ADA, "kayak", mark=False)] == [kept.id]
    assert kept.id in [m["id"] for m in service.export(ADA)["memories"]]
    entries = [e for e in store.audit_trail() if e.action == "memory.use_changed"]
    assert [(e.subject_owner_id, e.reason_code) for e in entries] == [("ada", "*")]
    # allowed again
    service.set_use(ADA, kept.id, True)
    assert all(every_answer_of(bot, kept.id).values())


def test_dont_use_for_one_app_only(service: MemoryService) -> None:
    kept = service.remember(ADA, "Rents a kayak on Sundays", importance=5).memory
    service.set_use(ADA, kept.id, False, app_id=BOT.id)
    assert not any(every_answer_of(service.for_app(BOT), kept.id).values())
    assert all(every_answer_of(service.for_app(OTHER), kept.id).values())
    assert service.get(ADA, kept.id).to_json()["withheld_from"] == [BOT.id]
    service.set_use(ADA, kept.id, True, app_id=BOT.id)
    assert all(every_answer_of(service.for_app(BOT), kept.id).values())


def test_an_app_may_withhold_for_everyone_but_never_free_what_the_person_withheld(service: MemoryService) -> None:
    kept = service.remember(ADA, "Rents a kayak on Sundays").memory
    service.set_use(ADA, kept.id, False, app_id=OTHER.id)
    bot = service.for_app(BOT)
    assert bot.set_use(ADA, kept.id, True).withheld == (OTHER.id,)  # nothing changes
    with pytest.raises(Refused) as refused:
        bot.set_use(ADA, kept.id, False, app_id=OTHER.id)
    assert refused.value.code == "forbidden"
    assert bot.set_use(ADA, kept.id, False).withheld == ("*",)  # the person told the assistant
    with pytest.raises(NotFound):
        bot.set_use(ADA, kept.id, True)  # it cannot even see it now
    with pytest.raises(InvalidArgument):
        service.set_use(ADA, kept.id, "no")


def test_an_expired_memory_is_in_no_answer_then_erased_as_forget_erases(
        service: MemoryService, store: Any, clock: Clock) -> None:
    kept = service.remember(ADA, "Rents a kayak on Sundays", importance=5,
                            expires_at=START + timedelta(days=1)).memory
    service.update(ADA, kept.id, text="Rents a kayak on Saturdays")
    assert kept.to_json()["expires_at"] == "2026-03-02T09:00:00Z"
    for view in (service, service.for_app(BOT)):
        assert all(every_answer_of(view, kept.id).values())
    clock.now = START + timedelta(days=1)
    for view in (service, service.for_app(BOT)):
        assert not any(every_answer_of(view, kept.id).values())
    assert service.count(ADA) == 0
    assert service.export(ADA)["memories"] == []
    with pytest.raises(NotFound):
        service.update(ADA, kept.id, expires_at=None)  # gone: it cannot be kept back
    counts = service.sweep()
    assert counts.memories == 1 and counts.revisions >= 1
    with store.read(ADA) as tx:
        assert tx.history(kept.id) == [] and tx.is_tombstoned(kept.id)
    assert store.expired(clock.now, 10) == []


def test_an_expiry_is_checked_set_changed_and_cleared(service: MemoryService, clock: Clock) -> None:
    for bad, code in (("soon", "invalid_expiry"), ("2026-03-05T00:00:00", "invalid_expiry"),
                      (START - timedelta(seconds=1), "expiry_in_past"), (START, "expiry_in_past"), (12, "invalid_expiry")):
        with pytest.raises(Refused) as refused:
            service.remember(ADA, "Rents a kayak", expires_at=bad)
        assert refused.value.code == code, bad
    kept = service.remember(ADA, "Rents a kayak", expires_at="2026-03-05T10:00:00+01:00").memory
    assert kept.expires_at == datetime(2026, 3, 5, 9, 0, tzinfo=UTC)
    assert service.update(ADA, kept.id, text="Rents a red kayak").memory.expires_at == kept.expires_at  # kept
    assert service.update(ADA, kept.id, expires_at=None).memory.expires_at is None
    with pytest.raises(InvalidArgument):
        service.update(ADA, kept.id, expires_at="yesterday")
    later = service.update(ADA, kept.id, expires_at=START + timedelta(days=7)).memory
    assert later.expires_at == START + timedelta(days=7)
    assert service.pin(ADA, kept.id).memory.expires_at is None  # pinned: kept until forgotten


def test_what_the_assistant_learns_is_forgotten_after_the_person_s_or_the_tenant_s_days(
        service: MemoryService, clock: Clock) -> None:
    told = service.remember(ADA, "Rents a kayak").memory
    learnt = service.remember(ADA, "Drinks green tea", origin="inferred").memory
    pinned = service.remember(ADA, "Has a cat", origin="inferred", pinned=True).memory
    assert told.expires_at is None and pinned.expires_at is None
    assert learnt.expires_at == START + timedelta(days=30)  # the tenant's default
    assert service.decisions.learnt_days(ADA) == (None, 30)
    assert service.set_learnt_days(ADA, 90) is True
    assert service.set_learnt_days(ADA, 90) is False
    assert service.remember(ADA, "Runs marathons", origin="inferred").memory.expires_at == START + timedelta(days=90)
    service.set_learnt_days(ADA, 0)
    assert service.remember(ADA, "Reads sci-fi", origin="inferred").memory.expires_at is None
    with pytest.raises(InvalidArgument):
        service.set_learnt_days(ADA, -1)
    assert service.is_paused(ADA) is False  # the setting leaves the pause alone


def test_each_answer_records_the_conversation_it_served(service: MemoryService, store: Any, clock: Clock) -> None:
    kayak = service.remember(ADA, "Rents a kayak on Sundays", importance=5).memory
    tea = service.remember(ADA, "Drinks green tea", importance=5).memory
    bot = service.for_app(BOT, conversation_ref="chat about my weekend plans and my kayak")
    assert [h.memory.id for h in bot.recall(ADA, "kayak", limit=1)] == [kayak.id]
    clock.now += timedelta(minutes=5)
    assert set(bot.portrait(ADA, min_importance=0).ids) == {kayak.id, tea.id}
    clock.now += timedelta(minutes=5)
    service.for_app(OTHER, conversation_ref="c-2").get(ADA, tea.id)
    service.for_app(OTHER).get(ADA, kayak.id)  # no conversation named: none recorded
    found = service.conversations(ADA)
    assert [(c.app_id, [m.id for m in ms]) for c, ms in found] == [
        (OTHER.id, [tea.id]), (BOT.id, sorted([tea.id, kayak.id]))]  # both last used at once: by id
    assert found[1][0].first_at == START and found[1][0].last_at == START + timedelta(minutes=5)
    assert all(len(c.key) == 40 and "kayak" not in c.key for c, _ in found)  # a digest, never the words
    assert [(c.app_id, c.conversations) for c in service.conversation_counts(ADA, tea.id)] == [
        (OTHER.id, 1), (BOT.id, 1)]
    listed = service.export(ADA)["conversations"]  # the person's download lists them, content-free
    assert [(c["app_id"], sorted(c["memory_ids"])) for c in listed] == [
        (OTHER.id, [tea.id]), (BOT.id, sorted([tea.id, kayak.id]))]
    assert [c["app_id"] for c in service.for_app(OTHER).export(ADA)["conversations"]] == [OTHER.id]  # its own only
    with pytest.raises(InvalidArgument) as invalid:
        service.for_app(BOT, conversation_ref="x" * 201)
    assert invalid.value.code == "invalid_conversation_ref"
    for bad in ("", "   ", "a\nb", 7):
        with pytest.raises(InvalidArgument):
            service.for_app(BOT, conversation_ref=bad)
    service.forget(ADA, kayak.id)
    assert [[m.id for m in ms] for _, ms in service.conversations(ADA)] == [[tea.id], [tea.id]]
    service.forget_all(ADA)
    assert service.conversations(ADA) == []


def test_an_export_brings_back_what_the_person_decided_and_nothing_whose_time_has_come(
        service: MemoryService, clock: Clock) -> None:
    kept = service.remember(ADA, "Rents a kayak on Sundays", expires_at=START + timedelta(days=3)).memory
    service.set_use(ADA, kept.id, False)
    mine = service.remember(ADA, "Drinks green tea").memory
    service.set_use(ADA, mine.id, False, app_id=BOT.id)
    soon = service.remember(ADA, "Has a dentist appointment", expires_at=START + timedelta(days=1)).memory
    exported = service.export(ADA)
    assert {m["id"]: (m["expires_at"], m["use"], m["withheld_from"]) for m in exported["memories"]} == {
        kept.id: ("2026-03-04T09:00:00Z", False, []), mine.id: (None, True, [BOT.id]),
        soon.id: ("2026-03-02T09:00:00Z", True, [])}
    clock.now = START + timedelta(days=2)  # the dentist's time has come since the export
    other = Place("ada-again", "acme")
    imported = service.import_parsed(other, parse(json.dumps(document(exported, None)).encode()))
    assert imported.refused == {"expired": 1}
    back = {m.text: m for m in service.list(other).items}
    assert set(back) == {"Rents a kayak on Sundays", "Drinks green tea"}
    assert back["Rents a kayak on Sundays"].withheld == ("*",)
    assert back["Rents a kayak on Sundays"].expires_at == START + timedelta(days=3)
    assert back["Drinks green tea"].withheld == (BOT.id,)
    assert service.for_app(BOT).list(other).items == []
