"""Issue 29 over MCP (`memory-portal mcp --http`, the SDK's client): the conversation a request is
for (`conversation_ref` in the request's `_meta`, or the portrait prompt's argument) is recorded
with what the assistant was given; the remember tool takes `expires_at`; a memory the person said
"don't use" and one past its expiry reach no tool, resource or prompt."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from sqlalchemy.engine import Engine

from portal.domain.types import Place
from portal.mcp.server import PORTRAIT_PROMPT, PORTRAIT_URI

from .harness import LEGACY, READ, WRITE, HttpServer, Portal, http_server, payload, portal_on, reason
from .openmemory_client import INPUTS, openmemory, said
from .openmemory_client import reason as openmemory_reason

TEA = "Prefers tea to coffee"


def someone() -> str:
    return f"person-{uuid.uuid4().hex[:12]}"


async def hand_over(session: Any) -> None:
    """Recall, the portrait resource and the portrait prompt, each for a conversation of its own."""
    found = payload(await session.call_tool("recall", {"query": "tea"}, meta={"conversation_ref": "mcp-1"}))
    assert [m["text"] for m in found["memories"]] == [TEA]
    read = await session.read_resource(PORTRAIT_URI, meta={"conversation_ref": "mcp-2"})
    assert TEA in read.contents[0].text
    prompt = await session.get_prompt(PORTRAIT_PROMPT, {"conversation_ref": "mcp-3"})
    assert TEA in prompt.messages[0].content.text


def conversations(portal: Portal, place: Place) -> list[set[str]]:
    return [{m.id for m in given} for _, given in portal.runtime.service.conversations(place)]


def check_conversations(portal: Portal, server: HttpServer, owner: str) -> None:
    place = Place(owner, portal.tenant())
    tea = portal.runtime.service.remember(place, TEA, pinned=True).memory
    token = portal.key(READ, WRITE)

    async def scenario() -> None:
        async with server.session(token, owner, LEGACY) as session:
            await hand_over(session)
            bad = await session.call_tool("recall", {"query": "tea"}, meta={"conversation_ref": "x" * 201})
            assert reason(bad) == "invalid_conversation_ref"
            with pytest.raises(MCPError) as refused:
                await session.read_resource(PORTRAIT_URI, meta={"conversation_ref": ""})
            assert refused.value.error.data == {"code": "invalid_conversation_ref"}

    anyio.run(scenario)
    assert conversations(portal, place) == [{tea.id}] * 3


def test_each_request_names_its_conversation_over_mcp(served: tuple[Portal, HttpServer]) -> None:
    check_conversations(*served, someone())


@pytest.mark.postgres
def test_the_same_on_postgresql(pg_engine: Engine, tmp_path: Path) -> None:
    with portal_on(pg_engine, tmp_path / "instance") as portal, http_server(portal.env, tmp_path / "server.log") as server:
        check_conversations(portal, server, "alice")


def test_the_remember_tool_takes_an_expiry(served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    owner, token = someone(), portal.key(READ, WRITE)
    when = "2099-05-06T07:08:09Z"

    async def scenario() -> None:
        async with server.session(token, owner, LEGACY) as session:
            saved = payload(await session.call_tool("remember", {"text": "Is in Lyon this week", "expires_at": when}))
            assert saved["memory"]["expires_at"] == when and "withheld_from" not in saved["memory"]
            past = await session.call_tool("remember", {"text": "Was in Paris", "expires_at": "2001-01-01T00:00:00Z"})
            assert reason(past) == "expiry_in_past"

    anyio.run(scenario)
    (kept,) = portal.runtime.service.list(Place(owner, portal.tenant())).items
    assert kept.expires_at == datetime(2099, 5, 6, 7, 8, 9, tzinfo=UTC)


def test_the_remember_tool_refuses_an_expiry_off_the_calendar_in_utc(served: tuple[Portal, HttpServer]) -> None:
    """Issue 38, item 21: an expiry whose UTC time is past year 9999 or before year 1 answered the
    JSON-RPC error -32603 (OverflowError in the server): it is refused `invalid_expiry`."""
    portal, server = served
    owner, token = someone(), portal.key(READ, WRITE)

    async def scenario() -> None:
        async with server.session(token, owner, LEGACY) as session:
            for when in ("9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"):
                refused = await session.call_tool("remember", {"text": "Is in Lyon this week", "expires_at": when})
                assert reason(refused) == "invalid_expiry", when

    anyio.run(scenario)
    assert portal.runtime.service.list(Place(owner, portal.tenant())).items == []


def test_what_the_person_withholds_or_what_expired_reaches_no_tool_resource_or_prompt(
        served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    owner, token = someone(), portal.key(READ, WRITE)
    place = Place(owner, portal.tenant())
    service = portal.runtime.service
    withheld = service.remember(place, TEA, pinned=True).memory
    service.set_use(place, withheld.id, False)
    # The server is another process with its own clock: an expiry a second away, then waited for.
    soon = datetime.now(UTC) + timedelta(seconds=1)
    service.remember(place, "Drinks green tea in the morning", pinned=True, expires_at=soon)
    while datetime.now(UTC) <= soon:
        anyio.run(anyio.sleep, 0.1)

    async def scenario() -> None:
        async with server.session(token, owner, LEGACY) as session:
            found = payload(await session.call_tool("recall", {"query": "tea"}))
            assert found["memories"] == []
            read = await session.read_resource(PORTRAIT_URI)
            prompt = await session.get_prompt(PORTRAIT_PROMPT)
            for text in (read.contents[0].text, prompt.messages[0].content.text):
                assert "tea" not in text

    anyio.run(scenario)
    assert service.export(place)["memories"][0]["use"] is False  # the person still has it


def test_openmemorys_search_names_its_conversation_in_meta_and_skips_what_is_withheld(
        served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    owner, token = someone(), portal.key(READ, WRITE, name="Cursor")
    place = Place(owner, portal.tenant())
    tea = portal.runtime.service.remember(place, TEA).memory

    async def scenario() -> None:
        async with openmemory(server, token, "cursor", owner) as session:
            tools = {t.name: t.input_schema for t in (await session.list_tools()).tools}
            assert tools["search_memory"] == INPUTS["search_memory"]  # OpenMemory's own schema, unchanged
            found = said(await session.call_tool("search_memory", {"query": "tea"}, meta={"conversation_ref": "om-1"}))
            assert [h["id"] for h in json.loads(found)["results"]] == [tea.id]
            bad = await session.call_tool("search_memory", {"query": "tea"}, meta={"conversation_ref": "x" * 201})
            assert openmemory_reason(bad) == "invalid_conversation_ref"
            portal.runtime.service.set_use(place, tea.id, False)
            assert json.loads(said(await session.call_tool("search_memory", {"query": "tea"})))["results"] == []

    anyio.run(scenario)
    assert conversations(portal, place) == [{tea.id}]


def check_repeat_meets_withheld(portal: Portal, server: HttpServer) -> None:
    """Issue 38, item 17: OpenMemory's add_memories of words the person said "don't use" reinforces
    that memory (event NONE, its id): list_memories and search_memory still find nothing."""
    owner, token = someone(), portal.key(READ, WRITE, name="Cursor")
    place = Place(owner, portal.tenant())
    tea = portal.runtime.service.remember(place, TEA, importance=2).memory
    portal.runtime.service.set_use(place, tea.id, False)

    async def scenario() -> None:
        async with openmemory(server, token, "cursor", owner) as session:
            added = json.loads(said(await session.call_tool("add_memories", {"text": "prefers TEA to coffee",
                                                                             "infer": False})))
            assert [(r["id"], r["memory"], r["event"]) for r in added["results"]] == [
                (tea.id, "prefers TEA to coffee", "NONE")]
            assert json.loads(said(await session.call_tool("list_memories", {}))) == []
            assert json.loads(said(await session.call_tool("search_memory", {"query": "tea"})))["results"] == []

    anyio.run(scenario)
    (kept,) = portal.runtime.service.list(place).items
    assert (kept.id, kept.text, kept.to_json()["use"]) == (tea.id, TEA, False)


def test_openmemorys_add_of_a_withheld_memory_reinforces_it(served: tuple[Portal, HttpServer]) -> None:
    check_repeat_meets_withheld(*served)


@pytest.mark.postgres
def test_openmemorys_add_of_a_withheld_memory_reinforces_it_on_postgresql(pg_engine: Engine, tmp_path: Path) -> None:
    with portal_on(pg_engine, tmp_path / "instance") as portal, http_server(portal.env, tmp_path / "server.log") as server:
        check_repeat_meets_withheld(portal, server)
