"""The person's "erase everything" asked through a connected app (issue 28: OpenMemory's
delete_all_memories): every memory goes and what the person decided stays — their pause, each
app's pause or block, the asking app's own pause included — so an app can never free itself by
erasing; a blocked app erases nothing."""

from __future__ import annotations

from portal.domain.apps import App
from portal.domain.audit import AuditNote
from portal.services.memory_service import MemoryService

from ..expect import refused
from .conftest import remember_ok

BOT, DESKTOP = App("app-bot", "Support bot"), App("app-desktop", "Claude Desktop")


def controls(service: MemoryService, place: object) -> dict[str, str | None]:
    return {s.app.id: s.control for s in service.connected_apps(place, {})}  # type: ignore[arg-type]


def test_an_app_erases_every_memory_and_the_person_s_decisions_stay(service, place):
    for text in ("Likes tea", "Lives in Lyon"):
        remember_ok(service, place, text)
    service.set_app_control(place, DESKTOP.id, "blocked")
    counts = service.for_app(BOT).forget_all(place, audit=AuditNote("key-1", "api_key", "person.erased"))
    assert counts["memories"] == 2 and service.count(place) == 0
    assert controls(service, place) == {DESKTOP.id: "blocked"}
    assert service.is_paused(place) is False
    assert [e.action for e in service.store.audit_trail()][-1] == "person.erased"


def test_a_paused_app_may_erase_and_stays_paused(service, place):
    remember_ok(service, place, "Likes tea")
    service.pause(place)
    service.set_app_control(place, BOT.id, "paused")
    assert service.for_app(BOT).forget_all(place)["memories"] == 1
    assert service.count(place) == 0
    assert controls(service, place) == {BOT.id: "paused"} and service.is_paused(place) is True
    service.resume(place)
    with refused("paused"):  # still paused for this app: erasing did not resume it
        service.for_app(BOT).remember(place, "Lives in Lyon")
    assert service.for_app(DESKTOP).remember(place, "Lives in Lyon").memory.text == "Lives in Lyon"


def test_a_blocked_app_erases_nothing(service, place):
    remember_ok(service, place, "Likes tea")
    service.set_app_control(place, BOT.id, "blocked")
    with refused("app_blocked"):
        service.for_app(BOT).forget_all(place)
    assert service.count(place) == 1 and controls(service, place) == {BOT.id: "blocked"}
