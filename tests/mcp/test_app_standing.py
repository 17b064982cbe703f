"""A key acts as its own app, always (issue 38, item 0): on OpenMemory's URL,
`/mcp/<client_name>/http/<user_id>`, naming another app of the key's tenant never lends the key that
app's standing. An app the person blocked or paused, or one a memory is withheld from, stays so
whatever name its URL carries; what it does is never recorded as another app's. SQLite and
PostgreSQL, through the SDK's client and raw requests; each test uses a tenant of its own."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from portal.domain.apps import app_of, apps_of
from portal.domain.types import Place

from .harness import FORGET, READ, WRITE, HttpServer, Portal
from .openmemory_client import STREAMS, openmemory, reason, said, url

LEARN, ERASE = "consolidate", "erasure"
EVERYTHING = (READ, WRITE, FORGET, LEARN, ERASE)
TEA, BEES, CAT = "I like green tea", "Keeps bees on the roof of the old barn", "Has a cat called Miso"
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_memories", {}), ("search_memory", {"query": "bees on the roof"}),
    ("add_memories", {"text": CAT, "infer": False}), ("add_memories", {"text": CAT}),
    ("delete_memories", {"memory_ids": ["x"]}), ("delete_all_memories", {}),
]


def call(server: HttpServer, token: str, client_name: str, name: str, arguments: dict[str, Any]) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return httpx.post(url(server, client_name, "ada"), json=body, timeout=10,
                      headers={**STREAMS, "Authorization": f"Bearer {token}"})


def refused_at_the_door(answer: httpx.Response, own: str) -> None:
    assert answer.status_code == 403, answer.text
    error = answer.json()["error"]
    assert error["data"] == {"code": "wrong_app"} and repr(own) in error["message"]


@pytest.fixture
def acme(door: tuple[Portal, HttpServer]) -> dict[str, Any]:
    """A tenant with two apps, WriterA and Rogue, and ada's memories: tea, and bees (which ada
    withheld from Rogue alone)."""
    portal, _ = door
    name = f"Tenant {uuid.uuid4().hex[:8]}"
    writer, rogue = portal.key(*EVERYTHING, name="WriterA", tenant=name), portal.key(*EVERYTHING, name="Rogue", tenant=name)
    place = Place("ada", portal.tenant(name))
    service = portal.runtime.service
    tea, bees = (service.remember(place, text).memory for text in (TEA, BEES))
    rogue_app = app_of(portal.api_key(rogue))
    service.set_use(place, bees.id, False, rogue_app.id)
    return {"writer": writer, "rogue": rogue, "place": place, "tea": tea, "bees": bees, "rogue_app": rogue_app,
            "writer_app": app_of(portal.api_key(writer))}


def test_a_blocked_app_naming_another_app_is_refused_at_the_door_and_nothing_happens(
        door: tuple[Portal, HttpServer], acme: dict[str, Any]) -> None:
    portal, server = door
    service, place = portal.runtime.service, acme["place"]
    for control in ("blocked", "paused", None):  # whatever the person decided about Rogue
        service.set_app_control(place, acme["rogue_app"].id, control)
        for name, arguments in CALLS:
            refused_at_the_door(call(server, acme["rogue"], "WriterA", name, arguments), "Rogue")
            refused_at_the_door(call(server, acme["rogue"], "writer a", name, arguments), "Rogue")

    async def scenario() -> None:
        def wrong_app(exc: MCPError) -> bool:
            return exc.data == {"code": "wrong_app"} and "'Rogue'" in exc.message

        with pytest.RaisesGroup(pytest.RaisesExc(MCPError, check=wrong_app), flatten_subgroups=True):
            async with openmemory(server, acme["rogue"], "WriterA", "ada"):
                pass

    anyio.run(scenario)
    assert sorted(m.text for m in service.list(place).items) == sorted([BEES, TEA])  # nothing added, nothing erased
    apps = apps_of(portal.runtime.api_keys.list(place.scope))
    assert service.connected_apps(place, apps) == []  # no read or write recorded as anyone's
    assert not [e for e in service.store.audit_trail() if (e.subject_owner_id, e.scope) == (place.owner_id, place.scope)
                and e.action == "person.erased"]


def test_a_key_acts_as_its_own_app_and_a_blocked_one_not_even_as_a_lesser_one(
        door: tuple[Portal, HttpServer], acme: dict[str, Any]) -> None:
    portal, server = door
    service, place = portal.runtime.service, acme["place"]
    service.set_app_control(place, acme["rogue_app"].id, "blocked")
    for name, arguments in CALLS:  # the writer naming the blocked app gains nothing and loses nothing
        refused_at_the_door(call(server, acme["writer"], "Rogue", name, arguments), "WriterA")

    async def scenario() -> None:
        async with openmemory(server, acme["rogue"], "rogue", "ada") as session:  # its own name: blocked
            for name, arguments in CALLS:
                assert reason(await session.call_tool(name, arguments)) == "app_blocked", name
        service.set_app_control(place, acme["rogue_app"].id, None)
        async with openmemory(server, acme["rogue"], "ROGUE", "ada") as session:  # unblocked: its own standing
            listed = json.loads(said(await session.call_tool("list_memories", {})))
            assert [m["memory"] for m in listed] == [TEA]  # bees are withheld from Rogue
            found = json.loads(said(await session.call_tool("search_memory", {"query": "bees on the roof"})))
            assert acme["bees"].id not in [h["id"] for h in found["results"]]
            found = json.loads(said(await session.call_tool("search_memory", {"query": "green tea"})))
            assert [h["id"] for h in found["results"]] == [acme["tea"].id]
        async with openmemory(server, acme["writer"], "WriterA", "ada") as session:
            listed = json.loads(said(await session.call_tool("list_memories", {})))
            assert sorted(m["memory"] for m in listed) == sorted([BEES, TEA])

    anyio.run(scenario)
    apps = apps_of(portal.runtime.api_keys.list(place.scope))
    seen = {(u.app.name, action) for u in service.connected_apps(place, apps) for action, n in u.counts.items() if n}
    assert seen == {("Rogue", "read"), ("Rogue", "recalled"), ("WriterA", "read")}, seen
