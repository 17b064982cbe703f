"""`memory-portal mcp --http` as its own process on a free loopback port, reached with the SDK's
streamable HTTP client (both protocol eras) and, for what happens at the door, with plain HTTP."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from sqlalchemy.engine import Engine

from portal.domain.apps import app_of, apps_of
from portal.domain.types import Place

from .flow import WORDS, the_whole_flow
from .harness import FORGET, LEGACY, MODERN, READ, WRITE, HttpServer, Portal, http_server, payload, portal_on, reason

BEES = "Keeps bees on the roof of the old barn"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}}
STREAMS = {"Accept": "application/json, text/event-stream"}


def someone() -> str:
    """A new owner id: the tests of a module share one server and database."""
    return f"person-{uuid.uuid4().hex[:12]}"


@pytest.mark.parametrize("era", [LEGACY, MODERN])
def test_an_assistant_remembers_recalls_corrects_and_forgets_over_http(served: tuple[Portal, HttpServer],
                                                                       era: str) -> None:
    portal, server = served
    token = portal.key(READ, WRITE, FORGET)
    owner, stranger_owner = someone(), someone()
    stranger = portal.runtime.service.remember(Place(stranger_owner, portal.tenant()), BEES, importance=5).memory

    async def scenario() -> None:
        async with server.session(token, owner, era) as session:
            await the_whole_flow(session, stranger.id, BEES)

    anyio.run(scenario)
    assert portal.runtime.service.count(Place(owner, portal.tenant())) == 0
    assert portal.runtime.service.get(Place(stranger_owner, portal.tenant()), stranger.id).text == BEES
    logs = server.log.read_text()
    assert f"mcp.http method=POST path=/mcp/people/{owner} status=200" in logs
    assert not [w for w in (*WORDS, BEES) if w in logs]


@pytest.mark.postgres
def test_the_same_over_http_on_postgresql(pg_engine: Engine, tmp_path: Path) -> None:
    with portal_on(pg_engine, tmp_path / "instance") as portal, http_server(portal.env, tmp_path / "server.log") as server:
        token = portal.key(READ, WRITE, FORGET)
        stranger = portal.runtime.service.remember(Place("bob", portal.tenant()), BEES, importance=5).memory

        async def scenario() -> None:
            async with server.session(token, "alice", LEGACY) as session:
                await the_whole_flow(session, stranger.id, BEES)

        anyio.run(scenario)
        assert portal.runtime.service.count(Place("alice", portal.tenant())) == 0
        assert portal.runtime.service.get(Place("bob", portal.tenant()), stranger.id).text == BEES


def test_without_a_valid_key_every_request_is_401_with_its_code(served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    revoked = portal.key(READ)
    assert portal.runtime.api_keys.revoke(portal.api_key(revoked).id)
    url = server.url(someone())
    for authorization in (None, "Bearer", "Basic dXNlcjpwYXNz", "Bearer mp_nope", f"Bearer {revoked}"):
        headers = {**STREAMS, **({"Authorization": authorization} if authorization else {})}
        answer = httpx.post(url, json=INITIALIZE, headers=headers)
        assert answer.status_code == 401, authorization
        assert answer.headers["www-authenticate"].startswith("Bearer")
        assert answer.json()["error"]["data"] == {"code": "unauthorized"}

    def unauthorized(exc: MCPError) -> bool:
        return exc.data == {"code": "unauthorized"} and exc.message == "unknown or revoked key"

    async def through_the_sdk() -> None:  # the SDK's client raises it from its task groups
        with pytest.RaisesGroup(pytest.RaisesExc(MCPError, check=unauthorized), flatten_subgroups=True):
            async with server.session("mp_nope", someone()):
                pass

    anyio.run(through_the_sdk)


def test_an_owner_id_outside_the_id_rule_is_400_invalid_owner(served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    headers = {**STREAMS, "Authorization": f"Bearer {portal.key(READ)}"}
    for owner in ("%2E%2E", "%00", "%20", "x" * 201):
        answer = httpx.post(f"{server.base}/mcp/people/{owner}", json=INITIALIZE, headers=headers)
        assert answer.status_code == 400, owner
        assert answer.json()["error"]["data"] == {"code": "invalid_owner"}
    assert httpx.post(f"{server.base}/mcp/people", json=INITIALIZE, headers=headers).json()["error"]["data"] == {
        "code": "not_found"}


def test_an_endpoint_is_one_person_in_the_key_s_own_tenant(served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    token, other_tenant = portal.key(READ, WRITE, FORGET), portal.key(READ, WRITE, FORGET, tenant="Globex")
    owner = someone()

    async def scenario() -> None:
        async with server.session(token, owner) as session:
            memory_id = payload(await session.call_tool("remember", {"text": BEES}))["memory"]["id"]
        # The same key on another person's endpoint, another tenant's key on this person's own.
        for key, endpoint in ((token, someone()), (other_tenant, owner)):
            async with server.session(key, endpoint) as session:
                assert payload(await session.call_tool("recall", {"query": "bees barn"}))["memories"] == []
                assert reason(await session.call_tool("update_memory", {"id": memory_id, "text": "x y"})) == "not_found"
                assert reason(await session.call_tool("forget", {"id": memory_id})) == "not_found"
                assert (await session.read_resource("memory://portrait")).contents[0].text == ""

    anyio.run(scenario)
    assert [m.text for m in portal.runtime.service.list(Place(owner, portal.tenant())).items] == [BEES]


def test_what_a_key_lacks_is_neither_offered_nor_allowed(served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    owner = someone()

    async def scenario() -> None:
        async with server.session(portal.key(READ), owner) as reader:
            assert [t.name for t in (await reader.list_tools()).tools] == ["recall"]
            assert reason(await reader.call_tool("remember", {"text": BEES})) == "forbidden"
            assert reason(await reader.call_tool("forget", {"id": "anything"})) == "forbidden"
        async with server.session(portal.key(WRITE), owner) as writer:
            assert [t.name for t in (await writer.list_tools()).tools] == ["remember", "update_memory"]
            assert reason(await writer.call_tool("recall", {"query": "bees"})) == "forbidden"
            assert (await writer.list_resources()).resources == [] and (await writer.list_prompts()).prompts == []
            for read in (writer.read_resource("memory://portrait"), writer.get_prompt("portrait")):
                with pytest.raises(MCPError) as refused:
                    await read
                assert refused.value.data == {"code": "forbidden"}

    anyio.run(scenario)
    assert portal.runtime.service.count(Place(owner, portal.tenant())) == 0


def test_a_blocked_app_is_refused_everything_and_a_paused_one_cannot_write(served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    bot, desktop = portal.key(READ, WRITE, FORGET, name="Support bot"), portal.key(READ, WRITE, name="Claude Desktop")
    owner = someone()
    place = Place(owner, portal.tenant())
    app = app_of(portal.api_key(bot))

    async def scenario() -> None:
        async with server.session(bot, owner) as session:
            memory_id = payload(await session.call_tool("remember", {"text": BEES, "importance": 5}))["memory"]["id"]
            used = portal.runtime.service.connected_apps(place, apps_of([portal.api_key(bot)]))
            assert [(u.app.name, u.counts["remembered"]) for u in used] == [("Support bot", 1)]  # its use is kept

            portal.runtime.service.set_app_control(place, app.id, "blocked")
            for name, arguments in (("remember", {"text": "Likes honey"}), ("recall", {"query": "bees"}),
                                    ("update_memory", {"id": memory_id, "text": "Keeps no bees"}),
                                    ("forget", {"id": memory_id})):
                assert reason(await session.call_tool(name, arguments)) == "app_blocked", name
            for read in (session.read_resource("memory://portrait"), session.get_prompt("portrait")):
                with pytest.raises(MCPError) as refused:
                    await read
                assert refused.value.data == {"code": "app_blocked"}
            async with server.session(desktop, owner) as other_app:  # the person blocked one app, not all
                assert [m["id"] for m in payload(await other_app.call_tool("recall", {"query": "bees"}))["memories"]] == [
                    memory_id]

            portal.runtime.service.set_app_control(place, app.id, "paused")
            assert reason(await session.call_tool("remember", {"text": "Likes honey"})) == "paused"
            assert reason(await session.call_tool("update_memory", {"id": memory_id, "text": "Keeps no bees"})) == "paused"
            assert payload(await session.call_tool("recall", {"query": "bees"}))["memories"][0]["id"] == memory_id

            portal.runtime.service.set_app_control(place, app.id, None)
            assert payload(await session.call_tool("remember", {"text": "Likes honey"}))["code"] == "memory_saved"

    anyio.run(scenario)
    assert sorted(m.text for m in portal.runtime.service.list(place).items) == [BEES, "Likes honey"]


def test_refusals_are_worded_in_the_language_the_request_asks_for(served: tuple[Portal, HttpServer]) -> None:
    portal, server = served

    async def scenario() -> None:
        async with server.session(portal.key(READ, WRITE), someone(), Accept_Language="fr-CH, fr;q=0.9, en;q=0.5") as fr:
            empty = await fr.call_tool("remember", {"text": ""})
            assert reason(empty) == "empty" and payload(empty)["message"] == "Il n'y a rien à retenir, le texte est vide."
        async with server.session(portal.key(WRITE), someone(), Accept_Language="fr") as fr:
            with pytest.raises(MCPError) as refused:
                await fr.read_resource("memory://portrait")
            assert refused.value.data == {"code": "forbidden"} and refused.value.message.startswith("Cette clé")

    anyio.run(scenario)


def test_requests_naming_another_host_or_origin_are_refused_on_loopback(served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    headers = {**STREAMS, "Authorization": f"Bearer {portal.key(READ)}"}
    url = server.url(someone())
    assert httpx.post(url, json=INITIALIZE, headers=headers).status_code == 200
    assert httpx.post(url, json=INITIALIZE, headers={**headers, "Host": "attacker.example"}).status_code == 421
    assert httpx.post(url, json=INITIALIZE, headers={**headers, "Origin": "http://attacker.example"}).status_code == 403
    assert httpx.post(url, json=INITIALIZE, headers={**headers, "Origin": "http://localhost:3000"}).status_code == 200


def test_a_key_gets_its_rate_limit_once_across_the_http_processes(sqlite_engine: Engine, tmp_path: Path) -> None:
    """Two MCP processes on one database share the key's counter (the JSON API's storage)."""
    with portal_on(sqlite_engine, tmp_path / "instance") as portal:
        env = {**portal.env, "MEMORY_API_RATE_LIMIT": "4/minute"}
        token = portal.key(READ)
        with http_server(env, tmp_path / "one.log") as one, http_server(env, tmp_path / "two.log") as two:
            statuses = []
            for server in (one, two, one, two, one, two):
                answer = httpx.post(server.url(someone()), json=INITIALIZE,
                                    headers={**STREAMS, "Authorization": f"Bearer {token}"}, timeout=10)
                statuses.append(answer.status_code)
                if answer.status_code == 429:
                    assert answer.json()["error"]["data"]["code"] == "rate_limited"
                    assert int(answer.headers["Retry-After"]) >= 1
        assert statuses == [200, 200, 200, 200, 429, 429]


def test_the_door_neither_holds_get_streams_nor_lets_a_path_forge_a_log_line(served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    token = portal.key(READ)
    held = httpx.get(server.url(someone()), headers={**STREAMS, "Authorization": f"Bearer {token}"}, timeout=5)
    assert held.status_code == 405 and held.json()["error"]["data"]["code"] == "method_not_allowed"
    forged = httpx.post(f"{server.base}/mcp/people/a%0aFAKE%20LINE%00", json=INITIALIZE, headers=STREAMS, timeout=5)
    assert forged.status_code == 400
    # The access log's line is written once the answer is sent: the client may read the file first.
    deadline = time.monotonic() + 5
    while "/mcp/people/a%0aFAKE" not in server.log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = server.log.read_text().splitlines()
    assert not [line for line in lines if line.startswith("FAKE")] and "\x00" not in server.log.read_text()
    assert any("/mcp/people/a%0aFAKE%20LINE%00" in line for line in lines), lines
