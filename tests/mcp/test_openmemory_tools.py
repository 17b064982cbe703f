"""OpenMemory's MCP tools (issue 28, item 3) at OpenMemory's URL, `/mcp/<client_name>/http/<user_id>`:
`memory-portal mcp --http` as its own process, driven by the `mcp` SDK's client over streamable
HTTP, on SQLite and PostgreSQL — the five tools end to end, and each guarantee kept: the key's
tenant and permissions, the app `client_name` names (the person's pause or block of it), the
person's pause, the AI switch. Each test uses a tenant of its own: the module shares one server."""

from __future__ import annotations

import hashlib
import json
import uuid

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from portal.domain.apps import app_of, apps_of
from portal.domain.types import Place

from .harness import FORGET, READ, WRITE, HttpServer, Portal
from .openmemory_client import INITIALIZE, INPUTS, STREAMS, learn, openmemory, reason, said, url

LEARN, ERASE = "consolidate", "erasure"
EVERYTHING = (READ, WRITE, FORGET, LEARN, ERASE)
TEA, BEES, CAT = "I like green tea", "Keeps bees on the roof of the old barn", "Has a cat called Miso"
FIVE = ["add_memories", "search_memory", "list_memories", "delete_memories", "delete_all_memories"]


def tenant() -> str:
    return f"Tenant {uuid.uuid4().hex[:8]}"


def test_the_five_tools_end_to_end(door: tuple[Portal, HttpServer]) -> None:
    portal, server = door
    acme = tenant()
    token = portal.key(*EVERYTHING, name="Cursor", tenant=acme)
    place, stranger = Place("alice", portal.tenant(acme)), Place("bob", portal.tenant(acme))
    bees = portal.runtime.service.remember(stranger, BEES).memory

    async def scenario() -> None:
        async with openmemory(server, token, "cursor", "alice") as session:
            tools = (await session.list_tools()).tools
            assert [t.name for t in tools] == FIVE
            for tool in tools:
                assert tool.input_schema == INPUTS[tool.name] and tool.description
                assert tool.output_schema == {"properties": {"result": {"title": "Result", "type": "string"}},
                                              "required": ["result"], "title": f"{tool.name}Output", "type": "object"}

            added = json.loads(said(await session.call_tool("add_memories", {"text": TEA, "infer": False})))
            (item,) = added["results"]
            assert (item["memory"], item["event"], item["role"]) == (TEA, "ADD", "user")
            again = json.loads(said(await session.call_tool("add_memories", {"text": TEA, "infer": False})))
            assert [(r["id"], r["event"]) for r in again["results"]] == [(item["id"], "NONE")]  # reinforced
            cat = json.loads(said(await session.call_tool("add_memories", {"text": CAT, "infer": False})))["results"][0]

            found = said(await session.call_tool("search_memory", {"query": "green tea"}))
            assert found.startswith('{\n  "results": [')  # indented, as OpenMemory's
            hits = json.loads(found)["results"]
            assert hits[0]["id"] == item["id"] and bees.id not in [h["id"] for h in hits] and len(hits) <= 10
            assert list(hits[0]) == ["id", "memory", "hash", "created_at", "updated_at", "score"]
            assert hits[0]["hash"] == hashlib.md5(TEA.encode()).hexdigest() and 0 <= hits[0]["score"] <= 1

            listed = json.loads(said(await session.call_tool("list_memories", {})))
            assert [(m["id"], m["memory"], m["user_id"]) for m in listed] == [(cat["id"], CAT, "alice"),
                                                                              (item["id"], TEA, "alice")]

            gone = said(await session.call_tool("delete_memories", {"memory_ids": [item["id"]]}))
            assert gone == "Successfully deleted 1 memory"

            queued = json.loads(said(await session.call_tool("add_memories", {"text": "I adopted a dog called Rex."})))
            assert queued["results"] == [] and queued["status"] == "PENDING" and queued["event_id"]
            learn(portal, place, "Has a dog called Rex")
            assert sorted(m.text for m in portal.runtime.service.list(place).items) == [CAT, "Has a dog called Rex"]

            erased = said(await session.call_tool("delete_all_memories", {}))
            assert erased == "Successfully deleted all memories (2 memories)"
            assert said(await session.call_tool("list_memories", {})) == "[]"

    anyio.run(scenario)
    assert portal.runtime.service.count(place) == 0
    assert portal.runtime.service.get(stranger, bees.id).text == BEES  # another person: untouched
    erasures = [(e.action, e.actor_role, e.actor_id) for e in portal.runtime.service.store.audit_trail()
                if (e.subject_owner_id, e.scope) == (place.owner_id, place.scope)]
    assert erasures == [("person.erased", "api_key", portal.api_key(token).id)]
    logs = server.log.read_text()
    assert "mcp.http method=POST path=/mcp/cursor/http/alice status=200" in logs
    assert not [w for w in (TEA, CAT, BEES, "Rex", "dog") if w in logs]


