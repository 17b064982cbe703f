"""Issue 29 through mem0's own Python client (`mem0ai`) on our mem0 routes: an `expiration_date`
is the memory's expiry too (the end of that day, UTC), so the memory really goes; an extra
`conversation_ref` on search names the assistant's conversation; a memory the person said "don't
use" is not found. SQLite and PostgreSQL."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from portal.domain.types import Place

from .conftest import World, serving

os.environ.setdefault("MEM0_TELEMETRY", "False")  # mem0 sends usage to PostHog unless told not to

mem0 = pytest.importorskip("mem0", reason="mem0ai is in the test extra")
from mem0 import MemoryClient  # noqa: E402
from mem0.exceptions import MemoryNotFoundError, ValidationError  # noqa: E402


@pytest.fixture(autouse=True)
def mem0_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, make_world: Callable[..., World]) -> Iterator[tuple[World, Any]]:
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    world = make_world(engine)
    with serving(world) as url:
        yield world, MemoryClient(api_key=world.keys["a"], host=url)


def test_an_expiration_date_is_the_memorys_expiry_and_it_goes_at_the_end_of_that_day(
        served: tuple[World, Any]) -> None:
    world, memory = served
    place, service = Place("ada", world.tenant_a), world.runtime.service
    later = memory.add("Is in Lyon until May", user_id="ada", infer=False, expiration_date="2031-05-01")
    later_id = later["results"][0]["id"]
    assert service.get(place, later_id).expires_at == datetime(2031, 5, 2, tzinfo=UTC)
    memory.update(later_id, expiration_date="2031-06-01")
    assert service.get(place, later_id).expires_at == datetime(2031, 6, 2, tzinfo=UTC)
    memory.update(later_id, expiration_date=None)
    assert service.get(place, later_id).expires_at is None
    today = date.today().isoformat()
    added = memory.add("Drinks tea today", user_id="ada", infer=False, expiration_date=today)
    tea = added["results"][0]["id"]
    assert [h["id"] for h in memory.search("tea", filters={"user_id": "ada"})["results"]] == [tea]
    tomorrow = datetime.combine(date.today() + timedelta(days=1), datetime.min.time(), UTC)
    service.clock = lambda: tomorrow + timedelta(minutes=1)
    assert memory.search("tea", filters={"user_id": "ada"})["results"] == []
    assert [m["id"] for m in memory.get_all(filters={"user_id": "ada"})["results"]] == [later_id]
    with pytest.raises(MemoryNotFoundError):
        memory.get(tea)


def test_search_names_its_conversation_and_skips_what_the_person_withheld(served: tuple[World, Any]) -> None:
    world, memory = served
    place, service = Place("ada", world.tenant_a), world.runtime.service
    tea = memory.add("Likes green tea", user_id="ada", infer=False)["results"][0]["id"]
    found = memory.search("green tea", filters={"user_id": "ada"}, conversation_ref="chat-7")["results"]
    assert [h["id"] for h in found] == [tea]
    assert [{m.id for m in given} for _, given in service.conversations(place)] == [{tea}]
    with pytest.raises(ValidationError, match="conversation reference") as refused:
        memory.search("green tea", filters={"user_id": "ada"}, conversation_ref="x" * 201)
    assert refused.value.error_code == "HTTP_422"
    assert len(service.conversations(place)) == 1
    service.set_use(place, tea, False)
    assert memory.search("green tea", filters={"user_id": "ada"})["results"] == []
    with pytest.raises(MemoryNotFoundError):
        memory.get(tea)
    assert [m["use"] for m in service.export(place)["memories"]] == [False]


def test_the_same_words_again_meet_the_withheld_memory_and_it_stays_withheld(served: tuple[World, Any]) -> None:
    """Issue 38, item 17: mem0's add of words the person said "don't use" reinforces that memory
    (event NONE, its id); search and get_all still find nothing."""
    world, memory = served
    place, service = Place("ada", world.tenant_a), world.runtime.service
    tea = memory.add("Likes green tea", user_id="ada", infer=False)["results"][0]["id"]
    service.set_use(place, tea, False)
    again = memory.add("likes GREEN tea", user_id="ada", infer=False)["results"]
    assert [(r["id"], r["memory"], r["event"]) for r in again] == [(tea, "likes GREEN tea", "NONE")]
    assert memory.search("green tea", filters={"user_id": "ada"})["results"] == []
    assert memory.get_all(filters={"user_id": "ada"})["results"] == []
    assert [(m["id"], m["text"], m["use"]) for m in service.export(place)["memories"]] == [(tea, "Likes green tea", False)]
