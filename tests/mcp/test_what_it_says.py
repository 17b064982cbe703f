"""What the MCP server says is true (issue 27): the portrait's resource and prompt never say the
person is unknown when they have memories, and with the AI switched off for the tenant the
instructions say what the tools then do, and the tools do it. Over stdio, as an assistant runs it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from portal.domain.types import Place

from .harness import BIN, FORGET, READ, WRITE, Portal, payload, reason

NOTHING = "You do not remember anything about the person"


@asynccontextmanager
async def session_of(portal: Portal, token: str, owner: str, log: Path) -> AsyncIterator[tuple[ClientSession, Any]]:
    """A stdio session and the server's answer to `initialize` (its instructions)."""
    server = StdioServerParameters(command=str(BIN), args=["mcp", "--owner", owner],
                                   env={**portal.env, "MEMORY_API_KEY": token})
    with log.open("w") as err:
        async with stdio_client(server, errlog=err) as (read, write), ClientSession(read, write) as session:
            yield session, await session.initialize()


async def portrait_of(session: ClientSession) -> tuple[str, str]:
    resource = (await session.read_resource("memory://portrait")).contents[0].text  # type: ignore[union-attr]
    prompt = (await session.get_prompt("portrait")).messages[0].content.text  # type: ignore[union-attr]
    return resource, prompt


def test_an_empty_portrait_of_someone_with_memories_says_what_is_true(portal: Portal, tmp_path: Path) -> None:
    token, place = portal.key(READ, WRITE), Place("alice", portal.tenant())

    async def scenario() -> None:
        async with session_of(portal, token, "alice", tmp_path / "server.err") as (session, _):
            resource, prompt = await portrait_of(session)
            assert resource == "" and prompt.startswith(NOTHING)  # true: nothing is kept
            payload(await session.call_tool("remember", {"text": "Is training for the Lyon marathon"}))  # importance 3
            resource, prompt = await portrait_of(session)
            assert NOTHING not in prompt and NOTHING not in resource
            for text in (resource, prompt):
                assert "Nothing about the person is pinned or important enough" in text
                assert "You remember 1 more thing about them: search it with the recall tool" in text
            assert prompt.endswith(resource) and "not instructions" in prompt
            payload(await session.call_tool("remember", {"text": "Is allergic to peanuts", "importance": 5}))
            payload(await session.call_tool("remember", {"text": "Keeps bees", "importance": 2}))
            resource, prompt = await portrait_of(session)
            assert resource == ("- Is allergic to peanuts\n\nYou remember 2 more things about them: search them with "
                                "the recall tool when the conversation touches them.")
            assert prompt.endswith(resource)

    anyio.run(scenario)
    assert portal.runtime.service.count(place) == 3


def test_with_the_ai_off_the_instructions_say_what_the_tools_do(portal: Portal, tmp_path: Path) -> None:
    token, place = portal.key(READ, WRITE, FORGET), Place("alice", portal.tenant())
    kept = portal.runtime.service.remember(place, "Is training for the Lyon marathon").memory  # type: ignore[union-attr]
    assert portal.runtime.tenants.set_ai(portal.tenant(), False)

    async def scenario() -> None:
        async with session_of(portal, token, "alice", tmp_path / "server.err") as (session, started):
            assert ("When the person's organisation has switched the assistant's AI off, every tool answers the "
                    "refusal ai_disabled and changes nothing") in started.instructions
            for name, arguments in (("remember", {"text": "Keeps bees"}), ("recall", {"query": "marathon"}),
                                    ("update_memory", {"id": kept.id, "text": "Is training for Paris"}),
                                    ("forget", {"id": kept.id})):
                assert reason(await session.call_tool(name, arguments)) == "ai_disabled", name
            resource, prompt = await portrait_of(session)  # the portrait can still be read, and says so
            assert "You remember 1 more thing about them" in resource
            assert "the recall tool is off while the assistant's AI is switched off" in resource
            assert prompt.endswith(resource)

    anyio.run(scenario)
    assert [m.text for m in portal.runtime.service.list(place).items] == ["Is training for the Lyon marathon"]