def test_the_answers_are_stateless_json_as_openmemory_s(door: tuple[Portal, HttpServer]) -> None:
    portal, server = door
    headers = {**STREAMS, "Authorization": f"Bearer {portal.key(READ, name='Cursor', tenant=tenant())}"}
    answer = httpx.post(url(server, "Cursor", "alice"), json=INITIALIZE, headers=headers, timeout=10)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in answer.headers and answer.json()["result"]["serverInfo"]["name"] == "memory-portal"
    listed = httpx.post(url(server, "Cursor", "alice"), json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                        headers=headers, timeout=10)
    assert [t["name"] for t in listed.json()["result"]["tools"]] == ["search_memory", "list_memories"]
    assert httpx.post(url(server, "Cursor", "alice"), json=INITIALIZE, headers=STREAMS, timeout=10).status_code == 401
    assert httpx.post(url(server, "Cursor", "a\x00"), json=INITIALIZE, headers=headers,
                      timeout=10).json()["error"]["data"] == {"code": "invalid_owner"}


def test_client_name_is_the_key_s_own_app_and_nothing_else(door: tuple[Portal, HttpServer]) -> None:
    portal, server = door
    acme, globex = tenant(), tenant()
    token = portal.key(READ, WRITE, name="Cursor", tenant=acme)
    portal.key(READ, name="Claude  Desktop", tenant=acme)  # another app of Acme's: never this key's
    retired = portal.key(READ, name="Old bot", tenant=acme)
    assert portal.runtime.api_keys.revoke(portal.api_key(retired).id)
    portal.key(READ, WRITE, name="Windsurf", tenant=globex)  # Globex's app
    place = Place("alice", portal.tenant(acme))

    async def scenario() -> None:
        async with openmemory(server, token, "CURSOR", "alice") as session:  # its own app, as names fold
            said(await session.call_tool("add_memories", {"text": TEA, "infer": False}))

        def wrong_app(exc: MCPError) -> bool:
            return exc.data == {"code": "wrong_app"} and "'Cursor'" in exc.message

        for name in ("claude desktop", "windsurf", "Old bot", "nobody", " "):
            with pytest.RaisesGroup(pytest.RaisesExc(MCPError, check=wrong_app), flatten_subgroups=True):
                async with openmemory(server, token, name, "alice"):
                    pass

    anyio.run(scenario)
    keys = portal.runtime.api_keys.list(place.scope)
    used = portal.runtime.service.connected_apps(place, apps_of(keys))
    assert [(u.app.name, u.counts["remembered"]) for u in used] == [("Cursor", 1)]
    headers = {**STREAMS, "Authorization": f"Bearer {token}"}
    refused = httpx.post(url(server, "windsurf", "alice"), json=INITIALIZE, headers=headers, timeout=10)
    assert refused.status_code == 403 and refused.json()["error"]["data"] == {"code": "wrong_app"}
    # Naming an app made none: Globex has the one app its key makes.
    assert [a.name for a in apps_of(portal.runtime.api_keys.list(portal.tenant(globex))).values()] == ["Windsurf"]
    assert [m.text for m in portal.runtime.service.list(place).items] == [TEA]


def test_a_paused_person_and_a_paused_or_blocked_app(door: tuple[Portal, HttpServer]) -> None:
    portal, server = door
    acme = tenant()
    token, other = portal.key(*EVERYTHING, name="Cursor", tenant=acme), portal.key(READ, name="Claude", tenant=acme)
    place = Place("alice", portal.tenant(acme))
    service, app = portal.runtime.service, app_of(portal.api_key(token))
    kept = [service.remember(place, text).memory for text in (TEA, BEES, CAT)]

    async def scenario() -> None:
        async with openmemory(server, token, "cursor", "alice") as session:
            service.pause(place)  # the person: adds refused with the reason, reading and taking away go on
            for infer in (False, True):
                refusal = await session.call_tool("add_memories", {"text": "Likes honey", "infer": infer})
                assert reason(refusal) == "paused" and "paused" in refusal.content[0].text  # type: ignore[union-attr]
            assert json.loads(said(await session.call_tool("search_memory", {"query": "tea"})))["results"]
            assert said(await session.call_tool("delete_memories", {"memory_ids": [kept[0].id]})).startswith(
                "Successfully deleted 1")
            service.resume(place)

            service.set_app_control(place, app.id, "paused")  # the app: it may read and take away only
            for infer in (False, True):
                assert reason(await session.call_tool("add_memories", {"text": "Likes honey", "infer": infer})) == "paused"
            assert len(json.loads(said(await session.call_tool("list_memories", {})))) == 2
            said(await session.call_tool("delete_memories", {"memory_ids": [kept[1].id]}))

            service.set_app_control(place, app.id, "blocked")  # the app: nothing at all
            for name, arguments in (("add_memories", {"text": "Likes honey", "infer": False}),
                                    ("add_memories", {"text": "Likes honey"}), ("search_memory", {"query": "cat"}),
                                    ("list_memories", {}), ("delete_memories", {"memory_ids": [kept[2].id]}),
                                    ("delete_all_memories", {})):
                assert reason(await session.call_tool(name, arguments)) == "app_blocked", name
            async with openmemory(server, other, "claude", "alice") as claude:  # one app blocked, not all
                assert [m["id"] for m in json.loads(said(await claude.call_tool("list_memories", {})))] == [kept[2].id]

            service.set_app_control(place, app.id, "paused")
            assert said(await session.call_tool("delete_all_memories", {})).startswith("Successfully deleted all")
            assert reason(await session.call_tool("add_memories", {"text": "Likes honey", "infer": False})) == "paused"

    anyio.run(scenario)
    assert service.count(place) == 0 and not service.is_paused(place)
    controls = {u.app.id: u.control for u in service.connected_apps(place, {})}
    assert controls == {app.id: "paused"}  # erasing everything left the person's decision in place


