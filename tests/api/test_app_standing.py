"""A key acts as its own app, always (issue 38, item 0), on mem0's routes too: mem0's `app_id`
is kept with a memory and filters by it, and never lends the key the standing of the app it names.
An app the person blocked stays blocked, a paused one paused, and a memory withheld from it stays
withheld, whatever `app_id` it sends; what it does is recorded as its own. Through mem0's own pinned
client, on SQLite and PostgreSQL."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from portal.adapters.sql.api_keys import ApiKeys
from portal.domain.apps import app_of, apps_of
from portal.domain.people import PERMISSIONS
from portal.domain.types import Place

from .conftest import World, serving

os.environ.setdefault("MEM0_TELEMETRY", "False")  # mem0 reads it at import: set before importing it

mem0 = pytest.importorskip("mem0", reason="mem0ai is in the test extra")
from mem0 import MemoryClient  # noqa: E402
from mem0.exceptions import AuthenticationError, ValidationError  # noqa: E402

TEA, BEES = "I like green tea", "Keeps bees on the roof of the old barn"


@pytest.fixture(autouse=True)
def mem0_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_apps(request: pytest.FixtureRequest, make_world: Callable[..., World]) -> Iterator[dict[str, Any]]:
    """WriterA and Rogue, two apps of one tenant, each with every permission; ada's tea and bees,
    the bees withheld from Rogue alone."""
    world = make_world(request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine"))
    keys = ApiKeys(world.runtime.engine)
    (writer, writer_token), (rogue, rogue_token) = (keys.create(world.tenant_a, PERMISSIONS, name=name)
                                                   for name in ("WriterA", "Rogue"))
    place, service = Place("ada", world.tenant_a), world.runtime.service
    tea, bees = (service.remember(place, text, attributes={"app_id": "WriterA"}).memory for text in (TEA, BEES))
    service.set_use(place, bees.id, False, app_of(rogue).id)
    with serving(world) as url:
        yield {"world": world, "place": place, "tea": tea, "bees": bees, "rogue": app_of(rogue),
               "as_rogue": MemoryClient(api_key=rogue_token, host=url),
               "as_writer": MemoryClient(api_key=writer_token, host=url)}


def test_app_id_never_lends_a_blocked_or_paused_app_another_app_s_standing(two_apps: dict[str, Any]) -> None:
    world, place, memory = two_apps["world"], two_apps["place"], two_apps["as_rogue"]
    service = world.runtime.service
    service.set_app_control(place, two_apps["rogue"].id, "blocked")
    naming = {"user_id": "ada", "app_id": "WriterA"}
    for attempt in (lambda: memory.search("bees", filters=naming), lambda: memory.get_all(filters=naming),
                    lambda: memory.get(two_apps["bees"].id), lambda: memory.add("Likes honey", infer=False, **naming),
                    lambda: memory.delete_all(**naming), lambda: memory.delete_all(user_id="ada")):
        with pytest.raises(AuthenticationError, match="blocked"):
            attempt()
    service.set_app_control(place, two_apps["rogue"].id, "paused")
    with pytest.raises(ValidationError, match="paused"):
        memory.add("Likes honey", infer=False, **naming)
    assert sorted(m.text for m in service.list(place).items) == sorted([BEES, TEA])
    used = service.connected_apps(place, apps_of(world.runtime.api_keys.list(place.scope)))
    assert [(u.app.name, u.control, sum(u.counts.values())) for u in used] == [("Rogue", "paused", 0)]


def test_a_memory_withheld_from_an_app_stays_withheld_whatever_app_id_it_names(two_apps: dict[str, Any]) -> None:
    world, place, memory = two_apps["world"], two_apps["place"], two_apps["as_rogue"]
    naming = {"user_id": "ada", "app_id": "WriterA"}
    assert [m["id"] for m in memory.get_all(filters=naming)["results"]] == [two_apps["tea"].id]
    assert two_apps["bees"].id not in [h["id"] for h in memory.search("bees on the roof", filters=naming)["results"]]
    writer = two_apps["as_writer"]  # the app the bees were not withheld from still has them
    assert two_apps["bees"].id in [m["id"] for m in writer.get_all(filters=naming)["results"]]
    service = world.runtime.service
    used = service.connected_apps(place, apps_of(world.runtime.api_keys.list(place.scope)))
    rogue = next(u for u in used if u.app.name == "Rogue")
    assert rogue.counts["read"] >= 1 and {u.app.name for u in used} == {"Rogue", "WriterA"}