def test_what_the_key_lacks_is_neither_offered_nor_done(door: tuple[Portal, HttpServer]) -> None:
    portal, server = door
    acme = tenant()
    writer, reader = portal.key(READ, WRITE, FORGET, name="Cursor", tenant=acme), portal.key(READ, name="", tenant=acme)
    place = Place("alice", portal.tenant(acme))
    portal.runtime.service.remember(place, TEA)

    async def scenario() -> None:
        async with openmemory(server, writer, "cursor", "alice") as session:
            assert [t.name for t in (await session.list_tools()).tools] == FIVE[:4]
            refusal = await session.call_tool("delete_all_memories", {})
            assert reason(refusal) == "forbidden"
            assert "delete_all_memories needs a key with the permission erasure" in refusal.content[0].text  # type: ignore[union-attr]
            refusal = await session.call_tool("add_memories", {"text": CAT})  # infer: true by default
            assert reason(refusal) == "forbidden" and "infer false" in refusal.content[0].text  # type: ignore[union-attr]
            said(await session.call_tool("add_memories", {"text": CAT, "infer": False}))
            assert reason(await session.call_tool("add_memories", {"text": CAT, "infer": "no"})) == "invalid_arguments"
            assert reason(await session.call_tool("add_memories", {"infer": False})) == "invalid_arguments"
            assert reason(await session.call_tool("delete_memories", {"memory_ids": "all"})) == "invalid_arguments"
            assert reason(await session.call_tool("remember", {"text": CAT})) == "unknown_tool"
        async with openmemory(server, reader, f"Key {portal.api_key(reader).prefix}", "alice") as session:
            assert [t.name for t in (await session.list_tools()).tools] == ["search_memory", "list_memories"]
            assert reason(await session.call_tool("delete_memories", {"memory_ids": ["x"]})) == "forbidden"

    anyio.run(scenario)
    assert sorted(m.text for m in portal.runtime.service.list(place).items) == [CAT, TEA]


def test_delete_memories_finds_no_one_else_s(door: tuple[Portal, HttpServer]) -> None:
    portal, server = door
    acme, globex = tenant(), tenant()
    token = portal.key(*EVERYTHING, name="Cursor", tenant=acme)
    mine = portal.runtime.service.remember(Place("alice", portal.tenant(acme)), TEA).memory
    bobs = portal.runtime.service.remember(Place("bob", portal.tenant(acme)), BEES).memory
    theirs = portal.runtime.service.remember(Place("alice", portal.tenant(globex)), CAT).memory

    async def scenario() -> None:
        async with openmemory(server, token, "cursor", "alice") as session:
            refusal = await session.call_tool("delete_memories", {"memory_ids": [bobs.id, theirs.id, "../x", ""]})
            assert reason(refusal) == "not_found"
            assert said(await session.call_tool("delete_memories", {"memory_ids": [mine.id, bobs.id, mine.id]})) == (
                "Successfully deleted 1 memory; 1 of the ids given was not found (not this person's memories, "
                "or deleted already)")

    anyio.run(scenario)
    assert portal.runtime.service.get(Place("bob", portal.tenant(acme)), bobs.id).text == BEES
    assert portal.runtime.service.get(Place("alice", portal.tenant(globex)), theirs.id).text == CAT
    assert portal.runtime.service.count(Place("alice", portal.tenant(acme))) == 0


def test_with_the_ai_off_every_tool_refuses_and_changes_nothing(door: tuple[Portal, HttpServer]) -> None:
    portal, server = door
    acme = tenant()
    token = portal.key(*EVERYTHING, name="Cursor", tenant=acme)
    place = Place("alice", portal.tenant(acme))
    kept = portal.runtime.service.remember(place, TEA).memory
    assert portal.runtime.tenants.set_ai(place.scope, False)  # before the server first asks about this tenant

    async def scenario() -> None:
        async with openmemory(server, token, "cursor", "alice") as session:
            for name, arguments in (("add_memories", {"text": CAT, "infer": False}), ("add_memories", {"text": CAT}),
                                    ("search_memory", {"query": "tea"}), ("list_memories", {}),
                                    ("delete_memories", {"memory_ids": [kept.id]}), ("delete_all_memories", {})):
                assert reason(await session.call_tool(name, arguments)) == "ai_disabled", name

    anyio.run(scenario)
    assert [m.text for m in portal.runtime.service.list(place).items] == [TEA]
